//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
)

// `agentbox plan --json` is what runs: the plan is frozen when it is
// resolved, so plan and run agree exactly. Each case resolves the plan with
// `agentbox plan --json`, then runs the same command line and compares
// what the backend really did with what plan said. The run ID differs
// between the two resolutions by design (each draws a new one; the digest
// leaves it out); where it appears in a path, the plan's is replaced by
// the run's.

// planJSON is the part of `agentbox plan --json` the comparison reads.
type planJSON struct {
	Schema int    `json:"schema"`
	Digest string `json:"digest"`
	RunID  string `json:"run_id"`
	Box    struct {
		Backend string          `json:"backend"`
		Detail  json.RawMessage `json:"detail"`
	} `json:"box"`
}

// planFor runs `agentbox plan --json` with args and decodes it.
func (w *world) planFor(args ...string) planJSON {
	w.t.Helper()
	r := w.run(append([]string{"plan", "--json"}, args...)...)
	expectCode(w.t, r, 0)
	var p planJSON
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		w.t.Fatalf("plan --json: %v\n%s", err, r.stdout)
	}
	if p.Schema != 1 || len(p.Digest) != 64 || p.RunID == "" {
		w.t.Fatalf("plan --json: schema %d digest %q run %q", p.Schema, p.Digest, p.RunID)
	}
	return p
}

// runStart returns the run-start event of the world's last run.
func (w *world) runStart() event.Event {
	w.t.Helper()
	id := w.lastRun()
	starts := runEvents(w.logged(), id)[event.RunStart]
	if len(starts) != 1 {
		w.t.Fatalf("run %s: want one run-start, got %+v", id, starts)
	}
	return starts[0]
}

// planCases are the command lines both backends are compared on: every
// stage of the plan, the environment, a per-run tmp folder, and a
// provider whose command is changed for the box.
func planCases(w *world, backend string) map[string][]string {
	secret := filepath.Join(w.base, "secret")
	mkdir(w.t, secret)
	write(w.t, filepath.Join(w.project, "ro", "f"), "x")
	cases := map[string][]string{
		"defaults": {"--", "true"},
		"network none, deny, read-only, env": {"--network", "none", "--deny", secret, "--read-only", filepath.Join(w.project, "ro"),
			"--env-mode", "clean", "--pass-env", "LANG", "--deny-env", "SECRET_*", "--", "sh", "-c", "true"},
		"workspace and task":                {"--workspace", "web", "--workspace-root", filepath.Join(w.base, "work"), "--task", "t1", "--", "true"},
		"private tmp":                       {"--tmp", "private", "--", "true"},
		"codex: its own sandbox turned off": {"--provider", "codex", "--", "codex", "--version"},
	}
	if backend == "bwrap" {
		cases["allowlist with a forward"] = []string{"--network", "allowlist", "--allow", "example.test", "--allow", "localhost:3000", "--", "true"}
	}
	return cases
}

