package policy

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
)

// What network mode allowlist adds to the allow and deny rules: the
// upstream proxy, the published ports, the secrets and the hosts whose TLS
// the proxy terminates. resolver.network works them out in modes, before
// the deny stage (a secret's file is hidden in the box) and the
// environment (the box gets the placeholders, not the values).

// ParsePublish reads a published port: "PORT" (the host's 127.0.0.1:PORT
// reaches the box's 127.0.0.1:PORT), "PORT:BOXPORT", or
// "ADDR:PORT:BOXPORT" with ADDR an IP address ("[::1]" for IPv6) or
// localhost, for a host address other than 127.0.0.1.
func ParsePublish(s string) (plan.Publish, error) {
	bad := func(why string) (plan.Publish, error) {
		return plan.Publish{}, fmt.Errorf("%q: %s (want PORT, PORT:BOXPORT or ADDR:PORT:BOXPORT)", s, why)
	}
	addr, rest := "127.0.0.1", strings.TrimSpace(s)
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]:")
		if end < 0 {
			return bad("an IPv6 address in brackets needs :PORT after it")
		}
		addr, rest = rest[1:end], rest[end+2:]
		if ip := net.ParseIP(addr); ip == nil || ip.To4() != nil {
			return bad("not an IPv6 address in brackets")
		}
	} else if parts := strings.Split(rest, ":"); len(parts) == 3 {
		addr, rest = parts[0], parts[1]+":"+parts[2]
		if addr == "localhost" {
			addr = "127.0.0.1"
		}
		if ip := net.ParseIP(addr); ip == nil || ip.To4() == nil {
			return bad("the address must be an IPv4 address, [an IPv6 one] or localhost")
		}
	}
	hostPort, boxPort, two := strings.Cut(rest, ":")
	if !two {
		boxPort = hostPort
	}
	port, err := parsePort(hostPort)
	if err != nil {
		return bad(err.Error())
	}
	bp, err := parsePort(boxPort)
	if err != nil {
		return bad(err.Error())
	}
	return plan.Publish{Addr: net.ParseIP(addr).String(), Port: port, BoxPort: bp}, nil
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || strings.Trim(s, "0123456789") != "" || n < 1 || n > 65535 {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return n, nil
}

// check validates a secret's table without the world; the error names
// the line of the key at fault.
func (d SecretDecl) check() error {
	if !validEnvName(d.Env) {
		return originError(d.Origin, fmt.Sprintf("env: %q is not a variable name (the variable the box finds the placeholder in)", d.Env))
	}
	if len(d.Hosts) == 0 {
		return originError(d.Origin, fmt.Sprintf("hosts: empty: name the hosts %s may be sent to", d.Env))
	}
	for _, h := range d.Hosts {
		if err := netproxy.CheckEntry(h.Value); err != nil {
			return originError(h.Origin, fmt.Sprintf("%q: %v", h.Value, err))
		}
		if strings.ContainsAny(strings.TrimSpace(h.Value), " /") {
			return originError(h.Origin, fmt.Sprintf("%q: a host, not a request rule", h.Value))
		}
	}
	return nil
}

// mergeSecrets unions the layers' secrets by variable: hosts add up, and a
// later layer's file wins.
func mergeSecrets(layers []*Layer) []SecretDecl {
	var out []SecretDecl
	at := map[string]int{}
	for _, l := range layers {
		for _, d := range l.Secrets {
			i, ok := at[d.Env]
			if !ok {
				at[d.Env] = len(out)
				out = append(out, d)
				continue
			}
			if d.File.Value != "" {
				out[i].File = d.File
			}
			out[i].Hosts = append(out[i].Hosts, d.Hosts...)
		}
	}
	return out
}

