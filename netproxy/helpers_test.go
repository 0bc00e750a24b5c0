package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
)

// publicTestAddr stands for a public address in tests: the resolver may
// return it, and the test dialler sends it to a local server instead.
var publicTestAddr = netip.MustParseAddr("203.0.113.7")

// fakeResolver maps names to addresses; anything else does not exist.
type fakeResolver map[string][]string

func (f fakeResolver) LookupIPAddr(_ context.Context, name string) ([]net.IPAddr, error) {
	var out []net.IPAddr
	for _, a := range f[name] {
		out = append(out, net.IPAddr{IP: net.ParseIP(a)})
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	return out, nil
}

var testResolver = fakeResolver{
	"example.test":  {"127.0.0.1"},
	"other.test":    {"127.0.0.1"},
	"evil.test":     {"127.0.0.1"},
	"a.wild.test":   {"127.0.0.1"},             // rebinding attempt through a wildcard
	"pub.wild.test": {publicTestAddr.String()}, // a public host under a wildcard
	"localhost":     {"127.0.0.1", "::1"},
	"api.test":      {"127.0.0.1"}, // a secret's host
	"gh.test":       {"127.0.0.1"}, // request rules
}

// syncBuffer is a log that tests read while the proxy writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// box is a running proxy with the box's end, as the sandbox would have
// them: a socket pair, Relay on a loopback port for the proxy and one per
// forward, and Serve on the host end.
type box struct {
	p      *Proxy
	addr   string   // the proxy port: 127.0.0.1:PORT
	fwd    []string // the forward ports, in the order of boxOptions.forward
	log    *syncBuffer
	lns    []net.Listener
	ch     *net.UnixConn // the box's end of the pair
	served chan error
	relays chan error
	once   sync.Once
}

type boxOptions struct {
	forward []string
	// publicTo is where the test dialler sends publicTestAddr.
	publicTo string
	upstream *Upstream
	secrets  []Secret
	ca       *Authority
	roots    *x509.CertPool
	decided  func(Decided)
}

// startBox starts a proxy and its relays; Cleanup closes them.
func startBox(tb testing.TB, allow, deny []string, o boxOptions) *box {
	tb.Helper()
	rules, err := Compile(allow, deny)
	if err != nil {
		tb.Fatal(err)
	}
	log := &syncBuffer{}
	p, err := New(rules, Options{Log: log, Resolver: testResolver, Forward: o.forward, Upstream: o.upstream,
		Secrets: o.secrets, Authority: o.ca, RootCAs: o.roots, Decided: o.decided})
	if err != nil {
		tb.Fatal(err)
	}
	// Tests never leave loopback: a public address goes to a local server
	// and anything else that is not loopback is an error.
	p.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, err
		}
		switch {
		case ap.Addr() == publicTestAddr && o.publicTo != "":
			addr = o.publicTo
		case !ap.Addr().IsLoopback():
			return nil, fmt.Errorf("test dialler: %s is not loopback", addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	host, boxEnd, err := Pair()
	if err != nil {
		tb.Fatal(err)
	}
	ch, err := Channel(boxEnd)
	boxEnd.Close()
	if err != nil {
		tb.Fatal(err)
	}
	b := &box{p: p, log: log, ch: ch, served: make(chan error, 1), relays: make(chan error, 1+len(o.forward))}
	go func() { b.served <- p.Serve(host) }()
	for i := 0; i <= len(o.forward); i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		b.lns = append(b.lns, ln)
		if i == 0 {
			b.addr = ln.Addr().String()
		} else {
			b.fwd = append(b.fwd, ln.Addr().String())
		}
		go func() { b.relays <- Relay(ln, ch, byte(i)) }()
	}
	tb.Cleanup(func() { b.close(tb) })
	return b
}

// close ends the box (its listeners, then its end of the pair) and then the
// proxy, and checks that all ended cleanly.
func (b *box) close(tb testing.TB) {
	b.once.Do(func() {
		for _, ln := range b.lns {
			ln.Close()
		}
		for range b.lns {
			if err := <-b.relays; err != nil {
				tb.Errorf("Relay: %v", err)
			}
		}
		b.ch.Close()
		if err := b.p.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
		if err := <-b.served; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
}

// tcpServer is a local TCP server that Cleanup stops with all its
// connections.
type tcpServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
	once  sync.Once
}

func serveTCP(tb testing.TB, network, addr string, handle func(*net.TCPConn)) *tcpServer {
	tb.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		tb.Fatal(err)
	}
	s := &tcpServer{ln: ln, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = true
			s.wg.Add(1)
			s.mu.Unlock()
			go func() {
				defer s.wg.Done()
				defer c.Close()
				handle(c.(*net.TCPConn))
			}()
		}
	}()
	tb.Cleanup(s.close)
	return s
}

