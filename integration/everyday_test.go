//go:build linux

package integration

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// `--allow` without a network mode means allowlist: the box gets its own
// network with only the allowed host reachable. Before, the flag was
// ignored and every host was reachable.
func TestAllowWithoutNetworkMode(t *testing.T) {
	needCurl(t)
	allowed, other := startWeb(t), startWeb(t)
	w := newWorld(t)
	r := w.sh([]string{"--allow", "localhost:" + allowed.port},
		`curl -sS http://localhost:`+allowed.port+`/ok; curl -sS --noproxy '' http://127.0.0.1:`+other.port+`/leak; echo net=$AGENTBOX_NETWORK`)
	expectCode(t, r, 0)
	expectContains(t, "allowed host", r.stdout, "hello localhost:"+allowed.port+" /ok")
	expectContains(t, "mode", r.stdout, "net=allowlist")
	expectNotContains(t, "other host", r.stdout, "/leak")

	// With a mode that contradicts it: one line naming both flags, exit
	// 125, nothing run.
	for _, mode := range []string{"open", "none"} {
		r = w.sh([]string{"--network", mode, "--allow", "localhost:" + allowed.port}, `echo ran`)
		expectCode(t, r, 125)
		expectContains(t, "error", r.stderr, `agentbox: error: flag --allow: "localhost:`+allowed.port+`": allowing a host needs network mode allowlist, but --network sets the network to "`+mode+`"`)
		expectNotContains(t, "stdout", r.stdout, "ran")
	}
	p := w.run("plan", "--allow", "example.com", "--", "true")
	expectCode(t, p, 0)
	expectContains(t, "plan", p.stdout, "network:   allowlist")
	expectContains(t, "plan", p.stdout, "mode:    allowlist because flag --allow allows example.com")
}