// network works out the upstream proxy, the published ports and the
// secrets, after the mode and the allow rules.
func (r *resolver) network() error {
	n := &r.p.Network
	for _, e := range r.m.lists["network.publish"] {
		pub, err := ParsePublish(e.Value)
		if err != nil {
			return originError(e.Origin, err.Error())
		}
		pub.Origin = e.Origin
		if err := r.addPublish(pub); err != nil {
			return originError(e.Origin, err.Error())
		}
	}
	if len(n.Publish) > 0 && r.env.GOOS == "windows" {
		return originError(n.Publish[0].Origin, "publishing a port is not supported by the Windows backend")
	}
	if err := r.secrets(); err != nil {
		return err
	}
	if n.Mode == plan.NetNone {
		r.unusedProxyCredentials()
	}
	if n.Mode == plan.NetAllowlist {
		if err := r.upstream(); err != nil {
			return err
		}
		for _, e := range append(append([]string(nil), n.Allow...), n.Deny...) {
			if strings.ContainsAny(e, " /") {
				n.Intercept = appendNew(n.Intercept, e)
			}
		}
		for _, s := range n.Secrets {
			for _, h := range s.Hosts {
				n.Intercept = appendNew(n.Intercept, h)
			}
		}
		if len(n.Intercept) > 0 && r.env.GOOS == "windows" {
			return &policyError{where: "network", msg: fmt.Sprintf("%q: secrets and method or path rules need the proxy's own certificate authority in the box, which the Windows backend does not install", n.Intercept[0])}
		}
	}
	return nil
}

// addPublish checks a published port against the others and the box's
// own ports, and adds it.
func (r *resolver) addPublish(pub plan.Publish) error {
	n := &r.p.Network
	if n.Mode == plan.NetOpen {
		r.p.Warnings = appendNew(r.p.Warnings, fmt.Sprintf("PUBLISH %s (%s) is not needed with network open: the box shares the host's network, and its server is at its own port", pub, pub.Origin))
		return nil
	}
	if n.Mode == plan.NetAllowlist && pub.BoxPort == plan.ProxyPort {
		return fmt.Errorf("box port %d is the proxy's own port in the box", plan.ProxyPort)
	}
	for _, f := range n.Forwards() {
		if strings.HasSuffix(f, ":"+strconv.Itoa(pub.BoxPort)) && n.Mode == plan.NetAllowlist {
			return fmt.Errorf("box port %d is taken by the forward to %s", pub.BoxPort, f)
		}
	}
	for _, o := range n.Publish {
		if o.Addr == pub.Addr && o.Port == pub.Port {
			if o.BoxPort == pub.BoxPort {
				return nil
			}
			return fmt.Errorf("%s:%d is published already, to box port %d", pub.Addr, pub.Port, o.BoxPort)
		}
	}
	n.Publish = append(n.Publish, pub)
	return nil
}

// secrets reads each secret's value and draws its placeholder.
func (r *resolver) secrets() error {
	n := &r.p.Network
	for _, d := range r.m.secrets {
		if n.Mode != plan.NetAllowlist {
			return originError(d.Origin, fmt.Sprintf("a secret needs network mode allowlist (the proxy puts the real %s in), but the network is %q", d.Env, n.Mode))
		}
		s := plan.Secret{Env: d.Env, Origin: d.Origin}
		for _, h := range d.Hosts {
			s.Hosts = appendNew(s.Hosts, h.Value)
		}
		var value string
		if d.File.Value != "" {
			path, err := r.expand(d.File)
			if err != nil {
				return err
			}
			data, err := r.env.FS.ReadFile(path)
			if err != nil {
				return originError(d.File.Origin, fmt.Sprintf("reading the value of %s: %v", d.Env, err))
			}
			s.File, value = path, strings.TrimRight(string(data), "\r\n")
		} else {
			value = r.env.Getenv(d.Env)
			if value == "" {
				r.p.Warnings = appendNew(r.p.Warnings, fmt.Sprintf("SECRET %s (%s) is not set in agentbox's environment: the box gets no placeholder and the proxy has nothing to put in", d.Env, d.Origin))
				continue
			}
		}
		if err := checkSecretValue(value); err != nil {
			return originError(d.Origin, fmt.Sprintf("the value of %s %v", d.Env, err))
		}
		ph, err := placeholder(r.opts.Rand, len(value))
		if err != nil {
			return fmt.Errorf("drawing a placeholder for %s: %w", d.Env, err)
		}
		s.Value, s.Placeholder = value, ph
		n.Secrets = append(n.Secrets, s)
	}
	return nil
}

// minSecret is the shortest value a secret may have: its placeholder is as
// long as the value (so that a length in the request or the answer stays
// true when one replaces the other) and must not turn up by chance.
const minSecret = 16

