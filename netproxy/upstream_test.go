package netproxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstreamStandIn is a corporate proxy on 127.0.0.1 that records what it
// was asked and resolves names by its own map (the box's proxy never
// resolves them when an upstream is set).
type upstreamStandIn struct {
	*tcpServer
	names map[string]string // name -> the address it stands for
	deny  bool              // answer 407 to everything

	mu    sync.Mutex
	asked []string // "CONNECT host:port auth" or "GET http://... auth"
}

func startUpstream(tb testing.TB, names map[string]string) *upstreamStandIn {
	u := &upstreamStandIn{names: names}
	u.tcpServer = serveTCP(tb, "tcp4", "127.0.0.1:0", u.serve)
	return u
}

func (u *upstreamStandIn) Asked() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.asked...)
}

func (u *upstreamStandIn) serve(c *net.TCPConn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	u.mu.Lock()
	u.asked = append(u.asked, strings.TrimSpace(req.Method+" "+req.RequestURI+" "+req.Header.Get("Proxy-Authorization")))
	u.mu.Unlock()
	if u.deny {
		io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
		return
	}
	hostPort := req.Host
	h, p, _ := net.SplitHostPort(hostPort)
	if a, ok := u.names[h]; ok {
		hostPort = net.JoinHostPort(a, p)
	}
	up, err := net.Dial("tcp", hostPort)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	if req.Method == http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
	} else {
		req.Header.Del("Proxy-Authorization")
		req.Write(up)
	}
	go func() { io.Copy(up, br); up.(*net.TCPConn).CloseWrite() }()
	io.Copy(c, up)
}

// TestUpstream: allowed hosts are reached through the upstream, which
// resolves them, with its credentials; denied hosts are never asked
// about; the credentials never reach the log; a refused or unreachable
// upstream is a 502 that names it, at once.
func TestUpstream(t *testing.T) {
	echoSrv := serveTCP(t, "tcp4", "127.0.0.1:0", echo)
	web := serveTCP(t, "tcp4", "127.0.0.1:0", func(c *net.TCPConn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(req.Host+req.URL.Path), req.Host+req.URL.Path)
	})
	up := startUpstream(t, map[string]string{"far.test": "127.0.0.1", "x.wild.test": "127.0.0.1"})
	upAddr := "127.0.0.1:" + strconv.Itoa(up.port())
	newBox := func(t *testing.T, u *Upstream) *box {
		return startBox(t, []string{"far.test", "*.wild.test", "example.test", "127.0.0.1:" + strconv.Itoa(echoSrv.port())}, []string{"evil.wild.test"},
			boxOptions{upstream: u})
	}
	creds := &Upstream{Addr: upAddr, Credentials: "alice:s3cret", NoProxy: []string{".direct.test", "example.test"}}
	b := newBox(t, creds)
	ep := strconv.Itoa(echoSrv.port())

	// far.test is unknown to the box's resolver: only the upstream can
	// reach it.
	c, br, resp := connectVia(t, b.addr, "far.test:"+ep)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT far.test through the upstream: %s", resp.Status)
	}
	if got := roundTrip(t, c, br, "through"); got != "through" {
		t.Errorf("echo %q", got)
	}
	c.Close()
	// A wildcard's subdomain that resolves to loopback: the upstream
	// resolves, so the rebinding check cannot apply (the README says so).
	c, _, resp = connectVia(t, b.addr, "x.wild.test:"+ep)
	c.Close()
	if resp.StatusCode != 200 {
		t.Errorf("CONNECT x.wild.test: %s", resp.Status)
	}
	// Denied: never asked.
	for _, target := range []string{"evil.wild.test:" + ep, "other.test:" + ep} {
		c, _, resp = connectVia(t, b.addr, target)
		c.Close()
		if resp.StatusCode != 403 {
			t.Errorf("CONNECT %s: %s, want 403", target, resp.Status)
		}
	}
	// NO_PROXY: example.test is reached directly (the box's resolver has
	// it), and loopback always is.
	c, br, resp = connectVia(t, b.addr, "example.test:"+ep)
	if resp.StatusCode != 200 || roundTrip(t, c, br, "direct") != "direct" {
		t.Errorf("CONNECT example.test directly: %s", resp.Status)
	}
	c.Close()
	c, _, resp = connectVia(t, b.addr, "127.0.0.1:"+ep)
	c.Close()
	if resp.StatusCode != 200 {
		t.Errorf("CONNECT 127.0.0.1: %s", resp.Status)
	}
	// Plain HTTP goes to the upstream as an absolute URI.
	wp := strconv.Itoa(web.port())
	hc, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(hc, "GET http://far.test:%s/page HTTP/1.1\r\nHost: far.test:%s\r\nProxy-Authorization: Basic Ym94OmJveA==\r\n\r\n", wp, wp)
	hresp, err := http.ReadResponse(bufio.NewReader(hc), nil)
	if err != nil || hresp.StatusCode != 200 {
		t.Fatalf("plain HTTP through the upstream: %v %v", hresp, err)
	}
	body, _ := io.ReadAll(hresp.Body)
	hc.Close()
	if string(body) != "far.test:"+wp+"/page" {
		t.Errorf("plain HTTP body %q", body)
	}
	auth := "Basic YWxpY2U6czNjcmV0" // alice:s3cret
	want := []string{
		"CONNECT far.test:" + ep + " " + auth,
		"CONNECT x.wild.test:" + ep + " " + auth,
		"GET http://far.test:" + wp + "/page " + auth, // the box's own Proxy-Authorization is not passed on
	}
	if got := up.Asked(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the upstream was asked:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	log := b.log.String()
	for _, secret := range []string{"s3cret", "YWxpY2U6czNjcmV0", "alice"} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds %q:\n%s", secret, log)
		}
	}

	t.Run("refused", func(t *testing.T) {
		refusing := startUpstream(t, nil)
		refusing.deny = true
		b := newBox(t, &Upstream{Addr: "127.0.0.1:" + strconv.Itoa(refusing.port())})
		c, br, resp := connectVia(t, b.addr, "far.test:443")
		defer c.Close()
		body, _ := io.ReadAll(io.LimitReader(br, 4096))
		if resp.StatusCode != 502 || !strings.Contains(string(body), "upstream proxy 127.0.0.1:"+strconv.Itoa(refusing.port())) ||
			!strings.Contains(string(body), "407 Proxy Authentication Required") {
			t.Errorf("refused by the upstream: %s %q", resp.Status, body)
		}
	})
	t.Run("down", func(t *testing.T) {
		ln, _ := net.Listen("tcp4", "127.0.0.1:0")
		dead := ln.Addr().String()
		ln.Close()
		b := newBox(t, &Upstream{Addr: dead})
		start := time.Now()
		c, br, resp := connectVia(t, b.addr, "far.test:443")
		defer c.Close()
		body, _ := io.ReadAll(io.LimitReader(br, 4096))
		if resp.StatusCode != 502 || !strings.Contains(string(body), "upstream proxy "+dead) || !strings.Contains(string(body), "connection refused") {
			t.Errorf("upstream down: %s %q", resp.Status, body)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the 502 took %v", d)
		}
		logHas(t, b.log.String(), "allow connect far.test:443", "upstream proxy "+dead)
	})
}

