package netproxy

// Interception: for a host whose requests the proxy must read (a secret
// goes to it, or a request rule covers it; see Proxy.inspects), a CONNECT
// or SOCKS5 tunnel is not a tunnel. Once the client has its answer, the
// proxy terminates the client's TLS itself with a certificate for the host
// that the run's Authority signs (the box trusts it, and nothing else
// does), opens TLS to the host verified against the host's own roots (the
// system's, never the run's authority), and passes HTTP/1.1 requests one by
// one: each is checked against the request rules, its placeholders are put
// right or refused, its head is written again and its body re-framed, and
// the answer comes back the same way. A client that speaks plain HTTP in
// the tunnel is read the same way, without TLS. Every other connection is
// tunnelled exactly as before, unread.
//
// Only HTTP/1.1 is offered (ALPN), so clients do not speak HTTP/2 to the
// proxy; upgrades (WebSocket) are refused, as Upgrade is a hop-by-hop field
// the proxy does not pass on.

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// handshakeFailed starts the reason logged when the box's client did not
// complete TLS with the proxy: it does not trust the run's authority.
const handshakeFailed = "TLS handshake with the box's client failed (does it read SSL_CERT_FILE or the system's bundle?): "

// idleTimeout is how long an intercepted connection waits for the next
// request.
const idleTimeout = 2 * time.Minute

// bufferedConn is a connection whose reads go through a bufio.Reader that
// may hold bytes read already.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// session is one intercepted connection: the client's side and the
// host's, which is made again when the host closes it between requests.
type session struct {
	p      *Proxy
	h      host
	port   int
	target string // host:port, canonical
	proto  string // "https", or "http" inside a tunnel
	tls    bool

	client net.Conn
	cbr    *bufio.Reader

	// last: the client's connection carries this one request (a plain
	// HTTP forward): the answer says Connection: close. absolute: the
	// request goes to the upstream proxy, as an absolute URI with its
	// credentials.
	last, absolute bool

	raw  net.Conn // the host's connection as open made it, to drop
	up   net.Conn // raw, or TLS over it
	upbr *bufio.Reader
}

