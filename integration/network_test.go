//go:build linux

package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// testNames are the names the network tests reach. The proxy resolves
// names on the host with Go's resolver, which reads /etc/hosts first (the
// "files" source of nsswitch.conf). That is the real mechanism a user's
// intranet names go through, so the tests use it rather than a resolver
// only tests could reach; but they never edit the host's /etc/hosts, which
// other programs (and other test runs) share. scripts/test.sh runs the
// unprivileged pass with a copy that has the names bound over /etc/hosts in
// a mount namespace of its own; as root, netNames does the same for each
// agentbox the test starts (world.command).
var testNames = []string{"example.test", "other.test", "wild.test", "api.wild.test", "evil.wild.test"}

// hostsFiles maps a test's name to the /etc/hosts with testNames that the
// agentbox it and its subtests start sees.
var hostsFiles sync.Map

// netNames makes testNames resolve to 127.0.0.1 for the agentbox this test
// starts, or skips.
func netNames(t *testing.T) {
	t.Helper()
	// As root, always a file of the test's own: what the host's file
	// says can change while the test runs.
	if !isRoot() && hostsMaps(testNames) {
		return
	}
	need(t, isRoot(), "the names "+strings.Join(testNames, " ")+" do not resolve to 127.0.0.1: "+
		"run the tests as root, or through scripts/test.sh, which gives the unprivileged run an /etc/hosts that has them")
	orig, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	add := fmt.Sprintf("\n127.0.0.1 %s\n", strings.Join(testNames, " "))
	if err := os.WriteFile(hosts, append(orig, add...), 0o644); err != nil {
		t.Fatal(err)
	}
	hostsFiles.Store(t.Name(), hosts)
	t.Cleanup(func() { hostsFiles.Delete(t.Name()) })
}

// hostsFileFor is the /etc/hosts that netNames made for t or a test above
// it, "" for none.
func hostsFileFor(t *testing.T) string {
	for name := t.Name(); ; {
		if f, ok := hostsFiles.Load(name); ok {
			return f.(string)
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return ""
		}
		name = name[:i]
	}
}

// hostsMaps reports whether /etc/hosts maps every name to 127.0.0.1.
func hostsMaps(names []string) bool {
	data, err := os.ReadFile("/etc/hosts")
	if err != nil {
		return false
	}
	mapped := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "127.0.0.1" {
			continue
		}
		for _, n := range f[1:] {
			mapped[strings.ToLower(n)] = true
		}
	}
	for _, n := range names {
		if !mapped[n] {
			return false
		}
	}
	return true
}

// needCurl skips without curl, the client every test drives.
func needCurl(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("curl")
	need(t, err == nil, "curl is not installed")
}

// bigSize is the large transfer: 256 MiB.
const bigSize = 256 << 20

// webServer is the host's test server on 127.0.0.1: it answers with the
// host and path it was asked for, /big with bigSize bytes of a fixed stream,
// and /hold with a few bytes, then holds the connection until the client
// goes (active counts those held).
type webServer struct {
	*httptest.Server
	port   string
	active atomic.Int64
}

func startWeb(t *testing.T) *webServer {
	t.Helper()
	s := &webServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", strconv.Itoa(bigSize))
			writeStream(w, bigSize)
		case "/hold":
			s.active.Add(1)
			defer s.active.Add(-1)
			w.Write([]byte("held\n"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			fmt.Fprintf(w, "hello %s %s\n", r.Host, r.URL.Path)
		}
	}))
	t.Cleanup(s.Close)
	s.port = strconv.Itoa(s.Listener.Addr().(*net.TCPAddr).Port)
	return s
}

// writeStream writes n bytes of a fixed pseudo-random stream, no two MiB
// alike.
func writeStream(w io.Writer, n int) {
	buf := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{7}).Read(buf)
	for i := 0; i < n/len(buf); i++ {
		binary.BigEndian.PutUint64(buf, uint64(i))
		if _, err := w.Write(buf); err != nil {
			return
		}
	}
}

