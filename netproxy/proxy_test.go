package netproxy

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// TestHTTPOneRequest checks that a client connection carries one request:
// the answer says "Connection: close" and ends the connection, a request
// pipelined behind the first is not served, and separate connections are
// each checked on their own host. Hop-by-hop headers do not reach the
// origin, and a request body with Expect: 100-continue arrives.
func TestHTTPOneRequest(t *testing.T) {
	_, port := webServer(t)
	b := startBox(t, []string{"example.test", "other.test"}, nil, boxOptions{})
	p := strconv.Itoa(port)
	type answer struct {
		Status int
		Body   string
		Close  bool
		After  string // what the connection carries after the answer
	}
	// send writes req on a new connection and reads the answers: a 100
	// first when there is one, then the final one, then the rest.
	send := func(req string) answer {
		t.Helper()
		c, err := net.Dial("tcp", b.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err == nil && resp.StatusCode == 100 {
			resp, err = http.ReadResponse(br, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		after, _ := io.ReadAll(br)
		return answer{resp.StatusCode, string(body), resp.Close, string(after)}
	}
	got := []answer{
		send("GET http://example.test:" + p + "/one HTTP/1.1\r\nHost: example.test\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: X-Hop\r\nX-Hop: secret\r\n\r\n" +
			"GET http://example.test:" + p + "/again HTTP/1.1\r\nHost: example.test\r\n\r\n"),
		send("POST http://other.test:" + p + "/two HTTP/1.1\r\nHost: evil.test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello"),
		send("GET http://evil.test:" + p + "/three HTTP/1.1\r\nHost: example.test\r\n\r\n"),
	}
	want := []answer{
		{200, "hello example.test:" + p + " /one", true, ""},
		{200, "hello other.test:" + p + " /two body=hello", true, ""},
		{403, "agentbox: evil.test:" + p + " denied: no allow rule matches\n", true, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Stats{Allowed: 2, Denied: 1, FirstDenied: "evil.test:" + p + " (no allow rule matches)"}, b.p.Stats()); diff != "" {
		t.Errorf("Stats() (-want +got):\n%s", diff)
	}
}

// TestHTTPHeads checks, byte for byte, the head the origin gets and what
// the client gets back: the origin form of the target, the checked host,
// hop-by-hop fields gone both ways, space before a colon removed from the
// answer, the body's framing kept even when Connection names it, interim
// answers passed on (but not to HTTP/1.0), and a 502 for an answer the proxy
// cannot read.
func TestHTTPHeads(t *testing.T) {
	heads := make(chan string, 1)
	var reply string
	origin := serveTCP(t, "tcp", "127.0.0.1:0", func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		var head strings.Builder
		for {
			line, err := br.ReadString('\n')
			head.WriteString(line)
			if err != nil || line == "\r\n" {
				break
			}
		}
		heads <- head.String()
		io.WriteString(c, reply)
		c.CloseWrite()
		io.Copy(io.Discard, br) // until the client is done
	})
	p := strconv.Itoa(origin.port())
	b := startBox(t, []string{"example.test"}, nil, boxOptions{})
	tests := []struct {
		name     string
		request  string
		reply    string // the origin's
		wantHead string // what the origin got
		want     string // what the client got
	}{
		{
			name: "hop-by-hop fields, spaced names, chunked answer",
			request: "GET http://Example.TEST.:" + p + "/p?q=1#frag HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: Basic c2VjcmV0\r\n" +
				"Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 300\r\nTE: trailers\r\nUpgrade: websocket\r\nAccept: */*\r\nX-Keep: yes\r\n\r\n",
			reply: "HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Secret, Transfer-Encoding\r\nKeep-Alive: timeout=5\r\nX-Secret: 1\r\n" +
				"Proxy-Authenticate: Basic\r\nTransfer-Encoding: chunked\r\nx-spaced : 1\r\nBad Name: 2\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			wantHead: "GET /p?q=1 HTTP/1.1\r\nAccept: */*\r\nConnection: close\r\nHost: example.test:" + p + "\r\nX-Keep: yes\r\n\r\n",
			want:     "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\nX-Spaced: 1\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		},
		{
			name:     "100 continue",
			request:  "POST http://example.test:" + p + "/up HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nhi",
			reply:    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
			wantHead: "POST /up HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\nHost: example.test:" + p + "\r\n\r\n",
			want:     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
		},
		{
			name:     "no 100 for HTTP/1.0",
			request:  "POST http://example.test:" + p + "/up HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nhi",
			reply:    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
			wantHead: "POST /up HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\nHost: example.test:" + p + "\r\n\r\n",
			want:     "HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
		},
		{
			name:     "framing named by Connection stays",
			request:  "POST http://example.test:" + p + "?x=1 HTTP/1.1\r\nConnection: Content-Length, Host\r\nContent-Length: 2\r\n\r\nhi",
			reply:    "HTTP/1.0 200 OK\r\n\r\nbody until close",
			wantHead: "POST /?x=1 HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\nHost: example.test:" + p + "\r\n\r\n",
			want:     "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nbody until close",
		},
		{
			name:     "switching protocols",
			request:  "GET http://example.test:" + p + "/ HTTP/1.1\r\n\r\n",
			reply:    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
			wantHead: "GET / HTTP/1.1\r\nConnection: close\r\nHost: example.test:" + p + "\r\n\r\n",
			want:     text(502, "agentbox: example.test:"+p+": reading the answer: unexpected 101 Switching Protocols\n"),
		},
		{
			name:     "not HTTP",
			request:  "GET http://example.test:" + p + "/ HTTP/1.1\r\n\r\n",
			reply:    "SSH-2.0-OpenSSH\r\n\r\n",
			wantHead: "GET / HTTP/1.1\r\nConnection: close\r\nHost: example.test:" + p + "\r\n\r\n",
			want:     text(502, "agentbox: example.test:"+p+`: reading the answer: malformed status line "SSH-2.0-OpenSSH"`+"\n"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reply = tc.reply
			c, err := net.Dial("tcp", b.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, tc.request); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(c)
			if err != nil {
				t.Errorf("reading the answer: %v", err)
			}
			if diff := cmp.Diff(tc.wantHead, <-heads); diff != "" {
				t.Errorf("head at the origin (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

// text is a response as writeText writes it.
func text(code int, body string) string {
	var b strings.Builder
	writeText(&b, code, body)
	return b.String()
}

// TestHTTPRefusals sends requests the proxy refuses before it connects
// anywhere: malformed ones get a 400, hosts that are not plainly hosts a
// 403.
func TestHTTPRefusals(t *testing.T) {
	b := startBox(t, []string{"example.test"}, nil, boxOptions{})
	const url = "http://example.test/"
	bad := func(why string) string { return "agentbox: bad proxy request: " + why + "\n" }
	tests := []struct {
		name    string
		request string
		status  int
		body    string
	}{
		{name: "origin form", request: "GET / HTTP/1.1\r\nHost: example.test\r\n\r\n", status: 400,
			body: "agentbox: only absolute http:// URLs and CONNECT go through this proxy\n"},
		{name: "other scheme", request: "GET ftp://example.test/ HTTP/1.1\r\n\r\n", status: 400,
			body: "agentbox: only absolute http:// URLs and CONNECT go through this proxy\n"},
		{name: "no host", request: "GET http:///x HTTP/1.1\r\n\r\n", status: 400,
			body: "agentbox: only absolute http:// URLs and CONNECT go through this proxy\n"},
		{name: "HTTP/2", request: "GET " + url + " HTTP/2.0\r\n\r\n", status: 400, body: bad(`unsupported version "HTTP/2.0"`)},
		{name: "HTTP/2 preface", request: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", status: 400, body: bad(`unsupported version "HTTP/2.0"`)},
		{name: "two spaces", request: "GET  " + url + " HTTP/1.1\r\n\r\n", status: 400, body: bad(`malformed request line "GET  ` + url + ` HTTP/1.1"`)},
		{name: "tab", request: "GET\t" + url + " HTTP/1.1\r\n\r\n", status: 400, body: bad(`malformed request line "GET\t` + url + ` HTTP/1.1"`)},
		{name: "NUL in target", request: "GET " + url + "\x00 HTTP/1.1\r\n\r\n", status: 400, body: bad(`malformed request target "` + url + `\x00"`)},
		{name: "CR in target", request: "GET " + url + "\r HTTP/1.1\r\n\r\n", status: 400, body: bad(`malformed request target "` + url + `\r"`)},
		{name: "method not a token", request: "G(T " + url + " HTTP/1.1\r\n\r\n", status: 400, body: bad(`malformed method "G(T"`)},
		{name: "space before colon", request: "GET " + url + " HTTP/1.1\r\nHost : x\r\n\r\n", status: 400, body: bad(`malformed field name "Host "`)},
		{name: "folded first field", request: "GET " + url + " HTTP/1.1\r\n X: y\r\n\r\n", status: 400, body: bad(`a folded header line (obsolete line folding)`)},
		{name: "folded field", request: "GET " + url + " HTTP/1.1\r\nX: a\r\n b\r\n\r\n", status: 400, body: bad(`a folded header line (obsolete line folding)`)},
		{name: "CR in value", request: "GET " + url + " HTTP/1.1\r\nX: a\rHost: b\r\n\r\n", status: 400, body: bad(`malformed MIME header line: "X: a\rHost: b"`)},
		{name: "bad port", request: "GET http://example.test:99999/ HTTP/1.1\r\n\r\n", status: 400,
			body: `agentbox: bad URL host "example.test:99999": port 99999 out of range 1-65535` + "\n"},
		{name: "CONNECT to a path", request: "CONNECT /x HTTP/1.1\r\n\r\n", status: 400, body: `agentbox: bad CONNECT target "/x": want host:port` + "\n"},
		{name: "userinfo", request: "GET http://example.test@evil.test/ HTTP/1.1\r\n\r\n", status: 403,
			body: `agentbox: "example.test@evil.test":80 denied: invalid host: host "example.test@evil.test": character '@' not allowed` + "\n"},
		{name: "escape", request: "GET http://ex%61mple.test/ HTTP/1.1\r\n\r\n", status: 403,
			body: `agentbox: "ex%61mple.test":80 denied: invalid host: host "ex%61mple.test": character '%' not allowed` + "\n"},
		{name: "backslash", request: "GET http://evil.test\\@example.test/ HTTP/1.1\r\n\r\n", status: 403,
			body: `agentbox: "evil.test\\@example.test":80 denied: invalid host: host "evil.test\\@example.test": character '\\' not allowed` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", b.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, tc.request); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if diff := cmp.Diff(fmt.Sprint(tc.status, " ", tc.body), fmt.Sprint(resp.StatusCode, " ", string(body))); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
	if st := b.p.Stats(); st.Allowed != 0 || st.Denied != len(tests) {
		t.Errorf("Stats() = %+v, want nothing allowed and %d denied", st, len(tests))
	}
}

// TestReadHead reads heads from a buffer: the body stays behind, a line
// longer than the buffer is fine, and a head longer than maxHead is not.
func TestReadHead(t *testing.T) {
	long := strings.Repeat("a", 10<<10)
	tests := []struct {
		name   string
		in     string
		line   string
		header textproto.MIMEHeader
		rest   string
		err    string
	}{
		{name: "body stays", in: "GET / HTTP/1.1\r\nA: 1\r\nA: 2\r\n\r\nBODY", line: "GET / HTTP/1.1",
			header: textproto.MIMEHeader{"A": {"1", "2"}}, rest: "BODY"},
		{name: "bare LF", in: "GET / HTTP/1.1\nB: x\n\nBODY", line: "GET / HTTP/1.1", header: textproto.MIMEHeader{"B": {"x"}}, rest: "BODY"},
		{name: "long line", in: "GET / HTTP/1.1\r\nLong: " + long + "\r\n\r\n", line: "GET / HTTP/1.1", header: textproto.MIMEHeader{"Long": {long}}},
		{name: "too long", in: "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", maxHead) + "\r\n\r\n", err: "head longer than 65536 bytes"},
		{name: "too many fields", in: "GET / HTTP/1.1\r\n" + strings.Repeat("A: b\r\n", maxFields+1) + "\r\n", err: "head has more than 256 header fields"},
		{name: "cut short", in: "GET / HTTP/1.1\r\nA: 1\r\n", err: "unexpected EOF"},
		{name: "nothing", in: "", err: "EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReader(strings.NewReader(tc.in))
			line, header, err := readHead(br)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("readHead: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(br)
			if diff := cmp.Diff([]any{tc.line, tc.header, tc.rest}, []any{line, header, string(rest)}); diff != "" {
				t.Errorf("readHead (-want +got):\n%s", diff)
			}
		})
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
		{name: "denied escape", target: "ex%61mple.test:" + p, status: 403,
			body: `agentbox: "ex%61mple.test":` + p + ` denied: invalid host: host "ex%61mple.test": character '%' not allowed` + "\n"},
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

// TestHTTPAnswerFraming: an answer with both Transfer-Encoding: chunked and
// Content-Length reaches the client chunked, without the length.
func TestHTTPAnswerFraming(t *testing.T) {
	h := newFuzzHarness(t, []byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"))
	out := string(h.serve(t, []byte("GET http://example.test/ HTTP/1.1\r\nHost: example.test\r\n\r\n")))
	want := "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
	if out != want {
		t.Errorf("answer %q, want %q", out, want)
	}
}

// An allowed host that cannot be reached gets the client a 502, and the
// decision says why in a few words, for the one line the run prints: a
// port where nothing listens, a name that does not resolve, by CONNECT,
// plain HTTP and SOCKS5 alike.
func TestUnreachableAllowedHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	var mu sync.Mutex
	var got []string
	b := startBox(t, []string{"example.test", "nx.test"}, nil, boxOptions{decided: func(d Decided) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s %s allowed=%v unreachable=%q", d.Proto, d.Target, d.Allowed, d.Unreachable))
	}})
	for _, target := range []string{"example.test:" + closed, "nx.test:80"} {
		c, _, resp := connectVia(t, b.addr, target)
		c.Close()
		if resp.StatusCode != 502 {
			t.Errorf("CONNECT %s: status %d, want 502", target, resp.StatusCode)
		}
	}
	proxy, _ := url.Parse("http://" + b.addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://example.test:" + closed + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Errorf("GET: status %d, want 502", resp.StatusCode)
	}
	c, _, code := socksVia(t, b.addr, socksName("nx.test"), 80)
	c.Close()
	if code == 0 {
		t.Errorf("SOCKS5 connect to nx.test:80 succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		`connect example.test:` + closed + ` allowed=true unreachable="connection refused (nothing listens there)"`,
		`connect nx.test:80 allowed=true unreachable="its name does not resolve (no such host)"`,
		`http example.test:` + closed + ` allowed=true unreachable="connection refused (nothing listens there)"`,
		`socks5 nx.test:80 allowed=true unreachable="its name does not resolve (no such host)"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// unreachable's words for each way a dial fails.
func TestUnreachableWords(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "connection refused (nothing listens there)"},
		{&net.DNSError{Err: "no such host", Name: "x.test", IsNotFound: true}, "its name does not resolve (no such host)"},
		{&net.DNSError{Err: "server misbehaving", Name: "x.test"}, "resolving its name failed: server misbehaving"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, "no route to the host"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}, "the network is unreachable"},
		{fmt.Errorf("dial: %w", context.DeadlineExceeded), "no answer within 15s"},
		{errors.New("proxy closed"), "proxy closed"},
	}
	for _, tc := range tests {
		if got := unreachable(tc.err); got != tc.want {
			t.Errorf("unreachable(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
