package winsandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/agentbox/agentbox/plan"
)

// TestWindowsGitPlaceholders: the missing commondir and config.worktree
// are made with their content before the run and removed after it when
// unchanged; one written from outside the box during the run stays (the
// after-run check moves it away); a file that appeared since the plan was
// made is left alone; a folder where the file goes fails the run.
func TestWindowsGitPlaceholders(t *testing.T) {
	recordHome(t)
	git := filepath.Join(tempDir(t), ".git")
	if err := os.Mkdir(git, 0o755); err != nil {
		t.Fatal(err)
	}
	cd, cw := filepath.Join(git, "commondir"), filepath.Join(git, "config.worktree")
	files := []GitPlaceholder{{Path: cd, Content: ".\n", Rule: "git commondir"}, {Path: cw, Rule: "git config.worktree"}}
	made, err := holdPlaceholders(nil, files, nil, testGroup)
	if err != nil || len(made) != 2 {
		t.Fatalf("holdPlaceholders = %v, %v", made, err)
	}
	if data, err := os.ReadFile(cd); err != nil || string(data) != ".\n" {
		t.Errorf("commondir holds %q, %v; want \".\\n\"", data, err)
	}
	if err := os.WriteFile(cw, []byte("[core]\n\tfsmonitor = evil.exe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	releasePlaceholders(made, testGroup)
	if _, err := os.Lstat(cd); !os.IsNotExist(err) {
		t.Errorf("the unchanged commondir placeholder is still there: %v", err)
	}
	if _, err := os.Lstat(cw); err != nil {
		t.Errorf("a changed placeholder was removed (the after-run check must see it): %v", err)
	}
	// config.worktree exists now: left alone, not made, not removed.
	made, err = holdPlaceholders(nil, files, nil, testGroup)
	if err != nil || len(made) != 1 || made[0].Path != cd {
		t.Fatalf("holdPlaceholders with config.worktree there = %v, %v; want commondir alone", made, err)
	}
	releasePlaceholders(made, testGroup)
	if _, err := os.Lstat(cw); err != nil {
		t.Errorf("a config.worktree agentbox did not make was removed: %v", err)
	}
	if err := os.Mkdir(cd, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := holdPlaceholders(nil, files[:1], nil, testGroup); err == nil {
		t.Error("a folder where commondir goes did not fail the run")
	}
}

// TestWindowsGitPlaceholderHolds: with the run's ACEs in place (the
// root's modify grant for its capability SID, the placeholder's deny-write
// ACE), a token made the way the runner makes the command's cannot write
// the placeholder commondir, remove it, rename it away, or replace it by
// renaming a file of its own over it, while it still writes beside it
// in the git folder (git's own files). Here the deny names this user, whose
// restricted token the test impersonates; a run names the sandbox group.
func TestWindowsGitPlaceholderHolds(t *testing.T) {
	enforcing(t)
	recordHome(t)
	root := tempDir(t)
	git := filepath.Join(root, ".git")
	if err := os.Mkdir(git, 0o755); err != nil {
		t.Fatal(err)
	}
	cd := filepath.Join(git, "commondir")
	made, err := holdPlaceholders(nil, []GitPlaceholder{{Path: cd, Content: ".\n", Rule: "git commondir"}}, nil, testGroup)
	if err != nil || len(made) != 1 {
		t.Fatalf("holdPlaceholders = %v, %v", made, err)
	}
	capSID := CapabilitySID(root)
	me := selfSID(t)
	rec := &aclRecord{}
	rec.begin([]recACE{
		{Path: root, SID: capSID, Mask: FileRights(RightsModify), Inherit: true},
		{Path: cd, SID: me, Deny: true, Mask: FileRights(RightsWrite)},
	}, "test", self())
	for _, p := range []string{root, cd} {
		if err := syncPath(rec, p, "S-1-5-21-1-2-3-4242"); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		rec.begin(nil, "test", self())
		syncPath(rec, cd, "S-1-5-21-1-2-3-4242")
		releasePlaceholders(made, testGroup)
	}()
	tok, err := restrictedToken([]string{capSID})
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	var imp windows.Token
	if err := windows.DuplicateTokenEx(tok, windows.TOKEN_IMPERSONATE|windows.TOKEN_QUERY, nil, windows.SecurityImpersonation, windows.TokenImpersonation, &imp); err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	as := func(f func() error) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := windows.SetThreadToken(nil, imp); err != nil {
			return fmt.Errorf("SetThreadToken: %w", err)
		}
		defer windows.RevertToSelf()
		return f()
	}
	denied := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, windows.ERROR_ACCESS_DENIED) && !errors.Is(err, os.ErrPermission) {
			t.Errorf("%s: %v, want access denied", what, err)
		}
	}
	evil := filepath.Join(git, "evil")
	if err := as(func() error { return os.WriteFile(evil, []byte("C:/Users/attacker/repo/.git\n"), 0o644) }); err != nil {
		t.Fatalf("writing a file of git's own beside the placeholder: %v", err)
	}
	denied("writing commondir", as(func() error { return os.WriteFile(cd, []byte("C:/elsewhere\n"), 0o644) }))
	denied("removing commondir", as(func() error { return os.Remove(cd) }))
	denied("renaming commondir away", as(func() error { return os.Rename(cd, filepath.Join(git, "old")) }))
	denied("renaming a file over commondir", as(func() error { return os.Rename(evil, cd) }))
	if data, err := os.ReadFile(cd); err != nil || string(data) != ".\n" {
		t.Errorf("commondir holds %q, %v after the attempts; want \".\\n\"", data, err)
	}
}

// TestWindowsRunGitPlaceholders runs a plan whose project has a git folder
// through the whole run path under Wine: the command finds commondir
// (holding ".") and config.worktree there while it runs, and neither is
// there after the run. (That the box cannot change them is
// TestWindowsGitPlaceholderHolds, on real Windows.)
func TestWindowsRunGitPlaceholders(t *testing.T) {
	me := wineSetup(t)
	w := New()
	project := tempDir(t)
	git := filepath.Join(project, ".git")
	if err := os.Mkdir(git, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(tempDir(t), "agentbox-"+me)
	p := winePlan(project, tmp, "RUN", plan.Network{Mode: plan.NetOpen}, "cmd", "/d", "/c",
		`type .git\commondir & if exist .git\config.worktree echo worktree-config-there`)
	p.HostExec.GitDirs = []string{git}
	if err := w.Complete(p); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	code, out, err := wineRun(w, p)
	if err != nil || code != 0 || !strings.Contains(out, ".") || !strings.Contains(out, "worktree-config-there") {
		t.Errorf("run: status %d, output %q, error %v; want commondir's \".\" and config.worktree there during the run", code, out, err)
	}
	for _, name := range []string{"commondir", "config.worktree"} {
		if _, err := os.Lstat(filepath.Join(git, name)); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the run: %v", name, err)
		}
	}
}
