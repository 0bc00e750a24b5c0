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
}

// exact reports whether the user named this very host (a name or an
// address), as opposed to a family of hosts by wildcard.
func (r rule) exact() bool { return !r.wild }

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
// ":port" (none: any port). A bad entry is an error that names it.
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

// checkHost is check on a parsed host.
func (rs *Rules) checkHost(h host, port int) (Decision, *rule) {
	for _, r := range rs.deny {
		if r.match(h, port) {
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
