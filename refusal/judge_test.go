package refusal

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
)

// testPlan is a typical plan: a read-only root, a project with git whose
// hooks and config are protected, a workspace root with one workspace, a
// hidden credential folder and file.
func testPlan() *plan.Plan {
	def := plan.Origin{Key: "default"}
	ws := plan.Origin{File: "/home/u/.config/agentbox/config.toml", Line: 4, Key: "workspace.id"}
	return &plan.Plan{
		GOOS:     "linux",
		Enforce:  plan.Require,
		Identity: plan.Identity{UID: 1000, GID: 1000, Home: "/home/u"},
		Command:  []string{"make"},
		Cwd:      "/home/u/proj",
		Tmp:      plan.Tmp{Mode: plan.TmpWorkspace, HostDir: "/tmp/agentbox-1000/proj-1"},
		Network:  plan.Network{Mode: plan.NetOpen},
		Env:      plan.Env{Mode: "inherit"},
		Log:      plan.Log{Enabled: true, Dir: "/home/u/.local/state/agentbox/log", Filesystem: fslog.Notify},
		Mounts: []plan.Mount{
			{Stage: plan.StageRoot, Op: plan.ROBind, Path: "/", Access: plan.ReadOnly, Origin: def},
			{Stage: plan.StageRoot, Op: plan.Dev, Path: "/dev", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageRoot, Op: plan.Proc, Path: "/proc", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageTmp, Op: plan.Bind, Source: "/tmp/agentbox-1000/proj-1", Path: "/tmp", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageWorkspace, Op: plan.Tmpfs, Path: "/home/u/work", Access: plan.Hidden, Origin: ws},
			{Stage: plan.StageWorkspace, Op: plan.Bind, Path: "/home/u/work/web", Access: plan.ReadWrite, Origin: ws},
			{Stage: plan.StageWorkspace, Op: plan.RemountRO, Path: "/home/u/work", Access: plan.Hidden, Origin: ws},
			{Stage: plan.StageWritable, Op: plan.Bind, Path: "/home/u/proj", Access: plan.ReadWrite, Origin: plan.Origin{Key: "default: git top-level of the working directory"}},
			{Stage: plan.StageReadOnly, Op: plan.Pin, Path: "/home/u/proj/.git", Access: plan.ReadWrite, Origin: plan.Origin{Key: "always: git folder"}},
			{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: "/home/u/proj/.git/config", Access: plan.ReadOnly, Origin: plan.Origin{Key: "always: git config"}},
			{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: "/home/u/proj/.git/hooks", Access: plan.ReadOnly, Origin: plan.Origin{Key: "always: git hooks"}},
			{Stage: plan.StageDeny, Op: plan.HideDir, Path: "/home/u/.aws", Access: plan.Hidden, Origin: plan.Origin{Key: "default: credential store"}},
			{Stage: plan.StageDeny, Op: plan.HideFile, Path: "/home/u/.npmrc", Access: plan.Hidden, Origin: plan.Origin{Key: "default: credential store"}},
		},
	}
}