// netFlags are the rules most tests use; the deny rule comes from a policy
// file, as network.deny has no flag.
func netFlags(w *world, extra ...string) []string {
	pol := filepath.Join(w.base, "net.toml")
	if !exists(pol) {
		write(w.t, pol, "version = 1\n[network]\ndeny = [\"evil.wild.test\"]\n")
	}
	return append([]string{"--network", "allowlist", "--allow", "example.test", "--allow", "*.wild.test", "--policy", pol}, extra...)
}

// TestNetworkAllowlist drives curl in the box through the proxy by each way
// in (plain HTTP, CONNECT, SOCKS5 with the proxy resolving), allowed and
// denied, with wildcard and deny rules and address literals.
func TestNetworkAllowlist(t *testing.T) {
	needCurl(t)
	netNames(t)
	srv := startWeb(t)
	p := srv.port
	w := newWorld(t)
	log := filepath.Join(w.base, "net.log")
	flags := netFlags(w, "--net-log", log)
	// Every denial is a 403 from the proxy whose body names the host and why.
	denied := func(host, why string) string { return fmt.Sprintf("agentbox: %s:%s denied: %s", host, p, why) }
	tests := []struct {
		name   string
		script string
		code   int
		out    string // part of stdout
		err    string // part of stderr
	}{
		{name: "http allowed", script: `curl -sS http://example.test:` + p + `/a`, out: "hello example.test:" + p + " /a"},
		{name: "http denied", script: `curl -sS -w '%{http_code}' http://other.test:` + p + `/`,
			out: denied("other.test", "no allow rule matches") + "\n403"},
		{name: "connect allowed", script: `curl -sS -p http://example.test:` + p + `/b`, out: "hello example.test:" + p + " /b"},
		{name: "connect denied", script: `curl -sS -p http://other.test:` + p + `/`, code: 56, err: "403"},
		{name: "socks5 allowed", script: `curl -sS --proxy "$ALL_PROXY" http://example.test:` + p + `/c`, out: "hello example.test:" + p + " /c"},
		{name: "socks5 denied", script: `curl -sS --proxy "$ALL_PROXY" http://other.test:` + p + `/`, code: 97, err: "other.test"},
		// Case and a trailing dot do not hide a name; in a tunnel the
		// Host header is the client's own.
		{name: "https_proxy variable, case and dot", script: `curl -sS -p --proxy "$HTTPS_PROXY" http://EXAMPLE.test.:` + p + `/d`, out: "hello EXAMPLE.test.:" + p + " /d"},
		{name: "wildcard matches a subdomain, which may not resolve to loopback", script: `curl -sS http://api.wild.test:` + p + `/`,
			out: denied("api.wild.test", "api.wild.test resolves to 127.0.0.1 (loopback), which a wildcard rule never reaches")},
		{name: "wildcard does not match the apex", script: `curl -sS http://wild.test:` + p + `/`, out: denied("wild.test", "no allow rule matches")},
		{name: "deny wins over a wildcard", script: `curl -sS http://evil.wild.test:` + p + `/`,
			out: denied("evil.wild.test", `matches deny rule "evil.wild.test"`)},
		// Address literals are checked as the address they mean; NO_PROXY
		// is emptied so that curl really asks the proxy.
		{name: "127.1", script: `curl -sS --noproxy '' http://127.1:` + p + `/`, out: denied("127.0.0.1", "no allow rule matches")},
		{name: "2130706433", script: `curl -sS --noproxy '' http://2130706433:` + p + `/`, out: denied("127.0.0.1", "no allow rule matches")},
		{name: "0x7f.0.0.1 by socks5", script: `curl -sS --noproxy '' --proxy "$ALL_PROXY" http://0x7f.0.0.1:` + p + `/`, code: 97},
		{name: "[::1]", script: `curl -sS --noproxy '' http://[::1]:` + p + `/`, out: "agentbox: [::1]:" + p + " denied: no allow rule matches"},
		{name: "127.0.0.1 by connect", script: `curl -sS --noproxy '' -p http://127.0.0.1:` + p + `/`, code: 56, err: "403"},
		// A program that ignores the proxy has no way out: the name
		// resolves (the box sees /etc/hosts) but 127.0.0.1 in the box is
		// the box's own loopback, and there is no other interface.
		{name: "ignoring the proxy fails closed", script: `curl -sS --noproxy '*' http://example.test:` + p + `/`, code: 7, err: "Couldn't connect"},
		{name: "only loopback", script: `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '`, out: "lo\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := w.sh(flags, tc.script)
			if r.code != tc.code {
				t.Fatalf("%s: want exit %d, got %s", tc.script, tc.code, r)
			}
			expectContains(t, "stdout", r.stdout, tc.out)
			expectContains(t, "stderr", r.stderr, tc.err)
		})
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{" allow http example.test:" + p, `rule="example.test"`},
		{" deny http other.test:" + p, `reason="no allow rule matches"`},
		{" allow connect example.test:" + p},
		{" deny connect other.test:" + p},
		{" allow socks5 example.test:" + p},
		{" deny socks5 other.test:" + p},
		{" deny socks5 127.0.0.1:" + p},
		{" deny http api.wild.test:" + p, `rule="*.wild.test"`, "(loopback)"},
		{" deny http [::1]:" + p},
	} {
		logHas(t, string(data), want...)
	}
	if info, err := os.Stat(log); err == nil && info.Mode().Perm() != 0o600 {
		t.Errorf("net log mode %v, want 0600", info.Mode().Perm())
	}
}

