package policy

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
)

// checkOrder asserts SPEC's resolution order: stages never go backwards,
// and inside a stage no mount comes after one of its children.
func checkOrder(t *testing.T, p *plan.Plan) {
	t.Helper()
	for i, m := range p.Mounts {
		if i > 0 && m.Stage < p.Mounts[i-1].Stage {
			t.Errorf("mount %d (%s %s) of stage %s follows stage %s", i, m.Op, m.Path, m.Stage, p.Mounts[i-1].Stage)
		}
		for _, later := range p.Mounts[i+1:] {
			// A remount changes flags only: it comes after the binds it
			// must not make read-only.
			if later.Op == plan.RemountRO {
				continue
			}
			if later.Stage == m.Stage && later.Path != m.Path && plan.Within(m.Path, later.Path) {
				t.Errorf("stage %s: parent %s comes after its child %s", m.Stage, later.Path, m.Path)
			}
		}
	}
	if err := plan.Validate(p); err != nil {
		t.Errorf("plan.Validate: %v", err)
	}
}

// prepares shows the plan's Prepare list as "path mode (origin)", but the
// caches' folders.
func (w *world) prepares(p *plan.Plan) []string {
	var out []string
	for _, d := range p.Prepare {
		if isCache(d.Origin) {
			continue
		}
		if d.Placeholder != "" && !w.showBlocked {
			continue
		}
		s := w.norm(d.Path) + " " + strconvOctal(d.Mode) + " (" + d.Origin.String() + ")"
		if d.Placeholder != "" {
			s += " placeholder " + d.Placeholder
		}
		out = append(out, s)
	}
	return out
}

func strconvOctal(m uint32) string {
	const digits = "01234567"
	return string([]byte{digits[m>>6&7], digits[m>>3&7], digits[m&7]})
}

// skips shows the plan's Skipped list as "path: reason (origin)".
func (w *world) skips(p *plan.Plan) []string {
	var out []string
	for _, s := range p.Skipped {
		out = append(out, w.norm(s.Path+": "+s.Reason+" ("+s.Origin.String()+")"))
	}
	return out
}

func TestResolveDefaultsInRepository(t *testing.T) {
	w := newWorld(t)
	w.gitRepo("home/u/proj")
	w.mkdir("home/u/proj/sub")
	w.mkdir("home/u/.aws")
	w.write("home/u/.netrc", "machine x\n")
	w.write("home/u/.docker/config.json", "{}")
	w.mkdir("home/u/.ssh")
	w.env.Cwd = w.path("home/u/proj/sub")

	before := w.snapshot()
	p := w.mustResolve(Flags{}, Options{}, "make", "test")
	checkOrder(t, p)

	want := []string{
		"root ro-bind / (default)",
		"root dev /dev (default)",
		"root proc /proc (default)",
		"tmp bind /tmp <- $ROOT/state/agentbox/tmp/proj-HASH (default) shared by workspace proj-HASH",
		"writable bind $ROOT/home/u/proj (default: git top-level of the working directory)",
		"read-only pin $ROOT/home/u/proj/.git (always: git folder) pinned: cannot be renamed or replaced",
		"read-only ro-bind $ROOT/home/u/proj/.git/hooks (always: git hooks)",
		"read-only ro-bind $ROOT/home/u/proj/.git/config (always: git config)",
		"deny hide-dir $ROOT/home/u/.aws (default: credential store)",
		"deny hide-file $ROOT/home/u/.netrc (default: credential store)",
		"deny hide-file $ROOT/home/u/.docker/config.json (default: credential store)",
	}
	if diff := cmp.Diff(want, w.mounts(p)); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	wantPrepare := []string{
		"$ROOT/state/agentbox 700 (default)",
		"$ROOT/state/agentbox/tmp 700 (default)",
		"$ROOT/state/agentbox/tmp/proj-HASH 700 (default)",
	}
	if diff := cmp.Diff(wantPrepare, w.prepares(p)); diff != "" {
		t.Errorf("prepare (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(w.path("home/u/proj/sub"), p.Cwd); diff != "" {
		t.Errorf("cwd (-want +got):\n%s", diff)
	}
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(w.path("state/agentbox/tmp/proj-")) + `[0-9a-f]{8}$`).MatchString(p.Tmp.HostDir) {
		t.Errorf("tmp host folder %s, want <state>/agentbox/tmp/proj-<8 hex>", p.Tmp.HostDir)
	}
	wantScalars := plan.Plan{Enforce: "require", Backend: "auto", Network: plan.Network{Mode: "open"},
		Env: plan.Env{Mode: "inherit"}, Identity: plan.Identity{UID: 1000, GID: 1000, Home: w.path("home/u")},
		Command: []string{"make", "test"}, Args: []string{"make", "test"}}
	gotScalars := plan.Plan{Enforce: p.Enforce, Backend: p.Backend, Network: p.Network, Env: plan.Env{Mode: p.Env.Mode},
		Identity: p.Identity, Command: p.Command, Args: p.Args}
	if diff := cmp.Diff(wantScalars, gotScalars); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	wantLayers := []plan.Layer{
		{Name: "defaults", Status: "built in"},
		{Name: "user", File: w.path("home/u/.config/agentbox/config.toml"), Status: "absent"},
		{Name: "project", Status: "absent"},
		{Name: "env", Status: "absent"},
		{Name: "flags", Status: "absent"},
	}
	if diff := cmp.Diff(wantLayers, p.Layers); diff != "" {
		t.Errorf("layers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, w.snapshot()); diff != "" {
		t.Errorf("Resolve changed the disk (-before +after):\n%s", diff)
	}
}

func TestResolveDefaultsOutsideRepository(t *testing.T) {
	w := newWorld(t)
	p := w.mustResolve(Flags{}, Options{}, "ls")
	checkOrder(t, p)
	want := []string{
		"root ro-bind / (default)",
		"root dev /dev (default)",
		"root proc /proc (default)",
		"tmp bind /tmp <- $ROOT/state/agentbox/tmp/proj-HASH (default) shared by workspace proj-HASH",
		"writable bind $ROOT/home/u/proj (default: the working directory)",
	}
	if diff := cmp.Diff(want, w.mounts(p)); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	if len(p.Skipped) != 0 {
		t.Errorf("skipped %v, want nothing: credential stores that do not exist are not reported", w.skips(p))
	}
}

// TestResolveTmpID checks that the per-workspace tmp folder derived from a
// project is stable for one folder and differs between folders of the same
// name.
func TestResolveTmpID(t *testing.T) {
	w := newWorld(t)
	w.mkdir("other/proj")
	a1 := w.mustResolve(Flags{}, Options{}, "true").Tmp.HostDir
	a2 := w.mustResolve(Flags{}, Options{}, "true").Tmp.HostDir
	w.env.Cwd = w.path("other/proj")
	b := w.mustResolve(Flags{}, Options{}, "true").Tmp.HostDir
	if a1 != a2 {
		t.Errorf("tmp folder changed between runs: %s, %s", a1, a2)
	}
	if a1 == b {
		t.Errorf("two projects named proj share the tmp folder %s", a1)
	}
	w.mkdir("my proj!")
	w.env.Cwd = w.path("my proj!")
	if got := w.norm(w.mustResolve(Flags{}, Options{}, "true").Tmp.HostDir); got != "$ROOT/state/agentbox/tmp/my_proj_-HASH" {
		t.Errorf("tmp folder of \"my proj!\" is %s, want one plain path element", got)
	}
}

func TestResolveTmpModes(t *testing.T) {
	tests := []struct {
		name  string
		flags Flags
		want  string
		host  string
	}{
		{"private", Flags{Tmp: "private"}, "tmp tmpfs /tmp (flag --tmp) fresh and empty for this run", ""},
		{"host", Flags{Tmp: "host"}, "tmp bind /tmp (flag --tmp) the host's /tmp, shared with everything", ""},
		{"workspace of a named workspace", Flags{Tmp: "workspace", Workspace: "w1", WorkspaceRoot: "/nonexistent/work"},
			"tmp bind /tmp <- $ROOT/state/agentbox/tmp/w1 (flag --tmp) shared by workspace w1", "$ROOT/state/agentbox/tmp/w1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			p := w.mustResolve(tc.flags, Options{}, "true")
			checkOrder(t, p)
			if diff := cmp.Diff(tc.want, w.mounts(p)[3]); diff != "" {
				t.Errorf("tmp mount (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.host, w.norm(p.Tmp.HostDir)); diff != "" {
				t.Errorf("tmp host folder (-want +got):\n%s", diff)
			}
			if tc.host == "" {
				for _, d := range p.Prepare {
					if strings.HasPrefix(d.Path, p.Tmp.Base+"/") {
						t.Errorf("tmp mode %s prepares %s", tc.flags.Tmp, d.Path)
					}
				}
			}
		})
	}
}

// TestResolveTmpDirSymlink checks that the host tmp folder is resolved
// before it is used (here the state folder it lies in is a symlink).
func TestResolveTmpDirSymlink(t *testing.T) {
	w := newWorld(t)
	w.mkdir("state")
	w.symlink(w.path("state"), "statelink")
	w.env.Environ = append(w.env.Environ, "XDG_STATE_HOME="+w.path("statelink"))
	p := w.mustResolve(Flags{Workspace: "w1", WorkspaceRoot: w.path("work")}, Options{}, "true")
	if diff := cmp.Diff("$ROOT/state/agentbox/tmp/w1", w.norm(p.Tmp.HostDir)); diff != "" {
		t.Errorf("tmp host folder (-want +got):\n%s", diff)
	}
}

func TestResolveWritable(t *testing.T) {
	w := newWorld(t)
	w.mkdir("data/a/b")
	w.mkdir("real/target")
	w.symlink(w.path("real/target"), "home/u/link")
	w.write("data/file.txt", "x")
	p := w.mustResolve(Flags{Tmp: "private", Writable: []string{
		w.path("data/a/b"), w.path("home/u/link"), w.path("data"), w.path("data/file.txt"), "~/proj", "$HOME/proj/",
	}}, Options{}, "true")
	checkOrder(t, p)
	want := []string{
		"root ro-bind / (default)",
		"root dev /dev (default)",
		"root proc /proc (default)",
		"tmp tmpfs /tmp (flag --tmp) fresh and empty for this run",
		"writable bind $ROOT/data (flag --writable)",
		"writable bind $ROOT/real/target (flag --writable)",
		"writable bind $ROOT/data/file.txt (flag --writable) a single file",
		"writable bind $ROOT/home/u/proj (default: the working directory)",
		"writable bind $ROOT/data/a/b (flag --writable)",
	}
	if diff := cmp.Diff(want, w.mounts(p)); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{p.CacheDir, w.path("data"), w.path("real/target"), w.path("data/file.txt"), w.path("home/u/proj"), w.path("data/a/b")}, p.Writable()); diff != "" {
		t.Errorf("Writable (-want +got):\n%s", diff)
	}
}

