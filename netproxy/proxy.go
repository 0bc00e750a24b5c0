package netproxy

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Timeouts. A client that opens a connection and says nothing must not hold
// a goroutine forever; an established tunnel has no timeout, like a direct
// connection.
const (
	handshakeTimeout = 30 * time.Second // request head, SOCKS greeting
	dialTimeout      = 15 * time.Second // resolving and connecting upstream
)

// maxForwards is how many port forwards a box may have: a connection's tag
// is one byte, and 0 is the proxy port.
const maxForwards = 255

// Options configure a Proxy.
type Options struct {
	// Log, when set, gets one line per connection (for plain HTTP, per
	// request: a connection carries one, see http.go): time, allow or
	// deny, protocol, host:port, rule and reason.
	Log io.Writer
	// Resolver resolves names; nil means net.DefaultResolver.
	Resolver Resolver
	// Forward are the targets of the box's port forwards ("localhost:3000"),
	// in order: a connection that arrives with tag i (1-based) goes to
	// Forward[i-1], checked by the rules like any other (see Relay).
	Forward []string
	// Decided, when set, is called with every decision (from the
	// proxy's goroutines; it must be safe for concurrent use).
	Decided func(Decided)
	// Upstream, when set, is the proxy allowed hosts are reached through.
	Upstream *Upstream
	// Secrets are the credentials the box holds only as placeholders.
	Secrets []Secret
	// Authority is the run's certificate authority, for the hosts whose
	// requests the proxy reads (secrets, request rules); nil when none.
	Authority *Authority
	// RootCAs are the roots the hosts' own certificates are verified
	// against when their TLS is terminated; nil for the system's.
	RootCAs *x509.CertPool
}

// Decided is one decision of the proxy, as Options.Decided gets it.
type Decided struct {
	Allowed bool
	Proto   string // "http", "connect", "socks5", "forward", "https" (a request the proxy read)
	Target  string // host:port as the box asked for it; "-" when unknown
	Rule    string // the rule that decided
	Reason  string
	// Request is "METHOD /path" (no query) of a request the proxy read
	// one by one; "" for a connection.
	Request string
	// Unreachable says why an allowed host could not be reached
	// ("connection refused", "its name does not resolve"): the box got a
	// 502 (a SOCKS failure). "" when it was reached, or not allowed.
	Unreachable string
}

// Proxy is the allowlist proxy: HTTP (absolute-URI requests and CONNECT) and
// SOCKS5 on the same connections, told apart by the first byte. It gets its
// connections from the box as file descriptors (see Serve).
type Proxy struct {
	rules   *Rules
	opts    Options
	secrets []Secret   // opts.Secrets, compiled
	red     *redaction // what the box never receives (redact.go)

	// dial connects upstream; tests replace it to reach a local server
	// where a public address was resolved.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	allowed, denied atomic.Int64
	serving         atomic.Int64 // connections from the box being served
	logMu           sync.Mutex
	firstDenied     string // guarded by logMu

	ctx    context.Context // cancelled by Close, so no lookup or dial outlives it
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	conns   map[io.Closer]struct{}
	ch      *net.UnixConn // the host's end of the pair, once Serve has it
	chReady chan struct{} // closed when ch is set
	wg      sync.WaitGroup
	once    sync.Once

	// forwardPort are the ports of the forwards (what the init listens
	// on in the box); askMu and sockets serve DialBox (pair_linux.go).
	forwardPort map[int]bool
	askMu       sync.Mutex
	sockets     chan boxSocket
}

// boxSocket is the init's answer when DialBox asks for a socket: the
// socket, or why there is none.
type boxSocket struct {
	fd  int // -1 with err
	err error
}