// logHas fails unless a line of log holds every part.
func logHas(t *testing.T, log string, parts ...string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return
		}
	}
	t.Errorf("no log line with %q in:\n%s", parts, log)
}

// An address literal is reached when a rule names that address: 127.1 and
// 2130706433 are 127.0.0.1.
func TestNetworkAddressAllowed(t *testing.T) {
	needCurl(t)
	srv := startWeb(t)
	w := newWorld(t)
	r := w.sh([]string{"--network", "allowlist", "--allow", "127.0.0.1:" + srv.port},
		`curl -sS --noproxy '' http://127.1:`+srv.port+`/x && curl -sS --noproxy '' --proxy "$ALL_PROXY" http://2130706433:`+srv.port+`/y`)
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "hello 127.0.0.1:"+srv.port+" /x\nhello 127.0.0.1:"+srv.port+" /y\n")
}

// A service on the host's loopback is out of reach, by the proxy and
// around it, until the policy names it; then it is at its usual address in
// the box.
func TestNetworkLocalhostForward(t *testing.T) {
	needCurl(t)
	srv := startWeb(t)
	p := srv.port
	w := newWorld(t)
	r := w.sh([]string{"--network", "allowlist"}, `curl -sS http://localhost:`+p+`/`)
	expectCode(t, r, 7) // NO_PROXY: the box's own loopback, where nothing listens
	r = w.sh([]string{"--network", "allowlist"}, `curl -sS --noproxy '' http://localhost:`+p+`/`)
	expectCode(t, r, 0)
	expectContains(t, "through the proxy", r.stdout, "agentbox: localhost:"+p+" denied: no allow rule matches")

	r = w.sh([]string{"--network", "allowlist", "--allow", "localhost:" + p},
		`curl -sS http://localhost:`+p+`/dev && curl -sS http://127.0.0.1:`+p+`/v4`)
	expectCode(t, r, 0)
	expectContains(t, "forward", r.stdout, "hello localhost:"+p+" /dev\nhello 127.0.0.1:"+p+" /v4\n")
}

