package netproxy

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// webServer answers with the host, path and any proxy header that leaked.
func webServer(t *testing.T) (*httptest.Server, int) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Host, r.URL.Path)
		for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Hop"} {
			if v := r.Header.Get(h); v != "" {
				fmt.Fprintf(w, " leaked %s=%s", h, v)
			}
		}
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, " body=%s", b)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, srv.Listener.Addr().(*net.TCPAddr).Port
}

func TestHTTPPlain(t *testing.T) {
	srv, port := webServer(t)
	b := startBox(t, []string{"example.test", "*.wild.test", "127.0.0.1:" + strconv.Itoa(port)}, []string{"evil.wild.test"},
		boxOptions{publicTo: srv.Listener.Addr().String()})
	proxy, _ := url.Parse("http://user:secret@" + b.addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	defer client.CloseIdleConnections()

	p := strconv.Itoa(port)
	tests := []struct {
		name   string
		url    string
		status int
		body   string
	}{
		{name: "allowed exact", url: "http://example.test:" + p + "/hi", status: 200, body: "hello example.test:" + p + " /hi"},
		{name: "allowed upper case and dot", url: "http://EXAMPLE.test.:" + p + "/hi", status: 200, body: "hello example.test:" + p + " /hi"},
		{name: "allowed wildcard public", url: "http://pub.wild.test:" + p + "/", status: 200, body: "hello pub.wild.test:" + p + " /"},
		{name: "allowed address", url: "http://127.0.0.1:" + p + "/", status: 200, body: "hello 127.0.0.1:" + p + " /"},
		{name: "denied no rule", url: "http://other.test:" + p + "/", status: 403,
			body: "agentbox: other.test:" + p + " denied: no allow rule matches\n"},
		{name: "denied deny rule", url: "http://evil.wild.test:" + p + "/", status: 403,
			body: "agentbox: evil.wild.test:" + p + ` denied: matches deny rule "evil.wild.test"` + "\n"},
		{name: "denied rebinding", url: "http://a.wild.test:" + p + "/", status: 403,
			body: "agentbox: a.wild.test:" + p + " denied: a.wild.test resolves to 127.0.0.1 (loopback), which a wildcard rule never reaches\n"},
		{name: "denied 127.1 other port", url: "http://127.1:1/", status: 403,
			body: "agentbox: 127.0.0.1:1 denied: no allow rule matches\n"},
		{name: "denied decimal address", url: "http://2130706433:1/", status: 403,
			body: "agentbox: 127.0.0.1:1 denied: no allow rule matches\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client.Get(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if diff := cmp.Diff(fmt.Sprint(tc.status, " ", tc.body), fmt.Sprint(resp.StatusCode, " ", string(body))); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", tc.url, diff)
			}
		})
	}
	logHas(t, b.log.String(), "allow http example.test:"+p, `rule="example.test"`)
	logHas(t, b.log.String(), "deny http other.test:"+p, `rule=""`, `reason="no allow rule matches"`)
	logHas(t, b.log.String(), "deny http a.wild.test:"+p, `rule="*.wild.test"`, "(loopback)")
	st := b.p.Stats()
	want := Stats{Allowed: 4, Denied: 5, FirstDenied: "other.test:" + p + " (no allow rule matches)"}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Stats() (-want +got):\n%s", diff)
	}
}