// agentBin is a folder holding the agentbox under test as `agentbox`, for
// scripts that run it by name inside a box.
func agentBin(t *testing.T, w *world) string {
	t.Helper()
	dir := filepath.Join(w.base, "agentbin")
	mkdir(t, dir)
	if err := os.Symlink(bin, filepath.Join(dir, "agentbox")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Inside a box, agentbox confines further with whatever backend works there
// (Landlock inside bwrap), or runs the command in the outer box with one
// line; the outer box's variables are never read back as settings, and
// status says how deep the nesting is. Before, the inner agentbox read
// AGENTBOX_BACKEND=bwrap as a setting and failed with exit 125.
func TestNestedRun(t *testing.T) {
	w := newWorld(t)
	w.env = append(w.env, "PATH="+agentBin(t, w)+":"+os.Getenv("PATH"))
	outside := filepath.Join(w.base, "outside")
	mkdir(t, outside)
	// Inside bwrap, bwrap cannot make namespaces (the seccomp filter
	// refuses them) and Landlock adds the inner box. Inside Landlock a
	// second Landlock box cannot be built, so the command runs in the outer
	// box.
	for _, tc := range []struct{ outer, inner string }{{"bwrap", "inner=landlock depth=2"}, {"landlock", "inner=landlock depth=1"}} {
		t.Run(tc.outer, func(t *testing.T) {
			r := w.sh([]string{"--backend", tc.outer}, `
agentbox run -- sh -c 'echo inner=$AGENTBOX_BACKEND depth=$AGENTBOX_DEPTH; touch `+outside+`/x 2>/dev/null || echo refused'
echo status=$?
agentbox run -- agentbox status | grep nesting
agentbox plan -- true | grep -A1 '^  env'
agentbox plan -- true | grep 'filesystem refusals'
`)
			expectCode(t, r, 0)
			expectContains(t, "inner run", r.stdout, tc.inner+"\nrefused\nstatus=0\n")
			// The outer box's log refuses a second listener: the inner
			// run does not try (no warning) and its plan says so; the
			// outer box's log records what its own policy refused.
			expectNotContains(t, "stderr", r.stderr, "filesystem log:")
			expectContains(t, "inner plan", r.stdout, "filesystem refusals: not recorded inside another box")
			expectContains(t, "plan", r.stdout, "inside a box: AGENTBOX_BACKEND, ")
			expectContains(t, "plan", r.stdout, "describe the outer box and are not read as settings")
			if tc.outer == "bwrap" {
				expectContains(t, "status", r.stdout, "nesting:  depth 2 (this box runs inside 1 other agentbox boxes)")
				// One line from each inner run (two), naming the outer
				// box as the cause (not "this container"), and no
				// warning about the outer box's read-only state folder.
				want := "agentbox: notice: using Landlock inside the outer box, where bwrap cannot nest (agentbox doctor)\n"
				if r.stderr != want+want {
					t.Errorf("want one line from each nested run, got:\n%s", r.stderr)
				}
			} else {
				expectContains(t, "status", r.stdout, "nesting:  depth 1 (not nested")
				expectContains(t, "one line", r.stderr, "agentbox: running sh in the outer box (landlock) without a box of its own (agentbox plan says why)\n")
			}
			if exists(filepath.Join(outside, "x")) {
				t.Fatal("the inner box wrote outside its writable roots")
			}
			if tc.outer == "bwrap" {
				// learn inside a box does not try to arm a second log
				// either, and says what it cannot learn there.
				r := w.sh([]string{"--backend", tc.outer}, `agentbox learn --output /tmp/proposal.md -- sh -c 'touch `+outside+`/z 2>/dev/null; true'; echo learn=$?`)
				expectContains(t, "learn", r.stdout, "learn=0")
				expectNotContains(t, "learn stderr", r.stderr, "filesystem log:")
				expectContains(t, "learn stderr", r.stderr, "the files refused are not recorded inside another box")
			}
		})
	}

	// Where no inner box can be made (here: the inner plan must create
	// ~/.codex, which the outer box keeps read-only), the command runs in
	// the outer box, which still confines it, with one line.
	r := w.sh(nil, `agentbox run --provider codex -- sh -c 'echo in=$AGENTBOX_BACKEND depth=$AGENTBOX_DEPTH; touch `+outside+`/y 2>/dev/null || echo refused; exit 3'; echo status=$?`)
	expectCode(t, r, 0)
	expectContains(t, "outer run", r.stdout, "in=bwrap depth=1\nrefused\nstatus=3\n")
	expectContains(t, "one line", r.stderr, "agentbox: running sh in the outer box (bwrap) without a box of its own (agentbox plan says why)\n")
	// Besides the summary of what the box was refused (the touch).
	if n := strings.Count(r.stderr, "agentbox:") - strings.Count(r.stderr, "agentbox:   ") - strings.Count(r.stderr, "agentbox: the box was refused"); n != 1 {
		t.Errorf("want one line from agentbox, got %d:\n%s", n, r.stderr)
	}
	// A backend the user names is not second-guessed.
	r = w.sh(nil, `agentbox run --backend bwrap -- true; echo status=$?`)
	expectContains(t, "forced backend", r.stdout, "status=125")
}

// The everyday case: an aliased agent CLI started from a shell that runs in
// a box (eval "$(agentbox shell-init bash)", then agentbox run -- bash).
func TestNestedAliasedClaude(t *testing.T) {
	_, err := exec.LookPath("claude")
	need(t, err == nil, "claude is not installed (npm install -g @anthropic-ai/claude-code)")
	w := newWorld(t)
	w.env = append(w.env, "PATH="+agentBin(t, w)+":"+os.Getenv("PATH"))
	r := w.run("run", "--", "bash", "-c", `shopt -s expand_aliases
eval "$(agentbox shell-init bash)"
alias claude
claude --version; echo status=$?`)
	expectCode(t, r, 0)
	expectContains(t, "alias", r.stdout, "run -- claude")
	expectContains(t, "claude", r.stdout, "(Claude Code)")
	expectContains(t, "status", r.stdout, "status=0")
	expectNotContains(t, "stderr", r.stderr, "error")
}

// hostCacheDirs are the caches the tools keep in the home folder outside
// the box. seedHostCaches puts a file in each, so a box that could write
// them would show, and snapshot records them to the byte and the second.
var hostCacheDirs = []string{".npm", "go/pkg/mod", ".cache/go-build", ".cache/pip", ".local/share/pnpm", ".cargo", ".m2/repository", ".gradle", ".cache/yarn"}

func seedHostCaches(t *testing.T, w *world) {
	t.Helper()
	for _, d := range hostCacheDirs {
		write(t, filepath.Join(w.home, d, "host-entry"), "the host's own cache\n")
	}
}

// hostCacheSnapshot lists every path in the host caches with its mode,
// size and modification time.
func hostCacheSnapshot(t *testing.T, w *world) string {
	t.Helper()
	var b strings.Builder
	for _, d := range hostCacheDirs {
		filepath.Walk(filepath.Join(w.home, d), func(p string, fi os.FileInfo, err error) error {
			if err == nil {
				fmt.Fprintf(&b, "%s %s %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
			}
			return nil
		})
	}
	return b.String()
}

// privateCaches is the world's folder of private caches, and a cleanup
// that makes what go left read-only there removable again.
func privateCaches(t *testing.T, w *world) string {
	dir := filepath.Join(w.home, ".local", "state", "agentbox", "caches")
	t.Cleanup(func() {
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	return dir
}

// The attack first: a box tries to plant something in each of the host's
// caches (a poisoned module or build cache runs later, outside). Every
// write is refused, under both backends, and the host caches are unchanged
// to the byte; the box's own cache folder is private (0700).
func TestCachesHostReadOnly(t *testing.T) {
	w := newWorld(t)
	seedHostCaches(t, w)
	before := hostCacheSnapshot(t, w)
	caches := privateCaches(t, w)
	var script strings.Builder
	for _, d := range hostCacheDirs {
		fmt.Fprintf(&script, "echo poison > %s/poison 2>/dev/null && echo WROTE %s\n", filepath.Join(w.home, d), d)
		fmt.Fprintf(&script, "echo poison > %s/host-entry 2>/dev/null && echo CHANGED %s\n", filepath.Join(w.home, d), d)
	}
	script.WriteString(`for v in npm_config_cache PNPM_HOME GOPATH GOMODCACHE GOCACHE PIP_CACHE_DIR CARGO_HOME GRADLE_USER_HOME XDG_CACHE_HOME; do
  eval d=\$$v; mkdir -p "$d" && echo ok > "$d/own" && echo "own $v"
done
`)
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			r := w.sh([]string{"--backend", backend}, script.String())
			expectCode(t, r, 0)
			expectNotContains(t, "host caches", r.stdout, "WROTE")
			expectNotContains(t, "host caches", r.stdout, "CHANGED")
			for _, v := range []string{"npm_config_cache", "PNPM_HOME", "GOPATH", "GOMODCACHE", "GOCACHE", "PIP_CACHE_DIR", "CARGO_HOME", "GRADLE_USER_HOME", "XDG_CACHE_HOME"} {
				expectContains(t, "the box's own caches", r.stdout, "own "+v+"\n")
			}
		})
	}
	if after := hostCacheSnapshot(t, w); after != before {
		t.Fatalf("the host caches changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	list, err := os.ReadDir(caches)
	if err != nil || len(list) != 1 {
		t.Fatalf("want one workspace in %s, got %v %v", caches, list, err)
	}
	fi, _ := os.Stat(filepath.Join(caches, list[0].Name()))
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("the workspace's caches are %v, want 0700", fi.Mode().Perm())
	}
}

// needRegistry skips when cmd (a reachability check of a package
// registry) fails.
func needRegistry(t *testing.T, what string, cmd ...string) {
	t.Helper()
	_, err := exec.LookPath(cmd[0])
	need(t, err == nil, cmd[0]+" is not installed")
	c := exec.Command(cmd[0], cmd[1:]...)
	out, err := c.CombinedOutput()
	need(t, err == nil, what+" is not reachable: "+strings.TrimSpace(string(out)))
}

// A real npm install inside the box, under both backends, with the
// host's npm cache checked unchanged; the second run finds the package
// in the workspace's private cache. agentbox caches lists and clears it.
func TestCachesNpmInstall(t *testing.T) {
	needRegistry(t, "the npm registry", "npm", "ping")
	w := newWorld(t)
	seedHostCaches(t, w)
	before := hostCacheSnapshot(t, w)
	caches := privateCaches(t, w)
	write(t, filepath.Join(w.project, "package.json"), `{"name":"everyday","version":"1.0.0","private":true}`+"\n")
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			os.RemoveAll(filepath.Join(w.project, "node_modules"))
			r := w.run("run", "--backend", backend, "--", "npm", "install", "--no-fund", "--no-audit", "--no-update-notifier", "is-number")
			expectCode(t, r, 0)
			expectNotContains(t, "npm", r.stdout+r.stderr, "EROFS")
			expectNotContains(t, "npm", r.stdout+r.stderr, "npm warn")
			if !exists(filepath.Join(w.project, "node_modules", "is-number", "package.json")) {
				t.Fatalf("is-number is not installed in the project:\n%s", r)
			}
		})
	}
	if after := hostCacheSnapshot(t, w); after != before {
		t.Fatalf("the host caches changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	l := w.run("caches")
	expectCode(t, l, 0)
	expectContains(t, "caches", l.stdout, "npm")
	expectContains(t, "caches", l.stdout, "* proj-")
	index, _ := filepath.Glob(filepath.Join(caches, "proj-*", "npm", "_cacache", "index-v5"))
	if len(index) != 1 {
		t.Fatalf("npm's cache is not in the workspace's private caches: %v\n%s", index, l.stdout)
	}
	c := w.run("caches", "--clear", "npm")
	expectCode(t, c, 0)
	if exists(filepath.Dir(filepath.Dir(index[0]))) {
		t.Error("agentbox caches --clear npm left npm's cache")
	}
}

// go mod download and go build of a module with a dependency inside the
// box: the modules and the build cache land in the workspace's private
// caches, the host's are unchanged. The Landlock run downloads another
// version and builds from the warm private caches.
func TestCachesGoBuild(t *testing.T) {
	needRegistry(t, "the Go module proxy", "go", "list", "-m", "-json", "golang.org/x/mod@v0.37.0")
	w := newWorld(t)
	seedHostCaches(t, w)
	before := hostCacheSnapshot(t, w)
	caches := privateCaches(t, w)
	w.env = append(w.env, "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	// A cold build cache compiles the runtime first: minutes on a busy
	// machine.
	w.timeout = 10 * time.Minute
	write(t, filepath.Join(w.project, "go.mod"), "module example.com/everyday\n\ngo 1.24\n\nrequire golang.org/x/mod v0.37.0\n")
	write(t, filepath.Join(w.project, "main.go"), "package main\n\nimport \"golang.org/x/mod/semver\"\n\nfunc main() { println(\"compare\", semver.Compare(\"v1.2.0\", \"v1.10.0\")) }\n")
	r := w.sh([]string{"--backend", "bwrap"}, `set -e; go mod download golang.org/x/mod && go build -o app . && ./app`)
	expectCode(t, r, 0)
	expectContains(t, "go build", r.stderr, "compare -1")
	r = w.sh([]string{"--backend", "landlock"}, `set -e; go mod download golang.org/x/mod@v0.30.0 && go build -o app2 . && ./app2 && go env GOMODCACHE`)
	expectCode(t, r, 0)
	expectContains(t, "go build", r.stderr, "compare -1")
	expectContains(t, "GOMODCACHE", r.stdout, caches)
	for _, v := range []string{"v0.37.0", "v0.30.0"} {
		if m, _ := filepath.Glob(filepath.Join(caches, "proj-*", "go-mod", "cache", "download", "golang.org", "x", "mod", "@v", v+".zip")); len(m) != 1 {
			t.Errorf("golang.org/x/mod %s is not in the private module cache", v)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(caches, "proj-*", "go-build", "*")); len(m) == 0 {
		t.Error("the private build cache is empty")
	}
	if after := hostCacheSnapshot(t, w); after != before {
		t.Fatalf("the host caches changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// wheel builds a minimal pure-Python wheel of the package name: a module
// that prints its own location, with the METADATA, WHEEL and RECORD files
// pip checks.
func wheel(t *testing.T, name, version string) []byte {
	t.Helper()
	info := name + "-" + version + ".dist-info"
	files := []struct{ path, body string }{
		{name + "/__init__.py", "print('imported', __file__)\n"},
		{info + "/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		{info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: agentbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		fw, err := z.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(f.body))
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.path, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString(info + "/RECORD,,\n")
	fw, _ := z.Create(info + "/RECORD")
	fw.Write([]byte(record.String()))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pipIndex serves a package index on 127.0.0.1 with one wheel (PyPI is not
// reachable from every test machine), with cache headers pip's HTTP cache
// keeps. downloads counts how often the wheel itself was fetched.
func pipIndex(t *testing.T, name string) (url string, downloads *atomic.Int64) {
	t.Helper()
	file := name + "-1.0-py3-none-any.whl"
	data := wheel(t, name, "1.0")
	sum := sha256.Sum256(data)
	downloads = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/" + name + "/":
			fmt.Fprintf(rw, "<!DOCTYPE html><html><body><a href=\"/files/%s#sha256=%s\">%s</a></body></html>\n", file, hex.EncodeToString(sum[:]), file)
		case "/files/" + file:
			downloads.Add(1)
			rw.Header().Set("Cache-Control", "max-age=86400, public")
			rw.Header().Set("Content-Type", "application/octet-stream")
			rw.Write(data)
		default:
			http.NotFound(rw, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/simple", downloads
}

// pip in a venv inside the box, under both backends: the download lands
// in the workspace's private pip cache (the second install, under the
// other backend, is served from it), and the host's pip cache is unchanged.
func TestCachesPipVenv(t *testing.T) {
	_, err := exec.LookPath("python3")
	need(t, err == nil, "python3 is not installed")
	need(t, exec.Command("python3", "-m", "venv", "--help").Run() == nil, "python3 has no venv module (apt-get install python3-venv)")
	index, downloads := pipIndex(t, "everydaypkg")
	w := newWorld(t)
	w.env = append(w.env, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1")
	w.timeout = 5 * time.Minute
	seedHostCaches(t, w)
	before := hostCacheSnapshot(t, w)
	caches := privateCaches(t, w)
	for i, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			// pip caches what it fetches over https or from a trusted host.
			venv := ".venv-" + backend
			r := w.sh([]string{"--backend", backend}, `set -e
python3 -m venv `+venv+`
`+venv+`/bin/pip install --trusted-host 127.0.0.1 --index-url `+index+` everydaypkg
`+venv+`/bin/python -c 'import everydaypkg'
echo cache=$PIP_CACHE_DIR`)
			expectCode(t, r, 0)
			expectContains(t, "import", r.stdout, "imported "+filepath.Join(w.project, venv))
			expectContains(t, "cache", r.stdout, "cache="+caches)
			if n := downloads.Load(); n != 1 {
				t.Errorf("after install %d the wheel was downloaded %d times; want 1 (the second from the private cache)", i+1, n)
			}
		})
	}
	if m, _ := filepath.Glob(filepath.Join(caches, "proj-*", "pip", "http*")); len(m) == 0 {
		t.Error("pip's HTTP cache is not in the workspace's private caches")
	}
	if after := hostCacheSnapshot(t, w); after != before {
		t.Fatalf("the host caches changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// Network mode allowlist under Landlock (where bwrap cannot run, as in a
// Kubernetes pod): the box reaches allowed hosts through agentbox's proxy
// on the host's loopback, other hosts are refused by the proxy, and a
// direct connection anywhere else is refused by Landlock. Before, Landlock
// refused allowlist altogether.
func TestLandlockAllowlist(t *testing.T) {
	needCurl(t)
	netNames(t)
	srv := startWeb(t)
	w := newWorld(t)
	log := filepath.Join(w.base, "net.log")
	r := w.sh([]string{"--backend", "landlock", "--allow", "example.test", "--net-log", log}, `
curl -sS http://example.test:`+srv.port+`/allowed
curl -sS http://other.test:`+srv.port+`/denied; echo
curl -sS --noproxy '*' http://127.0.0.1:`+srv.port+`/direct 2>&1 | grep -q "Couldn't connect\|Permission denied" && echo direct=refused
echo net=$AGENTBOX_NETWORK`)
	expectCode(t, r, 0)
	expectContains(t, "allowed", r.stdout, "hello example.test:"+srv.port+" /allowed")
	expectContains(t, "denied", r.stdout, "agentbox: other.test:"+srv.port+" denied: no allow rule matches")
	expectContains(t, "direct", r.stdout, "direct=refused")
	expectContains(t, "mode", r.stdout, "net=allowlist")
	expectNotContains(t, "direct", r.stdout, "/direct")
	data, _ := os.ReadFile(log)
	logHas(t, string(data), "deny", "other.test:"+srv.port)
	p := w.run("plan", "--backend", "landlock", "--allow", "example.test", "--", "true")
	expectContains(t, "plan", p.stdout, "enforced-weaker")
	expectContains(t, "plan", p.stdout, "Landlock filters TCP by port, not by address")

	// The proxy listens on the host's loopback: a process of another user
	// that finds its port is not served.
	if !isRoot() {
		return
	}
	portFile := filepath.Join(w.project, "proxy")
	c := w.cmd("run", "--backend", "landlock", "--allow", "example.test", "--", "sh", "-c", `echo $HTTP_PROXY > `+portFile+`; sleep 30`)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	var proxy string
	waitFor(t, "the box's proxy address", func() bool {
		b, _ := os.ReadFile(portFile)
		proxy = strings.TrimSpace(string(b))
		return strings.HasPrefix(proxy, "http://127.0.0.1:")
	})
	other := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "curl", "-sS", "-m", "10", "-x", proxy, "http://example.test:"+srv.port+"/stranger")
	out, err := other.CombinedOutput()
	if err == nil || strings.Contains(string(out), "hello") {
		t.Fatalf("another user was served by the box's proxy: %v\n%s", err, out)
	}
}
