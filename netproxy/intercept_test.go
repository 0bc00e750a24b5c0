package netproxy

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// originCA makes a stand-in for the public roots: a CA and a certificate
// it signs for names (and 127.0.0.1), for the test's TLS origins.
func originCA(t testing.TB, names ...string) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test roots"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: names,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}
}

// origin is a TLS (or plain) HTTP server that records what it got and
// answers with the request's x-api-key, in a header and in the body.
type origin struct {
	*httptest.Server
	port string
	mu   sync.Mutex
	got  []string // "METHOD path key=... body=..."
}

func startOrigin(t testing.TB, cert *tls.Certificate) *origin {
	o := &origin{}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.got = append(o.got, fmt.Sprintf("%s %s host=%s key=%s body=%s", r.Method, r.URL.RequestURI(), r.Host, r.Header.Get("X-Api-Key"), body))
		o.mu.Unlock()
		w.Header().Set("X-Echo", r.Header.Get("X-Api-Key"))
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // chunked from here
		}
		fmt.Fprintf(w, "key=%s accept-encoding=%s", r.Header.Get("X-Api-Key"), r.Header.Get("Accept-Encoding"))
	}))
	if cert != nil {
		o.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(o.Close)
	_, o.port, _ = net.SplitHostPort(o.Listener.Addr().String())
	return o
}

func (o *origin) Got() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

// client is an HTTP client of the box: through the proxy, trusting roots.
func client(b *box, roots *x509.CertPool) *http.Client {
	proxy, _ := url.Parse("http://" + b.addr)
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxy),
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
}

const (
	testKey         = "sk-real-secret-value-0123456789"
	testPlaceholder = "agentboxaaaaaaaaaaaaaaaaaaaaaaa"
)

func secretBox(t *testing.T, allow, deny []string) (*box, *Authority, *x509.CertPool, *origin) {
	t.Helper()
	roots, cert := originCA(t, "api.test", "other.test", "example.test", "gh.test")
	o := startOrigin(t, &cert)
	ca, err := NewAuthority([]string{"api.test", "GET gh.test"})
	if err != nil {
		t.Fatal(err)
	}
	b := startBox(t, allow, deny, boxOptions{ca: ca, roots: roots,
		secrets: []Secret{{Name: "API_KEY", Value: testKey, Placeholder: testPlaceholder, Hosts: []string{"api.test"}}}})
	return b, ca, roots, o
}