// TestResolveProjectPaths checks relative paths in a policy file: they are
// relative to the file's folder and may not leave it.
func TestResolveProjectPaths(t *testing.T) {
	w := newWorld(t)
	w.mkdir("home/u/proj/build")
	w.write("home/u/proj/.agentbox.toml", "[filesystem]\nwritable = [\"build\", \"./build/../build\"]\n")
	w.trust("home/u/proj/.agentbox.toml")
	p := w.mustResolve(Flags{Tmp: "private"}, Options{}, "true")
	want := []string{
		"root ro-bind / (default)",
		"root dev /dev (default)",
		"root proc /proc (default)",
		"tmp tmpfs /tmp (flag --tmp) fresh and empty for this run",
		"writable bind $ROOT/home/u/proj (default: the working directory)",
		"writable bind $ROOT/home/u/proj/build ($ROOT/home/u/proj/.agentbox.toml:2 filesystem.writable[0])",
		"read-only ro-bind $ROOT/home/u/proj/.agentbox.toml (always: loaded policy file)",
	}
	if diff := cmp.Diff(want, w.mounts(p)); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
}

// TestResolvePolicyFilesReadOnly checks that every loaded policy file inside
// a writable root is bound read-only, and one outside none is left alone.
func TestResolvePolicyFilesReadOnly(t *testing.T) {
	w := newWorld(t)
	w.write("home/u/.config/agentbox/config.toml", "version = 1\n")
	w.write("home/u/proj/.agentbox.toml", "version = 1\n")
	w.trust("home/u/proj/.agentbox.toml")
	w.write("home/u/proj/extra.toml", "version = 1\n")
	w.write("etc/outside.toml", "version = 1\n")
	w.write("home/u/proj/env.toml", "version = 1\n")
	w.setenv("AGENTBOX_POLICY=" + w.path("home/u/proj/env.toml"))
	p := w.mustResolve(Flags{Tmp: "private", Policy: []string{"extra.toml", w.path("etc/outside.toml")}}, Options{}, "true")
	var got []string
	for _, m := range p.Mounts {
		if g, ok := p.HostExec.GuardAt(m.Path); ok && g.Keep == plan.KeepBlocked {
			continue
		}
		if m.Stage == plan.StageReadOnly {
			got = append(got, w.norm(m.Path)+" ("+m.Origin.String()+")")
		}
	}
	want := []string{
		"$ROOT/home/u/proj/.agentbox.toml (always: loaded policy file)",
		"$ROOT/home/u/proj/env.toml (always: loaded policy file)",
		"$ROOT/home/u/proj/extra.toml (always: loaded policy file)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read-only mounts (-want +got):\n%s", diff)
	}
	var layers []string
	for _, l := range p.Layers {
		layers = append(layers, l.Name+" "+l.Status+" "+w.norm(l.File))
	}
	wantLayers := []string{
		"defaults built in ",
		"user loaded $ROOT/home/u/.config/agentbox/config.toml",
		"project trusted $ROOT/home/u/proj/.agentbox.toml",
		"policy loaded $ROOT/home/u/proj/env.toml",
		"env absent ",
		"policy loaded $ROOT/home/u/proj/extra.toml",
		"policy loaded $ROOT/etc/outside.toml",
		"flags set ",
	}
	if diff := cmp.Diff(wantLayers, layers); diff != "" {
		t.Errorf("layers (-want +got):\n%s", diff)
	}
}

func TestResolveBroadWritable(t *testing.T) {
	tests := []struct {
		name     string
		writable string
		want     string
	}{
		{"root", "/", "flag --writable: /: making / writable lets the agent change your shell startup files and tools, unless you also pass --allow-broad-writable, which keeps those read-only"},
		{"home", "~", "flag --writable: $ROOT/home/u: making the home folder writable lets the agent change your shell startup files and tools, unless you also pass --allow-broad-writable, which keeps those read-only"},
		{"a folder holding home", "$ROOT/home", "flag --writable: $ROOT/home: making a folder that holds the home folder writable lets the agent change your shell startup files and tools, unless you also pass --allow-broad-writable, which keeps those read-only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			writable := strings.ReplaceAll(tc.writable, "$ROOT", w.root)
			_, err := w.resolve(Flags{Writable: []string{writable}}, Options{}, "true")
			if err == nil {
				t.Fatal("Resolve succeeded, want an error")
			}
			if diff := cmp.Diff(tc.want, w.norm(err.Error())); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !errors.Is(err, ErrPolicy) {
				t.Errorf("error %v is not ErrPolicy", err)
			}
		})
	}
}

