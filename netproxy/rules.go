package netproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Rules is a compiled allowlist: allow and deny entries. Build it with Compile.
type Rules struct {
	allow []rule
	deny  []rule
}

// rule is one compiled entry.
type rule struct {
	text string     // the entry as the user wrote it, for messages and logs
	name string     // exact name, or the suffix of a wildcard
	wild bool       // "*.name": any subdomain of name, not name itself
	addr netip.Addr // an address entry; matches only that address
	port int        // 0: any port

	// A request rule ("GET github.com/org/*") also names a method, a
	// path, or both: it decides on the requests the proxy reads, in plain
	// HTTP or on an intercepted TLS connection (see Rules.Intercepts).
	method  string // "" for any
	path    string // "" for any; the prefix before the "*" of a wildcard path
	subtree bool   // "/org/*": any path below /org/, not /org/ itself
}

// exact reports whether the user named this very host (a name or an
// address), as opposed to a family of hosts by wildcard.
func (r rule) exact() bool { return !r.wild }

// request reports whether r decides on requests rather than connections.
func (r rule) request() bool { return r.method != "" || r.path != "" }

// matchRequest reports whether a request rule covers method and path (the
// path as sent, without the query). A rule without a method or path is not
// a request rule and covers every request.
func (r rule) matchRequest(method, path string) bool {
	if r.method != "" && r.method != method {
		return false
	}
	switch {
	case r.path == "":
		return true
	case r.subtree:
		// As "*.example.com" is the subdomains and not the apex.
		return len(path) > len(r.path) && strings.HasPrefix(path, r.path)
	}
	return path == r.path
}

// match reports whether the rule covers h:port.
func (r rule) match(h host, port int) bool {
	if r.port != 0 && r.port != port {
		return false
	}
	switch {
	case r.addr.IsValid():
		return h.addr == r.addr
	case h.name == "":
		// An address never matches a name rule: "127.1" is not "localhost".
		return false
	case r.wild:
		return strings.HasSuffix(h.name, "."+r.name)
	default:
		return h.name == r.name
	}
}

// Decision is the verdict on one host and port.
type Decision struct {
	Allowed bool
	Rule    string // the entry that decided, as written; "" when none did
	Reason  string // why, in words fit for a user
}

// Compile checks and compiles allow and deny entries. An entry is a name
// ("example.com"), a wildcard ("*.example.com": subdomains, not the apex), an
// IPv4 or IPv6 address ("127.0.0.1", "::1", "[::1]"), each with an optional
// ":port" (none: any port); and, for a request rule, a method before it
// ("GET github.com"), a path after it ("github.com/org/*": the paths
// below /org/, not /org/ itself), or both. A bad entry is an error that
// names it.
func Compile(allow, deny []string) (*Rules, error) {
	var rs Rules
	for _, e := range allow {
		r, err := compileRule(e)
		if err != nil {
			return nil, fmt.Errorf("allow entry %q: %w", e, err)
		}
		rs.allow = append(rs.allow, r)
	}
	for _, e := range deny {
		r, err := compileRule(e)
		if err != nil {
			return nil, fmt.Errorf("deny entry %q: %w", e, err)
		}
		rs.deny = append(rs.deny, r)
	}
	return &rs, nil
}

// CheckEntry reports what is wrong with one allow or deny entry, or nil:
// policy resolution calls it, so a bad entry is refused with the file and
// line it came from.
func CheckEntry(e string) error {
	_, err := compileRule(e)
	return err
}

// compileRule compiles one entry.
func compileRule(e string) (rule, error) {
	r := rule{text: e}
	s := strings.TrimSpace(e)
	if s == "" {
		return r, errors.New("empty entry")
	}
	if strings.Contains(s, "://") {
		return r, errors.New("want a host, not a URL")
	}
	if m, rest, ok := strings.Cut(s, " "); ok {
		if !method(m) {
			return r, fmt.Errorf("%q is not a method: want an upper-case one such as GET, before the host", m)
		}
		r.method, s = m, strings.TrimSpace(rest)
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		p, err := compilePath(s[i:])
		if err != nil {
			return r, err
		}
		s = s[:i]
		r.path, r.subtree = strings.TrimSuffix(p, "*"), strings.HasSuffix(p, "*")
	}
	// Split off a port, unless the entry is a bare IPv6 address ("::1"),
	// whose colons are not a port separator.
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		h, port, err := splitHostPort(s, -1)
		if err != nil && strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
			h, port, err = s, 0, nil // "[::1]": any port
		}
		if err != nil {
			return r, err
		}
		s, r.port = h, port
	}
	if s == "" {
		// ":443" alone would allow every host on a port; say what you mean.
		return r, errors.New("entry needs a host before the port")
	}
	if suffix, ok := strings.CutPrefix(s, "*."); ok {
		h, err := parseHost(suffix)
		if err != nil {
			return r, err
		}
		if h.addr.IsValid() {
			return r, errors.New("a wildcard needs a domain name, not an address")
		}
		r.wild, r.name = true, h.name
		return r, nil
	}
	h, err := parseHost(s)
	if err != nil {
		return r, err
	}
	r.name, r.addr = h.name, h.addr
	return r, nil
}

