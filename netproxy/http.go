package netproxy

// The proxy speaks just enough HTTP/1.x, by hand on bufio and net/textproto.
// It does not use net/http: that would link crypto/tls, compress/gzip,
// HTTP/2 and their package initialisation into the agentbox binary, which
// starts twice per sandboxed command (supervisor and init), and costs about
// 0.6 ms on every start for nothing the proxy needs.
//
// Each client connection carries exactly one request. A CONNECT request
// becomes a tunnel (or an intercepted connection, intercept.go). An
// absolute-URI request is read and passed as an intercepted request is:
// its framing strictly (RFC 9112 section 6.3), its body re-framed and read
// for placeholders, its trailer fields validated and read the same way, and
// the answer parsed, redacted (redact.go) and re-framed. Both sides are told
// "Connection: close", and whatever the client sends after its request is
// never read: a pipelined second request reaches no origin, so every
// request the proxy passes is one it judged.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"os"
	"slices"
	"strings"
	"time"
)

// maxHead bounds a request or response head (start line and header
// fields), and maxFields the number of header fields in it. The proxy runs
// in agentbox on the host, outside the box's memory limit, so what one
// connection can make it hold is kept small (parsing many tiny fields cost
// ~17 MB per 1 MiB head).
const (
	maxHead   = 64 << 10
	maxFields = 256
)

// hopHeaders are the hop-by-hop fields of RFC 9110 section 7.6.1 and the
// proxy's own: they describe one connection and are not passed on, in either
// direction. Proxy-Authorization in particular would hand the client's proxy
// credentials to the origin server. Upgrade goes too: the proxy switches no
// protocols, so a 101 is an error (see answer).
//
// Transfer-Encoding, though named in that section, stays (see framing).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "TE", "Upgrade",
}

// framing are the fields that say where a body ends. They are kept even
// when Connection names them: the proxy re-frames every body it reads to
// what they say (body.go), and without them the far end would read it as
// something else (chunk sizes as data, or the body as a second request).
// Trailer, which announces fields at the end of a chunked body, goes with
// them.
var framing = []string{"Content-Length", "Transfer-Encoding", "Trailer"}

// statusText names the statuses the proxy answers with itself.
var statusText = map[int]string{400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}

// request is a client's request head.
type request struct {
	method, target, version string
	header                  textproto.MIMEHeader
}

// serveHTTP serves one client connection: a CONNECT request becomes a
// tunnel, an absolute-URI request is forwarded, and either way the
// connection ends with it.
func (p *Proxy) serveHTTP(c net.Conn, br *bufio.Reader) {
	req, err := readRequest(br)
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
			reason := "bad proxy request: " + err.Error()
			p.record("http", "", Decision{Reason: reason}, nil)
			writeText(c, 400, "agentbox: "+reason+"\n")
		}
		return
	}
	c.SetReadDeadline(time.Time{}) // the body may take its time
	if req.method == "CONNECT" {
		// The request is to the proxy itself: no placeholder has any
		// business in it.
		if sec, where := p.headPlaceholder(req.target, req.header, nil); sec != nil {
			if where == "the request's URL" {
				where = "the host name" // a CONNECT's target is host:port
			} else {
				where += " of a CONNECT request"
			}
			d := exfiltration(sec, where, req.target)
			p.record("connect", req.target, d, nil)
			writeText(c, 403, denial(req.target, d))
			return
		}
		p.serveCONNECT(c, br, req.target)
		return
	}
	p.forward(c, br, req)
}

// serveCONNECT answers a CONNECT request and, when allowed, becomes a tunnel.
// target is the authority as sent; parseHost refuses anything in it that is
// not plainly a host (escapes, userinfo, control characters).
func (p *Proxy) serveCONNECT(c net.Conn, br *bufio.Reader, target string) {
	h, port, err := splitHostPort(target, 0)
	if err != nil {
		reason := fmt.Sprintf("bad CONNECT target %q: %v", target, err)
		p.record("connect", "", Decision{Reason: reason}, nil)
		writeText(c, 400, "agentbox: "+reason+"\n")
		return
	}
	up, checked, d, err := p.open("connect", h, port)
	switch {
	case !d.Allowed:
		writeText(c, 403, denial(checked, d))
		return
	case err != nil:
		writeText(c, 502, p.red.string(fmt.Sprintf("agentbox: %s: %v\n", checked, err)))
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		p.dropUpstream(up)
		return
	}
	p.pass(c, br, h, port, up)
}