// The summary at exit counts the denials and names, for each host, the
// allow entry that would let it through, marked safe or risky, and where
// every connection is listed; nothing is said when nothing was denied.
func TestNetworkDenialReport(t *testing.T) {
	needCurl(t)
	netNames(t)
	srv := startWeb(t)
	p := srv.port
	w := newWorld(t)
	script := `curl -sS http://other.test:` + p + `/ http://evil.wild.test:` + p + `/ >/dev/null`
	r := w.sh(netFlags(w), script)
	expectCode(t, r, 0)
	want := "agentbox: the box was refused 2 connections (agentbox log --denials lists each); what would allow them:\n" +
		"agentbox:   other.test:" + p + " (no allow rule matches): --allow other.test:" + p + " (risky: the box could send what it reads to other.test)\n" +
		"agentbox:   evil.wild.test:" + p + " (matches deny rule \"evil.wild.test\"): nothing a policy adds allows it (risky): it matches deny rule \"evil.wild.test\", and a deny rule wins over every allow; only taking it out of network.deny allows it\n"
	if r.stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
	log := filepath.Join(w.base, "n.log")
	r = w.sh(netFlags(w, "--net-log", log), script)
	expectCode(t, r, 0)
	expectContains(t, "with --net-log", r.stderr, "agentbox: the box was refused 2 connections (agentbox log --denials lists each; --net-log "+log+" every connection)")
	r = w.sh(netFlags(w), `curl -sS http://example.test:`+p+`/`)
	expectCode(t, r, 0)
	if r.stderr != "" {
		t.Errorf("nothing denied, stderr %q, want nothing", r.stderr)
	}
	r = w.sh([]string{"--network", "allowlist"}, `curl -sS http://example.test:`+p+`/`)
	expectContains(t, "no allow rules", r.stdout, "denied: no allow rule matches")
	expectContains(t, "no allow rules", r.stderr, "agentbox: the box was refused 1 connection")
}

// plan shows the allowlist, the proxy and the forwards; plan --argv shows
// the namespace, the variables and the init's network arguments.
func TestNetworkPlan(t *testing.T) {
	w := newWorld(t)
	pol := filepath.Join(w.base, "deny.toml")
	write(t, pol, "version = 1\n[network]\ndeny = [\"bad.example.test\"]\n")
	r := w.run("plan", "--network", "allowlist", "--allow", "example.test", "--allow", "localhost:3000", "--policy", pol, "--", "true")
	expectCode(t, r, 0)
	for _, want := range []string{
		"network:   allowlist (own network namespace, loopback only; HTTP and SOCKS5 proxy at 127.0.0.1:3128 in the box)\n",
		"  how:     the box's init hands each connection to agentbox's proxy on the host over an inherited socket pair",
		"  allow:   example.test, localhost:3000\n",
		"  deny:    bad.example.test\n",
		"  forward: 127.0.0.1:3000 in the box -> localhost:3000 on the host\n",
	} {
		expectContains(t, "plan", r.stdout, want)
	}
	r = w.run("plan", "--argv", "--wide", "--network", "allowlist", "--allow", "example.test", "--allow", "localhost:3000", "--", "true")
	expectCode(t, r, 0)
	for _, want := range []string{
		" --unshare-net ",
		" --setenv HTTP_PROXY http://127.0.0.1:3128 ", " --setenv https_proxy http://127.0.0.1:3128 ",
		" --setenv ALL_PROXY socks5h://127.0.0.1:3128 ", " --setenv NO_PROXY localhost,127.0.0.1,::1 ",
		" --setenv AGENTBOX_NETWORK allowlist ",
		" --net-fd 9 --net-port 3128 --forward localhost:3000 -- true ",
	} {
		expectContains(t, "plan --argv", r.stdout, want)
	}
	r = w.run("run", "--network", "allowlist", "--allow", "https://example.test", "--", "true")
	expectCode(t, r, 125)
	expectContains(t, "bad entry", r.stderr, `agentbox: error: flag --allow: "https://example.test": want a host, not a URL`)
	r = w.run("run", "--network", "allowlist", "--allow", "localhost:3128", "--", "true")
	expectCode(t, r, 125)
	expectContains(t, "proxy port", r.stderr, "port 3128 is the proxy's own port in the box")
}