// TestInterceptSecret: on TLS to its host the placeholder becomes the
// value, and the value in the answer becomes the placeholder again; the
// requests of one connection each get it; the box's client trusts only
// the run's authority for that host.
func TestInterceptSecret(t *testing.T) {
	b, ca, _, o := secretBox(t, []string{"api.test"}, nil)
	c := client(b, ca.Pool())
	for i, path := range []string{"/v1/a", "/chunked"} {
		req, _ := http.NewRequest("POST", "https://api.test:"+o.port+path, strings.NewReader("body with the key "+testPlaceholder+" stays"))
		req.Header.Set("X-Api-Key", testPlaceholder)
		if i == 1 {
			req.ContentLength = -1 // chunked
			req.Header.Set("Expect", "100-continue")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "key=" + testPlaceholder + " accept-encoding=identity"; string(body) != want {
			t.Errorf("%s: the box got %q, want %q (the value turned back into the placeholder)", path, body, want)
		}
		if got := resp.Header.Get("X-Echo"); got != testPlaceholder {
			t.Errorf("%s: X-Echo %q, want the placeholder", path, got)
		}
	}
	got := o.Got()
	want := []string{
		"POST /v1/a host=api.test:" + o.port + " key=" + testKey + " body=body with the key " + testPlaceholder + " stays",
		"POST /chunked host=api.test:" + o.port + " key=" + testKey + " body=body with the key " + testPlaceholder + " stays",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the origin got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	log := b.log.String()
	logHas(t, log, "allow connect api.test:"+o.port)
	logHas(t, log, "allow https api.test:"+o.port, `request="POST /v1/a"`, "put in API_KEY")
	if strings.Contains(log, testKey) {
		t.Errorf("the log holds the value:\n%s", log)
	}
	// One TLS connection for both requests (keep-alive through the proxy).
	if n := strings.Count(log, "allow connect api.test"); n != 1 {
		t.Errorf("%d CONNECTs, want 1 (keep-alive):\n%s", n, log)
	}
}

// TestInterceptExfiltration: the placeholder on its way to any other host
// is refused and logged: plain HTTP (head or body), another intercepted
// host, a host name, a CONNECT request's own header.
func TestInterceptExfiltration(t *testing.T) {
	b, ca, _, o := secretBox(t, []string{"api.test", "example.test", "*.wild.test", "GET gh.test"}, nil)
	plain := startOrigin(t, nil)
	c := client(b, ca.Pool())
	get := func(u string, hdr bool) (int, string) {
		req, _ := http.NewRequest("GET", u, nil)
		if hdr {
			req.Header.Set("Authorization", "Bearer "+testPlaceholder)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("http://example.test:"+plain.port+"/", true); code != 403 || !strings.Contains(body, "exfiltration attempt: the placeholder of API_KEY") {
		t.Errorf("plain HTTP with the placeholder in a header: %d %q", code, body)
	}
	if code, body := get("http://example.test:"+plain.port+"/?k="+testPlaceholder, false); code != 403 || !strings.Contains(body, "in the request's URL") {
		t.Errorf("plain HTTP with the placeholder in the URL: %d %q", code, body)
	}
	if code, body := get("http://api.test:"+plain.port+"/", true); code != 403 || !strings.Contains(body, "exfiltration attempt") {
		t.Errorf("plain HTTP to the secret's own host: %d %q (the value goes only over TLS)", code, body)
	}
	// gh.test is intercepted (a request rule) but not the secret's host.
	if code, body := get("https://gh.test:"+o.port+"/", true); code != 403 || !strings.Contains(body, "exfiltration attempt") {
		t.Errorf("TLS to another intercepted host: %d %q", code, body)
	}
	// In a host name, a CONNECT refused before any lookup.
	if code, body := get("https://"+testPlaceholder+".wild.test:"+o.port+"/", false); code == 200 || !strings.Contains(body, "Forbidden") {
		t.Errorf("the placeholder in a host name: %d %q", code, body)
	}
	// In a plain HTTP body: the connection is cut before it is whole.
	conn, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST http://example.test:%s/ HTTP/1.1\r\nHost: example.test\r\nContent-Length: %d\r\n\r\nkey=%s", plain.port, 4+len(testPlaceholder), testPlaceholder)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	reply, _ := io.ReadAll(conn)
	conn.Close()
	if strings.Contains(string(reply), "200 OK") {
		t.Errorf("a body with the placeholder got through: %q", reply)
	}
	for _, g := range plain.Got() {
		if strings.Contains(g, testPlaceholder) {
			t.Errorf("the other host got the placeholder: %q", g)
		}
	}
	for _, g := range o.Got() {
		if strings.Contains(g, testPlaceholder) || strings.Contains(g, testKey) {
			t.Errorf("the TLS origin got %q", g)
		}
	}
	log := b.log.String()
	for _, want := range [][]string{
		{"deny http example.test:" + plain.port, "exfiltration attempt", "header Authorization"},
		{"deny http example.test:" + plain.port, "the request's URL"},
		{"deny http api.test:" + plain.port, "exfiltration attempt"},
		{"deny https gh.test:" + o.port, "exfiltration attempt", "header Authorization"},
		{"deny connect", "the host name"},
		{"deny http example.test:" + plain.port, "the body"},
	} {
		logHas(t, log, want...)
	}
	if strings.Contains(log, testPlaceholder) {
		t.Errorf("the log holds the placeholder:\n%s", log)
	}
}

// TestInterceptRequestRules: a host that request rules allow is read
// request by request; what they do not allow is refused with the rule.
func TestInterceptRequestRules(t *testing.T) {
	b, ca, _, o := secretBox(t, []string{"GET gh.test/org/*", "api.test"}, []string{"POST api.test/admin/*"})
	c := client(b, ca.Pool())
	do := func(method, u string) (int, string) {
		req, _ := http.NewRequest(method, u, strings.NewReader("x"))
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	gh := "https://gh.test:" + o.port
	for _, tc := range []struct {
		method, url string
		code        int
		body        string
	}{
		{"GET", gh + "/org/repo", 200, ""},
		{"GET", gh + "/org/repo?x=1", 200, ""},
		{"POST", gh + "/org/repo", 403, "no allow rule matches POST /org/repo"},
		{"GET", gh + "/other/repo", 403, "no allow rule matches GET /other/repo"},
		{"GET", gh + "/org/%2e%2e/other", 403, "a dot segment in the path"},
		{"GET", gh + "/org/x%2F..%2Fother", 403, "an encoded slash"},
		{"POST", "https://api.test:" + o.port + "/admin/users", 403, `matches deny rule "POST api.test/admin/*"`},
		{"POST", "https://api.test:" + o.port + "/v1", 200, ""},
		{"POST", "http://gh.test:" + o.port + "/org/x", 403, "no allow rule matches POST /org/x"},
	} {
		code, body := do(tc.method, tc.url)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.url, code, body, tc.code, tc.body)
		}
	}
	got := o.Got()
	if len(got) != 3 || !strings.HasPrefix(got[0], "GET /org/repo ") || !strings.HasPrefix(got[1], "GET /org/repo?x=1 ") || !strings.HasPrefix(got[2], "POST /v1 ") {
		t.Errorf("the origin got %q", got)
	}
	logHas(t, b.log.String(), "deny https gh.test:"+o.port, `request="POST /org/repo"`, `reason="no allow rule matches POST /org/repo"`)
	logHas(t, b.log.String(), "allow https gh.test:"+o.port, `request="GET /org/repo"`, `rule="GET gh.test/org/*"`)
}

// TestInterceptOnlyWhatItMust: a host with no secret and no request rule
// is tunnelled unread: the client sees the origin's own certificate.
func TestInterceptOnlyWhatItMust(t *testing.T) {
	b, ca, roots, o := secretBox(t, []string{"api.test", "example.test"}, nil)
	if _, err := client(b, roots).Get("https://example.test:" + o.port + "/"); err != nil {
		t.Errorf("the origin's own certificate through the tunnel: %v", err)
	}
	if _, err := client(b, ca.Pool()).Get("https://example.test:" + o.port + "/"); err == nil {
		t.Errorf("the run's authority signed for a host that is not intercepted")
	}
	// And the intercepted host is signed by the run's authority only.
	if _, err := client(b, roots).Get("https://api.test:" + o.port + "/"); err == nil {
		t.Errorf("the origin's certificate reached the box on an intercepted host")
	}
	waitLog(t, b, "deny https api.test:"+o.port, "TLS handshake with the box's client failed")
}

// TestInterceptOriginVerified: the host's certificate is checked against
// the host's roots, never the run's authority: a host that does not
// verify is a 502, and the secret never goes out.
func TestInterceptOriginVerified(t *testing.T) {
	_, wrong := originCA(t, "nothing.test") // not api.test
	o := startOrigin(t, &wrong)
	roots, _ := originCA(t, "api.test")
	ca, _ := NewAuthority([]string{"api.test"})
	b := startBox(t, []string{"api.test"}, nil, boxOptions{ca: ca, roots: roots,
		secrets: []Secret{{Name: "API_KEY", Value: testKey, Placeholder: testPlaceholder, Hosts: []string{"api.test"}}}})
	req, _ := http.NewRequest("GET", "https://api.test:"+o.port+"/", nil)
	req.Header.Set("X-Api-Key", testPlaceholder)
	resp, err := client(b, ca.Pool()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || !strings.Contains(string(body), "TLS to api.test:"+o.port) {
		t.Errorf("an origin that does not verify: %d %q", resp.StatusCode, body)
	}
	if len(o.Got()) != 0 {
		t.Errorf("the origin got %q", o.Got())
	}
}

// TestInterceptSmuggling: what the host gets is what the proxy read: a
// request with two framings, an unknown coding or a malformed chunk is
// refused, and a pipelined second request is read (and checked) on its own.
func TestInterceptSmuggling(t *testing.T) {
	b, ca, _, o := secretBox(t, []string{"GET gh.test/org/*"}, nil)
	dial := func() (*tls.Conn, *bufio.Reader) {
		c, br, resp := connectVia(t, b.addr, "gh.test:"+o.port)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %s", resp.Status)
		}
		tc := tls.Client(&bufferedConn{Conn: c, r: br}, &tls.Config{ServerName: "gh.test", RootCAs: ca.Pool()})
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		return tc, bufio.NewReader(tc)
	}
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"TE and CL", "GET /org/a HTTP/1.1\r\nHost: gh.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400"},
		{"gzip coding", "GET /org/a HTTP/1.1\r\nHost: gh.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "400"},
		{"pipelined", "GET /org/a HTTP/1.1\r\nHost: gh.test\r\n\r\nPOST /org/b HTTP/1.1\r\nHost: gh.test\r\nContent-Length: 0\r\n\r\n", "no allow rule matches POST /org/b"},
		{"absolute URI of another host", "GET https://evil.test/org/a HTTP/1.1\r\nHost: gh.test\r\n\r\n", "another host"},
	} {
		c, br := dial()
		io.WriteString(c, tc.raw)
		all, _ := io.ReadAll(br)
		c.Close()
		if !strings.Contains(string(all), tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, all, tc.want)
		}
	}
	for _, g := range o.Got() {
		if strings.Contains(g, "/org/b") || strings.Contains(g, "evil") {
			t.Errorf("the origin got %q", g)
		}
	}
}

// waitLog waits up to five seconds for a log line with every part: the
// proxy may log after the client has seen the outcome.
func waitLog(t *testing.T, b *box, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, line := range strings.Split(b.log.String(), "\n") {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("no log line with %q in:\n%s", parts, b.log.String())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInterceptForward: a port forward to a host service that request
// rules cover is read request by request too, not piped.
func TestInterceptForward(t *testing.T) {
	o := startOrigin(t, nil)
	fwd := "127.0.0.1:" + o.port
	b := startBox(t, []string{fwd}, []string{"POST " + fwd + "/admin/*"}, boxOptions{forward: []string{fwd}})
	do := func(method, path string) int {
		c, err := net.Dial("tcp", b.fwd[0])
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", method, path)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := do("POST", "/admin/users"); code != 403 {
		t.Errorf("POST /admin/users through the forward: %d, want 403", code)
	}
	if code := do("POST", "/public"); code != 200 {
		t.Errorf("POST /public through the forward: %d, want 200", code)
	}
	if got := o.Got(); len(got) != 1 || !strings.HasPrefix(got[0], "POST /public ") {
		t.Errorf("the service got %q", got)
	}
}

// TestAuthority: the run's authority signs host certificates that verify
// for their host, and its name constraints make a certificate for any
// other host fail, even one it signed.
func TestAuthority(t *testing.T) {
	ca, err := NewAuthority([]string{"api.test", "*.wild.test", "127.0.0.1", "GET gh.test/org/*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"api.test", true}, {"x.wild.test", true}, {"gh.test", true}, {"127.0.0.1", true},
		{"evil.test", false}, {"10.0.0.1", false}, {"api.test.evil", false},
	} {
		h, err := parseHost(tc.host)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := ca.leaf(h)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cert.Leaf.Verify(x509.VerifyOptions{DNSName: tc.host, Roots: ca.Pool()})
		if (err == nil) != tc.ok {
			t.Errorf("%s: verify error %v, want ok %v", tc.host, err, tc.ok)
		}
	}
	if !strings.Contains(string(ca.CertPEM()), "BEGIN CERTIFICATE") || strings.Contains(string(ca.CertPEM()), "PRIVATE") {
		t.Errorf("CertPEM is not a certificate alone")
	}
}

// TestInterceptThroughUpstream: behind a corporate proxy an intercepted
// host is reached through it (CONNECT), with TLS verified end to end to
// the host, and the secret put in; the upstream sees only the tunnel.
func TestInterceptThroughUpstream(t *testing.T) {
	roots, cert := originCA(t, "api.test")
	o := startOrigin(t, &cert)
	up := startUpstream(t, map[string]string{"api.test": "127.0.0.1"})
	ca, _ := NewAuthority([]string{"api.test"})
	b := startBox(t, []string{"api.test"}, nil, boxOptions{ca: ca, roots: roots,
		upstream: &Upstream{Addr: "127.0.0.1:" + strconv.Itoa(up.port())},
		secrets:  []Secret{{Name: "API_KEY", Value: testKey, Placeholder: testPlaceholder, Hosts: []string{"api.test"}}}})
	req, _ := http.NewRequest("GET", "https://api.test:"+o.port+"/v1", nil)
	req.Header.Set("X-Api-Key", testPlaceholder)
	resp, err := client(b, ca.Pool()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "key="+testPlaceholder) {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	if got := o.Got(); len(got) != 1 || !strings.Contains(got[0], "key="+testKey) {
		t.Errorf("the origin got %q", got)
	}
	if got := up.Asked(); len(got) != 1 || got[0] != "CONNECT api.test:"+o.port {
		t.Errorf("the upstream was asked %q", got)
	}
}

// A placeholder in a header field's name is refused as in its value.
func TestInterceptPlaceholderInFieldName(t *testing.T) {
	b, ca, _, o := secretBox(t, []string{"api.test", "GET gh.test"}, nil)
	req, _ := http.NewRequest("GET", "https://gh.test:"+o.port+"/", nil)
	req.Header.Set("X-"+testPlaceholder, "1")
	resp, err := client(b, ca.Pool()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("status %d, want 403", resp.StatusCode)
	}
	logHas(t, b.log.String(), "deny https gh.test:"+o.port, "exfiltration attempt", "a header field's name")
}