// For bwrap: a wrapper named bwrap, first on PATH, records the arguments
// it is started with and execs the real bwrap. They are box.detail.args of
// `plan --json` exactly (the only difference allowed at run time, the
// init's --foreground when agentbox owns a terminal, does not arise here),
// and the run's start event carries plan's digest.
func TestPlanEqualsRunBwrap(t *testing.T) {
	realBwrap, err := exec.LookPath("bwrap")
	need(t, err == nil, "bwrap is not installed")
	_, err = exec.LookPath("codex")
	need(t, err == nil, "codex is not installed (the provider case runs it)")
	w := newWorld(t)
	wrapDir := filepath.Join(w.base, "wrap")
	recDir := filepath.Join(w.base, "rec")
	mkdir(t, wrapDir)
	mkdir(t, recDir)
	// The options come through --args FD: read them through /proc, which
	// opens the file afresh and leaves bwrap's read position alone.
	write(t, filepath.Join(wrapDir, "bwrap"), "#!/bin/sh\n[ \"$1\" = --args ] && cat /proc/self/fd/$2 > "+recDir+"/opts.$$\n"+
		"printf '%s\\0' \"$@\" > "+recDir+"/argv.$$\nexec "+realBwrap+" \"$@\"\n")
	os.Chmod(filepath.Join(wrapDir, "bwrap"), 0o755)
	w.env = append(w.env, "PATH="+wrapDir+":"+os.Getenv("PATH"))
	mkdir(t, filepath.Join(w.home, ".codex"))

	for name, args := range planCases(w, "bwrap") {
		t.Run(name, func(t *testing.T) {
			args = append([]string{"--backend", "bwrap"}, args...)
			p := w.planFor(args...)
			var d mount.Detail
			if err := json.Unmarshal(p.Box.Detail, &d); err != nil || p.Box.Backend != "bwrap" {
				t.Fatalf("plan --json box: %v %s", err, p.Box.Detail)
			}
			if d.Bwrap != filepath.Join(wrapDir, "bwrap") {
				t.Fatalf("plan names bwrap %s, want the wrapper first on PATH", d.Bwrap)
			}
			os.RemoveAll(recDir)
			mkdir(t, recDir)
			r := w.run(append([]string{"run"}, args...)...)
			expectCode(t, r, 0)

			start := w.runStart()
			if start.Digest != p.Digest {
				t.Errorf("run-start digest %s, plan --json digest %s", start.Digest, p.Digest)
			}
			recorded := bwrapRuns(t, recDir)
			if len(recorded) != 1 {
				t.Fatalf("bwrap was started %d times for the box, want once: %q", len(recorded), recorded)
			}
			// With the C init, where the kernel has the mount API, bwrap
			// leaves the binds the plan lists in init_mounts to the init:
			// what runs is the plan's words less those ranges.
			args := d.Args
			if len(d.InitMounts) > 0 && mount.MountAPI() {
				var err error
				if args, _, err = mount.WithoutInitMounts(d.Args, d.CommandAt, d.InitMounts, os.Geteuid() == 0); err != nil {
					t.Fatal(err)
				}
			}
			want := make([]string, len(args))
			for i, a := range args {
				want[i] = strings.ReplaceAll(a, p.RunID, start.Run)
			}
			if diff := cmp.Diff(want, recorded[0]); diff != "" {
				t.Errorf("bwrap's arguments: plan --json (-) and what ran (+):\n%s", diff)
			}
		})
	}
}

// bwrapRuns returns the argument lists the wrapper recorded, leaving out
// the probe agentbox runs to check that bwrap works here.
func bwrapRuns(t *testing.T, dir string) [][]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "argv.") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
		if len(args) > 1 && args[0] == "--args" {
			// The options bwrap read from the descriptor, then its
			// command line's command.
			opts, err := os.ReadFile(filepath.Join(dir, "opts."+strings.TrimPrefix(e.Name(), "argv.")))
			if err != nil {
				t.Fatal(err)
			}
			args = append(strings.Split(strings.TrimSuffix(string(opts), "\x00"), "\x00"), args[2:]...)
		}
		if strings.Join(args, "\x00") == strings.Join(mount.ProbeArgs, "\x00") {
			continue
		}
		out = append(out, args)
	}
	return out
}