// intercept serves c (its CONNECT or SOCKS5 handshake answered, br holding
// what it has read since) as an intercepted connection to h:port; up is
// the allowed connection to the host that open made.
func (p *Proxy) intercept(c net.Conn, br *bufio.Reader, h host, port int, up net.Conn) {
	s := &session{p: p, h: h, port: port, target: hostPort(h, port), raw: up}
	defer func() { s.closeUp() }()
	c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	s.client, s.cbr, s.proto = c, br, "http"
	if first[0] == 0x16 { // a TLS handshake record
		if p.opts.Authority == nil {
			p.record("https", s.target, Decision{Reason: "this host's requests must be read and the run has no certificate authority"}, nil)
			return
		}
		cert, err := p.opts.Authority.leaf(h)
		if err != nil {
			p.record("https", s.target, Decision{Reason: err.Error()}, nil)
			return
		}
		tc := tls.Server(&bufferedConn{Conn: c, r: br}, &tls.Config{
			Certificates: []tls.Certificate{*cert},
			NextProtos:   []string{"http/1.1"},
			MinVersion:   tls.VersionTLS12,
		})
		if err := tc.Handshake(); err != nil {
			// The client did not trust the run's authority (it ignores
			// SSL_CERT_FILE and the like), or hung up: nothing was sent.
			p.record("https", s.target, Decision{Reason: handshakeFailed + err.Error()}, nil)
			return
		}
		s.client, s.cbr, s.proto, s.tls = tc, bufio.NewReader(tc), "https", true
		defer tc.Close() // with TLS's own end (close_notify)
	}
	for {
		s.client.SetReadDeadline(time.Now().Add(idleTimeout))
		req, err := readRequest(s.cbr)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrUnexpectedEOF) && !isTimeout(err) {
				reason := "bad request: " + err.Error()
				p.recordRequest(s.proto, s.target, "", Decision{Reason: reason})
				writeText(s.client, 400, "agentbox: "+reason+"\n")
			}
			return
		}
		s.client.SetReadDeadline(time.Time{})
		if !s.serve(req) {
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// closeUp drops the host's connection.
func (s *session) closeUp() {
	if s.up != nil && s.up != s.raw {
		s.up.Close()
	}
	if s.raw != nil {
		s.p.dropUpstream(s.raw)
	}
	s.raw, s.up, s.upbr = nil, nil, nil
}

// upstream returns the connection to the host, made again (and checked
// again) when the host closed the last one.
func (s *session) upstream() error {
	if s.up != nil {
		return nil
	}
	if s.raw == nil {
		up, _, d, err := s.p.open(s.proto, s.h.String(), s.port)
		if !d.Allowed {
			return errors.New(d.Reason)
		}
		if err != nil {
			return err
		}
		s.raw = up
	}
	s.up = s.raw
	if s.tls {
		tc := tls.Client(s.raw, &tls.Config{
			ServerName: s.h.String(),
			RootCAs:    s.p.opts.RootCAs, // nil: the system's roots
			NextProtos: []string{"http/1.1"},
			MinVersion: tls.VersionTLS12,
		})
		tc.SetDeadline(time.Now().Add(dialTimeout))
		if err := tc.Handshake(); err != nil {
			s.closeUp()
			return fmt.Errorf("TLS to %s: %w", s.target, err)
		}
		tc.SetDeadline(time.Time{})
		s.up = tc
	}
	s.upbr = bufio.NewReader(s.up)
	return nil
}

// refuse answers a request the proxy will not pass on, logs it, and ends
// the connection (its body, if any, is not read).
func (s *session) refuse(code int, request string, d Decision) bool {
	s.p.recordRequest(s.proto, s.target, request, d)
	writeText(s.client, code, denial(s.target, d))
	return false
}

// serve passes one request and its answer; false when the connection ends.
func (s *session) serve(req request) bool {
	p := s.p
	path, ok := s.originForm(req)
	if !ok {
		return s.refuse(400, req.method+" "+logPath(req.target), Decision{Reason: "a request for another host than the connection's, or a target that is not a path"})
	}
	bare, _, _ := strings.Cut(path, "?")
	what := req.method + " " + bare
	d := Decision{Allowed: true}
	if p.rules.intercepts(s.h, s.port) {
		if why := unsafePath(bare); why != "" {
			return s.refuse(403, what, Decision{Reason: what + ": " + why})
		}
		if d = p.rules.checkRequest(s.h, s.port, req.method, bare); !d.Allowed {
			return s.refuse(403, what, d)
		}
	}
	// Placeholders: put in where they belong (TLS to a secret's host),
	// refused anywhere else.
	var own []*Secret
	if s.tls {
		own = p.ownSecrets(s.h, s.port)
	}
	mine := func(sec *Secret) bool { return slices.Contains(own, sec) }
	if sec, where := p.headPlaceholder(path, req.header, mine); sec != nil {
		return s.refuse(403, what, exfiltration(sec, where, s.target))
	}
	f, err := requestFraming(req.header)
	if err != nil {
		return s.refuse(400, what, Decision{Reason: "bad request: " + err.Error()})
	}
	expect := strings.EqualFold(req.header.Get("Expect"), "100-continue")
	keep := req.version == "HTTP/1.1" && !hasToken(req.header, "Connection", "close")
	stripHop(req.header)
	req.header.Del("Expect") // answered here (below)
	put := swapIn(req.header, own)
	if len(put) > 0 || !p.red.empty() {
		// The answer is read for the values (redact.go): best not
		// compressed; a host that compresses anyway is decoded.
		req.header["Accept-Encoding"] = []string{"identity"}
	}
	hostField := s.target
	if s.port == 443 && s.tls || s.port == 80 && !s.tls {
		hostField = strings.TrimSuffix(strings.TrimSuffix(s.target, ":443"), ":80")
	}
	req.header["Host"] = []string{hostField}
	if d.Rule == "" {
		d.Reason = what
	}
	if len(put) > 0 {
		d.Reason += "; put in " + strings.Join(put, ", ")
	}
	line := req.method + " " + path + " HTTP/1.1"
	if s.last {
		req.header["Connection"] = []string{"close"}
	}
	if s.absolute {
		// To the upstream proxy: the absolute URI of the host checked,
		// and the upstream's own credentials (the client's were
		// removed with the hop-by-hop fields).
		line = req.method + " http://" + hostField + path + " HTTP/1.1"
		if a := p.opts.Upstream.authorization(); a != "" {
			req.header["Proxy-Authorization"] = []string{a}
		}
	}
	if err := s.upstream(); err != nil {
		p.recordRequest(s.proto, s.target, what, Decision{Allowed: true, Rule: d.Rule, Reason: d.Reason})
		writeText(s.client, 502, p.red.string(fmt.Sprintf("agentbox: %s: %v\n", s.target, err)))
		return false
	}
	if !s.last {
		// (A plain forward's connection was logged as it opened.)
		p.recordRequest(s.proto, s.target, what, d)
	}
	if _, err := s.up.Write(writeHead(line, req.header)); err != nil {
		s.closeUp()
		writeText(s.client, 502, p.red.string(fmt.Sprintf("agentbox: %s: sending the request: %v\n", s.target, err)))
		return false
	}
	if expect && f.kind != noBody && req.version == "HTTP/1.1" {
		io.WriteString(s.client, "HTTP/1.1 100 Continue\r\n\r\n")
	}
	// The body goes up as it comes, read for placeholders that may not
	// go there; the answer comes back meanwhile.
	var wg sync.WaitGroup
	var bodyErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		bodyErr = s.sendBody(f, own, what)
		if bodyErr != nil {
			// Ends the answer too: nothing more goes either way.
			s.up.Close()
			s.client.Close()
		}
	}()
	keepUp, answered := s.answer(req.method, req.version)
	wg.Wait()
	if errors.Is(bodyErr, errChunked) {
		p.recordRequest(s.proto, s.target, what, Decision{Reason: "bad request: " + bodyErr.Error()})
	}
	if bodyErr != nil || !answered {
		return false
	}
	if !keepUp {
		s.closeUp()
	}
	return keep
}