func bwrapPlan(t *testing.T) *plan.Plan {
	t.Helper()
	p := testPlan()
	b := &mount.Bwrap{Path: "/usr/bin/bwrap", Cgroups: func() cgroup.Availability { return cgroup.Availability{} }}
	if err := b.Complete(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func landlockPlan(t *testing.T) *plan.Plan {
	t.Helper()
	p := testPlan()
	l := &landlock.Landlock{KernelABI: func() (int, error) { return 7, nil }, Cgroups: func() cgroup.Availability { return cgroup.Availability{} }}
	if err := l.Complete(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// at builds an attempt on one path.
func at(op fslog.Op, real string, exists, dir bool) fslog.Attempt {
	return fslog.Attempt{Op: op, Targets: []fslog.Target{{Given: real, Real: real, Exists: exists, Dir: dir, Parent: true}}}
}

// refusal is what a test looks at in a Denied event.
type refusal struct {
	Op, Path, Errno, Rule string
	Risky                 bool
}

func summarize(e event.Event) refusal {
	return refusal{Op: e.Op, Path: e.Path, Errno: e.Errno, Rule: e.Rule, Risky: strings.Contains(e.Detail, "(risky")}
}

const (
	ruleRoot   = "root / (default)"
	ruleHooks  = "read-only /home/u/proj/.git/hooks (always: git hooks)"
	ruleConfig = "read-only /home/u/proj/.git/config (always: git config)"
	ruleAWS    = "deny /home/u/.aws (default: credential store)"
	ruleNpmrc  = "deny /home/u/.npmrc (default: credential store)"
	ruleWork   = "workspace /home/u/work (/home/u/.config/agentbox/config.toml:4 workspace.id)"
	ruleProj   = "writable /home/u/proj (default: git top-level of the working directory)"
)

// Under bubblewrap the kernel refuses writes on read-only mounts with
// EROFS, but only once the path's own mistakes (a missing file, an
// existing name) are ruled out; removals and renames look at the mount
// first; a mount point is busy; a hidden path reads as nothing.
func TestJudgeBwrap(t *testing.T) {
	p := bwrapPlan(t)
	tests := []struct {
		name string
		a    fslog.Attempt
		want *refusal
	}{
		{"write outside the roots", at(fslog.Write, "/etc/hosts", true, false), &refusal{"write", "/etc/hosts", "EROFS", ruleRoot, true}},
		{"create in the home folder", at(fslog.Create, "/home/u/.npm/_cacache/x", false, false), &refusal{"create", "/home/u/.npm/_cacache/x", "EROFS", ruleRoot, false}},
		{"mkdir that exists is EEXIST first", at(fslog.Mkdir, "/home/u", true, true), nil},
		{"open for writing a missing file is ENOENT", at(fslog.Write, "/etc/nothing", false, false), nil},
		{"create with a missing parent is ENOENT", fslog.Attempt{Op: fslog.Create, Targets: []fslog.Target{{Real: "/etc/no/x"}}}, nil},
		{"open O_CREAT of an existing file writes it", at(fslog.Create, "/etc/hosts", true, false), &refusal{"write", "/etc/hosts", "EROFS", ruleRoot, true}},
		{"create in the project", at(fslog.Create, "/home/u/proj/main.go", false, false), nil},
		{"create in the git hooks", at(fslog.Create, "/home/u/proj/.git/hooks/pre-commit", false, false), &refusal{"create", "/home/u/proj/.git/hooks/pre-commit", "EROFS", ruleHooks, true}},
		{"write the git config", at(fslog.Write, "/home/u/proj/.git/config", true, false), &refusal{"write", "/home/u/proj/.git/config", "EROFS", ruleConfig, true}},
		{"remove the git config: a mount point", at(fslog.Remove, "/home/u/proj/.git/config", true, false), &refusal{"remove", "/home/u/proj/.git/config", "EBUSY", ruleConfig, true}},
		{"create in .git is fine", at(fslog.Create, "/home/u/proj/.git/index.lock", false, false), nil},
		{"rename .git away: pinned", fslog.Attempt{Op: fslog.Rename, Targets: []fslog.Target{
			{Real: "/home/u/proj/.git", Exists: true, Dir: true, Parent: true}, {Real: "/home/u/proj/old", Parent: true}}},
			&refusal{"rename", "/home/u/proj/.git", "EBUSY", "read-only /home/u/proj/.git (always: git folder)", true}},
		{"rename into a read-only folder", fslog.Attempt{Op: fslog.Rename, Targets: []fslog.Target{
			{Real: "/home/u/proj/x", Exists: true, Parent: true}, {Real: "/etc/x", Parent: true}}},
			&refusal{"rename", "/etc/x", "EROFS", ruleRoot, true}},
		{"unlink in a read-only folder, even a missing file", at(fslog.Remove, "/etc/nothing", false, false), &refusal{"remove", "/etc/nothing", "EROFS", ruleRoot, true}},
		{"read a hidden file", at(fslog.Read, "/home/u/.npmrc", true, false), &refusal{"read", "/home/u/.npmrc", "", ruleNpmrc, true}},
		{"read in a hidden folder", at(fslog.Read, "/home/u/.aws/credentials", false, false), &refusal{"read", "/home/u/.aws/credentials", "ENOENT", ruleAWS, true}},
		{"write a hidden file", at(fslog.Write, "/home/u/.npmrc", true, false), &refusal{"write", "/home/u/.npmrc", "EROFS", ruleNpmrc, true}},
		{"read outside the roots is fine", at(fslog.Read, "/etc/hosts", true, false), nil},
		{"read another workspace", at(fslog.Read, "/home/u/work/api/x", false, false), &refusal{"read", "/home/u/work/api/x", "ENOENT", ruleWork, true}},
		{"create beside the workspaces", at(fslog.Create, "/home/u/work/x", false, false), &refusal{"create", "/home/u/work/x", "EROFS", ruleWork, true}},
		{"create in this workspace", at(fslog.Create, "/home/u/work/web/x", false, false), nil},
		{"chmod outside the roots", at(fslog.Chmod, "/etc/hosts", true, false), &refusal{"chmod", "/etc/hosts", "EROFS", ruleRoot, true}},
		{"/proc is the kernel's", at(fslog.Write, "/proc/sys/kernel/core_pattern", true, false), nil},
		{"write to /tmp", at(fslog.Create, "/tmp/x", false, false), nil},
	}
	j := New(p, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := j.Judge(tc.a)
			var got *refusal
			if ok {
				r := summarize(e)
				got = &r
				if e.Kind != event.Denied || e.Detail == "" || e.Reason == "" {
					t.Errorf("event %+v: want kind denied with a reason and advice", e)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%+v (-want +got):\n%s", tc.a, diff)
			}
		})
	}
}

// Under Landlock the rights decide: EACCES for what the rule set lacks,
// including creating in a folder kept unchangeable for a read-only path
// below it; the metadata calls are not restricted at all.
func TestJudgeLandlock(t *testing.T) {
	p := landlockPlan(t)
	tests := []struct {
		name string
		a    fslog.Attempt
		want *refusal
	}{
		{"write outside the roots", at(fslog.Write, "/etc/hosts", true, false), &refusal{"write", "/etc/hosts", "EACCES", ruleRoot, true}},
		{"create in the home folder", at(fslog.Create, "/home/u/.npm/_cacache/x", false, false), &refusal{"create", "/home/u/.npm/_cacache/x", "EACCES", ruleRoot, false}},
		{"read a hidden file", at(fslog.Read, "/home/u/.npmrc", true, false), &refusal{"read", "/home/u/.npmrc", "EACCES", ruleNpmrc, true}},
		{"list a hidden folder", at(fslog.Read, "/home/u/.aws", true, true), &refusal{"read", "/home/u/.aws", "EACCES", ruleAWS, true}},
		{"read a missing file is ENOENT", at(fslog.Read, "/home/u/.aws/none", false, false), nil},
		{"create in the git hooks", at(fslog.Create, "/home/u/proj/.git/hooks/x", false, false), &refusal{"create", "/home/u/proj/.git/hooks/x", "EACCES", ruleHooks, true}},
		{"create at the top of the project: carved", at(fslog.Create, "/home/u/proj/new.txt", false, false), &refusal{"create", "/home/u/proj/new.txt", "EACCES", ruleProj, false}},
		{"create deeper in the project", at(fslog.Create, "/home/u/proj/src/new.go", false, false), nil},
		{"chmod outside the roots: refused by the broker", at(fslog.Chmod, "/etc/hosts", true, false), &refusal{"chmod", "/etc/hosts", "EACCES", "root / (default)", true}},
		{"chmod deeper in the project", at(fslog.Chmod, "/home/u/proj/src/main.go", true, false), nil},
		{"write in /dev/null", at(fslog.Write, "/dev/null", true, false), nil},
	}
	j := New(p, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := j.Judge(tc.a)
			var got *refusal
			if ok {
				r := summarize(e)
				got = &r
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%+v (-want +got):\n%s\nevent %+v", tc.a, diff, e)
			}
		})
	}
}

// A refusal the kernel reported itself keeps its errno and gets the rule
// that covers its path.
func TestJudgeKernel(t *testing.T) {
	j := New(landlockPlan(t), nil)
	a := at(fslog.Write, "/home/u/.bashrc", true, false)
	a.Errno = "EACCES"
	e, ok := j.Judge(a)
	if !ok {
		t.Fatal("a refusal the kernel reported was not recorded")
	}
	if diff := cmp.Diff(refusal{"write", "/home/u/.bashrc", "EACCES", ruleRoot, true}, summarize(e)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
