package landlock

import (
	"path/filepath"

	"github.com/agentbox/agentbox/plan"
)

// fixture names the folders of a typical plan: a home with credentials, a
// project (a git repository) that is the writable root, a workspace root
// with two workspaces, the per-workspace tmp folder and a folder that is not
// writable.
type fixture struct {
	base    string
	home    string // <base>/home: .aws (deny), .netrc (deny), notes.txt
	proj    string // <base>/proj: writable; .git/hooks, .git/config read-only; secrets denied
	work    string // <base>/work: workspace root; "a" is ours, "b" is hidden
	tmpws   string // <base>/tmpws: Tmp.HostDir
	outside string // <base>/outside: readable, not writable
}

func newFixture(base string) fixture {
	return fixture{
		base:    base,
		home:    filepath.Join(base, "home"),
		proj:    filepath.Join(base, "proj"),
		work:    filepath.Join(base, "work"),
		tmpws:   filepath.Join(base, "tmpws"),
		outside: filepath.Join(base, "outside"),
	}
}

// plan builds the plan policy.Resolve would build for the fixture, stage by
// stage, as the lead's resolver orders them.
func (f fixture) plan(network string) *plan.Plan {
	o := func(key string) plan.Origin { return plan.Origin{Key: key} }
	m := []plan.Mount{
		{Stage: plan.StageRoot, Op: plan.ROBind, Source: "/", Path: "/", Access: plan.ReadOnly, Origin: o("default")},
		{Stage: plan.StageRoot, Op: plan.Dev, Path: "/dev", Access: plan.ReadWrite, Origin: o("default")},
		{Stage: plan.StageRoot, Op: plan.Proc, Path: "/proc", Access: plan.ReadOnly, Origin: o("default")},
		{Stage: plan.StageTmp, Op: plan.Bind, Source: f.tmpws, Path: "/tmp", Access: plan.ReadWrite, Origin: o("tmp.mode")},
		{Stage: plan.StageWorkspace, Op: plan.Tmpfs, Path: f.work, Access: plan.Hidden, Origin: o("workspace.root")},
		{Stage: plan.StageWorkspace, Op: plan.Bind, Path: filepath.Join(f.work, "a"), Access: plan.ReadWrite, Origin: o("workspace.id")},
		{Stage: plan.StageWorkspace, Op: plan.Bind, Path: filepath.Join(f.work, ".repos", "a"), Access: plan.ReadWrite, Origin: o("workspace.id")},
		{Stage: plan.StageWorkspace, Op: plan.RemountRO, Path: f.work, Access: plan.Hidden, Origin: o("workspace.root")},
		{Stage: plan.StageWritable, Op: plan.Bind, Path: f.proj, Access: plan.ReadWrite, Origin: o("filesystem.writable[0]")},
		{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: filepath.Join(f.proj, ".git", "hooks"), Access: plan.ReadOnly, Origin: o("git hooks")},
		{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: filepath.Join(f.proj, ".git", "config"), Access: plan.ReadOnly, Origin: o("git config")},
		{Stage: plan.StageDeny, Op: plan.HideDir, Path: filepath.Join(f.home, ".aws"), Access: plan.Hidden, Origin: o("filesystem.deny[0]")},
		{Stage: plan.StageDeny, Op: plan.HideFile, Path: filepath.Join(f.home, ".netrc"), Access: plan.Hidden, Origin: o("filesystem.deny[1]")},
		{Stage: plan.StageDeny, Op: plan.HideDir, Path: filepath.Join(f.proj, "secrets"), Access: plan.Hidden, Origin: o("filesystem.deny[2]")},
	}
	return &plan.Plan{
		Enforce:  plan.Require,
		Backend:  "landlock",
		Identity: plan.Identity{UID: 1000, GID: 1000, Home: f.home},
		Cwd:      f.proj,
		Mounts:   m,
		Workspace: plan.Workspace{Root: f.work, ID: "a", Dir: filepath.Join(f.work, "a"),
			RepoDir: filepath.Join(f.work, ".repos", "a")},
		Tmp:     plan.Tmp{Mode: plan.TmpWorkspace, HostDir: f.tmpws},
		Network: plan.Network{Mode: network},
	}
}