func TestNoProxyMatch(t *testing.T) {
	for _, tc := range []struct {
		entry, host string
		port        int
		want        bool
	}{
		{"*", "any.test", 443, true},
		{"corp.test", "corp.test", 443, true},
		{"corp.test", "a.b.corp.test", 443, true},
		{"corp.test", "notcorp.test", 443, false},
		{".corp.test", "corp.test", 443, false},
		{".corp.test", "a.corp.test", 443, true},
		{"*.corp.test", "a.corp.test", 443, true},
		{"corp.test:8080", "corp.test", 8080, true},
		{"corp.test:8080", "corp.test", 443, false},
		{"10.0.0.0/8", "10.1.2.3", 443, true},
		{"10.0.0.0/8", "11.1.2.3", 443, false},
		{"10.0.0.0/8", "ten.test", 443, false},
		{"192.0.2.1", "192.0.2.1", 443, true},
		{"[2001:db8::1]", "[2001:db8::1]", 443, true},
		{" CORP.test ", "corp.test", 443, true},
		{"", "corp.test", 443, false},
	} {
		h, err := parseHost(tc.host)
		if err != nil {
			t.Fatal(err)
		}
		if got := noProxyMatch(tc.entry, h, tc.port); got != tc.want {
			t.Errorf("noProxyMatch(%q, %s:%d) = %v, want %v", tc.entry, tc.host, tc.port, got, tc.want)
		}
	}
}

// TestUpstreamEchoRedacted: an upstream that hands its credentials back
// (in the reason phrase of a CONNECT refusal, and in a gzip answer to plain
// HTTP) never gives them to the box.
func TestUpstreamEchoRedacted(t *testing.T) {
	const creds = "alice:s3cret-pass"
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(creds))
	up := serveTCP(t, "tcp4", "127.0.0.1:0", func(c *net.TCPConn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		got := req.Header.Get("Proxy-Authorization")
		if req.Method == http.MethodConnect {
			fmt.Fprintf(c, "HTTP/1.1 407 wrong %s (%s)\r\nContent-Length: 0\r\n\r\n", got, creds)
			return
		}
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		fmt.Fprintf(z, "you sent %s, that is %s", got, creds)
		z.Close()
		fmt.Fprintf(c, "HTTP/1.1 200 %s\r\nX-Echo: %s\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s", creds, got, b.Len(), b.String())
	})
	b := startBox(t, []string{"far.test"}, nil, boxOptions{upstream: &Upstream{Addr: "127.0.0.1:" + strconv.Itoa(up.port()), Credentials: creds}})
	var seen []string
	c, br, resp := connectVia(t, b.addr, "far.test:443")
	body, _ := io.ReadAll(br)
	c.Close()
	seen = append(seen, resp.Status, string(body))
	if resp.StatusCode != 502 {
		t.Errorf("CONNECT refused by the upstream: %s, want 502", resp.Status)
	}
	c, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET http://far.test/x HTTP/1.1\r\nHost: far.test\r\n\r\n")
	c.SetDeadline(time.Now().Add(10 * time.Second))
	all, _ := io.ReadAll(c)
	c.Close()
	seen = append(seen, string(all), b.log.String())
	for _, s := range seen {
		for _, secret := range []string{"s3cret-pass", auth[6:], creds} {
			if strings.Contains(s, secret) {
				t.Errorf("the box or the log got %q:\n%s", secret, s)
			}
		}
	}
	if !strings.Contains(string(all), "X-Echo: Basic ************************\r\n") || !strings.Contains(string(all), "\r\nyou sent Basic \r\n") {
		t.Errorf("the answer was not decoded and redacted:\n%q", all)
	}
}
