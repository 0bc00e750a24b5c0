package netproxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Upstream is a proxy that allowed hosts are reached through: a corporate
// proxy where nothing leaves the machine any other way. The proxy decides
// allow and deny exactly as without it, and then, instead of resolving the
// name and connecting, asks the upstream to CONNECT to the host and port
// (plain HTTP goes to it as an absolute-URI request, as to any HTTP proxy).
// The upstream resolves the names: the checks of the addresses a name
// resolves to (Rules.vet) cannot apply, while every check of the host as
// written still does (names, wildcards, literal addresses, deny rules).
type Upstream struct {
	// Addr is the upstream's host:port.
	Addr string
	// Credentials are "user:password" for basic authentication, or "".
	// They go to the upstream only, and never into a log.
	Credentials string
	// NoProxy are the hosts reached directly (NO_PROXY's entries): "*",
	// "example.com" (it and its subdomains), ".example.com" (only its
	// subdomains), an address or a CIDR prefix, each with an optional
	// ":port".
	NoProxy []string
}

// authorization is the Proxy-Authorization field's value, or "".
func (u *Upstream) authorization() string {
	if u.Credentials == "" {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.Credentials))
}

// direct reports whether h:port is reached without the upstream: its own
// loopback (the box's forwards to the host's services), or NO_PROXY names it.
func (u *Upstream) direct(h host, port int) bool {
	if h.name == "localhost" || h.addr.IsValid() && h.addr.IsLoopback() {
		return true
	}
	for _, e := range u.NoProxy {
		if noProxyMatch(e, h, port) {
			return true
		}
	}
	return false
}

// noProxyMatch matches one NO_PROXY entry.
func noProxyMatch(e string, h host, port int) bool {
	e = strings.ToLower(strings.TrimSpace(e))
	if e == "*" {
		return true
	}
	if hp, p, err := net.SplitHostPort(e); err == nil {
		if p != fmt.Sprint(port) {
			return false
		}
		e = hp
	}
	if pfx, err := netip.ParsePrefix(e); err == nil {
		return h.addr.IsValid() && pfx.Contains(h.addr)
	}
	if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
		return h.addr == a.Unmap()
	}
	if h.name == "" || e == "" {
		return false
	}
	if sub, ok := strings.CutPrefix(e, "."); ok {
		return strings.HasSuffix(h.name, "."+sub)
	}
	e = strings.TrimPrefix(e, "*.")
	return h.name == e || strings.HasSuffix(h.name, "."+e)
}

// upstreamError names the upstream in what the box is told.
type upstreamError struct {
	addr string
	err  error
}

func (e *upstreamError) Error() string { return fmt.Sprintf("upstream proxy %s: %v", e.addr, e.err) }
func (e *upstreamError) Unwrap() error { return e.err }

// dialUpstream connects to the upstream itself.
func (p *Proxy) dialUpstream(ctx context.Context) (net.Conn, error) {
	u := p.opts.Upstream
	c, err := p.dial(ctx, "tcp", u.Addr)
	if err != nil {
		return nil, &upstreamError{u.Addr, err}
	}
	return c, nil
}

// connectUpstream opens a tunnel to target (host:port) through the
// upstream: CONNECT, with the credentials when there are any.
func (p *Proxy) connectUpstream(ctx context.Context, target string) (net.Conn, error) {
	u := p.opts.Upstream
	c, err := p.dialUpstream(ctx)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(dialTimeout)
	}
	c.SetDeadline(deadline)
	// The context ends the exchange too (Close cancels it).
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	head := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if a := u.authorization(); a != "" {
		head += "Proxy-Authorization: " + a + "\r\n"
	}
	if _, err := c.Write([]byte(head + "\r\n")); err != nil {
		c.Close()
		return nil, &upstreamError{u.Addr, err}
	}
	br := bufio.NewReader(c)
	line, _, err := readHead(br)
	code := 0
	if err == nil {
		code, err = parseStatusLine(line)
	}
	if err != nil {
		c.Close()
		return nil, &upstreamError{u.Addr, fmt.Errorf("reading its answer to CONNECT %s: %w", target, err)}
	}
	if code < 200 || code > 299 {
		c.Close()
		_, reason, _ := strings.Cut(line, " ")
		return nil, &upstreamError{u.Addr, fmt.Errorf("CONNECT %s refused: %s", target, reason)}
	}
	c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// The host spoke first (an SSH or SMTP server's banner) and
		// its bytes came with the answer: they go first.
		return &prefixConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// prefixConn is a connection whose first bytes were read already.
type prefixConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// CloseWrite half-closes, as pipe passes on an end of stream.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// CredentialForms are the forms of an upstream's "user:password" that a
// value holding them would show: the pair and the password as they are,
// percent-encoded as in a URL's userinfo, and base64 as in a
// Proxy-Authorization field (at each offset inside a longer encoding). A
// password shorter than minPassword is looked for only with its user.
func CredentialForms(credentials string) []string {
	if credentials == "" {
		return nil
	}
	r := &redaction{}
	user, pass, _ := strings.Cut(credentials, ":")
	r.add(credentials, credentials)
	for _, u := range []string{user, url.QueryEscape(user), url.PathEscape(user)} {
		for _, p := range []string{url.QueryEscape(pass), url.PathEscape(pass)} {
			r.add(u+":"+p, u+":"+p)
		}
	}
	if len(pass) >= minPassword {
		r.add(pass, pass)
	}
	out := make([]string, len(r.old))
	for i, o := range r.old {
		out[i] = string(o)
	}
	return out
}
