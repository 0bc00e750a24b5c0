package verify

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// testPlan: a read-only root, a project with git, a workspace, hidden
// credentials, limits, network none, a reopened seccomp group.
func testPlan(root bool) *plan.Plan {
	def := plan.Origin{Key: "default"}
	ws := plan.Origin{Key: "flag --workspace"}
	id := plan.Identity{UID: 1000, GID: 1000, Home: "/home/u"}
	if root {
		id = plan.Identity{Home: "/root"}
	}
	return &plan.Plan{
		GOOS: "linux", RunID: "0123456789ab", Enforce: plan.Require, Identity: id,
		Command: []string{"make"}, Cwd: "/home/u/proj",
		Tmp:     plan.Tmp{Mode: plan.TmpPrivate},
		Network: plan.Network{Mode: plan.NetNone},
		Env:     plan.Env{Mode: "clean", Removed: []string{"GITHUB_TOKEN"}, Set: map[string]string{"CI": "1"}},
		Environ: []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "CI=1"},
		Limits:  plan.Limits{OpenFiles: 4096, CPUTime: 7200},
		Seccomp: []string{"ptrace"},
		Mounts: []plan.Mount{
			{Stage: plan.StageRoot, Op: plan.ROBind, Path: "/", Access: plan.ReadOnly, Origin: def},
			{Stage: plan.StageRoot, Op: plan.Dev, Path: "/dev", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageRoot, Op: plan.Proc, Path: "/proc", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageTmp, Op: plan.Tmpfs, Path: "/tmp", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageWorkspace, Op: plan.Tmpfs, Path: "/home/u/work", Access: plan.Hidden, Origin: ws},
			{Stage: plan.StageWorkspace, Op: plan.Bind, Path: "/home/u/work/web", Access: plan.ReadWrite, Origin: ws},
			{Stage: plan.StageWorkspace, Op: plan.RemountRO, Path: "/home/u/work", Access: plan.Hidden, Origin: ws},
			{Stage: plan.StageWritable, Op: plan.Bind, Path: "/home/u/proj", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageReadOnly, Op: plan.Pin, Path: "/home/u/proj/.git", Access: plan.ReadWrite, Origin: plan.Origin{Key: "always: git folder"}},
			{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: "/home/u/proj/.git/hooks", Access: plan.ReadOnly, Origin: plan.Origin{Key: "always: git hooks"}},
			{Stage: plan.StageDeny, Op: plan.HideDir, Path: "/home/u/.aws", Access: plan.Hidden, Origin: plan.Origin{Key: "default: credential store"}},
			{Stage: plan.StageDeny, Op: plan.HideFile, Path: "/home/u/.npmrc", Access: plan.Hidden, Origin: plan.Origin{Key: "default: credential store"}},
		},
	}
}

func testHost() Host {
	return Host{
		Pid: 4242, Listener: "127.0.0.1:5555", Marker: "/tmp/.agentbox-verify-1",
		Outside: []string{"/home/u", "/home"},
		Hidden:  map[string]int64{"/home/u/.aws": 2, "/home/u/.npmrc": 0},
		Others:  map[string][]string{"/home/u/work": {"api"}},
		Files:   map[string]string{"/home/u/proj": "/home/u/proj/main.go"},
		Devices: []string{"/dev/kmsg"},
		Env:     EnvWant{Names: []string{"CI", "HOME", "PATH"}, Values: map[string]string{"CI": "1"}, Removed: []string{"GITHUB_TOKEN"}},
	}
}

func noCgroups() cgroup.Availability {
	no := cgroup.Controller{Reason: "not in this test"}
	return cgroup.Availability{Pids: no, Memory: no}
}

