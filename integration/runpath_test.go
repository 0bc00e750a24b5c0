//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBwrapFirst puts a script named bwrap first in PATH and gives the
// world a probe cache of its own.
func fakeBwrapFirst(t *testing.T, w *world, script string) string {
	t.Helper()
	dir := filepath.Join(w.base, "fakebin")
	mkdir(t, dir)
	p := filepath.Join(dir, "bwrap")
	write(t, p, "#!/bin/sh\n"+script+"\n")
	os.Chmod(p, 0o755)
	w.env = append(w.env, "PATH="+dir+":"+os.Getenv("PATH"), "XDG_CACHE_HOME="+filepath.Join(w.base, "cache"))
	return p
}

// A failing bwrap first in PATH: every message is one clean line each,
// with no empty hint, no doubled "bwrap: bwrap:" and no "rule : path".
func TestBwrapFailureMessages(t *testing.T) {
	w := newWorld(t)
	fakeBwrapFirst(t, w, `echo "bwrap: setting up uid map: Permission denied" >&2; exit 1`)
	for _, args := range [][]string{
		{"run", "--backend", "bwrap", "--network", "allowlist", "--", "true"},
		{"run", "--backend", "bwrap", "--", "true"},
	} {
		r := w.run(args...)
		expectCode(t, r, 125)
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		if !strings.HasPrefix(lines[0], "agentbox: error: ") {
			t.Fatalf("%v: first line %q, want the error", args, lines[0])
		}
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, "agentbox: hint: ") || strings.TrimSpace(strings.TrimPrefix(l, "agentbox: hint:")) == "" {
				t.Errorf("%v: line %q is not a hint with text", args, l)
			}
		}
		for _, bad := range []string{"bwrap: bwrap:", " : ", "seatbelt"} {
			expectNotContains(t, "stderr", r.stderr, bad)
		}
		expectContains(t, "stderr", r.stderr, "setting up uid map: Permission denied")
	}
}

// A probe cache that says bwrap works goes stale (here: bwrap starts
// failing without changing its file): the failed start forgets the cached
// answer, so the next run probes again and auto passes bwrap over.
func TestStaleBwrapProbeForgotten(t *testing.T) {
	w := newWorld(t)
	broken := filepath.Join(w.base, "broken")
	real, err := exec.LookPath("bwrap")
	need(t, err == nil, "bwrap is not installed")
	fakeBwrapFirst(t, w, `[ -e `+broken+` ] && { echo "bwrap: Creating new namespace failed: Operation not permitted" >&2; exit 1; }; exec `+real+` "$@"`)
	expectCode(t, w.sh(nil, "true"), 0)
	write(t, broken, "")
	r := w.run("run", "--backend", "bwrap", "--", "true")
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "bubblewrap cannot create the sandbox: Creating new namespace failed")
	p := w.run("plan", "--", "true")
	expectContains(t, "plan", p.stdout, "passed over: bwrap: bwrap cannot create a sandbox: Creating new namespace failed")
}

// The bwrap probe runs once and its answer is taken from the cache by
// every later run, whichever way the backend is chosen: auto, named, and
// named under --best-effort (which once probed afresh on every run).
func TestBwrapProbeCachedForEveryChoice(t *testing.T) {
	w := newWorld(t)
	real, err := exec.LookPath("bwrap")
	need(t, err == nil, "bwrap is not installed")
	calls := filepath.Join(w.base, "bwrap-calls")
	// The probe's arguments start with --ro-bind; a box's with --args.
	fakeBwrapFirst(t, w, `[ "$1" = "--ro-bind" ] && echo probe >>`+calls+`; exec `+real+` "$@"`)
	for _, args := range [][]string{
		{"run", "--", "true"},
		{"run", "--backend", "bwrap", "--", "true"},
		{"run", "--best-effort", "--backend", "bwrap", "--", "true"},
		{"run", "--best-effort", "--backend", "bwrap", "--", "true"},
		{"run", "--best-effort", "--", "true"},
	} {
		expectCode(t, w.run(args...), 0)
	}
	data, _ := os.ReadFile(calls)
	if n := strings.Count(string(data), "probe"); n != 1 {
		t.Errorf("bwrap was probed %d times over five runs, want once (then the cache)", n)
	}
}

// With a memory limit the box gets its own cgroup, and agentbox itself
// leaves it as soon as the box's first process exists: the supervisor never
// counts against the box's limits and cannot be the OOM victim.
func TestSupervisorOutsideBoxCgroup(t *testing.T) {
	rootOnly(t, "creating cgroups needs root here")
	w := newWorld(t)
	pol := policyFile(t, w, "[limits]\nmemory = \"512MiB\"\nprocesses = 300\n")
	c := w.cmd("run", "--policy", pol, "--", "sh", "-c", "cat /proc/self/cgroup; echo done; read x")
	stdin, _ := c.StdinPipe()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); waitCmd(t, c) }()
	var boxCg []string
	br := bufio.NewReader(out)
	for line := readLine(t, br); line != "done\n"; line = readLine(t, br) {
		if line == "" {
			t.Fatal("the box ended before it said done")
		}
		boxCg = append(boxCg, strings.TrimSuffix(line, "\n"))
	}
	self, err := os.ReadFile("/proc/" + itoa(c.Process.Pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	inBox := false
	for _, l := range boxCg {
		if strings.Contains(l, "agentbox-") {
			inBox = true
		}
	}
	if !inBox {
		t.Fatalf("the box's processes are not in a cgroup of agentbox's: %q", boxCg)
	}
	if strings.Contains(string(self), "agentbox-") {
		t.Errorf("agentbox itself is still in the box's cgroup:\n%s", self)
	}
}

// plan --json carries the schema, the digest, the chosen backend and what
// it makes of every rule; it is one JSON document.
func TestPlanJSONBox(t *testing.T) {
	w := newWorld(t)
	r := w.run("plan", "--json", "--", "true")
	expectCode(t, r, 0)
	var out struct {
		Schema int    `json:"schema"`
		Digest string `json:"digest"`
		RunID  string `json:"run_id"`
		Box    struct {
			Backend string `json:"backend"`
			Rules   []struct {
				Level string `json:"level"`
			} `json:"rules"`
			Detail map[string]any `json:"detail"`
		} `json:"box"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, r.stdout)
	}
	if out.Schema != 1 || len(out.Digest) != 64 || len(out.RunID) != 12 || out.Box.Backend == "" || len(out.Box.Rules) == 0 || out.Box.Detail == nil {
		t.Errorf("plan --json lacks something: %+v", out)
	}
	r = w.run("plan", "--json", "--argv", "--", "true")
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "--json and --argv")
}

// Landlock's private /tmp is a fresh folder of this run, named in the plan
// from the run's ID, and gone afterwards.
func TestLandlockPrivateTmpGone(t *testing.T) {
	w := newWorld(t)
	r := w.sh([]string{"--backend", "landlock", "--tmp", "private"}, `echo "$TMPDIR"; touch "$TMPDIR/x" && echo wrote`)
	expectCode(t, r, 0)
	dir := strings.SplitN(r.stdout, "\n", 2)[0]
	expectContains(t, "stdout", r.stdout, "wrote")
	if !strings.Contains(dir, "/run-") {
		t.Fatalf("TMPDIR %q is not a per-run folder", dir)
	}
	deadline := time.Now().Add(2 * time.Second)
	for exists(dir) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if exists(dir) {
		t.Errorf("the run's private tmp %s is still there", dir)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