// For Landlock: the run's start event carries plan's digest, and the child
// applies the rule set plan --json shows. strace records the child's
// landlock_create_ruleset and landlock_add_rule calls (with each rule's
// folder or file, -y); they are exactly the handled rights of box.detail
// and its grants carved over this file system (landlock.Expand), rule for
// rule.
func TestPlanEqualsRunLandlock(t *testing.T) {
	strace, err := exec.LookPath("strace")
	need(t, err == nil, "strace is not installed")
	_, err = exec.LookPath("codex")
	need(t, err == nil, "codex is not installed (the provider case runs it)")
	w := newWorld(t)
	mkdir(t, filepath.Join(w.home, ".codex"))
	for name, args := range planCases(w, "landlock") {
		t.Run(name, func(t *testing.T) {
			args = append([]string{"--backend", "landlock"}, args...)
			// A first run makes agentbox's own state folders (the after-run
			// check's index is made at the end of a run), so the file
			// system the plan is compared on after the run is the one the
			// child carved.
			w.run(append([]string{"run"}, args...)...)
			p := w.planFor(args...)
			var a landlock.Assessment
			if err := json.Unmarshal(p.Box.Detail, &a); err != nil || p.Box.Backend != "landlock" {
				t.Fatalf("plan --json box: %v %s", err, p.Box.Detail)
			}
			trace := filepath.Join(w.base, "strace.out")
			c := exec.Command(strace, append([]string{"-f", "-qq", "-y", "-X", "raw", "-o", trace,
				"-e", "trace=landlock_create_ruleset,landlock_add_rule", bin, "run"}, args...)...)
			c.Dir, c.Env = w.cwd, w.env
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("run under strace: %v\n%s", err, out)
			}
			start := w.runStart()
			if start.Digest != p.Digest {
				t.Errorf("run-start digest %s, plan --json digest %s", start.Digest, p.Digest)
			}
			data, err := os.ReadFile(trace)
			if err != nil {
				t.Fatal(err)
			}
			handled, applied := appliedRules(t, data)
			if handled != uint64(a.HandledFS) {
				t.Errorf("the child handles fs rights %#x, plan --json %#x (%s)", handled, uint64(a.HandledFS), a.HandledFS)
			}
			// The plan's grants, with its run ID replaced by the run's.
			for i := range a.Grants {
				a.Grants[i].Path = strings.ReplaceAll(a.Grants[i].Path, p.RunID, start.Run)
				for j, e := range a.Grants[i].Except {
					a.Grants[i].Except[j] = strings.ReplaceAll(e, p.RunID, start.Run)
				}
			}
			want := map[string]uint64{}
			for i, g := range a.Grants {
				// The run's own fresh folder (a private /tmp) is gone
				// once the run is over: it was granted as a whole.
				if _, err := os.Stat(g.Path); os.IsNotExist(err) && strings.Contains(g.Path, start.Run) {
					want[g.Path] = uint64(g.Rights)
					a.Grants[i].Optional = true
				}
			}
			rules, err := landlock.Expand(a.Grants, os.DirFS("/"))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rules {
				want[r.Path] |= uint64(r.Rights)
			}
			// Entries other processes on this machine make and remove at
			// any time in shared folders (other runs' tmp folders, other
			// tests' worlds), which carving lists, may differ between the
			// run and now, and so may the run's own fresh folders (the
			// preloaded filesystem log's), gone once it is over; nothing
			// else may.
			roots := map[string]bool{}
			for _, g := range a.Grants {
				roots[g.Path] = true
			}
			for path := range union(want, applied) {
				_, err := os.Stat(path)
				own := os.IsNotExist(err) && strings.Contains(path, start.Run)
				if !roots[path] && (shared(path, w.base) || own) {
					delete(want, path)
					delete(applied, path)
				}
			}
			if diff := cmp.Diff(want, applied); diff != "" {
				t.Errorf("landlock rules: plan --json (-) and what the child applied (+):\n%s", diff)
			}
			if len(applied) < 5 {
				t.Errorf("only %d rules applied: %v", len(applied), applied)
			}
		})
	}
}

var (
	createRE = regexp.MustCompile(`landlock_create_ruleset\(\{handled_access_fs=(0x[0-9a-f]+)`)
	ruleRE   = regexp.MustCompile(`landlock_add_rule\(\d+<[^>]*>, 0x1, \{allowed_access=(0x[0-9a-f]+), parent_fd=\d+<(.*)>\}, 0\) = 0`)
)

// appliedRules reads strace's record: the handled filesystem rights of the
// one ruleset created, and each rule's path and rights.
func appliedRules(t *testing.T, trace []byte) (uint64, map[string]uint64) {
	t.Helper()
	var handled []uint64
	rules := map[string]uint64{}
	for _, line := range strings.Split(string(trace), "\n") {
		if m := createRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseUint(m[1], 0, 64)
			handled = append(handled, n)
		}
		if m := ruleRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseUint(m[1], 0, 64)
			rules[m[2]] |= n
		}
	}
	if len(handled) != 1 {
		t.Fatalf("want one ruleset created, got %d:\n%s", len(handled), trace)
	}
	return handled[0], rules
}

func union(a, b map[string]uint64) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// shared reports whether path is an entry of a folder every process on the
// machine writes in (/tmp, /var/tmp, /dev/shm, agentbox's per-user tmp
// folder), other than the test's own world.
func shared(path, base string) bool {
	if path == base || strings.HasPrefix(path, base+"/") {
		return false
	}
	switch dir := filepath.Dir(path); dir {
	case "/tmp", "/var/tmp", "/dev/shm", "/tmp/agentbox-" + strconv.Itoa(os.Getuid()):
		return true
	}
	return false
}

// The digest ignores the run ID (two resolutions draw two) and nothing
// else: a plan that differs in one rule has another digest.
func TestPlanDigest(t *testing.T) {
	w := newWorld(t)
	a, b := w.planFor("--", "true"), w.planFor("--", "true")
	if a.RunID == b.RunID || a.Digest != b.Digest {
		t.Fatalf("two resolutions: runs %s %s, digests %s %s", a.RunID, b.RunID, a.Digest, b.Digest)
	}
	if c := w.planFor("--network", "none", "--", "true"); c.Digest == a.Digest {
		t.Fatal("a different plan has the same digest")
	}
}
