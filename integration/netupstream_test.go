//go:build linux

package integration

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstreamProxy is a corporate proxy's stand-in on 127.0.0.1: it records
// each request it was asked (method, target, Proxy-Authorization), and
// reaches example.test and other.test on 127.0.0.1 by its own map (the
// test process does not see the private hosts file).
type upstreamProxy struct {
	ln   net.Listener
	addr string
	wg   sync.WaitGroup

	mu    sync.Mutex
	asked []string
}

func startUpstreamProxy(t *testing.T) *upstreamProxy {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstreamProxy{ln: ln, addr: ln.Addr().String()}
	var conns sync.Map
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			u.wg.Add(1)
			go func() {
				defer u.wg.Done()
				defer conns.Delete(c)
				defer c.Close()
				u.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		u.wg.Wait()
	})
	return u
}

func (u *upstreamProxy) Asked() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.asked...)
}

func (u *upstreamProxy) serve(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	u.mu.Lock()
	u.asked = append(u.asked, strings.TrimSpace(req.Method+" "+req.RequestURI+" "+req.Header.Get("Proxy-Authorization")))
	u.mu.Unlock()
	host, port, _ := net.SplitHostPort(req.Host)
	if req.Method != http.MethodConnect && port == "" {
		host, port = req.Host, "80"
	}
	if host == "example.test" || host == "other.test" {
		host = "127.0.0.1"
	}
	up, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 5*time.Second)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	if req.Method == http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	} else {
		req.Header.Del("Proxy-Authorization")
		req.Write(up)
	}
	go func() { io.Copy(up, br); up.(*net.TCPConn).CloseWrite() }()
	io.Copy(c, up)
}

// TestNetworkUpstream: behind a corporate proxy, allowed hosts are reached
// through it with its credentials, from the policy (the password from a
// variable) or from HTTPS_PROXY in agentbox's environment; denied hosts are
// never asked about; the password is in no log and not in the box; a
// proxy that is down is a 502 naming it, at once.
func TestNetworkUpstream(t *testing.T) {
	needCurl(t)
	netNames(t)
	srv := startWeb(t)
	p := srv.port
	up := startUpstreamProxy(t)
	w := newWorld(t)
	netLog := filepath.Join(w.base, "net.log")
	pol := filepath.Join(w.base, "up.toml")
	write(t, pol, "version = 1\n[network]\nupstream = \"http://alice:${CORP_PROXY_PASSWORD}@"+up.addr+"\"\n")
	w.env = append(w.env, "CORP_PROXY_PASSWORD=hunter2-corp")
	script := `curl -sS -p http://example.test:` + p + `/tunnel; curl -sS http://example.test:` + p + `/plain; ` +
		`curl -sS --proxy "$ALL_PROXY" http://example.test:` + p + `/socks; ` +
		`curl -sS -o /dev/null -w '%{http_code}\n' http://other.test:` + p + `/denied; echo "password in the box: ${CORP_PROXY_PASSWORD:-none}"`
	r := w.sh(netFlags(w, "--policy", pol, "--net-log", netLog), script)
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "hello example.test:"+p+" /tunnel\nhello example.test:"+p+" /plain\nhello example.test:"+p+" /socks\n403\npassword in the box: none\n")
	auth := "Basic YWxpY2U6aHVudGVyMi1jb3Jw" // alice:hunter2-corp
	want := []string{
		"CONNECT example.test:" + p + " " + auth,
		"GET http://example.test:" + p + "/plain " + auth,
		"CONNECT example.test:" + p + " " + auth,
	}
	if got := up.Asked(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the upstream was asked:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	noSecretIn(t, []string{"hunter2", "YWxpY2U6aHVudGVyMi1jb3Jw"}, netLog, filepath.Join(w.home, ".local", "state"))

	r = w.run("plan", "--network", "allowlist", "--allow", "example.test", "--policy", pol, "--", "true")
	expectCode(t, r, 0)
	expectContains(t, "plan", r.stdout, "  upstream: http://"+up.addr+" (basic, user alice, from $CORP_PROXY_PASSWORD; "+pol+":3 network.upstream)")
	expectNotContains(t, "plan", r.stdout, "hunter2")

	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run("from HTTPS_PROXY, "+backend, func(t *testing.T) {
			w := newWorld(t)
			w.env = append(w.env, "HTTPS_PROXY=http://"+up.addr)
			before := len(up.Asked())
			r := w.sh(netFlags(w, "--backend", backend), `curl -sS -p http://example.test:`+p+`/env`)
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "hello example.test:"+p+" /env")
			if got := up.Asked()[before:]; len(got) != 1 || got[0] != "CONNECT example.test:"+p {
				t.Errorf("asked %q", got)
			}
		})
	}
	t.Run("down", func(t *testing.T) {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := ln.Addr().String()
		ln.Close()
		w := newWorld(t)
		w.env = append(w.env, "HTTPS_PROXY=http://"+dead)
		start := time.Now()
		r := w.sh(netFlags(w), `curl -sS -m 20 -p http://example.test:`+p+`/ 2>&1; curl -sS -m 20 http://example.test:`+p+`/`)
		expectCode(t, r, 0)
		expectContains(t, "CONNECT", r.stdout, "CONNECT tunnel failed, response 502")
		expectContains(t, "plain", r.stdout, "agentbox: example.test:"+p+": upstream proxy "+dead+": dial tcp "+dead+": connect: connection refused")
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("the 502s took %v", d)
		}
	})
}

// noSecretIn fails if any regular file under the paths holds one of the
// secrets. Only regular files are read: a state folder may hold device
// nodes (a shell running agentbox plan --argv as root copies /dev/zero
// there, which never ends).
func noSecretIn(t *testing.T, secrets []string, paths ...string) {
	t.Helper()
	for _, root := range paths {
		filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
			if err != nil || !info.Mode().IsRegular() {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			for _, s := range secrets {
				if strings.Contains(string(data), s) {
					t.Errorf("%s holds %q", path, s)
				}
			}
			return nil
		})
	}
}