// TestHTTPKeepAlive sends several requests on one client connection: each is
// checked on its own host, hop-by-hop headers do not reach the origin, and a
// request body arrives.
func TestHTTPKeepAlive(t *testing.T) {
	_, port := webServer(t)
	b := startBox(t, []string{"example.test", "other.test"}, nil, boxOptions{})
	c, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	send := func(req string) (int, string, bool) {
		t.Helper()
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Close
	}
	p := strconv.Itoa(port)
	type answer struct {
		Status int
		Body   string
		Close  bool
	}
	var got []answer
	for _, req := range []string{
		"GET http://example.test:" + p + "/one HTTP/1.1\r\nHost: example.test\r\nProxy-Connection: keep-alive\r\nConnection: X-Hop\r\nX-Hop: secret\r\n\r\n",
		"POST http://other.test:" + p + "/two HTTP/1.1\r\nHost: evil.test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
		"GET http://evil.test:" + p + "/three HTTP/1.1\r\nHost: example.test\r\n\r\n",
	} {
		s, body, closed := send(req)
		if s == 100 {
			s, body, closed = send("")
		}
		got = append(got, answer{s, body, closed})
	}
	want := []answer{
		{200, "hello example.test:" + p + " /one", false},
		{200, "hello other.test:" + p + " /two body=hello", false},
		{403, "agentbox: evil.test:" + p + " denied: no allow rule matches\n", true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

func TestCONNECT(t *testing.T) {
	srv := serveTCP(t, "tcp", "127.0.0.1:0", echo)
	b := startBox(t, []string{"example.test", "*.wild.test"}, nil, boxOptions{})
	p := strconv.Itoa(srv.port())
	tests := []struct {
		name   string
		target string
		status int
		body   string
	}{
		{name: "allowed", target: "example.test:" + p, status: 200},
		{name: "allowed trailing dot", target: "example.test.:" + p, status: 200},
		{name: "denied", target: "evil.test:" + p, status: 403, body: "agentbox: evil.test:" + p + " denied: no allow rule matches\n"},
		{name: "denied 127.1", target: "127.1:" + p, status: 403, body: "agentbox: 127.0.0.1:" + p + " denied: no allow rule matches\n"},
		{name: "denied mapped", target: "[::ffff:127.0.0.1]:" + p, status: 403, body: "agentbox: 127.0.0.1:" + p + " denied: no allow rule matches\n"},
		{name: "denied rebinding", target: "a.wild.test:" + p, status: 403,
			body: "agentbox: a.wild.test:" + p + " denied: a.wild.test resolves to 127.0.0.1 (loopback), which a wildcard rule never reaches\n"},
		{name: "denied userinfo", target: "example.test@evil.test:" + p, status: 403,
			body: `agentbox: "example.test@evil.test":` + p + ` denied: invalid host: host "example.test@evil.test": character '@' not allowed` + "\n"},
		{name: "denied escape", target: "ex%61mple.test:" + p, status: 400,
			body: `agentbox: bad proxy request: parse "http://ex%61mple.test:` + p + `": invalid URL escape "%61"` + "\n"},
		{name: "no port", target: "example.test", status: 400, body: `agentbox: bad CONNECT target "example.test": want host:port` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, br, resp := connectVia(t, b.addr, tc.target)
			defer c.Close()
			body := ""
			if resp.StatusCode == 200 {
				if got := roundTrip(t, c, br, "ping"); got != "ping" {
					t.Errorf("echo = %q, want ping", got)
				}
			} else {
				bb, _ := io.ReadAll(resp.Body)
				body = string(bb)
			}
			if diff := cmp.Diff(fmt.Sprint(tc.status, " ", tc.body), fmt.Sprint(resp.StatusCode, " ", body)); diff != "" {
				t.Errorf("CONNECT %s (-want +got):\n%s", tc.target, diff)
			}
		})
	}
	logHas(t, b.log.String(), "allow connect example.test:"+p)
	logHas(t, b.log.String(), "deny connect evil.test:"+p)
}

func TestSOCKS5(t *testing.T) {
	srv := serveTCP(t, "tcp", "127.0.0.1:0", echo)
	port := srv.port()
	p := strconv.Itoa(port)
	allow := []string{"example.test", "127.0.0.1:" + p}
	srv6, err := net.Listen("tcp", "[::1]:0")
	have6 := err == nil
	if have6 {
		srv6.Close()
		s6 := serveTCP(t, "tcp", "[::1]:"+p, echo) // same port, so one rule list covers both
		allow = append(allow, "[::1]:"+strconv.Itoa(s6.port()))
	}
	b := startBox(t, allow, nil, boxOptions{})
	tests := []struct {
		name  string
		addr  []byte
		need6 bool
		want  byte
	}{
		{name: "domain allowed", addr: socksName("example.test"), want: socksOK},
		{name: "domain upper case allowed", addr: socksName("Example.TEST."), want: socksOK},
		{name: "ipv4 allowed", addr: socksAddr("127.0.0.1"), want: socksOK},
		{name: "ipv4-mapped ipv6 allowed", addr: socksAddr("::ffff:127.0.0.1"), want: socksOK},
		{name: "domain 127.1 allowed as address", addr: socksName("127.1"), want: socksOK},
		{name: "ipv6 allowed", addr: socksAddr("::1"), need6: true, want: socksOK},
		{name: "domain denied", addr: socksName("evil.test"), want: socksNotAllowed},
		{name: "domain decimal not localhost", addr: socksName("2130706434"), want: socksNotAllowed},
		{name: "domain NUL", addr: socksName("example.test\x00evil"), want: socksNotAllowed},
		{name: "domain CRLF", addr: socksName("example.test\r\n"), want: socksNotAllowed},
		{name: "domain space", addr: socksName("example.test "), want: socksNotAllowed},
		{name: "ipv4 denied", addr: socksAddr("127.0.0.2"), want: socksNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.need6 && !have6 {
				needed(t, "no IPv6 loopback here")
			}
			c, br, code := socksVia(t, b.addr, tc.addr, port)
			defer c.Close()
			if code != tc.want {
				t.Fatalf("reply %#x, want %#x", code, tc.want)
			}
			if code == socksOK {
				if got := roundTrip(t, c, br, "ping"); got != "ping" {
					t.Errorf("echo = %q, want ping", got)
				}
			}
		})
	}
	logHas(t, b.log.String(), "allow socks5 example.test:"+p)
	logHas(t, b.log.String(), "deny socks5 evil.test:"+p, "no allow rule matches")
	logHas(t, b.log.String(), `deny socks5 "example.test\x00evil":`+p)
}

func TestSOCKS5Refusals(t *testing.T) {
	b := startBox(t, []string{"example.test"}, nil, boxOptions{})
	tests := []struct {
		name string
		send []byte
		want []byte
	}{
		{name: "no acceptable method", send: []byte{5, 1, 2}, want: []byte{5, 0xff}},
		{name: "bind command", send: []byte{5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80},
			want: []byte{5, 0, 5, socksNoCommand, 0, 1, 0, 0, 0, 0, 0, 0}},
		{name: "unknown address type", send: []byte{5, 1, 0, 5, 1, 0, 9},
			want: []byte{5, 0, 5, socksNoAddrType, 0, 1, 0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", b.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write(tc.send)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, _ := io.ReadAll(c) // the proxy closes after refusing
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLargeTransfer sends 256 MiB down a CONNECT tunnel and 64 MiB up one,
// and compares SHA-256 at both ends. The upload ends with a half-close: the
// server answers with its hash only after it has read to the end, so the
// end of stream must cross bridge and proxy while the way back stays open.
func TestLargeTransfer(t *testing.T) {
	if testing.Short() {
		t.Skip("large transfer")
	}
	const down, up = 256 << 20, 64 << 20
	source := serveTCP(t, "tcp", "127.0.0.1:0", func(c *net.TCPConn) {
		writeStream(c, down)
		c.CloseWrite()
	})
	sink := serveTCP(t, "tcp", "127.0.0.1:0", func(c *net.TCPConn) {
		h := sha256.New()
		io.Copy(h, c)
		io.WriteString(c, hex.EncodeToString(h.Sum(nil)))
		c.CloseWrite()
	})
	b := startBox(t, []string{"example.test"}, nil, boxOptions{})

	want := sha256.New()
	writeStream(want, down)
	c, br, resp := connectVia(t, b.addr, "example.test:"+strconv.Itoa(source.port()))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT status %d", resp.StatusCode)
	}
	got := sha256.New()
	n, err := io.Copy(got, br)
	c.Close()
	if err != nil || n != down || !cmp.Equal(want.Sum(nil), got.Sum(nil)) {
		t.Errorf("download: %d bytes, err %v, sha256 %x; want %d bytes, sha256 %x", n, err, got.Sum(nil), down, want.Sum(nil))
	}

	want.Reset()
	writeStream(want, up)
	c, br, resp = connectVia(t, b.addr, "example.test:"+strconv.Itoa(sink.port()))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT status %d", resp.StatusCode)
	}
	defer c.Close()
	if err := writeStream(c, up); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	answer, err := io.ReadAll(br)
	if err != nil || string(answer) != hex.EncodeToString(want.Sum(nil)) {
		t.Errorf("upload: server hashed %q (err %v), want %x", answer, err, want.Sum(nil))
	}
}

// writeStream writes n bytes of a fixed pseudo-random stream.
func writeStream(w io.Writer, n int) error {
	const block = 1 << 20
	buf := make([]byte, block)
	rand.NewChaCha8([32]byte{1}).Read(buf)
	for i := 0; i < n/block; i++ {
		binary.BigEndian.PutUint64(buf, uint64(i)) // no two blocks alike
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// TestCloseLeavesNothing closes the proxy under an open tunnel and an idle
// client, and checks that every goroutine and descriptor is gone and that
// the clients see the end.
func TestCloseLeavesNothing(t *testing.T) {
	// The runtime's network poller opens its own descriptors on first use.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
	}
	before, fdsBefore := runtime.NumGoroutine(), openFDs(t)
	srv := serveTCP(t, "tcp", "127.0.0.1:0", echo)
	b := startBox(t, []string{"example.test"}, nil, boxOptions{})

	tunnel, br, resp := connectVia(t, b.addr, "example.test:"+strconv.Itoa(srv.port()))
	defer tunnel.Close()
	if resp.StatusCode != 200 || roundTrip(t, tunnel, br, "ping") != "ping" {
		t.Fatal("tunnel does not work")
	}
	idle, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	time.Sleep(50 * time.Millisecond) // let the proxy receive the idle one

	b.close(t)
	for _, c := range []net.Conn{tunnel, idle} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("client after Close: %v, want EOF", err)
		}
		c.Close()
	}
	srv.close()
	deadline := time.Now().Add(10 * time.Second)
	for (runtime.NumGoroutine() > before || openFDs(t) > fdsBefore) && time.Now().Before(deadline) {
		// splice(2) goes through pipes that the runtime keeps in a
		// sync.Pool and closes when they are collected.
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	if n := openFDs(t); n > fdsBefore {
		t.Errorf("%d descriptors open, %d before", n, fdsBefore)
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		needed(t, "no /proc/self/fd: "+err.Error())
	}
	return len(ents)
}

// TestBoxEnds closes the box's end of the pair, as the kernel does when the
// box's last process ends: Serve returns by itself, and a connection the box
// accepts afterwards is closed unanswered (fail closed).
func TestBoxEnds(t *testing.T) {
	b := startBox(t, []string{"example.test"}, nil, boxOptions{})
	c, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT nowhere.test:1 HTTP/1.1\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 403 {
		t.Fatalf("before the end: %v %v, want 403", resp, err)
	}
	// The test holds the box's end as the init would: closing it is the
	// box's end. The relays still run, as an init would until it exits.
	b.ch.Close()
	select {
	case err := <-b.served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		b.served <- nil // for close
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return when the box's end closed")
	}
	d, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	io.WriteString(d, "CONNECT example.test:1 HTTP/1.1\r\n\r\n")
	d.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, _ := io.ReadAll(d); len(got) != 0 {
		t.Errorf("after the end: read %q, want a plain close", got)
	}
}

// TestCurl drives the real curl through the bridge, as a program in the box
// would be driven by HTTP_PROXY and ALL_PROXY.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		needed(t, "curl not installed")
	}
	_, port := webServer(t)
	b := startBox(t, []string{"example.test", "*.wild.test"}, nil, boxOptions{})
	p := strconv.Itoa(port)
	tests := []struct {
		name string
		args []string
		out  string // part of stdout and stderr
		ok   bool
	}{
		{name: "http proxy", args: []string{"-x", "http://" + b.addr, "http://example.test:" + p + "/a"}, out: "hello example.test:" + p + " /a", ok: true},
		{name: "http proxy tunnel", args: []string{"-p", "-x", "http://" + b.addr, "http://example.test:" + p + "/b"}, out: "hello example.test:" + p + " /b", ok: true},
		{name: "socks5h", args: []string{"--socks5-hostname", b.addr, "http://example.test:" + p + "/c"}, out: "hello example.test:" + p + " /c", ok: true},
		{name: "http proxy denied", args: []string{"-x", "http://" + b.addr, "http://evil.test:" + p + "/"}, out: "agentbox: evil.test:" + p + " denied: no allow rule matches", ok: true},
		{name: "http proxy denied fails", args: []string{"-f", "-x", "http://" + b.addr, "http://evil.test:" + p + "/"}, out: "403"},
		{name: "tunnel denied", args: []string{"-p", "-x", "http://" + b.addr, "http://evil.test:" + p + "/"}, out: "403"},
		{name: "socks5h denied", args: []string{"--socks5-hostname", b.addr, "http://evil.test:" + p + "/"}, out: "evil.test"},
		{name: "rebinding denied", args: []string{"-x", "http://" + b.addr, "http://a.wild.test:" + p + "/"}, out: "(loopback)", ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(curl, append([]string{"-sS", "--max-time", "10"}, tc.args...)...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} // no proxy variables of our own
			out, err := cmd.CombinedOutput()
			if (err == nil) != tc.ok || !strings.Contains(string(out), tc.out) {
				t.Errorf("curl %q: err %v, output %q; want ok=%v and %q", tc.args, err, out, tc.ok, tc.out)
			}
		})
	}
}

// TestForward reaches a host service through a port forward, the way a dev
// server on the host's localhost:PORT is reached (issue item 5), and checks
// that a forward to a port the policy does not name is closed.
func TestForward(t *testing.T) {
	srv := serveTCP(t, "tcp", "127.0.0.1:0", echo)
	p := strconv.Itoa(srv.port())
	b := startBox(t, []string{"localhost:" + p}, nil, boxOptions{forward: []string{"localhost:" + p, "localhost:1"}})

	c, err := net.Dial("tcp", b.fwd[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := roundTrip(t, c, c, "ping"); got != "ping" {
		t.Errorf("echo = %q, want ping", got)
	}

	d, err := net.Dial("tcp", b.fwd[1])
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := io.ReadAll(d); len(got) != 0 || err != nil {
		t.Errorf("denied forward read %q, %v; want a plain close", got, err)
	}
	logHas(t, b.log.String(), "allow forward localhost:"+p)
	logHas(t, b.log.String(), "deny forward localhost:1", "no allow rule matches")

	if _, err := New(&Rules{}, Options{Forward: []string{"no-port"}}); err == nil || !strings.Contains(err.Error(), `forward target "no-port"`) {
		t.Errorf("New with a bad forward: %v, want an error naming it", err)
	}
}