func TestResolveBroadWritableAllowed(t *testing.T) {
	w := newWorld(t)
	w.write("home/u/.bashrc", ". ~/.bash_extra\n[ -f ~/.bash_aliases ] && . ~/.bash_aliases\n")
	w.write("home/u/.bash_extra", "")
	w.write("home/u/.gitconfig", "")
	w.write("real/profile", "")
	w.symlink(w.path("real/profile"), "home/u/.profile")
	w.mkdir("home/u/.config")
	w.mkdir("home/u/.local")
	p := w.mustResolve(Flags{Tmp: "private", Writable: []string{"~"}}, Options{AllowBroad: true}, "true")
	checkOrder(t, p)
	want := []string{
		"root ro-bind / (default)",
		"root dev /dev (default)",
		"root proc /proc (default)",
		"tmp tmpfs /tmp (flag --tmp) fresh and empty for this run",
		"writable bind $ROOT/home/u (flag --writable)",
		"writable bind $ROOT/home/u/proj (default: the working directory)",
		"read-only ro-bind $ROOT/home/u/.bashrc (always: shell .bashrc)",
		"read-only ro-bind $ROOT/home/u/.gitconfig (always: git .gitconfig)",
		"read-only ro-bind $ROOT/home/u/.bash_extra (always: shell (sourced by $ROOT/home/u/.bashrc))",
		"read-only pin $ROOT/home/u/.config (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/.cache (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/.local (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only ro-bind $ROOT/home/u/.config/agentbox (always: agentbox's own configuration)",
		"read-only ro-bind $ROOT/home/u/.cache/agentbox (always: agentbox's own configuration)",
	}
	if diff := cmp.Diff(want, w.mounts(p)); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	wantWarnings := []string{"WRITABLE $ROOT/home/u (flag --writable): allowed by --allow-broad-writable; what the home folder runs at login, in shells and in common tools stays read-only, or is blocked for the run when missing (see host programs below)"}
	var gotWarnings []string
	for _, s := range p.Warnings {
		gotWarnings = append(gotWarnings, w.norm(s))
	}
	if diff := cmp.Diff(wantWarnings, gotWarnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	// What is missing is blocked: an empty read-only placeholder (the
	// first missing component) stands there for the run.
	blocked := map[string]string{}
	for _, g := range p.HostExec.Guards {
		if g.Keep == plan.KeepBlocked {
			blocked[w.norm(g.Path)] = g.Rule
		}
	}
	for path, rule := range map[string]string{
		"$ROOT/home/u/.bash_aliases":   "shell .bash_aliases",
		"$ROOT/home/u/.zshrc":          "shell .zshrc",
		"$ROOT/home/u/.config/systemd": "systemd .config/systemd",
		"$ROOT/home/u/.config/git":     "git .config/git",
		"$ROOT/home/u/.local/bin":      "shell .local/bin",
		"$ROOT/home/u/.local/lib":      "python .local/lib",
		"$ROOT/home/u/.ssh":            "ssh .ssh/config",
		"$ROOT/home/u/bin":             "shell bin",
		"$ROOT/home/u/.vimrc":          "vim .vimrc",
	} {
		if blocked[path] != rule {
			t.Errorf("%s: blocked as %q, want %q", path, blocked[path], rule)
		}
	}
	// The symlinked .profile is put back after the run if replaced; its
	// target lies outside the writable roots.
	if g, ok := p.HostExec.GuardAt(w.path("home/u/.profile")); !ok || g.Keep != plan.KeepRestored || g.Kind != plan.KindSymlink {
		t.Errorf(".profile: %+v, want a symlink restored after the run", g)
	}
	if diff := cmp.Diff([]string(nil), w.skips(p)); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

func TestResolveDeny(t *testing.T) {
	w := newWorld(t)
	w.mkdir("home/u/secrets")
	w.write("home/u/proj/.env", "KEY=1")
	w.mkdir("real/vault")
	w.symlink(w.path("real/vault"), "home/u/vault-link")
	w.mkdir("data/inner")
	p := w.mustResolve(Flags{
		Tmp:      "private",
		Writable: []string{w.path("data/inner")},
		Deny: []string{
			"~/proj/.env", "~/secrets", "~/missing", w.path("home/u/vault-link"), w.path("data"), "~/secrets",
		},
	}, Options{}, "true")
	checkOrder(t, p)
	want := []string{
		"root ro-bind / (default)",
		"root dev /dev (default)",
		"root proc /proc (default)",
		"tmp tmpfs /tmp (flag --tmp) fresh and empty for this run",
		"writable bind $ROOT/data/inner (flag --writable)",
		"writable bind $ROOT/home/u/proj (default: the working directory)",
		"deny hide-dir $ROOT/data (flag --deny) deny wins over writable $ROOT/data/inner",
		"deny hide-dir $ROOT/real/vault (flag --deny) symlink $ROOT/home/u/vault-link",
		"deny hide-dir $ROOT/home/u/secrets (flag --deny)",
		"deny hide-file $ROOT/home/u/proj/.env (flag --deny)",
	}
	if diff := cmp.Diff(want, w.mounts(p)); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	wantSkips := []string{"$ROOT/home/u/missing: deny path does not exist (flag --deny)"}
	if diff := cmp.Diff(wantSkips, w.skips(p)); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	wantDenied := []string{w.path("data"), w.path("real/vault"), w.path("home/u/secrets"), w.path("home/u/proj/.env")}
	if diff := cmp.Diff(wantDenied, p.Denied()); diff != "" {
		t.Errorf("Denied (-want +got):\n%s", diff)
	}
}

// TestResolveDenyWritableRoot checks that a deny naming a writable root
// itself wins and says so.
func TestResolveDenyWritableRoot(t *testing.T) {
	w := newWorld(t)
	p := w.mustResolve(Flags{Tmp: "private", Deny: []string{"~/proj"}}, Options{}, "true")
	ms := w.mounts(p)
	last := ms[len(ms)-1]
	if diff := cmp.Diff("deny hide-dir $ROOT/home/u/proj (flag --deny) deny wins over writable $ROOT/home/u/proj", last); diff != "" {
		t.Errorf("last mount (-want +got):\n%s", diff)
	}
}

func TestResolveGitProtection(t *testing.T) {
	w := newWorld(t)
	w.gitRepo("home/u/proj")
	w.mkdir("home/u/proj/a/.git")                 // nested, no hooks, no config
	w.gitRepo("home/u/proj/x/y/z/w")              // deep
	w.gitRepo("home/u/proj/x/y/z/w/v")            // deeper still: no depth limit
	w.gitRepo("home/u/proj/node_modules/dep")     // in a package tree
	w.gitRepo("home/u/proj/lib/vendor/pkg")       // in a package tree
	w.mkdir("home/u/proj/.git/modules/sub/hooks") // a submodule's git folder
	w.write("home/u/proj/.git/modules/sub/config", "")
	w.write("home/u/proj/sub/.git", "gitdir: ../.git/modules/sub\n")
	w.gitRepo("elsewhere/wt") // a worktree's git folder outside
	w.write("home/u/proj/wt/.git", "gitdir: "+w.path("elsewhere/wt/.git")+"\n")

	before := w.snapshot()
	p := w.mustResolve(Flags{Tmp: "private"}, Options{}, "true")
	checkOrder(t, p)
	var got []string
	for _, m := range w.mounts(p) {
		if strings.HasPrefix(m, "read-only ") {
			got = append(got, m)
		}
	}
	// Each git folder inside the writable root is pinned (bound onto
	// itself) so it cannot be renamed away; a .git file stays read-only.
	want := []string{
		"read-only pin $ROOT/home/u/proj/.git (always: git folder) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/proj/a (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/proj/x (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/proj/sub (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/proj/wt (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/proj/a/.git (always: git folder) pinned: cannot be renamed or replaced",
		"read-only ro-bind $ROOT/home/u/proj/.git/hooks (always: git hooks)",
		"read-only ro-bind $ROOT/home/u/proj/.git/config (always: git config)",
		"read-only ro-bind $ROOT/home/u/proj/sub/.git (always: git file) gitdir: names the folder git uses for this work tree",
		"read-only ro-bind $ROOT/home/u/proj/wt/.git (always: git file) gitdir: names the folder git uses for this work tree",
		"read-only pin $ROOT/home/u/proj/.git/modules (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/proj/x/y (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/proj/.git/modules/sub (always: git folder) pinned: cannot be renamed or replaced",
		"read-only ro-bind $ROOT/home/u/proj/a/.git/hooks (always: git hooks) created empty",
		"read-only pin $ROOT/home/u/proj/x/y/z (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only ro-bind $ROOT/home/u/proj/.git/modules/sub/hooks (always: git hooks)",
		"read-only ro-bind $ROOT/home/u/proj/.git/modules/sub/config (always: git config)",
		"read-only pin $ROOT/home/u/proj/x/y/z/w (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/proj/x/y/z/w/.git (always: git folder) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/proj/x/y/z/w/v (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only pin $ROOT/home/u/proj/x/y/z/w/v/.git (always: git folder) pinned: cannot be renamed or replaced",
		"read-only ro-bind $ROOT/home/u/proj/x/y/z/w/.git/hooks (always: git hooks)",
		"read-only ro-bind $ROOT/home/u/proj/x/y/z/w/.git/config (always: git config)",
		"read-only ro-bind $ROOT/home/u/proj/x/y/z/w/v/.git/hooks (always: git hooks)",
		"read-only ro-bind $ROOT/home/u/proj/x/y/z/w/v/.git/config (always: git config)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read-only mounts (-want +got):\n%s", diff)
	}
	wantPrepare := []string{"$ROOT/state/agentbox 700 (flag --tmp)", "$ROOT/state/agentbox/tmp 700 (flag --tmp)",
		"$ROOT/home/u/proj/a/.git/hooks 755 (always: git hooks)"}
	if diff := cmp.Diff(wantPrepare, w.prepares(p)); diff != "" {
		t.Errorf("prepare (-want +got):\n%s", diff)
	}
	// In package trees (node_modules, vendor) a mount would stop the
	// package manager from removing the tree: those repositories are kept
	// by the after-run check (recorded, put back), not by mounts. A config
	// that does not exist is checked after the run.
	var after []string
	for _, g := range p.HostExec.Guards {
		if g.Keep != plan.KeepReadOnly && g.Keep != plan.KeepBlocked {
			after = append(after, string(g.Keep)+" "+w.norm(g.Path)+" ("+g.Rule+")")
		}
	}
	wantAfter := []string{
		"checked $ROOT/home/u/proj/.git/info/exclude (git info/exclude)",
		"checked $ROOT/home/u/proj/.git/info/attributes (git info/attributes)",
		"checked $ROOT/home/u/proj/a/.git/config (git config)",
		"checked $ROOT/home/u/proj/a/.git/info/exclude (git info/exclude)",
		"checked $ROOT/home/u/proj/a/.git/info/attributes (git info/attributes)",
		"restored $ROOT/home/u/proj/node_modules/dep/.git/hooks (git hooks)",
		"restored $ROOT/home/u/proj/node_modules/dep/.git/config (git config)",
		"checked $ROOT/home/u/proj/.git/modules/sub/info/exclude (git info/exclude)",
		"checked $ROOT/home/u/proj/.git/modules/sub/info/attributes (git info/attributes)",
		"restored $ROOT/home/u/proj/lib/vendor/pkg/.git/hooks (git hooks)",
		"restored $ROOT/home/u/proj/lib/vendor/pkg/.git/config (git config)",
		"checked $ROOT/home/u/proj/node_modules/dep/.git/info/exclude (git info/exclude)",
		"checked $ROOT/home/u/proj/node_modules/dep/.git/info/attributes (git info/attributes)",
		"checked $ROOT/home/u/proj/lib/vendor/pkg/.git/info/exclude (git info/exclude)",
		"checked $ROOT/home/u/proj/lib/vendor/pkg/.git/info/attributes (git info/attributes)",
		"checked $ROOT/home/u/proj/x/y/z/w/.git/info/exclude (git info/exclude)",
		"checked $ROOT/home/u/proj/x/y/z/w/.git/info/attributes (git info/attributes)",
		"checked $ROOT/home/u/proj/x/y/z/w/v/.git/info/exclude (git info/exclude)",
		"checked $ROOT/home/u/proj/x/y/z/w/v/.git/info/attributes (git info/attributes)",
	}
	if diff := cmp.Diff(wantAfter, after); diff != "" {
		t.Errorf("guards kept after the run (-want +got):\n%s", diff)
	}
	for _, d := range []string{"home/u/proj/.git", "home/u/proj/node_modules/dep/.git", "home/u/proj/.git/modules/sub", "elsewhere/wt/.git"} {
		if want, got := d != "elsewhere/wt/.git", slices.Contains(p.HostExec.GitDirs, w.path(d)); want != got {
			t.Errorf("git folder %s known to the after-run check: %v, want %v", d, got, want)
		}
	}
	if diff := cmp.Diff([]string(nil), w.skips(p)); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, w.snapshot()); diff != "" {
		t.Errorf("Resolve changed the disk (-before +after):\n%s", diff)
	}
}