// 256 MiB through a CONNECT tunnel arrive intact.
func TestNetworkLargeTransfer(t *testing.T) {
	if testing.Short() {
		t.Skip("large transfer")
	}
	needCurl(t)
	netNames(t)
	srv := startWeb(t)
	h := sha256.New()
	writeStream(h, bigSize)
	want := hex.EncodeToString(h.Sum(nil))
	w := newWorld(t)
	r := w.sh(netFlags(w), `curl -sS -p http://example.test:`+srv.port+`/big | sha256sum; curl -sS http://example.test:`+srv.port+`/big | wc -c`)
	expectCode(t, r, 0)
	if wantOut := want + "  -\n" + strconv.Itoa(bigSize) + "\n"; r.stdout != wantOut {
		t.Fatalf("got %q, want %q (sha256 through CONNECT, then the size through plain HTTP)", r.stdout, wantOut)
	}
}

// A run leaves nothing: no process, no socket or file of the proxy, and the
// upstream connection of a tunnel still open when CMD exits is closed. The
// same after kill -9 of agentbox, with the tunnel open.
func TestNetworkLeavesNothing(t *testing.T) {
	needCurl(t)
	netNames(t)
	srv := startWeb(t)
	tmpBefore := proxyFiles(t)
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "exit", true: "kill -9"}[kill], func(t *testing.T) {
			w := newWorld(t)
			tag := fmt.Sprintf("%d.%d", 2000+os.Getpid()%1000, time.Now().UnixNano()%100000)
			// The tunnel stays open in the background; CMD says ready
			// once data has come through it.
			script := `curl -sS -N -p http://example.test:` + srv.port + `/hold > hold.out & ` +
				`while ! grep -q held hold.out 2>/dev/null; do sleep 0.02; done; echo ready; ` +
				map[bool]string{false: `read go; exit 0`, true: `sleep ` + tag}[kill]
			c := w.cmd(append(append([]string{"run"}, netFlags(w)...), "--", "sh", "-c", script)...)
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			// The normal exit waits for a line from the test, so the box
			// cannot end before the test has seen the tunnel open.
			stdin, err := c.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Process.Kill(); c.Wait() })
			waitFor(t, "the tunnel", func() bool { return srv.active.Load() == 1 })
			if kill {
				waitFor(t, "the box", func() bool { return countProcs("sleep\x00"+tag) == 1 })
				c.Process.Signal(syscall.SIGKILL)
			} else {
				stdin.Write([]byte("go\n"))
			}
			stdin.Close()
			err = waitCmd(t, c)
			if !kill && err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			waitFor(t, "the upstream connection to close", func() bool { return srv.active.Load() == 0 })
			waitFor(t, "the box's processes to end", func() bool { return countProcs(tag) == 0 && countProcs("/hold") == 0 })
			if after := proxyFiles(t); after != tmpBefore {
				t.Errorf("proxy files: before %q, after %q", tmpBefore, after)
			}
		})
	}
}

// proxyFiles lists what a proxy socket would leave on disk.
func proxyFiles(t *testing.T) string {
	var all []string
	for _, d := range []string{os.TempDir(), "/tmp", "/var/tmp"} {
		m, _ := filepath.Glob(filepath.Join(d, "agentbox-net-*"))
		all = append(all, m...)
	}
	return strings.Join(all, " ")
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A SOCKS4 client is refused at once, not left waiting for a timeout.
func TestNetworkSOCKS4Refused(t *testing.T) {
	needCurl(t)
	netNames(t)
	srv := startWeb(t)
	w := newWorld(t)
	start := time.Now()
	r := w.run(append(append([]string{"run"}, netFlags(w)...), "--", "sh", "-c",
		`curl -sS -m 20 --socks4 127.0.0.1:3128 http://example.test:`+srv.port+`/ >/dev/null 2>&1; echo curl=$?`)...)
	expectCode(t, r, 0)
	expectNotContains(t, "curl", r.stdout, "curl=0")
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("SOCKS4 took %v to be refused", d)
	}
}