// pass carries a connection whose handshake is done to up: read request
// by request when the proxy must (Proxy.inspects), else a tunnel. It drops
// up when done.
func (p *Proxy) pass(c net.Conn, br *bufio.Reader, raw string, port int, up net.Conn) {
	if h, err := parseHost(raw); err == nil && p.inspects(h, port) {
		c.SetReadDeadline(time.Time{})
		p.intercept(c, br, h, port, up)
		return
	}
	defer p.dropUpstream(up)
	tunnel(c, br, up)
}

// forward passes one absolute-URI request to its origin and the answer back.
//
// Each request gets a fresh upstream connection, closed after the answer:
// no request can ride on a connection that was checked for another host.
func (p *Proxy) forward(c net.Conn, br *bufio.Reader, req request) {
	// The scheme is case-insensitive (RFC 3986 section 3.1); the authority
	// ends at the path, the query or a fragment.
	rest, ok := strings.CutPrefix(req.target, "http://")
	if !ok && len(req.target) >= 7 && strings.EqualFold(req.target[:7], "http://") {
		rest, ok = req.target[7:], true
	}
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if !ok || authority == "" {
		p.record("http", "", Decision{Reason: "not an absolute http:// URL"}, nil)
		writeText(c, 400, "agentbox: only absolute http:// URLs and CONNECT go through this proxy\n")
		return
	}
	h, port, err := splitHostPort(authority, 80)
	if err != nil {
		reason := fmt.Sprintf("bad URL host %q: %v", authority, err)
		p.record("http", "", Decision{Reason: reason}, nil)
		writeText(c, 400, "agentbox: "+reason+"\n")
		return
	}
	if d, target, ok := p.checkPlain(req, h, port, path); !ok {
		writeText(c, 403, denial(target, d))
		return
	}
	up, target, d, err := p.open("http", h, port)
	switch {
	case !d.Allowed:
		writeText(c, 403, denial(target, d))
		return
	case err != nil:
		writeText(c, 502, p.red.string(fmt.Sprintf("agentbox: %s: %v\n", target, err)))
		return
	}
	hp, _ := parseHost(h)
	// The request is read and passed as an intercepted one is (its
	// framing strictly, its body and trailer for placeholders, the answer
	// redacted), and it is the connection's only one: whatever the client
	// sends after it is never read, so no request reaches the origin that
	// was not judged.
	s := &session{p: p, h: hp, port: port, target: target, proto: "http", client: c, cbr: br, raw: up,
		last: true, absolute: p.viaUpstream(hp, port)}
	defer s.closeUp()
	s.serve(req)
}

// checkPlain checks a plain HTTP request, which the proxy reads anyway:
// the request rules of its host, and placeholders (a secret goes only
// over TLS). It logs a refusal.
func (p *Proxy) checkPlain(req request, raw string, port int, path string) (Decision, string, bool) {
	h, err := parseHost(raw)
	if err != nil {
		return Decision{}, "", true // open refuses it, with the reason
	}
	target := hostPort(h, port)
	bare, _, _ := strings.Cut(path, "?")
	bare, _, _ = strings.Cut(bare, "#")
	if bare == "" {
		bare = "/"
	}
	what := req.method + " " + bare
	if sec, where := p.headPlaceholder(req.target, req.header, nil); sec != nil {
		d := exfiltration(sec, where, target)
		p.recordRequest("http", target, what, d)
		return d, target, false
	}
	if !p.rules.intercepts(h, port) {
		return Decision{Allowed: true}, target, true
	}
	d := p.rules.checkRequest(h, port, req.method, bare)
	if why := unsafePath(bare); why != "" {
		d = Decision{Reason: what + ": " + why}
	}
	if !d.Allowed {
		p.recordRequest("http", target, what, d)
	}
	return d, target, d.Allowed
}

// flush writes what br holds already, before the copying goes on from the
// connection itself.
func flush(w io.Writer, br *bufio.Reader) error {
	n := br.Buffered()
	if n == 0 {
		return nil
	}
	b, _ := br.Peek(n)
	_, err := w.Write(b)
	return err
}

// readRequest reads a request head.
func readRequest(br *bufio.Reader) (request, error) {
	line, header, err := readHead(br)
	if err != nil {
		return request{}, err
	}
	for name := range header {
		// An origin could read "Host " as a second Host field.
		if !token(name) {
			return request{}, fmt.Errorf("malformed field name %q", name)
		}
	}
	req := request{header: header}
	req.method, req.target, req.version, err = parseRequestLine(line)
	return req, err
}

