package hostexec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/provider"
)

// osFS is the real file system, searched with the fast walk.
type osFS struct{}

func (osFS) Lstat(n string) (fs.FileInfo, error)       { return os.Lstat(n) }
func (osFS) Stat(n string) (fs.FileInfo, error)        { return os.Stat(n) }
func (osFS) ReadFile(n string) ([]byte, error)         { return os.ReadFile(n) }
func (osFS) Readlink(n string) (string, error)         { return os.Readlink(n) }
func (osFS) EvalSymlinks(n string) (string, error)     { return filepath.EvalSymlinks(n) }
func (osFS) ReadDir(n string) ([]fs.DirEntry, error)   { return os.ReadDir(n) }
func (osFS) Real() bool                                { return true }
func (slowFS) Real() bool                              { return false }
func (f slowFS) Lstat(n string) (fs.FileInfo, error)   { return os.Lstat(n) }
func (f slowFS) Stat(n string) (fs.FileInfo, error)    { return os.Stat(n) }
func (f slowFS) ReadFile(n string) ([]byte, error)     { return os.ReadFile(n) }
func (f slowFS) Readlink(n string) (string, error)     { return os.Readlink(n) }
func (f slowFS) EvalSymlinks(n string) (string, error) { return filepath.EvalSymlinks(n) }
func (f slowFS) ReadDir(n string) ([]fs.DirEntry, error) {
	return os.ReadDir(n)
}

// slowFS is the real file system searched through ReadDir, as a world
// given by a test is.
type slowFS struct{}

// tree is a folder of files for one test, in a real temporary folder.
type tree struct {
	t    *testing.T
	root string
}

func newTree(t *testing.T) *tree {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &tree{t: t, root: root}
}

func (tr *tree) p(rel string) string { return filepath.Join(tr.root, rel) }