// The checks of a plan under each backend, one line each, against
// testdata/<case>.golden (go test ./verify -update rewrites them).
func TestBuildGolden(t *testing.T) {
	tests := []struct {
		name     string
		root     bool
		complete func(*plan.Plan) error
		guards   bool // .git/hooks is a guard of what host programs run, and a policy's read-only path lies beside it
	}{
		{"bwrap", false, (&mount.Bwrap{Path: "/usr/bin/bwrap", Cgroups: noCgroups, LandlockABI: func() int { return 6 }}).Complete, false},
		{"bwrap-root", true, (&mount.Bwrap{Path: "/usr/bin/bwrap", Cgroups: noCgroups, LandlockABI: func() int { return 6 }}).Complete, false},
		{"landlock", false, (&landlock.Landlock{KernelABI: func() (int, error) { return 7, nil }, Cgroups: noCgroups, TempDir: "/tmp"}).Complete, false},
		// Under Landlock a guard is kept by restoring it after the run
		// (not probed, said so); a policy's read-only path is still probed.
		{"landlock-guards", false, (&landlock.Landlock{KernelABI: func() (int, error) { return 7, nil }, Cgroups: noCgroups, TempDir: "/tmp"}).Complete, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan(tc.root)
			p.HostExec.State = "/home/u/.local/state/agentbox"
			if tc.guards {
				p.HostExec.Guards = []plan.Guard{{Path: "/home/u/proj/.git/hooks", Rule: "git hooks", Kind: plan.KindDir, Keep: plan.KeepReadOnly}}
				p.Mounts = append(p.Mounts[:10:10], append([]plan.Mount{{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: "/home/u/proj/docs",
					Access: plan.ReadOnly, Origin: plan.Origin{Key: "flag --read-only"}}}, p.Mounts[10:]...)...)
			}
			if err := tc.complete(p); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, c := range Build(p, testHost()) {
				fmt.Fprintf(&b, "%s | %s | %s %s %s | want %s", c.Rule, c.Level, c.Probe.Op, c.Probe.Path, c.Probe.Arg, strings.Join(c.Want, ","))
				if c.N != nil {
					fmt.Fprintf(&b, " n=%d", *c.N)
				}
				if len(c.Ambiguous) > 0 {
					fmt.Fprintf(&b, " ambiguous %s", strings.Join(c.Ambiguous, ","))
				}
				if c.Why != "" {
					b.WriteString(" | not probed: " + c.Why)
				}
				b.WriteString("\n")
			}
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./verify -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// Judge: the wanted outcome verifies, an ambiguous one is consistent, a
// count must match, anything else fails, and a check with a reason is
// not probed.
func TestJudge(t *testing.T) {
	c := Check{Rule: "r", Want: []string{"EROFS", "EACCES"}, Ambiguous: []string{"EACCES"}}
	empty := Check{Rule: "e", Want: []string{"ok"}, N: n(0)}
	tests := []struct {
		c    Check
		o    Outcome
		want Status
	}{
		{c, Outcome{Code: "EROFS"}, Verified},
		{c, Outcome{Code: "EACCES"}, Consistent},
		{c, Outcome{Code: "ok"}, Failed},
		{empty, Outcome{Code: "ok", N: 0}, Verified},
		{empty, Outcome{Code: "ok", N: 3}, Failed},
		{Check{Why: "nothing to do"}, Outcome{}, NotProbed},
	}
	for _, tc := range tests {
		if got := Judge(tc.c, tc.o).Status; got != tc.want {
			t.Errorf("%+v with %+v: %s, want %s", tc.c, tc.o, got, tc.want)
		}
	}
}

// TestTmpProbedOnce: /tmp's probes are made once, under the first rule that
// makes the box's /tmp, not again under every rule of the stage (/run, the
// bind of the workspace's /tmp over the tmpfs).
func TestTmpProbedOnce(t *testing.T) {
	p := testPlan(false)
	def := plan.Origin{Key: "default"}
	var mounts []plan.Mount
	for _, m := range p.Mounts {
		mounts = append(mounts, m)
		if m.Stage == plan.StageTmp {
			mounts = append(mounts,
				plan.Mount{Stage: plan.StageTmp, Op: plan.Tmpfs, Path: "/run", Access: plan.ReadWrite, Origin: def},
				plan.Mount{Stage: plan.StageTmp, Op: plan.Bind, Path: "/tmp", Source: "/home/u/.local/state/agentbox/tmp/w", Access: plan.ReadWrite, Origin: def})
		}
	}
	p.Mounts = mounts
	p.Box.Backend = "bwrap"
	n := map[string]int{}
	for _, c := range Build(p, testHost()) {
		if c.Probe.Op != "" && strings.Contains(c.Says, "/tmp") {
			n[c.Says]++
		}
	}
	if len(n) == 0 {
		t.Fatal("no probe of /tmp")
	}
	for says, k := range n {
		if k != 1 {
			t.Errorf("%q probed %d times", says, k)
		}
	}
}