// readHead reads a message head: the start line and the header fields, up
// to and including the empty line that ends them, at most maxHead bytes. It
// reads nothing beyond, so br keeps what follows. The fields are parsed by
// textproto, which refuses a field line that starts with white space, a
// name with a character that is neither a token's nor a space, and a control
// character in a value; a folded line, obsolete, is refused here first (as
// RFC 9112 section 5.2 allows). Space in a name it lets through, as the name
// "Host " for "Host : x" (Go issue 34540): readRequest and answer deal with
// that, each as section 5.1 says.
func readHead(br *bufio.Reader) (string, textproto.MIMEHeader, error) {
	var raw []byte
	start := 0 // where the current line begins in raw
	lines := 0
	for {
		frag, err := br.ReadSlice('\n')
		if len(raw)+len(frag) > maxHead {
			return "", nil, fmt.Errorf("head longer than %d bytes", maxHead)
		}
		raw = append(raw, frag...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue // the line goes on
		case errors.Is(err, io.EOF) && len(raw) > 0:
			return "", nil, io.ErrUnexpectedEOF
		case err != nil:
			return "", nil, err
		}
		if line := string(raw[start:]); start > 0 && (line == "\r\n" || line == "\n") {
			break
		}
		if start > 0 && (raw[start] == ' ' || raw[start] == '\t') {
			// Obsolete line folding (RFC 9112 section 5.2): joined
			// with a space, a value split across lines would pass the
			// redaction and the detectors in two halves. Refused.
			return "", nil, errors.New("a folded header line (obsolete line folding)")
		}
		if lines++; lines > maxFields+1 {
			return "", nil, fmt.Errorf("head has more than %d header fields", maxFields)
		}
		start = len(raw)
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw)))
	line, err := tp.ReadLine()
	if err != nil {
		return "", nil, err
	}
	header, err := tp.ReadMIMEHeader()
	if err != nil {
		return "", nil, err
	}
	return line, header, nil
}

// parseRequestLine splits "METHOD TARGET HTTP/1.x" (RFC 9112 section 3)
// strictly: single spaces, a token for the method, no control character or
// space in the target. Anything laxer is how a request gets read one way
// here and another way by the origin.
func parseRequestLine(line string) (method, target, version string, err error) {
	parts := strings.Split(line, " ")
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("malformed request line %q", line)
	}
	method, target, version = parts[0], parts[1], parts[2]
	switch {
	case !token(method):
		return "", "", "", fmt.Errorf("malformed method %q", method)
	case target == "" || strings.IndexFunc(target, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return "", "", "", fmt.Errorf("malformed request target %q", target)
	case version != "HTTP/1.1" && version != "HTTP/1.0":
		return "", "", "", fmt.Errorf("unsupported version %q", version)
	}
	return method, target, version, nil
}

// token reports whether s is a token (RFC 9110 section 5.6.2): a method or
// a field name.
func token(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

// tidyNames applies RFC 9112 section 5.1 to a response's fields: space
// between a name and its colon is removed, and a field whose name is still
// not a token is dropped.
func tidyNames(h textproto.MIMEHeader) {
	for name, values := range h {
		if token(name) {
			continue
		}
		delete(h, name)
		if name = strings.TrimRight(name, " "); token(name) {
			name = textproto.CanonicalMIMEHeaderKey(name)
			h[name] = append(h[name], values...)
		}
	}
}

// parseStatusLine reads "HTTP/1.x CODE REASON" (RFC 9112 section 4) and
// returns the code.
func parseStatusLine(line string) (int, error) {
	version, rest, _ := strings.Cut(line, " ")
	code, reason, _ := strings.Cut(rest, " ")
	bad := (version != "HTTP/1.1" && version != "HTTP/1.0") || len(code) != 3 ||
		strings.IndexFunc(code, func(r rune) bool { return r < '0' || r > '9' }) >= 0 || code[0] < '1' || code[0] > '5' ||
		strings.IndexFunc(reason, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) >= 0
	if bad {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	return int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0'), nil
}

// stripHop removes the hop-by-hop fields and those the Connection field
// names, but never the framing.
func stripHop(h textproto.MIMEHeader) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			name = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))
			if name != "" && !slices.Contains(framing, name) {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// writeHead renders a start line and header fields, in sorted order so the
// result is the same every time, and the empty line that ends the head.
func writeHead(start string, h textproto.MIMEHeader) []byte {
	var b bytes.Buffer
	b.WriteString(start + "\r\n")
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// writeText writes a short text response and asks the client to close.
func writeText(w io.Writer, code int, body string) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, statusText[code], len(body), body)
}