// New returns a proxy that decides by rules. It holds no file descriptor
// until Serve is called.
func New(rules *Rules, opts Options) (*Proxy, error) {
	if rules == nil {
		return nil, errors.New("netproxy: no rules")
	}
	for _, f := range opts.Forward {
		if _, _, err := splitHostPort(f, 0); err != nil {
			return nil, fmt.Errorf("forward target %q: %w", f, err)
		}
	}
	if len(opts.Forward) > maxForwards {
		return nil, fmt.Errorf("%d forwards, at most %d", len(opts.Forward), maxForwards)
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	secrets, err := compileSecrets(opts.Secrets)
	if err != nil {
		return nil, err
	}
	p := &Proxy{rules: rules, opts: opts, conns: map[io.Closer]struct{}{}, secrets: secrets,
		forwardPort: forwardPorts(opts.Forward), sockets: make(chan boxSocket, 4), chReady: make(chan struct{})}
	p.buildRedaction()
	p.dial = (&net.Dialer{}).DialContext
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Stats are a proxy's counts so far.
type Stats struct {
	// Allowed and Denied count connections (plain HTTP: requests);
	// descriptors refused because they were not a connected TCP socket
	// count as denied.
	Allowed, Denied int
	// FirstDenied is the first denial, "host:port (reason)"; "" when none.
	FirstDenied string
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return Stats{Allowed: int(p.allowed.Load()), Denied: int(p.denied.Load()), FirstDenied: p.firstDenied}
}

// retry reports whether an accept error is worth waiting out: running out of
// file descriptors passes as connections close.
func retry(err error) bool {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		time.Sleep(50 * time.Millisecond)
		return true
	}
	return false
}

// Close stops the proxy: the descriptor channel and every open connection
// (tunnels included) are closed, and Close waits for every goroutine the
// proxy started to end. Serve then returns nil.
func (p *Proxy) Close() error {
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.cancel()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return nil
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// track registers a connection so Close can close it, and counts its
// goroutine; false once closed.
func (p *Proxy) track(c io.Closer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(c io.Closer) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	p.wg.Done()
}

// addUpstream registers an upstream connection with the client's, so Close
// reaches it; false once closed.
func (p *Proxy) addUpstream(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) dropUpstream(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// serveConn tells SOCKS5 from HTTP by the first byte. c is the client's own
// TCP connection, received from the box (see Serve).
func (p *Proxy) serveConn(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	switch {
	case first[0] == socksVersion:
		p.serveSOCKS(c, br)
	case first[0] == 0x04:
		// SOCKS4 has no way to say "not supported" that every client
		// understands and no newline for the HTTP reader to wait for:
		// refuse it at once (request rejected, 0x5b) rather than let the
		// client wait for the handshake timeout.
		c.Write([]byte{0x00, 0x5b, 0, 0, 0, 0, 0, 0})
		p.record("socks4", "", Decision{Reason: "SOCKS4 is not supported; use SOCKS5 (socks5h://)"}, nil)
	default:
		p.serveHTTP(c, br)
	}
}

// serveForward connects c to a fixed target, checked like any request: on a
// denial or a failed connect the client's connection is simply closed. A
// target whose requests the proxy reads is read here too (Proxy.pass).
func (p *Proxy) serveForward(c net.Conn, target string) {
	h, port, _ := splitHostPort(target, 0) // checked by New
	up, _, d, err := p.open("forward", h, port)
	if !d.Allowed || err != nil {
		return
	}
	if hp, err := parseHost(h); err == nil && p.inspects(hp, port) {
		p.pass(c, bufio.NewReader(c), h, port, up)
		return
	}
	defer p.dropUpstream(up)
	pipe(c, up)
}

// open decides on host:port and, when allowed, resolves and connects. It
// logs and counts the outcome exactly once. On denial conn is nil and err is
// nil; when connecting fails, d is allowed and err says why.
func (p *Proxy) open(proto, raw string, port int) (conn net.Conn, target string, d Decision, err error) {
	h, herr := parseHost(raw)
	target = strconv.Quote(raw) + ":" + strconv.Itoa(port)
	if herr == nil {
		target = hostPort(h, port)
	}
	defer func() { p.record(proto, target, d, err) }()

	d, by := p.rules.check(raw, port)
	if sec := p.placeholderIn(raw, nil); sec != nil {
		// In a host name, a placeholder is on its way to whoever runs
		// that name's DNS.
		d = exfiltration(sec, "the host name", target)
	}
	if !d.Allowed {
		return nil, target, d, nil
	}
	ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	defer cancel()
	if p.viaUpstream(h, port) {
		// The upstream resolves and connects; plain HTTP is sent to it
		// as a request for the absolute URI (forward), the rest through
		// a CONNECT tunnel.
		if proto == "http" {
			conn, err = p.dialUpstream(ctx)
		} else {
			conn, err = p.connectUpstream(ctx, target)
		}
		if err == nil && !p.addUpstream(conn) {
			conn.Close()
			return nil, target, d, errors.New("proxy closed")
		}
		return conn, target, d, err
	}
	addrs := []netip.Addr{h.addr}
	if h.name != "" {
		// The proxy resolves: inside the box there is no DNS, and resolving
		// here, once, means the addresses vetted are the ones dialled.
		addrs, err = lookup(ctx, p.opts.Resolver, h.name)
		if err != nil {
			return nil, target, d, err
		}
		if d = p.rules.vet(h.name, port, by, addrs); !d.Allowed {
			return nil, target, d, nil
		}
	}
	for _, a := range addrs {
		conn, err = p.dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			if !p.addUpstream(conn) {
				conn.Close()
				return nil, target, d, errors.New("proxy closed")
			}
			return conn, target, d, nil
		}
	}
	return nil, target, d, err
}

// viaUpstream reports whether h:port is reached through the upstream.
func (p *Proxy) viaUpstream(h host, port int) bool {
	return p.opts.Upstream != nil && !p.opts.Upstream.direct(h, port)
}

// record counts a decision on a connection and writes its log line.
func (p *Proxy) record(proto, target string, d Decision, err error) {
	p.recordFull(proto, target, "", d, err)
}

// recordRequest counts a decision on a request the proxy read, and writes
// its log line.
func (p *Proxy) recordRequest(proto, target, request string, d Decision) {
	p.recordFull(proto, target, request, d, nil)
}

func (p *Proxy) recordFull(proto, target, request string, d Decision, err error) {
	if target == "" {
		target = "-"
	}
	if !p.red.empty() {
		// The log and the audit log name a secret, never its value or
		// the run's placeholder (a host name may carry one).
		target, request, d.Reason = p.redact(target), p.redact(request), p.redact(d.Reason)
	}
	verdict := "deny"
	if d.Allowed {
		verdict = "allow"
		p.allowed.Add(1)
	} else if p.denied.Add(1) == 1 {
		p.logMu.Lock()
		p.firstDenied = fmt.Sprintf("%s (%s)", target, d.Reason)
		p.logMu.Unlock()
	}
	if p.opts.Decided != nil {
		dec := Decided{Allowed: d.Allowed, Proto: proto, Target: target, Rule: d.Rule, Reason: d.Reason, Request: request}
		if d.Allowed && err != nil {
			dec.Unreachable = p.redact(unreachable(err))
		}
		p.opts.Decided(dec)
	}
	if p.opts.Log == nil {
		return
	}
	line := fmt.Sprintf("%s %s %s %s rule=%s reason=%s", time.Now().Format(time.RFC3339Nano), verdict, proto,
		logField(target), logQuote(d.Rule), logQuote(d.Reason))
	if request != "" {
		line += " request=" + logQuote(request)
	}
	if err != nil {
		line += " error=" + logQuote(p.redact(err.Error()))
	}
	p.logMu.Lock()
	defer p.logMu.Unlock()
	fmt.Fprintln(p.opts.Log, line)
}

// unreachable says in a few words why an allowed host could not be
// reached, from the error of resolving or connecting to it.
func unreachable(err error) string {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return "its name does not resolve (" + dns.Err + ")"
	case errors.As(err, &dns):
		return "resolving its name failed: " + dns.Err
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (nothing listens there)"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to the host"
	case errors.Is(err, syscall.ENETUNREACH):
		return "the network is unreachable"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "no answer within " + dialTimeout.String()
	}
	return err.Error()
}

// denial is the one-line explanation a denied client gets.
func denial(target string, d Decision) string {
	return fmt.Sprintf("agentbox: %s denied: %s\n", target, d.Reason)
}

// tunnel hands over a connection whose handshake is done: bytes the client
// already sent past the handshake go first, then both ways are copied.
func tunnel(client net.Conn, br *bufio.Reader, up net.Conn) {
	client.SetReadDeadline(time.Time{})
	if err := flush(up, br); err != nil {
		return
	}
	pipe(client, up)
}

// closeWriter is a connection that can half-close: TCP and unix stream.
type closeWriter interface{ CloseWrite() error }

// pipe copies a to b and b to a until both directions end, then closes both.
// Both ends are TCP connections (the client's lives in the box's network
// namespace, the upstream one in the host's), so io.Copy uses splice(2) on
// Linux and the bytes never pass through this process's memory. An end of stream
// in one direction is passed on as a half-close, so a client that finishes
// sending still gets the whole answer.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		copyHalf(a, b)
	}()
	copyHalf(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// copyHalf copies src to dst, then half-closes dst; on an error it closes
// both so the other direction ends too.
func copyHalf(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(closeWriter); ok {
		cw.CloseWrite()
		return
	}
	dst.Close()
}

// The log's text comes partly from the box (the host a client asked for),
// and a log is read by terminals, pagers, scripts and, should it ever land
// in one, shells. So a field is written bare only when it is made of the
// characters a host and port are (logField), and quoted otherwise
// (logQuote): a Go-quoted string in which control characters, escape
// sequences and every non-printable character are escapes, and $ and `,
// which a shell would expand even inside double quotes, are \x24 and \x60.

// logField writes a target bare when it is a plain host:port; one that
// open already quoted (an invalid host, as "raw":port) with $ and `
// neutralised; anything else quoted.
func logField(s string) string {
	plain := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-_:[]*%", c)) {
			plain = false
			break
		}
	}
	switch {
	case plain:
		return s
	case strings.HasPrefix(s, `"`) && strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) < 0:
		return shellInert.Replace(s)
	}
	return logQuote(s)
}

var shellInert = strings.NewReplacer("$", `\x24`, "`", `\x60`)

// logQuote quotes s so that nothing reading the log can be made to run or
// render it.
func logQuote(s string) string {
	return shellInert.Replace(strconv.Quote(s))
}

// forwardPorts are the ports of the forward targets: what the init listens
// on in the box, and may ask agentbox to bind (pair_linux.go).
func forwardPorts(targets []string) map[int]bool {
	out := map[int]bool{}
	for _, t := range targets {
		if _, p, err := splitHostPort(t, 0); err == nil {
			out[p] = true
		}
	}
	return out
}