// TestResolveScanLimit checks that the search of the writable roots fails
// closed past its bound on folders (a bound on memory), with the fix in a
// hint; files do not count.
func TestResolveScanLimit(t *testing.T) {
	w := newWorld(t)
	for i := 0; i < 1100; i++ {
		w.mkdir(fmt.Sprintf("home/u/proj/d%d/e%d", i/100, i))
		w.write(fmt.Sprintf("home/u/proj/d%d/f%d", i/100, i), "")
	}
	w.write("home/u/proj/.agentbox.toml", "[filesystem]\nscan_limit = 1000\n")
	w.trust("home/u/proj/.agentbox.toml")
	_, err := w.resolve(Flags{Tmp: "private"}, Options{}, "true")
	var le *hostexec.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("want a *hostexec.LimitError, got %v", err)
	}
	if !strings.Contains(err.Error(), "holds more than 1000 folders") || len(le.Hints()) == 0 {
		t.Errorf("error %q, hints %q: want the bound and a hint", err, le.Hints())
	}
	w.write("home/u/proj/.agentbox.toml", "[filesystem]\nscan_limit = 2000\n")
	w.trust("home/u/proj/.agentbox.toml")
	if _, err := w.resolve(Flags{Tmp: "private"}, Options{}, "true"); err != nil {
		t.Fatalf("1,100 folders and 1,100 files within a bound of 2,000 folders: %v", err)
	}
}

func TestResolveReadOnly(t *testing.T) {
	w := newWorld(t)
	w.mkdir("home/u/proj/docs/api")
	w.mkdir("outside")
	p := w.mustResolve(Flags{Tmp: "private", ReadOnly: []string{"~/proj/docs/api", "~/proj/docs", w.path("outside"), "~/proj/gone"}}, Options{}, "true")
	checkOrder(t, p)
	var got []string
	for _, m := range w.mounts(p) {
		if strings.HasPrefix(m, "read-only ") {
			got = append(got, m)
		}
	}
	want := []string{
		"read-only ro-bind $ROOT/home/u/proj/docs (flag --read-only)",
		"read-only ro-bind $ROOT/home/u/proj/docs/api (flag --read-only)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read-only mounts (-want +got):\n%s", diff)
	}
	wantSkips := []string{"$ROOT/home/u/proj/gone: read-only path does not exist (flag --read-only)"}
	if diff := cmp.Diff(wantSkips, w.skips(p)); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