// checkSecretValue refuses a value that cannot stand in a header field: it
// would end the field, or the head, where the box's placeholder was.
func checkSecretValue(v string) error {
	if len(v) < minSecret {
		return fmt.Errorf("is %d characters long; a secret needs at least %d (its placeholder is as long and must not occur by chance)", len(v), minSecret)
	}
	for _, c := range []byte(v) {
		if c < 0x21 || c > 0x7e {
			return fmt.Errorf("holds a byte (%#02x) that cannot stand in a header field", c)
		}
	}
	return nil
}

// placeholderPrefix starts every placeholder, so a log or a user can tell
// one for what it is.
const placeholderPrefix = "agentbox"

// placeholder draws a placeholder of n characters: the prefix, then random
// lower-case letters and digits (lower case: a host name that carries one
// is compared in lower case).
func placeholder(src io.Reader, n int) (string, error) {
	if src == nil {
		src = rand.Reader
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n-len(placeholderPrefix))
	if _, err := io.ReadFull(src, b); err != nil {
		return "", err
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return placeholderPrefix + string(b), nil
}

// upstreamVars are the variables an upstream proxy is taken from when no
// policy names one, in order: the first set wins.
var upstreamVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}

// upstream works out the proxy that allowed hosts are reached through:
// network.upstream, or the first of upstreamVars in agentbox's
// environment; "none" for none.
func (r *resolver) upstream() error {
	e, fromPolicy := r.m.scalars["network.upstream"]
	raw, origin := e.Value, e.Origin
	if !fromPolicy || raw == "" {
		fromPolicy = false
		for _, v := range upstreamVars {
			if raw = r.env.Getenv(v); raw != "" {
				origin = plan.Origin{Key: "env " + v}
				break
			}
		}
	}
	if raw == "" || raw == "none" {
		return nil
	}
	u, err := parseUpstream(raw, fromPolicy, r.env.Getenv)
	if err != nil {
		msg := err.Error()
		if !fromPolicy {
			msg += `; set [network] upstream = "http://host:port" for the proxy allowed hosts are reached through, or "none"`
		}
		return originError(origin, msg)
	}
	u.Origin = origin
	for _, v := range []string{"NO_PROXY", "no_proxy"} {
		if np := r.env.Getenv(v); np != "" {
			for _, h := range strings.Split(np, ",") {
				if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
					u.NoProxy = appendNew(u.NoProxy, h)
				}
			}
			break
		}
	}
	r.p.Network.Upstream = u
	return nil
}

// parseUpstream reads "http://[user[:password]@]host[:port]". In a policy
// (vars true) the user and the password may each be a whole "${NAME}",
// taken from agentbox's environment, so the policy file holds no
// password; the variable is taken out of the box's environment.
func parseUpstream(raw string, vars bool, getenv func(string) string) (*plan.Upstream, error) {
	rest, ok := strings.CutPrefix(raw, "http://")
	if !ok {
		scheme, _, _ := strings.Cut(raw, "://")
		return nil, fmt.Errorf("%q: only an http:// proxy can be the upstream (not %s://)", redact(raw), scheme)
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.ContainsAny(rest, "/?#") {
		return nil, fmt.Errorf("%q: want http://[user:password@]host:port, nothing after it", redact(raw))
	}
	u := &plan.Upstream{}
	hostPort := rest
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		hostPort = rest[at+1:]
		user, pass, _ := strings.Cut(rest[:at], ":")
		var from []string
		part := func(s string) (string, error) {
			if vars {
				if name, ok := varName(s); ok {
					v := getenv(name)
					if v == "" {
						return "", fmt.Errorf("%q: variable %s is not set", redact(raw), name)
					}
					from = append(from, "$"+name)
					u.Vars = appendNew(u.Vars, name)
					return v, nil
				}
				if strings.Contains(s, "$") {
					return "", fmt.Errorf("%q: a variable must be the whole user or password, as ${NAME}", redact(raw))
				}
			}
			return url.PathUnescape(s)
		}
		var err error
		if user, err = part(user); err != nil {
			return nil, err
		}
		if pass, err = part(pass); err != nil {
			return nil, err
		}
		if strings.ContainsAny(user, ":\r\n") || strings.ContainsAny(pass, "\r\n") {
			return nil, fmt.Errorf("%q: the user may not hold a colon, nor either a line break", redact(raw))
		}
		u.Credentials = user + ":" + pass
		u.Auth = "basic, user " + user
		if len(from) > 0 {
			u.Auth += ", from " + strings.Join(from, " and ")
		}
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		host, port = strings.Trim(hostPort, "[]"), "80"
	}
	if host == "" {
		return nil, fmt.Errorf("%q: no host", redact(raw))
	}
	if _, err := parsePort(port); err != nil {
		return nil, fmt.Errorf("%q: %v", redact(raw), err)
	}
	u.URL = "http://" + net.JoinHostPort(host, port)
	return u, nil
}