func (s *tcpServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func (s *tcpServer) close() {
	s.once.Do(func() {
		s.ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
}

// echo sends back what it reads, then half-closes.
func echo(c *net.TCPConn) {
	io.Copy(c, c)
	c.CloseWrite()
}

// connectVia opens a CONNECT tunnel through the box and returns the
// proxy's answer; on 200 the reader carries the tunnel.
func connectVia(tb testing.TB, bridge, target string) (net.Conn, *bufio.Reader, *http.Response) {
	tb.Helper()
	c, err := net.Dial("tcp", bridge)
	if err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReaderSize(c, 64<<10)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		tb.Fatalf("CONNECT %s: %v", target, err)
	}
	return c, br, resp
}

// socksVia opens a SOCKS5 connection through the box and returns the
// reply code. addr is the raw address field: type byte, then the address.
func socksVia(tb testing.TB, bridge string, addr []byte, port int) (net.Conn, *bufio.Reader, byte) {
	tb.Helper()
	c, err := net.Dial("tcp", bridge)
	if err != nil {
		tb.Fatal(err)
	}
	req := []byte{5, 1, 0, 5, 1, 0}
	req = append(req, addr...)
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		tb.Fatal(err)
	}
	br := bufio.NewReader(c)
	var reply [12]byte
	if _, err := io.ReadFull(br, reply[:2]); err != nil {
		tb.Fatalf("SOCKS5 greeting reply: %v", err)
	}
	if reply[1] != 0 {
		tb.Fatalf("SOCKS5 method %#x, want 0", reply[1])
	}
	if _, err := io.ReadFull(br, reply[:4]); err != nil {
		tb.Fatalf("SOCKS5 reply: %v", err)
	}
	n := 4 + 2
	if reply[3] == 4 {
		n = 16 + 2
	}
	if _, err := io.ReadFull(br, make([]byte, n)); err != nil {
		tb.Fatalf("SOCKS5 reply address: %v", err)
	}
	return c, br, reply[1]
}

func socksName(name string) []byte { return append([]byte{3, byte(len(name))}, name...) }

func socksAddr(a string) []byte {
	ip := netip.MustParseAddr(a)
	if ip.Is4() {
		return append([]byte{1}, ip.AsSlice()...)
	}
	b := ip.As16()
	return append([]byte{4}, b[:]...)
}

// roundTrip writes msg on a tunnel to an echo server and reads it back.
func roundTrip(tb testing.TB, c net.Conn, r io.Reader, msg string) string {
	tb.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		tb.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(r, got); err != nil {
		tb.Fatalf("reading echo: %v", err)
	}
	return string(got)
}

// mustNotExist fails unless path is gone.
func mustNotExist(tb testing.TB, path string) {
	tb.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		tb.Errorf("%s still exists (err %v)", path, err)
	}
}

// logHas fails unless the log has a line with every part.
func logHas(tb testing.TB, log string, parts ...string) {
	tb.Helper()
	for _, line := range strings.Split(log, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return
		}
	}
	tb.Errorf("no log line with %q in:\n%s", parts, log)
}

// needed skips the test with reason, or fails it when AGENTBOX_MUST_WORK=1
// says that everything must run, so nothing silently stops being tested.
func needed(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("AGENTBOX_MUST_WORK") == "1" {
		t.Fatalf("%s (and AGENTBOX_MUST_WORK=1)", reason)
	}
	t.Skip(reason)
}