// Check decides whether a client may connect to host:port, on the host as
// written, before any name is resolved. Deny rules win over allow rules; a
// host no allow rule matches is denied. Among allow rules an exact name or
// address wins over a wildcard, because it grants more after resolution (see
// Proxy). An invalid host is denied with the reason.
func (rs *Rules) Check(h string, port int) Decision {
	d, _ := rs.check(h, port)
	return d
}

// check is Check, also returning the deciding allow rule (nil when denied).
func (rs *Rules) check(raw string, port int) (Decision, *rule) {
	h, err := parseHost(raw)
	if err != nil {
		return Decision{Reason: "invalid host: " + err.Error()}, nil
	}
	if port < 1 || port > 65535 {
		return Decision{Reason: fmt.Sprintf("invalid port %d", port)}, nil
	}
	return rs.checkHost(h, port)
}

// checkHost is check on a parsed host. A deny rule for requests does not
// deny the connection (it is checked on each request); an allow rule for
// requests allows it, and its requests are checked (see Intercepts).
func (rs *Rules) checkHost(h host, port int) (Decision, *rule) {
	for _, r := range rs.deny {
		if !r.request() && r.match(h, port) {
			return Decision{Rule: r.text, Reason: fmt.Sprintf("matches deny rule %q", r.text)}, nil
		}
	}
	var wild *rule
	for i, r := range rs.allow {
		if !r.match(h, port) {
			continue
		}
		if r.exact() {
			return Decision{Allowed: true, Rule: r.text, Reason: fmt.Sprintf("matches allow rule %q", r.text)}, &rs.allow[i]
		}
		if wild == nil {
			wild = &rs.allow[i]
		}
	}
	if wild != nil {
		return Decision{Allowed: true, Rule: wild.text, Reason: fmt.Sprintf("matches allow rule %q", wild.text)}, wild
	}
	return Decision{Reason: "no allow rule matches"}, nil
}

// method reports whether m is a method as rules spell it: an upper-case
// token (RFC 9110 methods are case-sensitive, and the standard ones are
// upper case).
func method(m string) bool {
	if m == "" || len(m) > 32 {
		return false
	}
	for _, c := range m {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// compilePath checks a rule's path: "/", then characters of a URL path,
// and "*" only as a whole last segment ("/org/*"). Percent escapes and dot
// segments are refused: a rule must say the path it means.
func compilePath(p string) (string, error) {
	for _, c := range p {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`"<>\^`+"`{|}%?#", c) {
			return "", fmt.Errorf("path %q: character %q not allowed", p, c)
		}
	}
	if i := strings.IndexByte(p, '*'); i >= 0 && (i != len(p)-1 || !strings.HasSuffix(p, "/*")) {
		return "", fmt.Errorf("path %q: \"*\" only as the last segment, as in /org/*", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return "", fmt.Errorf("path %q: no . or .. segments", p)
		}
	}
	return p, nil
}

// Intercepts reports whether the requests to h:port must be read and
// checked one by one: a request rule matches it, allow or deny, and no
// plain allow rule makes every request to it allowed anyway (a deny
// request rule always needs reading). Its TLS is then terminated (with
// the proxy's per-run authority), its plain HTTP read request by request.
func (rs *Rules) Intercepts(raw string, port int) bool {
	h, err := parseHost(raw)
	return err == nil && rs.intercepts(h, port)
}

func (rs *Rules) intercepts(h host, port int) bool {
	for _, r := range rs.deny {
		if r.request() && r.match(h, port) {
			return true
		}
	}
	requests := false
	for _, r := range rs.allow {
		if !r.match(h, port) {
			continue
		}
		if !r.request() {
			return false
		}
		requests = true
	}
	return requests
}

// checkRequest decides on one request to h:port: method and path as sent
// (the path without its query). Deny rules win; then a plain allow rule or
// a request rule that covers it allows it.
func (rs *Rules) checkRequest(h host, port int, method, path string) Decision {
	what := method + " " + path
	for _, r := range rs.deny {
		if r.match(h, port) && r.matchRequest(method, path) {
			return Decision{Rule: r.text, Reason: fmt.Sprintf("%s matches deny rule %q", what, r.text)}
		}
	}
	for _, r := range rs.allow {
		if r.match(h, port) && r.matchRequest(method, path) {
			return Decision{Allowed: true, Rule: r.text, Reason: fmt.Sprintf("%s matches allow rule %q", what, r.text)}
		}
	}
	return Decision{Reason: fmt.Sprintf("no allow rule matches %s", what)}
}