func (tr *tree) write(rel, content string) {
	tr.t.Helper()
	if err := os.MkdirAll(filepath.Dir(tr.p(rel)), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(tr.p(rel), []byte(content), 0o755); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *tree) mkdir(rel string) {
	tr.t.Helper()
	if err := os.MkdirAll(tr.p(rel), 0o755); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *tree) symlink(target, rel string) {
	tr.t.Helper()
	tr.mkdir(filepath.Dir(rel))
	if err := os.Symlink(target, tr.p(rel)); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *tree) repo(rel string) {
	tr.write(rel+"/.git/config", "[core]\n\tbare = false\n")
	tr.write(rel+"/.git/HEAD", "ref: refs/heads/main\n")
	tr.mkdir(rel + "/.git/hooks")
	tr.mkdir(rel + "/.git/objects")
	tr.mkdir(rel + "/.git/refs")
}

// guards shows the result's guards as "keep kind path (rule)", relative.
func (tr *tree) guards(r Result) []string {
	var out []string
	for _, g := range r.Guards {
		s := string(g.Keep) + " " + g.Kind + " " + strings.TrimPrefix(g.Path, tr.root+"/") + " (" + g.Rule + ")"
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func (tr *tree) input(regions ...string) Input {
	var rs []string
	for _, r := range regions {
		rs = append(rs, tr.p(r))
	}
	env := map[string]string{"HOME": tr.p("home"), "GIT_CONFIG_NOSYSTEM": "1", "PATH": tr.p("bin")}
	return Input{GOOS: "linux", Home: tr.p("home"), Getenv: func(k string) string { return env[k] }, FS: osFS{},
		Regions: rs, Projects: rs[:1], Providers: provider.Builtin()}
}

func TestResolveGit(t *testing.T) {
	tr := newTree(t)
	tr.repo("proj")
	tr.repo("proj/node_modules/a")   // in a package tree: kept by recording
	tr.repo("proj/x/y/z/w/v/u/deep") // any depth
	tr.write("proj/.git/hooks/pre-commit", "#!/bin/sh\n./scripts/check.sh && pre-commit run\n")
	tr.write("proj/scripts/check.sh", "")        // named by a hook
	tr.write("proj/.pre-commit-config.yaml", "") // the hook calls pre-commit
	tr.write("proj/.git/config", "[core]\n\thooksPath = .husky/_\n")
	tr.write("proj/.husky/_/h", "")
	tr.write("proj/.husky/pre-commit", "npm test\n")
	tr.symlink("../../shared", "proj/sub/.git/hooks") // a symlinked hooks folder
	tr.write("proj/sub/.git/config", "")
	tr.mkdir("shared")
	tr.write("proj/bare.git/HEAD", "ref: refs/heads/main\n") // a bare repository
	tr.mkdir("proj/bare.git/objects")
	tr.mkdir("proj/bare.git/refs")
	tr.write("proj/bare.git/config", "[core]\n\tbare = true\n")
	in := tr.input("proj")
	in.Projects = nil // no placeholders: TestResolveControlFiles has them
	r, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	got := tr.guards(r)
	want := []string{
		"checked missing proj/.git/info/attributes (git info/attributes)",
		"checked missing proj/.git/info/exclude (git info/exclude)",
		"checked missing proj/bare.git/info/attributes (git info/attributes)",
		"checked missing proj/bare.git/info/exclude (git info/exclude)",
		"checked missing proj/node_modules/a/.git/info/attributes (git info/attributes)",
		"checked missing proj/node_modules/a/.git/info/exclude (git info/exclude)",
		"checked missing proj/sub/.git/info/attributes (git info/attributes)",
		"checked missing proj/sub/.git/info/exclude (git info/exclude)",
		"checked missing proj/x/y/z/w/v/u/deep/.git/info/attributes (git info/attributes)",
		"checked missing proj/x/y/z/w/v/u/deep/.git/info/exclude (git info/exclude)",
		"read-only dir proj/.git/hooks (git hooks)",
		"read-only dir proj/.husky/_ (git hooks)",
		"read-only dir proj/bare.git/hooks (git hooks)",
		"read-only dir proj/x/y/z/w/v/u/deep/.git/hooks (git hooks)",
		"read-only file proj/.git/config (git config)",
		"read-only file proj/.husky/pre-commit (git hook script (husky))",
		"read-only file proj/.pre-commit-config.yaml (git hook manager pre-commit)",
		"read-only file proj/bare.git/config (git config)",
		"read-only file proj/scripts/check.sh (git hook script (named by " + tr.p("proj/.git/hooks/pre-commit") + "))",
		"read-only file proj/sub/.git/config (git config)",
		"read-only file proj/x/y/z/w/v/u/deep/.git/config (git config)",
		"restored dir proj/.husky (git hooks (husky))",
		"restored dir proj/node_modules/a/.git/hooks (git hooks)",
		"restored file proj/node_modules/a/.git/config (git config)",
		"restored symlink proj/sub/.git/hooks (git hooks)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("guards (-want +got):\n%s", diff)
	}
	for _, d := range []string{"proj/.git", "proj/node_modules/a/.git", "proj/x/y/z/w/v/u/deep/.git", "proj/bare.git", "proj/sub/.git"} {
		found := false
		for _, g := range r.GitDirs {
			found = found || g == tr.p(d)
		}
		if !found {
			t.Errorf("git folder %s not known", d)
		}
	}
	// The same through ReadDir (a world a test gives) finds the same.
	in.FS = slowFS{}
	r2, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, tr.guards(r2)); diff != "" {
		t.Errorf("guards through ReadDir (-fast +slow):\n%s", diff)
	}
}

func TestResolveControlFiles(t *testing.T) {
	tr := newTree(t)
	tr.write("proj/.claude/settings.json", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"node $CLAUDE_PROJECT_DIR/tools/hook.js"}]}]},"permissions":{"allow":["Read(./src/a.go)"]}}`)
	tr.write("proj/tools/hook.js", "")
	tr.write("proj/src/a.go", "")
	tr.write("proj/packages/foo/.mcp.json", `{"mcpServers":{"x":{"command":"./bin/server","args":["--config","./srv.json"]}}}`)
	tr.write("proj/packages/foo/bin/server", "")
	tr.write("proj/packages/foo/srv.json", "")
	tr.symlink(tr.p("dotfiles/vscode"), "proj/.vscode")
	tr.write("dotfiles/vscode/tasks.json", "{}")
	tr.write("home/.claude/settings.json", `{"statusLine":{"type":"command","command":"~/.claude/statusline.sh"}}`)
	tr.write("home/.claude/statusline.sh", "")
	tr.write("home/.claude/hooks/start.sh", "")
	tr.write("home/.codex/config.toml", "notify = [\"/bin/sh\", \""+tr.p("home/.codex/notify.sh")+"\"]\n[mcp_servers.x]\ncommand = \"~/.codex/mcp.sh\"\n")
	tr.write("home/.codex/notify.sh", "")
	tr.write("home/.codex/mcp.sh", "")
	in := tr.input("proj", "home/.claude", "home/.codex")
	r, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	got := tr.guards(r)
	// Everything an agent CLI or editor obeys, at any depth, with the
	// files its commands name; a symlinked control folder is put back
	// after the run (its target lies outside the writable roots); the
	// permission rule's file is not a command and stays writable.
	for _, w := range []string{
		"read-only file proj/.claude/settings.json (claude .claude/settings.json)",
		"read-only file proj/tools/hook.js (claude command (named by " + tr.p("proj/.claude/settings.json") + "))",
		"read-only file proj/packages/foo/.mcp.json (claude .mcp.json)",
		"read-only file proj/packages/foo/bin/server (claude command (named by " + tr.p("proj/packages/foo/.mcp.json") + "))",
		"read-only file proj/packages/foo/srv.json (claude command (named by " + tr.p("proj/packages/foo/.mcp.json") + "))",
		"restored symlink proj/.vscode (vscode .vscode)",
		"read-only file home/.claude/settings.json (claude settings.json)",
		"read-only dir home/.claude/hooks (claude hooks)",
		"read-only file home/.claude/statusline.sh (claude command (named by " + tr.p("home/.claude/settings.json") + "))",
		"read-only file home/.codex/config.toml (codex config.toml)",
		"read-only file home/.codex/notify.sh (codex command (named by " + tr.p("home/.codex/config.toml") + "))",
		"read-only file home/.codex/mcp.sh (codex command (named by " + tr.p("home/.codex/config.toml") + "))",
		"blocked missing proj/.codex (codex .codex)",
		"blocked missing home/.claude/skills (claude skills)",
		"blocked missing home/.codex/rules (codex rules)",
	} {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("no guard %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
	for _, g := range got {
		if strings.Contains(g, "src/a.go") || strings.Contains(g, "packages/foo/.claude") || strings.Contains(g, "dotfiles") {
			t.Errorf("unexpected guard %s", g)
		}
	}
}

func TestResolveHome(t *testing.T) {
	tr := newTree(t)
	tr.write("home/.bashrc", "# rc\n. ~/.bash_extra\nsource \"$HOME/.config/sh/more\"\n[ -f ~/.bash_aliases ] && . ~/.bash_aliases\n")
	tr.write("home/.bash_extra", "")
	tr.write("home/.config/sh/more", ". ~/.deeper\n")
	tr.write("home/.deeper", "")
	tr.mkdir("home/.config/agentbox") // made by agentbox before the run: not a first missing component
	in := tr.input("home")
	in.Projects = nil
	in.Made = []string{tr.p("home/.local")}
	r, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	got := tr.guards(r)
	for _, w := range []string{
		"read-only file home/.bashrc (shell .bashrc)",
		"read-only file home/.bash_extra (shell (sourced by " + tr.p("home/.bashrc") + "))",
		"read-only file home/.config/sh/more (shell (sourced by " + tr.p("home/.bashrc") + "))",
		"read-only file home/.deeper (shell (sourced by " + tr.p("home/.config/sh/more") + "))",
		"blocked missing home/.bash_aliases (shell .bash_aliases)",
		"blocked missing home/.ssh (ssh .ssh/config)",
		"blocked missing home/.config/systemd (systemd .config/systemd)",
		"blocked missing home/.local/bin (shell .local/bin)",
		"blocked missing home/.local/lib (python .local/lib)",
		"blocked missing home/bin (shell bin)",
	} {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("no guard %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
	var kinds []string
	for _, p := range r.Placeholders {
		kinds = append(kinds, strings.TrimPrefix(p.Path, tr.root+"/")+" "+p.Placeholder)
	}
	for _, w := range []string{"home/.bash_aliases file", "home/.ssh dir", "home/.local/lib dir"} {
		found := false
		for _, k := range kinds {
			found = found || k == w
		}
		if !found {
			t.Errorf("no placeholder %q in %q", w, kinds)
		}
	}
}

// TestResolveLimit: the search fails closed past its bound on folders
// (a bound on memory); files do not count, however many there are.
func TestResolveLimit(t *testing.T) {
	tr := newTree(t)
	for _, d := range []string{"a", "b"} {
		for i := 0; i < 700; i++ {
			tr.mkdir(fmt.Sprintf("%s/d%d", d, i))
			tr.write(fmt.Sprintf("%s/f%d", d, i), "")
		}
	}
	in := tr.input("a", "b")
	in.MaxDirs = 500
	_, err := Resolve(in)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != 500 {
		t.Fatalf("want a LimitError at 500, got %v", err)
	}
	if !strings.Contains(err.Error(), "holds more than 500 folders") || len(le.Hints()) == 0 {
		t.Errorf("error %q, hints %q: want the bound and a hint", err, le.Hints())
	}
	in.MaxDirs = 2000
	r, err := Resolve(in)
	if err != nil {
		t.Fatalf("within the bound: %v", err)
	}
	if r.Visited != 2*1400 {
		t.Errorf("visited %d entries, want %d", r.Visited, 2*1400)
	}
}

func TestResolveOtherOS(t *testing.T) {
	tr := newTree(t)
	tr.repo("proj")
	in := tr.input("proj")
	in.GOOS = "windows"
	r, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Placeholders) != 0 {
		t.Errorf("placeholders off Linux: %v", r.Placeholders)
	}
	for _, g := range r.Guards {
		if g.Keep != plan.KeepReadOnly && g.Keep != plan.KeepNone {
			t.Errorf("%s kept as %s off Linux", g.Path, g.Keep)
		}
	}
}

func TestWords(t *testing.T) {
	cases := map[string][]string{
		`node "$CLAUDE_PROJECT_DIR"/x.js --a=b`: {"node", "$CLAUDE_PROJECT_DIR/x.js", "--a", "b"},
		`a 'b c' d\ e;f|g&&h>i`:                 {"a", "b c", "d e", "f", "g", "h", "i"},
		"[ -f ~/.a ] && . ~/.a # comment":       {"[", "-f", "~/.a", "]", ".", "~/.a", "#", "comment"},
		"":                                      nil,
	}
	for in, want := range cases {
		if diff := cmp.Diff(want, Words(in)); diff != "" {
			t.Errorf("Words(%q) (-want +got):\n%s", in, diff)
		}
	}
}

func TestExpander(t *testing.T) {
	e := Expander{Home: "/h", Vars: map[string]string{"CLAUDE_PROJECT_DIR": "/p"}, Dir: "/p"}
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"~/a", "/h/a", true},
		{"$HOME/a", "/h/a", true},
		{"${CLAUDE_PROJECT_DIR}/x/../y", "/p/y", true},
		{"./scripts/a.sh", "/p/scripts/a.sh", true},
		{"scripts/a.sh", "/p/scripts/a.sh", true},
		{"$OTHER/a", "", false},
		{"node", "", false},
		{"src/*.go", "", false},
		{"https://x/y", "", false},
	}
	for _, tc := range cases {
		got, ok := e.Path(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Path(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCommandStrings(t *testing.T) {
	strs := func(data, format string, keys ...string) []string {
		t.Helper()
		got, err := CommandStrings([]byte(data), format, keys)
		if err != nil {
			t.Fatalf("%.40q: %v", data, err)
		}
		sort.Strings(got)
		return got
	}
	got := strs(`{"hooks":{"A":[{"hooks":[{"command":"a"}]}]},"env":{"X":"not a command"},"mcpServers":{"s":{"command":"b","args":["c"]}}}`, "json", "hooks", "mcpServers")
	if diff := cmp.Diff([]string{"a", "b", "c"}, got); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}
	got = strs("notify = [\"n\"]\n[mcp_servers.x]\ncommand = \"m\"\nenv = { A = \"e\" }\n[other]\nx = \"no\"\n", "toml", "notify", "mcp_servers")
	if diff := cmp.Diff([]string{"e", "m", "n"}, got); diff != "" {
		t.Errorf("toml (-want +got):\n%s", diff)
	}
	if got := strs("{not json", "json", "hooks"); got != nil {
		t.Errorf("bad json: %q", got)
	}
	// Valid TOML too complex for agentbox to read is an error, never
	// "names nothing": codex would still run what it says.
	deep := "notify = [\"n\"]\n" + strings.Repeat("a.", 3000) + "a = 1\n"
	if got, err := CommandStrings([]byte(deep), "toml", []string{"notify"}); !errors.Is(err, errTOMLTooComplex) {
		t.Errorf("too complex: %q, %v", got, err)
	}
}

// TestResolveUnreadableControl: a control file whose references agentbox
// cannot read through (too large, TOML too complex to parse) stops the run
// naming it; one the user cannot read either names nothing a host program
// of theirs would follow. Before, each was taken for a file naming
// nothing, and what it names was left writable.
func TestResolveUnreadableControl(t *testing.T) {
	complexTOML := strings.Repeat("a.", 3000) + "a = 1\n"
	for _, tc := range []struct {
		name, rel, data string
	}{
		{"mise, too complex", "proj/.mise.toml", "[env]\n_.source = \"./env.sh\"\n" + complexTOML},
		{"bunfig, too complex", "proj/bunfig.toml", "preload = [\"./p.ts\"]\n" + complexTOML},
		{"rust-toolchain, too complex", "proj/rust-toolchain.toml", "[toolchain]\npath = \"./tc\"\n" + complexTOML},
		{"codex config, too complex", "proj/.codex/config.toml", "notify = [\"./n.sh\"]\n" + complexTOML},
		{"direnv, too large", "proj/.envrc", "source_env ./env.sh\n" + strings.Repeat("# pad\n", 200_000)},
		{"claude settings, too large", "proj/.claude/settings.json", `{"hooks":{}, "x":"` + strings.Repeat("a", 1<<20) + `"}`},
		{"git config, too large", "proj/.git/config", "[include]\n\tpath = ../inc\n" + strings.Repeat("# pad\n", 200_000)},
		{"git hook, too large", "proj/.git/hooks/pre-commit", "#!/bin/sh\n" + strings.Repeat("# pad\n", 200_000)},
		// execve refuses it (ENOEXEC) and git runs it with /bin/sh.
		{"git hook, too large, only starts like a program", "proj/.git/hooks/pre-commit", "\x7fELF\nsh scripts/lint.sh\n" + strings.Repeat("# pad\n", 200_000)},
		{"worktree's commondir, too large", "proj/.git/worktrees/w/commondir", "../..\n" + strings.Repeat("\n", 1<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			tr.repo("proj")
			tr.write(tc.rel, tc.data)
			_, err := Resolve(tr.input("proj"))
			var ce *ControlError
			if !errors.As(err, &ce) || ce.Path != tr.p(tc.rel) {
				t.Fatalf("Resolve: %v; want the run refused naming %s", err, tc.rel)
			}
			if len(ce.Error()) == 0 || len(ce.Hints()) == 0 {
				t.Error("no message or hint")
			}
		})
	}
	// A folder where a control file would be (another run's placeholder)
	// names nothing.
	{
		tr := newTree(t)
		tr.repo("proj")
		tr.mkdir("proj/.mcp.json")
		tr.mkdir("proj/.envrc")
		if _, err := Resolve(tr.input("proj")); err != nil {
			t.Errorf("a folder in a control file's place: %v", err)
		}
	}
	// A compiled hook past the limit names no script: it runs (this test's
	// own program, an ELF for this machine past 1 MiB).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile(self)
	if err != nil || len(prog) <= 1<<20 {
		t.Fatalf("the test program (%d bytes): %v", len(prog), err)
	}
	tr := newTree(t)
	tr.repo("proj")
	tr.write("proj/.git/hooks/pre-push", string(prog))
	if _, err := Resolve(tr.input("proj")); err != nil {
		t.Errorf("a large compiled hook: %v", err)
	}
	if os.Geteuid() != 0 {
		tr := newTree(t)
		tr.repo("proj")
		tr.write("proj/.envrc", "source_env ./env.sh\n")
		os.Chmod(tr.p("proj/.envrc"), 0)
		if _, err := Resolve(tr.input("proj")); err != nil {
			t.Errorf("a control file the user cannot read either: %v", err)
		}
	}
}

func TestInPackageTree(t *testing.T) {
	for rel, want := range map[string]bool{
		"node_modules/a/.git": true, "a/vendor/b": true, "src/vendored/x": false, "node_modules": true, "": false, "a/b": false,
	} {
		if got := InPackageTree(rel); got != want {
			t.Errorf("InPackageTree(%q) = %v", rel, got)
		}
	}
}

// TestResolveSavedIndex: the tree a check saved for a root is what the
// next search takes an unchanged folder's entries from (here: a tree that
// says a folder holds a .git makes the search find a repository there);
// a file that is not a tree of that root, or that someone else could
// have written, is ignored.
func TestResolveSavedIndex(t *testing.T) {
	tr := newTree(t)
	tr.mkdir("proj/a")
	tr.mkdir("state")
	os.Chmod(tr.p("state"), 0o700)
	in := tr.input("proj")
	in.Projects = nil
	in.State = tr.p("state")
	r, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	old := r.Trees[tr.p("proj")]
	old.Taken += 3600e9 // an hour later: a has not changed since
	a := old.Find("a")
	if a < 0 {
		t.Fatal("no folder a in the tree")
	}
	// Make the tree say a holds a .git (and nothing else changes).
	forged := *old
	forged.Notes = append(slices.Clone(old.Notes), 0) // gitNames[0] is .git
	forged.Dirs = slices.Clone(old.Dirs)
	forged.Dirs[a].NoteOff, forged.Dirs[a].NoteLen = uint32(len(forged.Notes)-1), 1
	write := func(data []byte, mode os.FileMode) {
		t.Helper()
		os.MkdirAll(tr.p("state/index"), 0o700)
		f := IndexFile(in.State, tr.p("proj"))
		os.Remove(f)
		if err := os.WriteFile(f, data, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(f, mode)
	}
	write(EncodeIndex(&forged), 0o600)
	r, err = Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Trees[tr.p("proj")]; got.Dirs[got.Find("a")].Flags&plan.DirListed != 0 || !got.Has(got.Find("a"), ".git") {
		t.Errorf("the saved tree was not used for the unchanged folder a: %+v", got.Dirs)
	}
	other := forged
	other.Root = tr.p("other")
	for name, data := range map[string][]byte{
		"another root": EncodeIndex(&other),
		"garbage":      []byte(indexMagic + "garbage"),
		"old form":     []byte("agentbox-index-2\n"),
		"json":         []byte("{}"),
	} {
		write(data, 0o600)
		r, err := Resolve(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Trees[tr.p("proj")]; got.Has(got.Find("a"), ".git") {
			t.Errorf("%s: a file that is not this root's tree was used", name)
		}
	}
	// A tree anybody could have written is not read.
	write(EncodeIndex(&forged), 0o666)
	if r, _ := Resolve(in); r.Trees[tr.p("proj")].Has(r.Trees[tr.p("proj")].Find("a"), ".git") {
		t.Error("a tree file writable by others was used")
	}
}

// createFS is osFS where the caller can create nothing in the folders
// listed (a repository of another user under a broad writable root).
type createFS struct {
	osFS
	denied map[string]bool
}

func (f createFS) CanCreate(dir string) bool { return !f.denied[dir] }

// A missing .git/hooks or control file in a folder the user cannot write
// is neither made nor covered by a placeholder (agentbox could not make
// either, and the run would fail): the box cannot create it either, and
// the after-run check looks there. Where the user can write, it is made.
func TestResolveNotCreatable(t *testing.T) {
	tr := newTree(t)
	tr.repo("proj")
	tr.repo("other")
	tr.repo("mine")
	os.Remove(tr.p("other/.git/hooks"))
	os.Remove(tr.p("mine/.git/hooks"))
	in := tr.input("proj", "other", "mine")
	in.Projects = []string{tr.p("proj"), tr.p("other")}
	in.FS = createFS{denied: map[string]bool{tr.p("other/.git"): true, tr.p("other"): true}}
	r, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	var created []string
	for _, d := range r.Create {
		created = append(created, strings.TrimPrefix(d, tr.root+"/"))
	}
	if diff := cmp.Diff([]string{"mine/.git/hooks"}, created); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	for _, p := range r.Placeholders {
		if strings.HasPrefix(p.Path, tr.p("other")+"/") {
			t.Errorf("a placeholder in a folder the user cannot write: %s", p.Path)
		}
	}
	got := map[string]string{}
	for _, s := range tr.guards(r) {
		got[strings.Fields(s)[2]] = s
	}
	for _, want := range []string{
		"checked missing other/.git/hooks (git hooks)",
		"checked missing other/.claude (claude .claude/settings.json)",
		"checked missing other/.vscode (vscode .vscode)",
	} {
		path := strings.Fields(want)[2]
		if got[path] != want {
			t.Errorf("guard of %s: %q, want %q", path, got[path], want)
		}
	}
	if !strings.HasPrefix(got["mine/.git/hooks"], "read-only dir mine/.git/hooks") {
		t.Errorf("mine/.git/hooks: %q, want it made and read-only", got["mine/.git/hooks"])
	}
}

// Under a broad writable root, a missing .git/hooks is made for good only
// in the project the run is for (and repositories nested in it); another
// repository gets an empty placeholder for the time of the run, which
// leaves nothing behind.
func TestResolveHooksOnlyInProject(t *testing.T) {
	tr := newTree(t)
	for _, r := range []string{"proj", "proj/nested", "other"} {
		tr.repo(r)
		os.Remove(tr.p(r + "/.git/hooks"))
	}
	in := tr.input("")
	in.Regions = []string{tr.root}
	in.Projects = nil
	in.Project = tr.p("proj")
	r, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	var created, held []string
	for _, d := range r.Create {
		created = append(created, strings.TrimPrefix(d, tr.root+"/"))
	}
	for _, p := range r.Placeholders {
		if rel := strings.TrimPrefix(p.Path, tr.root+"/"); strings.Contains(rel, ".git") {
			held = append(held, rel+" "+p.Placeholder)
		}
	}
	sort.Strings(created)
	if diff := cmp.Diff([]string{"proj/.git/hooks", "proj/nested/.git/hooks"}, created); diff != "" {
		t.Errorf("made for good (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"other/.git/hooks dir"}, held); diff != "" {
		t.Errorf("placeholders (-want +got):\n%s", diff)
	}
}

// What an .envrc names: a file it runs or reads by any name is kept; a
// folder it names (source_env .) keeps nothing as a whole, only the
// .envrc direnv would load from it.
func TestResolveDirenvNames(t *testing.T) {
	tr := newTree(t)
	tr.repo("proj")
	tr.write("proj/.envrc", "source_env .\nsource_env sub\n./scripts/dev-env.sh\nexport $(grep -v '^#' .env.shared | xargs)\ncat notes\nPATH_add bin\n")
	tr.write("proj/scripts/dev-env.sh", "")
	tr.write("proj/.env.shared", "")
	tr.write("proj/notes", "")
	tr.write("proj/sub/.envrc", "")
	tr.mkdir("proj/bin")
	tr.write("proj/unnamed.sh", "")
	r, err := Resolve(tr.input("proj"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range tr.guards(r) {
		if strings.Contains(g, "direnv") {
			got = append(got, g)
		}
	}
	rule := " (direnv (named by " + tr.p("proj/.envrc") + "))"
	want := []string{
		"path dir dir proj/bin" + rule,
		"read-only file proj/.env.shared" + rule,
		"read-only file proj/notes" + rule,
		"read-only file proj/scripts/dev-env.sh" + rule,
		"read-only file proj/sub/.envrc" + rule,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("guards (-want +got):\n%s", d)
	}
}

// An agent CLI's folder within the box's reach is an allow list: the
// folder is watched (plan.KeepAgentDir, with the provider's list), every
// entry that exists and is not on the list is kept read-only whatever its
// name, and the entries on the list get no guard.
func TestResolveAgentDir(t *testing.T) {
	tr := newTree(t)
	tr.write("home/.claude/.config.json", "{}")
	tr.write("home/.claude/local/claude", "#!/bin/sh\n")
	tr.write("home/.claude/history.jsonl", "")
	tr.mkdir("home/.claude/projects/p")
	tr.write("home/.claude/.claude.json.tmp.1.ab", "")
	tr.write("home/.codex/.env", "PATH=/x\n")
	tr.write("home/.codex/state_5.sqlite", "")
	tr.mkdir("home/.codex/sessions")
	tr.mkdir("proj")
	in := tr.input("proj", "home/.claude", "home/.codex")
	r, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]plan.Guard{}
	for _, g := range r.Guards {
		got[strings.TrimPrefix(g.Path, tr.root+"/")] = g
	}
	for rel, keep := range map[string]plan.Keep{
		"home/.claude":              plan.KeepAgentDir,
		"home/.claude/.config.json": plan.KeepReadOnly,
		"home/.claude/local":        plan.KeepReadOnly,
		"home/.codex":               plan.KeepAgentDir,
		"home/.codex/.env":          plan.KeepReadOnly,
	} {
		if g, ok := got[rel]; !ok || g.Keep != keep {
			t.Errorf("%s: want kept %q, got %+v", rel, keep, g)
		}
	}
	for _, rel := range []string{"home/.claude/history.jsonl", "home/.claude/projects", "home/.claude/.claude.json.tmp.1.ab", "home/.codex/state_5.sqlite", "home/.codex/sessions"} {
		if g, ok := got[rel]; ok {
			t.Errorf("%s is on the allow list but kept: %+v", rel, g)
		}
	}
	if g := got["home/.codex"]; !g.Allows("logs_2.sqlite") || g.Allows(".env") || g.Allows("bin") {
		t.Errorf("codex's allow list: %v", g.Allow)
	}
}