func TestResolveWorkspace(t *testing.T) {
	w := newWorld(t)
	w.mkdir("work/other")
	before := w.snapshot()
	p := w.mustResolve(Flags{Workspace: "w1", WorkspaceRoot: w.path("work"), Task: "t1"}, Options{}, "true")
	checkOrder(t, p)
	want := []string{
		"root ro-bind / (default)",
		"root dev /dev (default)",
		"root proc /proc (default)",
		"tmp bind /tmp <- $ROOT/state/agentbox/tmp/w1 (default) shared by workspace w1",
		"workspace tmpfs $ROOT/work (flag --workspace) every other workspace is hidden",
		"workspace bind $ROOT/work/w1 (flag --workspace)",
		"workspace bind $ROOT/work/.repos/w1 (flag --workspace)",
		"workspace remount-ro $ROOT/work (flag --workspace) nothing can be written beside the workspace folders",
	}
	if diff := cmp.Diff(want, w.mounts(p)); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	wantWS := plan.Workspace{Root: "$ROOT/work", ID: "w1", Task: "t1", Dir: "$ROOT/work/w1", RepoDir: "$ROOT/work/.repos/w1", TaskDir: "$ROOT/work/w1/t1"}
	gotWS := p.Workspace
	for _, s := range []*string{&gotWS.Root, &gotWS.Dir, &gotWS.RepoDir, &gotWS.TaskDir} {
		*s = w.norm(*s)
	}
	if diff := cmp.Diff(wantWS, gotWS); diff != "" {
		t.Errorf("workspace (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("$ROOT/work/w1/t1", w.norm(p.Cwd)); diff != "" {
		t.Errorf("cwd (-want +got):\n%s", diff)
	}
	wantPrepare := []string{
		"$ROOT/work 700 (flag --workspace-root)",
		"$ROOT/work/w1 700 (flag --workspace)",
		"$ROOT/work/.repos 700 (flag --workspace)",
		"$ROOT/work/.repos/w1 700 (flag --workspace)",
		"$ROOT/work/w1/t1 700 (flag --task)",
		"$ROOT/state/agentbox 700 (default)",
		"$ROOT/state/agentbox/tmp 700 (default)",
		"$ROOT/state/agentbox/tmp/w1 700 (default)",
	}
	if diff := cmp.Diff(wantPrepare, w.prepares(p)); diff != "" {
		t.Errorf("prepare (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, w.snapshot()); diff != "" {
		t.Errorf("Resolve changed the disk (-before +after):\n%s", diff)
	}
}

func TestResolveWorkspaceDefaultRoot(t *testing.T) {
	w := newWorld(t)
	w.setenv("AGENTBOX_WORKSPACE=w2")
	p := w.mustResolve(Flags{Tmp: "private"}, Options{}, "true")
	if diff := cmp.Diff("$ROOT/home/u/agent-work", w.norm(p.Workspace.Root)); diff != "" {
		t.Errorf("workspace root (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("workspace tmpfs $ROOT/home/u/agent-work (env AGENTBOX_WORKSPACE) every other workspace is hidden", w.mounts(p)[4]); diff != "" {
		t.Errorf("mount (-want +got):\n%s", diff)
	}
	// The working directory is outside the workspace: it stays as it is.
	if diff := cmp.Diff("$ROOT/home/u/proj", w.norm(p.Cwd)); diff != "" {
		t.Errorf("cwd (-want +got):\n%s", diff)
	}
}

// TestResolveWorkspaceCwdHidden checks that a working directory inside a
// hidden workspace is replaced by the current workspace's folder.
func TestResolveWorkspaceCwdHidden(t *testing.T) {
	w := newWorld(t)
	w.mkdir("work/other/src")
	w.env.Cwd = w.path("work/other/src")
	p := w.mustResolve(Flags{Tmp: "private", Workspace: "w1", WorkspaceRoot: w.path("work")}, Options{}, "true")
	if diff := cmp.Diff("$ROOT/work/w1", w.norm(p.Cwd)); diff != "" {
		t.Errorf("cwd (-want +got):\n%s", diff)
	}
}

func TestResolveWorkspaceSymlinkedRoot(t *testing.T) {
	w := newWorld(t)
	w.mkdir("real/work")
	w.symlink(w.path("real/work"), "work")
	p := w.mustResolve(Flags{Tmp: "private", Workspace: "w1", WorkspaceRoot: w.path("work")}, Options{}, "true")
	if diff := cmp.Diff("$ROOT/real/work", w.norm(p.Workspace.Root)); diff != "" {
		t.Errorf("workspace root (-want +got):\n%s", diff)
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(w *world)
		flags   Flags
		command []string
		want    string
	}{
		{"empty command", nil, Flags{}, nil,
			"command: empty command: give the command to run after --"},
		{"empty command name", nil, Flags{}, []string{""},
			"command: empty command: give the command to run after --"},
		{"relative --writable", nil, Flags{Writable: []string{"build"}}, nil,
			`flag --writable: "build": relative path; want an absolute path or ~/`},
		{"relative --read-only", nil, Flags{ReadOnly: []string{"./docs"}}, nil,
			`flag --read-only: "./docs": relative path; want an absolute path or ~/`},
		{"relative --deny", nil, Flags{Deny: []string{".env"}}, nil,
			`flag --deny: ".env": relative path; want an absolute path or ~/`},
		{"relative --workspace-root", nil, Flags{Workspace: "w", WorkspaceRoot: "work"}, nil,
			`flag --workspace-root: "work": relative path; want an absolute path or ~/`},
		{"relative AGENTBOX_DENY", func(w *world) { w.setenv("AGENTBOX_DENY=/ok,rel") }, Flags{}, nil,
			`env AGENTBOX_DENY: "rel": relative path; want an absolute path or ~/`},
		{"empty --writable", nil, Flags{Writable: []string{""}}, nil,
			"flag --writable: empty path"},
		{"~user", nil, Flags{Writable: []string{"~root/x"}}, nil,
			`flag --writable: "~root/x": only ~ and ~/ are expanded`},
		{"unset variable", nil, Flags{Writable: []string{"${NOPE}/x"}}, nil,
			`flag --writable: "${NOPE}/x": variable NOPE is not set`},
		{"missing writable root", nil, Flags{Writable: []string{"~/nope"}}, nil,
			"flag --writable: $ROOT/home/u/nope: writable folder does not exist (and lies outside the project, or in a hidden folder, so agentbox does not make it): mkdir -p $ROOT/home/u/nope, or take it out of the policy"},
		{"deny /", nil, Flags{Deny: []string{"/"}}, nil,
			"flag --deny: cannot deny /: nothing would be left to run"},
		{"project policy climbs out of its folder", func(w *world) {
			w.write("home/u/proj/.agentbox.toml", "[filesystem]\nwritable = [\n  \".\",\n  \"../other\",\n]\n")
			w.mkdir("home/u/other")
			w.trust("home/u/proj/.agentbox.toml")
		}, Flags{}, nil,
			`$ROOT/home/u/proj/.agentbox.toml:4: filesystem.writable[1]: "../other": a relative path may not leave the policy's folder $ROOT/home/u/proj`},
		{"project deny climbs out of its folder", func(w *world) {
			w.write("home/u/proj/.agentbox.toml", "[filesystem]\ndeny = [\"a/../../x\"]\n")
			w.trust("home/u/proj/.agentbox.toml")
		}, Flags{}, nil,
			`$ROOT/home/u/proj/.agentbox.toml:2: filesystem.deny[0]: "a/../../x": a relative path may not leave the policy's folder $ROOT/home/u/proj`},
		{"unknown provider", nil, Flags{Provider: "nosuch"}, nil,
			`flag --provider: unknown provider "nosuch" (known: claude, codex, hermes, kimi, mimo, opencode, pi, none, auto)`},
		{"task without a workspace", nil, Flags{Task: "t1"}, nil,
			"flag --task: a task needs a workspace: set workspace.id or --workspace"},
		{"workspace root holds the home folder", nil, Flags{Workspace: "w", WorkspaceRoot: "$ROOT/home"}, nil,
			"flag --workspace-root: $ROOT/home: the workspace root is hidden as a whole, so it cannot be / or hold the home folder"},
		{"workspace root is /", nil, Flags{Workspace: "w", WorkspaceRoot: "/"}, nil,
			"flag --workspace-root: /: the workspace root is hidden as a whole, so it cannot be / or hold the home folder"},
		{"writable root in another workspace", func(w *world) { w.mkdir("work/other") }, Flags{Workspace: "w1", WorkspaceRoot: "$ROOT/work", Writable: []string{"$ROOT/work/other"}}, nil,
			"flag --writable: $ROOT/work/other: this writable root lies in the workspace root $ROOT/work, which is hidden except workspace w1"},
		{"writable root holding the workspace root", func(w *world) { w.mkdir("outer/work") }, Flags{Workspace: "w1", WorkspaceRoot: "$ROOT/outer/work", Writable: []string{"$ROOT/outer"}}, nil,
			"flag --writable: $ROOT/outer: this writable root holds the workspace root $ROOT/outer/work; binding it would undo the masking of other workspaces"},
		{"writable root is the workspace root", func(w *world) { w.mkdir("work") }, Flags{Workspace: "w1", WorkspaceRoot: "$ROOT/work", Writable: []string{"$ROOT/work"}}, nil,
			"flag --writable: $ROOT/work: this writable root holds the workspace root $ROOT/work; binding it would undo the masking of other workspaces"},
		{"env.set of a truthful variable", func(w *world) {
			w.write("etc/p.toml", "[env.set]\nAGENTBOX_NETWORK = \"none\"\n")
		}, Flags{Policy: []string{"$ROOT/etc/p.toml"}}, nil,
			"$ROOT/etc/p.toml:2: env.set.AGENTBOX_NETWORK: AGENTBOX_NETWORK is set by agentbox itself and cannot be overridden"},
		{"env.set of TMPDIR", func(w *world) {
			w.write("etc/p.toml", "[env]\nset = { TMPDIR = \"/var/tmp\" }\n")
		}, Flags{Policy: []string{"$ROOT/etc/p.toml"}}, nil,
			"$ROOT/etc/p.toml:2: env.set.TMPDIR: TMPDIR is set by agentbox itself and cannot be overridden"},
		{"bad --pass-env pattern", nil, Flags{EnvMode: "clean", PassEnv: []string{"A["}}, nil,
			`flag --pass-env: "A[": bad pattern`},
		{"bad --deny-env pattern", nil, Flags{DenyEnv: []string{"[x"}}, nil,
			`flag --deny-env: "[x": bad pattern`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.setup != nil {
				tc.setup(w)
			}
			fix := func(list []string) []string {
				for i, s := range list {
					list[i] = strings.ReplaceAll(s, "$ROOT", w.root)
				}
				return list
			}
			tc.flags.Writable = fix(tc.flags.Writable)
			tc.flags.Policy = fix(tc.flags.Policy)
			tc.flags.WorkspaceRoot = strings.ReplaceAll(tc.flags.WorkspaceRoot, "$ROOT", w.root)
			command := tc.command
			if tc.name != "empty command" && command == nil {
				command = []string{"true"}
			}
			before := w.snapshot()
			p, err := w.resolve(tc.flags, Options{}, command...)
			if err == nil {
				t.Fatalf("Resolve succeeded with mounts %v, want error", w.mounts(p))
			}
			if diff := cmp.Diff(tc.want, w.norm(err.Error())); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !errors.Is(err, ErrPolicy) {
				t.Errorf("error %v is not ErrPolicy", err)
			}
			if diff := cmp.Diff(before, w.snapshot()); diff != "" {
				t.Errorf("a failed Resolve changed the disk (-before +after):\n%s", diff)
			}
		})
	}
}

func TestResolveEnvironment(t *testing.T) {
	base := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm",
		"GITHUB_TOKEN=ghp_secret", "AWS_SECRET_ACCESS_KEY=aws_secret", "GOROOT=/go", "EDITOR=vi",
		"AGENTBOX=1", "AGENTBOX_BACKEND=bwrap", "AGENTBOX_WRITABLE=/x", "AGENTBOX_DEGRADED=why",
		"FOO=old",
	}
	tests := []struct {
		name        string
		policy      string
		flags       Flags
		wantEnviron []string
		wantRemoved []string
		wantSet     map[string]string
	}{
		{
			name: "inherit drops only the truthful variables",
			wantEnviron: []string{
				"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm",
				"GITHUB_TOKEN=ghp_secret", "AWS_SECRET_ACCESS_KEY=aws_secret", "GOROOT=/go", "EDITOR=vi", "FOO=old",
			},
		},
		{
			name:  "deny globs",
			flags: Flags{DenyEnv: []string{"*_TOKEN", "AWS_*"}},
			wantEnviron: []string{
				"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "GOROOT=/go", "EDITOR=vi", "FOO=old",
			},
			wantRemoved: []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"},
		},
		{
			name:        "clean keeps the baseline and pass",
			flags:       Flags{EnvMode: "clean", PassEnv: []string{"GO*"}},
			wantEnviron: []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "GOROOT=/go"},
			wantRemoved: []string{"AWS_SECRET_ACCESS_KEY", "EDITOR", "FOO", "GITHUB_TOKEN"},
		},
		{
			name:        "deny wins over pass in clean mode",
			flags:       Flags{EnvMode: "clean", PassEnv: []string{"GITHUB_TOKEN"}, DenyEnv: []string{"GITHUB_*"}},
			wantEnviron: []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm"},
			wantRemoved: []string{"AWS_SECRET_ACCESS_KEY", "EDITOR", "FOO", "GITHUB_TOKEN", "GOROOT"},
		},
		{
			name:   "set replaces and adds",
			policy: "[env.set]\nFOO = \"new\"\nBAR = \"x=y\"\n",
			wantEnviron: []string{
				"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm",
				"GITHUB_TOKEN=ghp_secret", "AWS_SECRET_ACCESS_KEY=aws_secret", "GOROOT=/go", "EDITOR=vi",
				"BAR=x=y", "FOO=new",
			},
			wantSet: map[string]string{"FOO": "new", "BAR": "x=y"},
		},
		{
			name:        "set survives clean mode",
			policy:      "[env]\nmode = \"clean\"\nset = { FOO = \"new\" }\n",
			wantEnviron: []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "FOO=new"},
			wantRemoved: []string{"AWS_SECRET_ACCESS_KEY", "EDITOR", "FOO", "GITHUB_TOKEN", "GOROOT"},
			wantSet:     map[string]string{"FOO": "new"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.env.Environ = append([]string(nil), base...)
			flags := tc.flags
			flags.Tmp = "private"
			if tc.policy != "" {
				w.write("etc/p.toml", tc.policy)
				flags.Policy = []string{w.path("etc/p.toml")}
			}
			p := w.mustResolve(flags, Options{}, "true")
			if diff := cmp.Diff(tc.wantEnviron, withoutCacheVars(p)); diff != "" {
				t.Errorf("environ (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRemoved, p.Env.Removed); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSet, p.Env.Set); diff != "" {
				t.Errorf("set (-want +got):\n%s", diff)
			}
			for _, name := range p.Env.Removed {
				if strings.Contains(name, "=") || strings.Contains(name, "secret") {
					t.Errorf("removed holds %q, want names only", name)
				}
			}
		})
	}
}