// originForm returns the request's target as the host gets it: a path
// and query. An absolute URI must name the connection's own host.
func (s *session) originForm(req request) (string, bool) {
	t := req.target
	switch {
	case strings.HasPrefix(t, "/"):
		return t, true
	case t == "*":
		return t, req.method == "OPTIONS"
	}
	scheme, rest, ok := strings.Cut(t, "://")
	if !ok || !strings.EqualFold(scheme, "https") && !strings.EqualFold(scheme, "http") {
		return "", false
	}
	authority, path := rest, "/"
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	def := 443
	if strings.EqualFold(scheme, "http") {
		def = 80
	}
	hs, port, err := splitHostPort(authority, def)
	if err != nil {
		return "", false
	}
	h, err := parseHost(hs)
	if err != nil || h != s.h || port != s.port {
		return "", false
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	path, _, _ = strings.Cut(path, "#")
	return path, true
}

// unsafePath says why a path cannot be matched against a rule as written,
// or "": a dot segment, or a segment that decodes to one or holds an
// encoded slash or backslash, could reach another path on the host than
// the one the rule allowed.
func unsafePath(p string) string {
	if p == "*" {
		return ""
	}
	for _, seg := range strings.Split(p, "/") {
		dec := seg
		if strings.Contains(seg, "%") {
			d, err := pathUnescape(seg)
			if err != nil {
				return "a malformed percent escape in the path"
			}
			dec = d
		}
		if dec == "." || dec == ".." {
			return "a dot segment in the path"
		}
		if strings.ContainsAny(dec, `/\`) || strings.Contains(seg, `\`) {
			return "an encoded slash or a backslash in the path"
		}
	}
	return ""
}

// pathUnescape decodes %XX escapes.
func pathUnescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", errors.New("bad escape")
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", errors.New("bad escape")
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}

// logPath is a request target as the log shows it: without the query,
// which may hold credentials.
func logPath(t string) string {
	p, _, _ := strings.Cut(t, "?")
	return p
}

// sendBody copies the request's body up, re-framed, refusing a placeholder
// that may not go to this host.
func (s *session) sendBody(f bodyFraming, own []*Secret, what string) error {
	if f.kind == noBody {
		return nil
	}
	body := bodyReader(s.cbr, f)
	enc := &encoder{w: s.up, f: f}
	var foreign []*Secret
	var needles [][]byte
	for i := range s.p.secrets {
		if sec := &s.p.secrets[i]; !slices.Contains(own, sec) {
			foreign = append(foreign, sec)
			needles = append(needles, []byte(sec.Placeholder))
		}
	}
	scan := newDetector(enc, needles, func(i int) error {
		s.p.recordRequest(s.proto, s.target, what, exfiltration(foreign[i], "the body", s.target))
		return errExfiltration
	})
	buf := make([]byte, 32<<10)
	if _, err := io.CopyBuffer(scan, body, buf); err != nil {
		return err
	}
	// The trailer fields go through the same detector as the head.
	for _, l := range body.Trailer {
		if sec := s.p.placeholderIn(l, func(sec *Secret) bool { return slices.Contains(own, sec) }); sec != nil {
			s.p.recordRequest(s.proto, s.target, what, exfiltration(sec, "a trailer field", s.target))
			return errExfiltration
		}
	}
	return enc.Close(body.Trailer)
}

// answer passes the host's answer to the client: interim answers, then the
// final one, its head rewritten and its body re-framed. Every byte the
// client gets is redacted (redact.go): the status line, the fields' names
// and values, the body after its content coding is undone (a coding the
// proxy cannot undo is refused), the trailer, and the proxy's own messages
// about what the host sent. keepUp says whether the host's connection can
// carry the next request; answered is false when the client's connection
// cannot either.
func (s *session) answer(method, version string) (keepUp, answered bool) {
	red := s.p.red
	fail := func(what string, err error) (bool, bool) {
		writeText(s.client, 502, red.string(fmt.Sprintf("agentbox: %s: %s: %v\n", s.target, what, err)))
		return false, false
	}
	for {
		line, header, err := readHead(s.upbr)
		code := 0
		if err == nil {
			code, err = parseStatusLine(line)
		}
		if err == nil && code == 101 {
			err = errors.New("unexpected 101 Switching Protocols")
		}
		if err != nil {
			return fail("reading the answer", err)
		}
		tidyNames(header)
		closeUp := hasToken(header, "Connection", "close") || strings.HasPrefix(line, "HTTP/1.0")
		stripHop(header)
		line = red.string(line)
		red.header(header)
		if code < 200 {
			if code == 100 || version == "HTTP/1.0" {
				continue // the proxy sent the client its own
			}
			if _, err := s.client.Write(writeHead(line, header)); err != nil {
				return false, false
			}
			continue
		}
		f, err := responseFraming(method, code, header)
		if err != nil {
			return fail("reading the answer", err)
		}
		if f.kind == chunkedBody {
			// Chunked wins (RFC 9112 section 6.3); a length beside it
			// would tell the client another end.
			header.Del("Content-Length")
		}
		raw := bodyReader(s.upbr, f)
		body := io.Reader(raw)
		out := f
		codings := header.Values("Content-Encoding")
		if !red.empty() && len(codings) > 0 && f.kind != noBody {
			// Read decoded, so the redaction sees what the client will;
			// the client gets it without the coding, framed anew.
			dec, done, err := contentDecoder(body, strings.Split(strings.Join(codings, ","), ","))
			if err != nil {
				return fail("the answer", err)
			}
			defer done()
			body = dec
			header.Del("Content-Encoding")
			header.Del("Content-Length")
			header.Del("Transfer-Encoding")
			header.Del("Content-MD5")
			header.Del("Digest")
			header.Del("Repr-Digest")
			if version == "HTTP/1.1" && f.kind != closeBody {
				out = bodyFraming{kind: chunkedBody}
				header["Transfer-Encoding"] = []string{"chunked"}
			} else {
				out = bodyFraming{kind: closeBody}
			}
		}
		if out.kind == closeBody || s.last {
			// The client learns the end as the host tells it: by the
			// connection ending.
			header["Connection"] = []string{"close"}
		}
		if _, err := s.client.Write(writeHead(line, header)); err != nil {
			return false, false
		}
		enc := &encoder{w: s.client, f: out}
		rep := red.writer(enc)
		buf := make([]byte, 32<<10)
		if _, err := io.CopyBuffer(rep, body, buf); err != nil {
			// The head is sent: the client learns of it by the
			// connection ending before the body does.
			return false, false
		}
		if rep.Flush() != nil {
			return false, false
		}
		if body != io.Reader(raw) {
			// What follows the coded content, up to the body's end, is
			// not passed on.
			if _, err := io.Copy(io.Discard, raw); err != nil {
				return false, false
			}
		}
		trailer := raw.Trailer
		for i, l := range trailer {
			trailer[i] = red.string(l)
		}
		if enc.Close(trailer) != nil {
			return false, false
		}
		return !closeUp && f.kind != closeBody, out.kind != closeBody && f.kind != closeBody
	}
}

// hasToken reports whether a list field holds token, in any case.
func hasToken(h textproto.MIMEHeader, field, token string) bool {
	for _, v := range h.Values(field) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