// varName reads a whole "${NAME}" or "$NAME".
func varName(s string) (string, bool) {
	name, ok := strings.CutPrefix(s, "$")
	if !ok {
		return "", false
	}
	if inner, ok := strings.CutPrefix(name, "{"); ok {
		name, ok = strings.CutSuffix(inner, "}")
		if !ok {
			return "", false
		}
	}
	return name, validEnvName(name)
}

// redact hides the password of a proxy URL in messages.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if hasPass {
		user += ":***"
	}
	return scheme + "://" + user + "@" + rest[at+1:]
}

// secretHosts warns about a secret whose host no allow rule allows (the
// provider's own domains included, which is why this runs after the
// provider step): the proxy would refuse every connection to it.
func (r *resolver) secretHosts() error {
	n := &r.p.Network
	if len(n.Secrets) == 0 {
		return nil
	}
	rules, err := netproxy.Compile(n.Allow, n.Deny)
	if err != nil {
		return nil // modes refused the entry already, with its origin
	}
	for _, s := range n.Secrets {
		for _, h := range s.Hosts {
			if strings.HasPrefix(h, "*.") {
				continue // a family of hosts: no one name to check
			}
			host, port := h, 443
			if hp, p, err := net.SplitHostPort(h); err == nil {
				host = hp
				port, _ = strconv.Atoi(p)
			}
			if d := rules.Check(host, port); !d.Allowed {
				r.p.Warnings = appendNew(r.p.Warnings, fmt.Sprintf("SECRET %s goes to %s, which the allowlist refuses (%s): add --allow %s, or network.allow", s.Env, h, d.Reason, h))
			}
		}
	}
	return nil
}

// systemBundles are where Linux distributions keep the system's
// certificate bundle (the list Go's crypto/x509 reads): Debian and Ubuntu,
// Fedora and RHEL, openSUSE, OpenELEC, CentOS, Alpine.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// caBundles finds, when the proxy terminates TLS for some hosts, the
// system bundles the box's own one (the run's authority added) goes over,
// and the files it starts with.
func (r *resolver) caBundles() error {
	n := &r.p.Network
	if len(n.Intercept) == 0 || r.env.GOOS == "windows" {
		return nil
	}
	for _, b := range systemBundles {
		real, err := r.real(b)
		if err != nil {
			continue
		}
		fi, err := r.env.FS.Stat(real)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		for _, w := range r.writableRegions() {
			if plan.Within(real, w) {
				return &policyError{where: "network", msg: fmt.Sprintf("the system's certificate bundle %s lies in the writable folder %s: the box's bundle cannot be put over it safely", real, w)}
			}
		}
		n.CABundles = appendNew(n.CABundles, real)
	}
	if len(n.CABundles) == 0 {
		return &policyError{where: "network", msg: fmt.Sprintf("%q needs the proxy's own certificate authority in the box, and there is no system certificate bundle to add it to (looked for %s)",
			n.Intercept[0], strings.Join(systemBundles, ", "))}
	}
	n.CABase = []string{n.CABundles[0]}
	for _, v := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS"} {
		if f := r.env.Getenv(v); f != "" && filepath.IsAbs(f) {
			if real, err := r.real(f); err == nil {
				n.CABase = appendNew(n.CABase, real)
			}
		}
	}
	return nil
}

// unusedProxyCredentials notes, for network mode none, the credentials of
// the proxy the user's environment names (HTTPS_PROXY and the like): the
// box reaches no proxy, so no variable that holds them, whatever its name
// and in whatever form, goes into the box (environment). One that cannot
// be read names no credentials agentbox could recognise.
func (r *resolver) unusedProxyCredentials() {
	for _, v := range upstreamVars {
		raw := r.env.Getenv(v)
		if raw == "" {
			continue
		}
		if u, err := parseUpstream(raw, false, r.env.Getenv); err == nil && u.Credentials != "" {
			r.proxyCreds = appendNew(r.proxyCreds, u.Credentials)
		}
	}
}