func TestResolveLimits(t *testing.T) {
	w := newWorld(t)
	w.write("etc/p.toml", "[limits]\nprocesses = 100\nopen_files = 256\nmemory = \"2GiB\"\ncpu_time = \"2h\"\nfile_size = \"10MB\"\n")
	p := w.mustResolve(Flags{Tmp: "private", Policy: []string{w.path("etc/p.toml")}}, Options{}, "true")
	want := plan.Limits{Processes: 100, OpenFiles: 256, Memory: 2 << 30, CPUTime: 7200, FileSize: 10000000}
	if diff := cmp.Diff(want, p.Limits); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	p = w.mustResolve(Flags{Tmp: "private"}, Options{}, "true")
	if diff := cmp.Diff(plan.Limits{}, p.Limits); diff != "" {
		t.Errorf("limits without a policy (-want +got):\n%s", diff)
	}
}

func TestResolveModes(t *testing.T) {
	w := newWorld(t)
	w.write("etc/p.toml", "[network]\nmode = \"allowlist\"\nallow = [\"a.com\", \"*.b.com\", \"a.com\"]\ndeny = [\"x.a.com\"]\n[seccomp]\nallow = [\"userns\"]\n")
	w.setenv("AGENTBOX_ENFORCE=best-effort", "AGENTBOX_BACKEND=bwrap")
	p := w.mustResolve(Flags{Tmp: "private", Policy: []string{w.path("etc/p.toml")}, Allow: []string{"c.com"}}, Options{}, "true")
	got := plan.Plan{Enforce: p.Enforce, Backend: p.Backend, Network: p.Network, Seccomp: p.Seccomp}
	want := plan.Plan{Enforce: "best-effort", Backend: "bwrap",
		Network: plan.Network{Mode: "allowlist", Allow: []string{"a.com", "*.b.com", "c.com"}, Deny: []string{"x.a.com"}},
		Seccomp: []string{"userns"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}
}

func TestResolveProvider(t *testing.T) {
	tests := []struct {
		name    string
		flags   Flags
		command []string
		want    plan.Provider
	}{
		{"none detected", Flags{}, []string{"make"}, plan.Provider{Reason: "no known agent CLI in make"}},
		{"detected", Flags{}, []string{"/usr/local/bin/claude", "-p", "hi"}, plan.Provider{Name: "claude", Reason: "detected from command /usr/local/bin/claude", Supported: true}},
		{"chosen", Flags{Provider: "codex"}, []string{"make"}, plan.Provider{Name: "codex", Reason: "chosen by flag --provider", Supported: true, Adjusted: "left alone: make is not the codex command"}},
		{"codex confined", Flags{}, []string{"codex", "exec", "hi"}, plan.Provider{Name: "codex", Reason: "detected from command codex", Supported: true,
			Adjusted: "codex's own sandbox turned off (--sandbox danger-full-access): agentbox confines it",
			Confined: []string{"codex", "--sandbox", "danger-full-access", "exec", "hi"}}},
		{"turned off", Flags{Provider: "none"}, []string{"claude"}, plan.Provider{Reason: "turned off by flag --provider"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.flags.Tmp = "private"
			p := w.mustResolve(tc.flags, Options{}, tc.command...)
			// TestResolveProviderState checks the state and variables.
			if diff := cmp.Diff(tc.want, p.Provider, cmpopts.IgnoreFields(plan.Provider{}, "ConfinedEnv", "State")); diff != "" {
				t.Errorf("provider (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveDeclaredProvider checks a provider declared in a policy with
// sandbox = true: its writable paths are bound, a missing one is reported.
func TestResolveDeclaredProvider(t *testing.T) {
	w := newWorld(t)
	w.mkdir("home/u/.mytool")
	w.write("etc/p.toml", "[providers.mytool]\ncommands = [\"mytool\"]\nwritable = [\"~/.mytool\", \"~/.mytool-cache\"]\nsandbox = true\n")
	p := w.mustResolve(Flags{Tmp: "private", Policy: []string{w.path("etc/p.toml")}}, Options{}, "mytool", "run")
	if diff := cmp.Diff(plan.Provider{Name: "mytool", Reason: "detected from command mytool", Supported: true}, p.Provider); diff != "" {
		t.Errorf("provider (-want +got):\n%s", diff)
	}
	var got []string
	for _, m := range w.mounts(p) {
		if strings.HasPrefix(m, "writable ") {
			got = append(got, m)
		}
	}
	want := []string{
		"writable bind $ROOT/home/u/proj (default: the working directory)",
		"writable bind $ROOT/home/u/.mytool ($ROOT/etc/p.toml:3 providers.mytool.writable[0])",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writable mounts (-want +got):\n%s", diff)
	}
	wantSkips := []string{"$ROOT/home/u/.mytool-cache: provider path does not exist yet, so it is not writable ($ROOT/etc/p.toml:3 providers.mytool.writable[1])"}
	if diff := cmp.Diff(wantSkips, w.skips(p)); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

func TestExpandVars(t *testing.T) {
	get := func(name string) string { return map[string]string{"A": "1", "B_2": "two", "HOME": "/h"}[name] }
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$A/x", "1/x"},
		{"${A}x", "1x"},
		{"$B_2", "two"},
		{"${HOME}/.aws", "/h/.aws"},
		{"$", "$"},
		{"a$", "a$"},
		{"$/x", "$/x"},
		{"${A", "${A"},
		{"$1", "$1"},
		{"$$A", "$1"},
		{"$UNSET/x", "/x"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, expandVars(tc.in, get)); diff != "" {
				t.Errorf("expandVars(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestResolveIdentity checks that the world's identity reaches the plan
// and the tmp folder's name.
func TestResolveIdentity(t *testing.T) {
	w := newWorld(t)
	w.env.UID, w.env.GID = 0, 0
	p := w.mustResolve(Flags{}, Options{}, "true")
	if diff := cmp.Diff(plan.Identity{UID: 0, GID: 0, Home: w.path("home/u")}, p.Identity); diff != "" {
		t.Errorf("identity (-want +got):\n%s", diff)
	}
	if !p.Identity.Root() {
		t.Error("Root() is false for uid 0")
	}
	if !strings.HasPrefix(w.norm(p.Tmp.HostDir), "$ROOT/state/agentbox/tmp/") {
		t.Errorf("tmp folder %s, want one in the user's own state folder", w.norm(p.Tmp.HostDir))
	}
}

// TestResolveHostExecBlocked checks what is blocked for the run where a
// control file is missing: at the top of the project the agent CLIs'
// folders and files and the editors' (empty read-only folders, so nothing
// shows in git status), in an agent CLI's own folder its settings (a file
// with an empty JSON object) and folders; deeper, nothing is blocked (the
// after-run check moves away what the box makes).
func TestResolveHostExecBlocked(t *testing.T) {
	w := newWorld(t)
	w.showBlocked = true
	w.gitRepo("home/u/proj")
	w.mkdir("home/u/proj/.claude/commands")
	w.mkdir("home/u/proj/packages/foo")
	p := w.mustResolve(Flags{Tmp: "private"}, Options{}, "claude")
	var got []string
	for _, d := range p.Prepare {
		if d.Placeholder != "" {
			got = append(got, w.norm(d.Path)+" "+d.Placeholder+" "+strconv.Quote(d.Content)+" ("+d.Origin.String()+")")
		}
	}
	want := []string{
		`$ROOT/home/u/proj/.claude/settings.json dir "" (always: claude .claude/settings.json)`,
		`$ROOT/home/u/proj/.claude/settings.local.json dir "" (always: claude .claude/settings.local.json)`,
		`$ROOT/home/u/proj/.claude/agents dir "" (always: claude .claude/agents)`,
		`$ROOT/home/u/proj/.claude/skills dir "" (always: claude .claude/skills)`,
		`$ROOT/home/u/proj/.claude/hooks dir "" (always: claude .claude/hooks)`,
		`$ROOT/home/u/proj/.claude/rules dir "" (always: claude .claude/rules)`,
		`$ROOT/home/u/proj/.claude/workflows dir "" (always: claude .claude/workflows)`,
		`$ROOT/home/u/proj/.claude/output-styles dir "" (always: claude .claude/output-styles)`,
		`$ROOT/home/u/proj/.mcp.json dir "" (always: claude .mcp.json)`,
		`$ROOT/home/u/proj/.codex dir "" (always: codex .codex)`,
		`$ROOT/home/u/proj/.agents dir "" (always: codex .agents)`,
		`$ROOT/home/u/proj/.vscode dir "" (always: vscode .vscode)`,
		`$ROOT/home/u/proj/.idea dir "" (always: jetbrains .idea)`,
		`$ROOT/home/u/.claude/settings.json file "{}\n" (always: claude settings.json)`,
		`$ROOT/home/u/.claude/settings.local.json file "{}\n" (always: claude settings.local.json)`,
		`$ROOT/home/u/.claude/hooks dir "" (always: claude hooks)`,
		`$ROOT/home/u/.claude/commands dir "" (always: claude commands)`,
		`$ROOT/home/u/.claude/agents dir "" (always: claude agents)`,
		`$ROOT/home/u/.claude/skills dir "" (always: claude skills)`,
		`$ROOT/home/u/.claude/rules dir "" (always: claude rules)`,
		`$ROOT/home/u/.claude/workflows dir "" (always: claude workflows)`,
		`$ROOT/home/u/.claude/output-styles dir "" (always: claude output-styles)`,
		`$ROOT/home/u/.claude/CLAUDE.md file "" (always: claude CLAUDE.md)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placeholders (-want +got):\n%s", diff)
	}
	// What Claude Code makes on its first start (plugins/) is not
	// blocked, so it starts in the box: what the box makes there is moved
	// away after the run.
	if g, ok := p.HostExec.GuardAt(w.path("home/u/.claude/plugins")); !ok || g.Keep != plan.KeepChecked {
		t.Errorf("~/.claude/plugins: %+v, want checked after the run", g)
	}
	// The project's existing .claude/commands is read-only and its folder
	// pinned; each placeholder is bound read-only over itself.
	ms := w.mounts(p)
	for _, m := range []string{
		"read-only ro-bind $ROOT/home/u/proj/.claude/commands (always: claude .claude/commands)",
		"read-only pin $ROOT/home/u/proj/.claude (always: folder holding a read-only path) pinned: cannot be renamed or replaced",
		"read-only ro-bind $ROOT/home/u/proj/.mcp.json (always: claude .mcp.json) does not exist: an empty read-only folder stands in its place during the run, so the box cannot create it",
		"read-only ro-bind $ROOT/home/u/.claude/settings.json (always: claude settings.json) does not exist: an empty read-only file stands in its place during the run, so the box cannot create it",
	} {
		if !slices.Contains(ms, m) {
			t.Errorf("no mount %q in:\n%s", m, strings.Join(ms, "\n"))
		}
	}
	for _, m := range ms {
		if strings.Contains(m, "packages/foo") {
			t.Errorf("a placeholder deeper than the project's top: %s", m)
		}
	}
}

// TestResolveManyRepositories: thousands of repositories (a box can plant
// them) neither make resolution refuse nor take a mount each: the
// project's own repository keeps its mounts, and the repositories beyond
// the budget are kept by recording and restoring.
func TestResolveManyRepositories(t *testing.T) {
	w := newWorld(t)
	w.gitRepo("home/u/proj")
	for i := 0; i < 1400; i++ {
		w.gitRepo(fmt.Sprintf("home/u/proj/r%d", i))
	}
	p, err := w.resolve(Flags{Tmp: "private"}, Options{}, "true")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range p.Mounts {
		if m.Stage == plan.StageReadOnly {
			n++
		}
	}
	if n > maxGuardMounts+8 {
		t.Errorf("%d read-only mounts for 1,400 repositories; want at most about %d", n, maxGuardMounts)
	}
	keep := map[string]plan.Keep{}
	for _, g := range p.HostExec.Guards {
		keep[g.Path] = g.Keep
	}
	for path, want := range map[string]plan.Keep{
		"home/u/proj/.git/config":       plan.KeepReadOnly,
		"home/u/proj/.git/hooks":        plan.KeepReadOnly,
		"home/u/proj/r1399/.git/config": plan.KeepRestored,
		"home/u/proj/r999/.git/hooks":   plan.KeepRestored,
	} {
		if got := keep[w.path(path)]; got != want {
			t.Errorf("%s kept %q, want %q", path, got, want)
		}
	}
}

// TestResolveMissingWritable: a writable folder that does not exist is made
// for the run when it lies in the project (each missing folder, parents
// first, 0700), and nothing is made at resolution; one outside the project
// (also through a link in the project that leads out) is refused under
// require with the mkdir to run, and skipped with a warning under
// best-effort. Before, each was "writable root does not exist".
func TestResolveMissingWritable(t *testing.T) {
	w := newWorld(t)
	w.mkdir("outside")
	w.symlink(w.path("outside"), "home/u/proj/out")
	before := w.snapshot()
	p := w.mustResolve(Flags{Tmp: "private", Writable: []string{"~/proj/build/out", "~/proj/cache"}}, Options{}, "true")
	var prepared []string
	for _, d := range p.Prepare {
		if plan.Within(d.Path, w.path("home/u/proj")) && d.Placeholder == "" {
			prepared = append(prepared, fmt.Sprintf("%s %o", w.norm(d.Path), d.Mode))
		}
	}
	if diff := cmp.Diff([]string{"$ROOT/home/u/proj/build 700", "$ROOT/home/u/proj/build/out 700", "$ROOT/home/u/proj/cache 700"}, prepared); diff != "" {
		t.Errorf("prepared in the project (-want +got):\n%s", diff)
	}
	var binds []string
	for _, m := range w.mounts(p) {
		if strings.HasPrefix(m, "writable ") {
			binds = append(binds, m)
		}
	}
	if diff := cmp.Diff([]string{
		"writable bind $ROOT/home/u/proj (default: the working directory)",
		"writable bind $ROOT/home/u/proj/cache (flag --writable) created",
		"writable bind $ROOT/home/u/proj/build/out (flag --writable) created",
	}, binds); diff != "" {
		t.Errorf("writable binds (-want +got):\n%s", diff)
	}
	if len(p.Skipped) != 0 {
		t.Errorf("skipped: %+v", p.Skipped)
	}
	if diff := cmp.Diff(before, w.snapshot()); diff != "" {
		t.Errorf("resolution changed the disk (-before +after):\n%s", diff)
	}

	for _, tc := range []struct{ name, path string }{
		{"outside the project", "~/cache/mytool"},
		{"in a hidden folder of the project", "~/proj/.git/hooks/pre-commit"},
		{"hidden in the project", "~/proj/.cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.resolve(Flags{Tmp: "private", Writable: []string{tc.path}}, Options{}, "true")
			want := "writable folder does not exist (and lies outside the project, or in a hidden folder, so agentbox does not make it): mkdir -p "
			if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "flag --writable: ") {
				t.Fatalf("under require: %v, want a refusal containing %q", err, want)
			}
			p := w.mustResolve(Flags{Tmp: "private", BestEffort: true, Writable: []string{tc.path}}, Options{}, "true")
			if len(p.Skipped) != 1 || !p.Skipped[0].Warn || !strings.Contains(p.Skipped[0].Reason, "mkdir -p ") {
				t.Fatalf("under best-effort: skipped %+v, want one warning with the mkdir", p.Skipped)
			}
			for _, d := range p.Prepare {
				if d.Placeholder == "" && (strings.HasPrefix(d.Path, w.path("outside")) || strings.HasPrefix(d.Path, w.path("home/u/cache")) || strings.Contains(d.Path, "/.")) {
					t.Errorf("a folder outside the project would be made: %+v", d)
				}
			}
		})
	}
	// Through a link in the project that leads out of it (a box may have
	// made it), the path is refused as such, under require and
	// best-effort alike, and nothing is made.
	for _, best := range []bool{false, true} {
		_, err := w.resolve(Flags{Tmp: "private", BestEffort: best, Writable: []string{"~/proj/out/new"}}, Options{}, "true")
		if err == nil || !strings.Contains(err.Error(), "leads through the link "+w.path("home/u/proj/out")+" -> ") && (best || !strings.Contains(err.Error(), "writable folder does not exist")) {
			t.Errorf("through a link out of the project (best-effort %v): %v, want the link refused", best, err)
		}
	}
}

// TestResolveShellVars: a shell as the command keeps its history in the
// workspace's private cache folder (the home folder's history file is
// read-only in the box, and an interactive session ended with a refusal
// for it) and shows "(agentbox)" in Debian's prompt, unless
// AGENTBOX_DISABLE_PROMPT is set; another command gets neither.
func TestResolveShellVars(t *testing.T) {
	w := newWorld(t)
	w.env.Environ = append(w.env.Environ, "HISTFILE="+w.path("home/u/.bash_history"))
	get := func(p *plan.Plan, name string) []string {
		var out []string
		for _, kv := range p.Environ {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				out = append(out, v)
			}
		}
		return out
	}
	p := w.mustResolve(Flags{Tmp: "private"}, Options{}, "bash")
	if diff := cmp.Diff([]string{path.Join(p.CacheDir, ".bash_history")}, get(p, "HISTFILE")); diff != "" || p.CacheDir == "" {
		t.Errorf("HISTFILE (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"agentbox"}, get(p, "debian_chroot")); diff != "" {
		t.Errorf("debian_chroot (-want +got):\n%s", diff)
	}
	for _, argv := range [][]string{{"true"}, {"sh", "-c", "echo"}, {"bash", "script.sh"}} {
		p = w.mustResolve(Flags{Tmp: "private"}, Options{}, argv...)
		if got := get(p, "debian_chroot"); len(got) != 0 {
			t.Errorf("debian_chroot for %q: %q", argv, got)
		}
	}
	w.env.Environ = append(w.env.Environ, "AGENTBOX_DISABLE_PROMPT=1")
	p = w.mustResolve(Flags{Tmp: "private"}, Options{}, "/bin/zsh", "-l")
	if got := get(p, "debian_chroot"); len(got) != 0 {
		t.Errorf("debian_chroot with AGENTBOX_DISABLE_PROMPT: %q", got)
	}
	if diff := cmp.Diff([]string{path.Join(p.CacheDir, ".zsh_history")}, get(p, "HISTFILE")); diff != "" {
		t.Errorf("zsh HISTFILE (-want +got):\n%s", diff)
	}
}
