//go:build linux

package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Network none: own namespace, loopback only; open shares the host's.
func TestNetworkModes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	w := newWorld(t)
	probe := fmt.Sprintf(`tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' '; echo; bash -c 'echo > /dev/tcp/127.0.0.1/%d' 2>/dev/null && echo connected || echo refused`, port)
	r := w.sh(nil, probe)
	expectCode(t, r, 0)
	expectContains(t, "open", r.stdout, "connected")
	r = w.sh([]string{"--network", "none"}, probe)
	expectCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "lo \n") {
		t.Fatalf("network none: want only lo, got %q", r.stdout)
	}
	expectContains(t, "none", r.stdout, "refused")
}

// The truthful variables are set only when confined; degraded runs say so.
func TestTruthfulVariables(t *testing.T) {
	w := newWorld(t)
	w.env = append(w.env, "AGENTBOX_WRITABLE=/forged", "AGENTBOX=1")
	r := w.sh(nil, `echo "$AGENTBOX|$AGENTBOX_BACKEND|$AGENTBOX_WRITABLE|$AGENTBOX_NETWORK|$TMPDIR|$AGENTBOX_DEGRADED"`)
	expectCode(t, r, 0)
	caches, _ := filepath.Glob(filepath.Join(w.home, ".local", "state", "agentbox", "caches", "proj-*"))
	if len(caches) != 1 {
		t.Fatalf("the run's private caches: %v", caches)
	}
	// In mount order: the private caches are bound with the workspace
	// stage, before the writable roots.
	want := fmt.Sprintf("1|bwrap|/tmp,%s,%s|open|/tmp|\n", caches[0], w.project)
	if r.stdout != want {
		t.Fatalf("confined: got %q, want %q", r.stdout, want)
	}
	r = w.run("run", "--", bin, "status")
	expectCode(t, r, 0)
	expectContains(t, "status", r.stdout, "sandbox:  active (bwrap; checked: / is read-only)")
	// A forged AGENTBOX=1 outside a box is caught: / is writable.
	r = w.run("status")
	expectCode(t, r, 1)
	expectContains(t, "forged status", r.stdout, "NOT a working agentbox sandbox")
}

// Without bwrap, forced to bwrap: require refuses with the fix,
// best-effort warns once and runs unconfined with AGENTBOX_DEGRADED and none
// of the truthful variables. (auto falls back to Landlock instead: see
// TestAutoFallsBackToLandlock.)
func TestNoBwrap(t *testing.T) {
	w := newWorld(t)
	// A PATH holding sh, env and echo but no bwrap.
	pathDir := filepath.Join(w.base, "bin")
	mkdir(t, pathDir)
	for _, tool := range []string{"sh", "echo", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		os.Symlink(p, filepath.Join(pathDir, tool))
	}
	w.env = append(w.env, "PATH="+pathDir)
	r := w.sh([]string{"--backend", "bwrap"}, `echo ran`)
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "bubblewrap (bwrap) is not installed")
	expectContains(t, "stderr", r.stderr, "agentbox: hint: install it")
	expectNotContains(t, "stdout", r.stdout, "ran")

	r = w.sh([]string{"--backend", "bwrap", "--best-effort"}, `echo "ran|$AGENTBOX|$AGENTBOX_BACKEND|$AGENTBOX_DEGRADED"; exit 4`)
	expectCode(t, r, 4)
	if got := strings.Count(r.stderr, "\n"); got != 1 || !strings.HasPrefix(r.stderr, "agentbox: warning: running UNCONFINED") {
		t.Fatalf("want one warning line, got %q", r.stderr)
	}
	expectContains(t, "stdout", r.stdout, "ran|||bwrap-missing:")
}

// plan --argv prints the exact command line of the box. Run by hand it
// lacks agentbox's supervisor, which judges every connect to a unix socket
// through the log's socket (descriptor 10): the box's init refuses to start
// the command without it (fail closed), never runs it unjudged.
func TestPlanArgvRuns(t *testing.T) {
	w := newWorld(t)
	// plan creates nothing; a first run prepares agentbox's own folders.
	expectCode(t, w.sh(nil, "true"), 0)
	r := w.run("plan", "--argv", "--", "sh", "-c", "echo RAN; touch /usr/x 2>&1 | grep -c Read-only")
	expectCode(t, r, 0)
	expectContains(t, "argv", r.stdout, "--log-fd")
	c := exec.Command("bash", "-c", r.stdout)
	c.Dir, c.Env = w.cwd, w.env
	out, err := c.CombinedOutput()
	if err == nil || strings.Contains(string(out), "RAN") || !strings.Contains(string(out), "the log's socket (fd 10) is not there") {
		t.Fatalf("running the printed argv by hand: %v\n%s\nargv: %s", err, out, r.stdout)
	}
	j := w.run("plan", "--json", "--", "true")
	expectCode(t, j, 0)
	expectContains(t, "json", j.stdout, `"stage": 1`)
}

// agentbox status outside a box says so and exits 1.
func TestStatusOutside(t *testing.T) {
	w := newWorld(t)
	r := w.run("status")
	expectCode(t, r, 1)
	expectContains(t, "status", r.stdout, "not active")
}
