package supervise

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
)

// events collects what a check reports.
type events struct {
	mu  sync.Mutex
	all []event.Event
}

func (e *events) Emit(ev event.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// paths are the reported paths with their action, relative to root.
func (e *events) paths(root string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.all {
		if ev.Kind == event.Quarantine {
			out = append(out, ev.Action+" "+strings.TrimPrefix(ev.Path, root+"/"))
		}
	}
	return out
}

type box struct {
	t     *testing.T
	root  string // the writable root
	out   string // outside it
	state string
}

func newBox(t *testing.T) *box {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &box{t: t, root: filepath.Join(base, "proj"), out: filepath.Join(base, "outside"), state: filepath.Join(base, "state")}
	for _, d := range []string{b.root, b.out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func (b *box) p(rel string) string { return filepath.Join(b.root, rel) }

func (b *box) write(p, content string) {
	b.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		b.t.Fatal(err)
	}
}

func (b *box) read(p string) string {
	data, _ := os.ReadFile(p)
	return string(data)
}

func (b *box) host() *plan.HostExec {
	return &plan.HostExec{Roots: []string{b.root}, Limit: 100000, State: b.state,
		Controls: []string{".claude/settings.json", ".mcp.json", ".vscode"}}
}

// gitRepo makes a repository at rel as git init would, with config.
func (b *box) gitRepo(rel, config string) string {
	g := b.p(filepath.Join(rel, ".git"))
	b.write(filepath.Join(g, "HEAD"), "ref: refs/heads/main\n")
	b.write(filepath.Join(g, "config"), config)
	b.write(filepath.Join(g, "hooks", "pre-commit.sample"), "#!/bin/sh\n")
	for _, d := range []string{"objects", "refs/heads"} {
		os.MkdirAll(filepath.Join(g, d), 0o755)
	}
	return g
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestCheckNewRepository(t *testing.T) {
	b := newBox(t)
	g := b.gitRepo("src", "[core]\n\tbare = false\n\tfsmonitor = touch /x\n[alias]\n\tst = !evil\n")
	b.write(filepath.Join(g, "hooks", "pre-commit"), "#!/bin/sh\nevil\n")
	b.write(filepath.Join(g, "hooks", "post-checkout.sample"), "") // a sample is left alone
	ev := &events{}
	check(b.host(), "run1", 0, nil, nil, ev)
	if got := b.read(filepath.Join(g, "config")); got != "[core]\n\tbare = \"false\"\n" {
		t.Errorf("config after the check: %q", got)
	}
	if exists(filepath.Join(g, "hooks", "pre-commit")) || !exists(filepath.Join(g, "hooks", "pre-commit.sample")) {
		t.Error("the hook is still there, or a sample was moved")
	}
	want := []string{"rewritten src/.git/config", "moved src/.git/hooks/pre-commit"}
	if diff := cmp.Diff(want, ev.paths(b.root)); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}
	// What was taken out is in the quarantine folder, whole.
	q := filepath.Join(b.state, "quarantine", "run1")
	entries, _ := os.ReadDir(q)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		data, _ := os.ReadFile(filepath.Join(q, e.Name()))
		if e.Name() == "001-config" && !strings.Contains(string(data), "fsmonitor") {
			t.Errorf("the box's config is not kept whole in quarantine: %q", data)
		}
	}
	if diff := cmp.Diff([]string{"001-config", "002-pre-commit"}, names); diff != "" {
		t.Errorf("quarantine (-want +got):\n%s", diff)
	}
	// A second check finds nothing more to do, and reports nothing.
	ev2 := &events{}
	check(b.host(), "run2", 0, nil, nil, ev2)
	if got := ev2.paths(b.root); len(got) != 0 {
		t.Errorf("a second check reported %v", got)
	}
}

// TestCheckWithRealGit: what real git does with a repository the box made,
// before and after the check.
func TestCheckWithRealGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	b := newBox(t)
	mark := filepath.Join(b.out, "ran")
	run := func(args ...string) {
		c := exec.Command("git", append([]string{"-C", b.p("src")}, args...)...)
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+b.out, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
		c.Run()
	}
	os.MkdirAll(b.p("src"), 0o755)
	run("init", "-q")
	run("config", "core.fsmonitor", "touch "+mark+"; false")
	run("status")
	if !exists(mark) {
		t.Fatal("git did not run core.fsmonitor: the test cannot tell anything")
	}
	os.Remove(mark)
	check(b.host(), "r", 0, nil, nil, &events{})
	run("status")
	run("commit", "-q", "--allow-empty", "-m", "x")
	if exists(mark) {
		t.Error("git ran core.fsmonitor after the check")
	}
}

func TestCheckKnownRepository(t *testing.T) {
	b := newBox(t)
	g := b.gitRepo("", "[core]\n\thooksPath = mine\n\tfsmonitor = user's own\n")
	b.write(filepath.Join(g, "hooks", "pre-commit"), "#!/bin/sh\nthe user's\n")
	h := b.host()
	h.GitDirs = []string{g}
	// Made during the run: a commondir, a worktree whose commondir points
	// at a folder of the box's, one that is right, and a new submodule.
	b.write(filepath.Join(g, "commondir"), b.p("evil")+"\n")
	b.write(filepath.Join(g, "worktrees", "bad", "commondir"), b.p("evil")+"\n")
	b.write(filepath.Join(g, "worktrees", "good", "commondir"), "../..\n")
	b.write(filepath.Join(g, "worktrees", "abs", "commondir"), g+"\n")
	b.write(filepath.Join(g, "modules", "m", "config"), "[core]\n\tpager = evil\n\tworktree = ../../../m\n")
	// A bare repository that only looks like a worktree's folder.
	fake := b.p("worktrees/x")
	b.write(filepath.Join(fake, "HEAD"), "ref: refs/heads/main\n")
	os.MkdirAll(filepath.Join(fake, "objects"), 0o755)
	os.MkdirAll(filepath.Join(fake, "refs"), 0o755)
	b.write(filepath.Join(fake, "config"), "[core]\n\tpager = evil\n")
	ev := &events{}
	check(h, "r", 0, nil, nil, ev)
	if b.read(filepath.Join(g, "config")) != "[core]\n\thooksPath = mine\n\tfsmonitor = user's own\n" || !exists(filepath.Join(g, "hooks", "pre-commit")) {
		t.Error("the user's own config or hooks were changed")
	}
	if exists(filepath.Join(g, "commondir")) {
		t.Error("a new commondir is still there")
	}
	if got := b.read(filepath.Join(g, "worktrees", "bad", "commondir")); got != "../..\n" {
		t.Errorf("the bad worktree's commondir is %q", got)
	}
	if got := b.read(filepath.Join(g, "modules", "m", "config")); got != "[core]\n\tworktree = \"../../../m\"\n" {
		t.Errorf("the new submodule's config is %q", got)
	}
	if got := b.read(filepath.Join(fake, "config")); got != "" {
		t.Errorf("the bare repository named worktrees/x keeps config %q", got)
	}
	want := []string{"moved .git/commondir", "rewritten .git/worktrees/bad/commondir", "rewritten .git/modules/m/config", "rewritten worktrees/x/config"}
	if diff := cmp.Diff(want, ev.paths(b.root)); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}
}

// TestCheckSymlinkTricks: nothing the check does follows a symlink the box
// planted; the links themselves are moved away and their targets outside
// the writable root stay as they were.
func TestCheckSymlinkTricks(t *testing.T) {
	b := newBox(t)
	victim := filepath.Join(b.out, "victim")
	b.write(victim, "[core]\n\tfsmonitor = the user's file\n")
	// A new repository whose config is a symlink to a file outside.
	g := b.gitRepo("a", "")
	os.Remove(filepath.Join(g, "config"))
	os.Symlink(victim, filepath.Join(g, "config"))
	// A new repository whose hooks folder is a symlink outside.
	g2 := b.gitRepo("b", "[core]\n\tbare = false\n")
	os.RemoveAll(filepath.Join(g2, "hooks"))
	os.Symlink(b.out, filepath.Join(g2, "hooks"))
	// A .git that is a symlink to a repository outside.
	os.MkdirAll(filepath.Join(b.out, "repo"), 0o755)
	os.MkdirAll(b.p("c"), 0o755)
	os.Symlink(filepath.Join(b.out, "repo"), b.p("c/.git"))
	// A .git file pointing outside the writable root.
	b.write(b.p("d/.git"), "gitdir: "+filepath.Join(b.out, "repo")+"\n")
	// A control file that is a symlink to a file outside.
	os.MkdirAll(b.p("e/.claude"), 0o755)
	os.Symlink(victim, b.p("e/.claude/settings.json"))
	ev := &events{}
	check(b.host(), "r", 0, nil, nil, ev)
	if got := b.read(victim); got != "[core]\n\tfsmonitor = the user's file\n" {
		t.Errorf("the file outside was changed: %q", got)
	}
	if !exists(victim) || !exists(filepath.Join(b.out, "repo")) {
		t.Error("something outside was moved")
	}
	want := []string{"moved a/.git/config", "moved b/.git/hooks", "moved c/.git", "moved d/.git", "moved e/.claude/settings.json"}
	if diff := cmp.Diff(want, ev.paths(b.root)); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}
	for _, p := range []string{"a/.git/config", "b/.git/hooks", "c/.git", "d/.git", "e/.claude/settings.json"} {
		if exists(b.p(p)) {
			t.Errorf("%s is still there", p)
		}
	}
}

// TestCheckPrecreatedNames: names the box made in advance where the check
// puts things do not stop it, and a quarantine folder it cannot trust is
// refused, the item then renamed out of git's way in place.
func TestCheckPrecreatedNames(t *testing.T) {
	b := newBox(t)
	g := b.gitRepo("", "")
	h := b.host()
	h.GitDirs = []string{g}
	b.write(filepath.Join(g, "commondir"), "evil\n")
	os.MkdirAll(filepath.Join(g, "commondir.agentbox-quarantined", "x"), 0o755)
	os.Symlink("/", filepath.Join(g, "commondir.quarantined"))
	os.MkdirAll(filepath.Join(g, ".agentbox-quarantine-"), 0o755)
	check(h, "r", 0, nil, nil, &events{})
	if exists(filepath.Join(g, "commondir")) {
		t.Fatal("commondir is still where git reads it")
	}
	// The quarantine folder itself, made by someone else: refused.
	b.write(filepath.Join(g, "commondir"), "evil\n")
	os.MkdirAll(filepath.Join(b.state, "quarantine"), 0o755)
	os.Symlink(b.out, filepath.Join(b.state, "quarantine", "r2"))
	ev := &events{}
	check(h, "r2", 0, nil, nil, ev)
	if exists(filepath.Join(g, "commondir")) {
		t.Fatal("commondir is still where git reads it")
	}
	if entries, _ := os.ReadDir(b.out); len(entries) != 0 {
		t.Errorf("the check wrote through the planted symlink: %v", entries)
	}
	if got := ev.all; len(got) != 1 || !strings.Contains(got[0].Detail, ".agentbox-quarantine-") {
		t.Errorf("want one report naming where the item was left: %+v", got)
	}
}

// TestCheckRace: a goroutine keeps swapping a folder of the tree with a
// symlink to a repository outside, whose config would be rewritten if the
// check followed it. It never is.
func TestCheckRace(t *testing.T) {
	b := newBox(t)
	outside := filepath.Join(b.out, "repo")
	cfg := "[core]\n\tfsmonitor = the user's\n"
	b.write(filepath.Join(outside, ".git", "config"), cfg)
	b.write(filepath.Join(outside, ".git", "HEAD"), "ref: refs/heads/main\n")
	b.write(filepath.Join(outside, ".git", "hooks", "pre-commit"), "the user's hook\n")
	inside := b.p("sub")
	b.gitRepo("sub", "[core]\n\tfsmonitor = box\n")
	link := b.p("link")
	os.Symlink(outside, link)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			unix.Renameat2(unix.AT_FDCWD, inside, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		check(b.host(), "race", 0, nil, nil, &events{})
	}
	stop.Store(true)
	<-done
	if got := b.read(filepath.Join(outside, ".git", "config")); got != cfg {
		t.Errorf("the config outside was rewritten: %q", got)
	}
	if !exists(filepath.Join(outside, ".git", "hooks", "pre-commit")) {
		t.Error("the hook outside was moved")
	}
}

func TestRecordRestore(t *testing.T) {
	b := newBox(t)
	b.write(b.p(".git/config"), "[core]\n\tbare = false\n")
	b.write(b.p(".git/hooks/pre-commit"), "#!/bin/sh\nmine\n")
	b.write(b.p(".git/hooks/post-commit"), "#!/bin/sh\nmine too\n")
	os.Symlink("../githooks", b.p("link"))
	h := b.host()
	h.GitDirs = []string{b.p(".git")}
	h.Guards = []plan.Guard{
		{Path: b.p(".git/config"), Rule: "git config", Kind: plan.KindFile, Keep: plan.KeepRestored},
		{Path: b.p(".git/hooks"), Rule: "git hooks", Kind: plan.KindDir, Keep: plan.KeepRestored},
		{Path: b.p("link"), Rule: "git hooks", Kind: plan.KindSymlink, Keep: plan.KeepRestored},
		{Path: b.p(".mcp.json"), Rule: "claude .mcp.json", Kind: plan.KindMissing, Keep: plan.KeepRestored},
	}
	recs, err := record(h, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The box, under Landlock: changes a file in place, replaces one,
	// removes one, adds a hook, swaps the symlink, plants .mcp.json.
	b.write(b.p(".git/config"), "[core]\n\tfsmonitor = evil\n")
	os.Remove(b.p(".git/hooks/pre-commit"))
	b.write(b.p(".git/hooks/pre-commit"), "#!/bin/sh\nevil\n")
	os.Remove(b.p(".git/hooks/post-commit"))
	b.write(b.p(".git/hooks/pre-push"), "#!/bin/sh\nevil\n")
	os.Remove(b.p("link"))
	os.MkdirAll(b.p("link"), 0o755)
	b.write(b.p(".mcp.json"), "{}")
	ev := &events{}
	check(h, "r", 0, recs, nil, ev)
	for p, want := range map[string]string{".git/config": "[core]\n\tbare = false\n", ".git/hooks/pre-commit": "#!/bin/sh\nmine\n", ".git/hooks/post-commit": "#!/bin/sh\nmine too\n"} {
		if got := b.read(b.p(p)); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
		if fi, err := os.Stat(b.p(p)); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode not put back: %v", p, fi)
		}
	}
	if t2, err := os.Readlink(b.p("link")); err != nil || t2 != "../githooks" {
		t.Errorf("the symlink was not put back: %q %v", t2, err)
	}
	if exists(b.p(".git/hooks/pre-push")) || exists(b.p(".mcp.json")) {
		t.Error("what the box added is still there")
	}
	want := []string{
		"moved .git/config", "moved .git/hooks/pre-commit", "moved .git/hooks/pre-push", "restored .git/hooks/post-commit",
		"moved link", "moved .mcp.json",
	}
	got := ev.paths(b.root)
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("not reported: %s (got %v)", w, got)
		}
	}
}

func TestPlaceholdersShared(t *testing.T) {
	b := newBox(t)
	mk := func(run string) (*pending, []hold) {
		pend, err := newPending(b.state, run, pendingRecord{Run: run})
		if err != nil {
			t.Fatal(err)
		}
		p := &plan.Plan{RunID: run, HostExec: plan.HostExec{State: b.state}, Prepare: []plan.Prepare{
			{Path: b.p(".claude"), Placeholder: "dir"},
			{Path: b.p("settings.json"), Placeholder: "file", Content: "{}\n"},
		}}
		hs, err := placeholders(p, pend)
		if err != nil {
			t.Fatal(err)
		}
		return pend, hs
	}
	p1, h1 := mk("one")
	p2, h2 := mk("two") // uses the first run's placeholders
	if len(h2) != 2 {
		t.Fatalf("the second run does not rely on the first's placeholders: %v", h2)
	}
	releasePlaceholders(h1, b.state, p1)
	p1.done()
	if !exists(b.p(".claude")) || !exists(b.p("settings.json")) {
		t.Fatal("a placeholder another run relies on was removed")
	}
	// The user writes into one of them meanwhile: it is theirs now.
	b.write(b.p("settings.json"), `{"mine":1}`)
	releasePlaceholders(h2, b.state, p2)
	p2.done()
	if exists(b.p(".claude")) {
		t.Error("the last run out left its placeholder")
	}
	if b.read(b.p("settings.json")) != `{"mine":1}` {
		t.Error("a placeholder the user wrote into was removed")
	}
}

func TestRecover(t *testing.T) {
	b := newBox(t)
	b.gitRepo("src", "[core]\n\tfsmonitor = evil\n")
	b.write(b.p(".claude/.keep"), "") // a placeholder left by the dead run
	os.Remove(b.p(".claude/.keep"))
	dir, err := pendingDir(b.state)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(pendingRecord{Run: "dead", HostExec: *b.host()})
	unix.Close(dir)
	os.WriteFile(filepath.Join(b.state, "pending", "dead.json"), rec, 0o600)
	fi, _ := os.Stat(b.p(".claude"))
	st := fi.Sys().(*syscall.Stat_t)
	hs, _ := json.Marshal([]hold{{Path: b.p(".claude"), Kind: "dir", Dev: st.Dev, Ino: st.Ino}})
	os.WriteFile(filepath.Join(b.state, "pending", "dead.holds"), hs, 0o600)
	// A live run's record is left alone.
	live, err := newPending(b.state, "live", pendingRecord{Run: "live"})
	if err != nil {
		t.Fatal(err)
	}
	defer live.done()
	ev := &events{}
	Recover(b.state, ev)
	if strings.Contains(b.read(b.p("src/.git/config")), "fsmonitor") {
		t.Error("the dead run's check was not done")
	}
	if exists(b.p(".claude")) {
		t.Error("the dead run's placeholder is still there")
	}
	if exists(filepath.Join(b.state, "pending", "dead.json")) || !exists(filepath.Join(b.state, "pending", "live.json")) {
		t.Error("wrong records removed")
	}
}

// TestRecordAdopted: a run that starts while another run's box may have
// changed a guard takes that run's record (from before its box ran), so
// neither puts back what the other box wrote.
func TestRecordAdopted(t *testing.T) {
	b := newBox(t)
	b.write(b.p(".claude/settings.json"), "clean\n")
	h := b.host()
	h.Guards = []plan.Guard{{Path: b.p(".claude/settings.json"), Rule: "claude settings", Kind: plan.KindFile, Keep: plan.KeepRestored}}
	first, err := newPending(b.state, "first", pendingRecord{Run: "first"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := record(h, liveRecords(first), nil)
	if err != nil {
		t.Fatal(err)
	}
	first.write(pendingRecord{Run: "first", HostExec: *h, Records: recs})
	b.write(b.p(".claude/settings.json"), "evil\n") // the first run's box
	second, err := newPending(b.state, "second", pendingRecord{Run: "second"})
	if err != nil {
		t.Fatal(err)
	}
	recs2, err := record(h, liveRecords(second), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The first run ends and puts back its record; the second's box writes
	// again; the second run ends.
	check(h, "first", 0, recs, nil, &events{})
	first.done()
	b.write(b.p(".claude/settings.json"), "evil again\n")
	check(h, "second", 0, recs2, nil, &events{})
	second.done()
	if got := b.read(b.p(".claude/settings.json")); got != "clean\n" {
		t.Errorf("after both runs: %q", got)
	}
}

// TestCheckOutsideLinks: a symlink the box left that leads into a folder it
// writes outside the roots (its /tmp) is moved away; others stay.
func TestCheckOutsideLinks(t *testing.T) {
	b := newBox(t)
	tmp := filepath.Join(b.out, "tmp")
	os.MkdirAll(filepath.Join(tmp, "evil"), 0o755)
	os.MkdirAll(b.p("sub"), 0o755)
	os.Symlink(filepath.Join(tmp, "evil"), b.p("abs"))
	os.Symlink("../../outside/tmp/evil", b.p("sub/rel"))
	os.Symlink("/usr/bin", b.p("fine"))
	os.Symlink("sub", b.p("inside"))
	h := b.host()
	h.Outside = []string{tmp}
	ev := &events{}
	check(h, "r", 0, nil, nil, ev)
	want := []string{"moved abs", "moved sub/rel"}
	if diff := cmp.Diff(want, ev.paths(b.root)); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}
	if !exists(b.p("fine")) || !exists(b.p("inside")) || !exists(filepath.Join(tmp, "evil")) {
		t.Error("a symlink that leads elsewhere, or the folder outside, was moved")
	}
}

// TestCheckSavesIndex: the check leaves the index of what it saw for the
// next run's search, in the state folder.
func TestCheckSavesIndex(t *testing.T) {
	b := newBox(t)
	os.MkdirAll(b.p("a/b"), 0o755)
	check(b.host(), "r", 0, nil, nil, &events{})
	data, err := os.ReadFile(hostexec.IndexFile(b.state, b.root))
	if err != nil {
		t.Fatal(err)
	}
	idx := hostexec.DecodeIndex(data, b.root)
	if idx == nil || len(idx.Dirs) != 3 {
		t.Fatalf("index: %+v", idx)
	}
}

// TestCheckPanicFailsClosed: a step of the check that panics on what it
// reads ends in a check that did not finish, naming the path it was
// reading, never in a crash or an unchecked run.
func TestCheckPanicFailsClosed(t *testing.T) {
	b := newBox(t)
	checkHook = func(c *checker) {
		c.current = b.p("crafted")
		var s []byte
		_ = s[:len(c.h.Roots)+5] // what a reader's bug does
	}
	defer func() { checkHook = nil }()
	err := check(b.host(), "r", 0, nil, nil, &events{})
	var ce *CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("a panicking check returned %v, not a check that did not finish", err)
	}
	if !strings.Contains(err.Error(), b.p("crafted")) || !strings.Contains(err.Error(), "slice bounds") {
		t.Errorf("the error does not name the path and the cause: %v", err)
	}
}

// TestPendingRecordWhole: the record is replaced whole (the old version
// stays whole until the new one is on disk), and Recover stops at a record
// that cannot be read, leaving it in place.
func TestPendingRecordWhole(t *testing.T) {
	b := newBox(t)
	p, err := newPending(b.state, "one", pendingRecord{Run: "one", HostExec: *b.host()})
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(b.state, "pending", "one.json")
	first, _ := os.ReadFile(rec)
	var r pendingRecord
	if json.Unmarshal(first, &r) != nil || r.Run != "one" {
		t.Fatalf("the first record is not whole: %q", first)
	}
	if err := p.write(pendingRecord{Run: "one", HostExec: *b.host(), Started: 42}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(rec)
	if json.Unmarshal(data, &r) != nil || r.Started != 42 {
		t.Fatalf("the second record is not whole: %q", data)
	}
	names, _ := os.ReadDir(filepath.Join(b.state, "pending"))
	for _, n := range names {
		if strings.HasPrefix(n.Name(), ".agentbox-new-") {
			t.Errorf("a temporary file is left: %s", n.Name())
		}
	}
	p.leave() // as agentbox killed: the lock goes with the process
	os.WriteFile(rec, data[:len(data)/2], 0o600)
	err = Recover(b.state, &events{})
	if err == nil || !strings.Contains(err.Error(), rec) {
		t.Fatalf("Recover past a cut-short record: %v", err)
	}
	if _, err := os.Stat(rec); err != nil {
		t.Errorf("the unreadable record was removed: %v", err)
	}
}

// TestFinishedMeanwhile: a run that removed its record between Recover's
// listing and the taking of its lock finished with its check done; Recover
// neither refuses the next run nor leaves a lock of its own making behind.
// A record still there is a run to check.
func TestFinishedMeanwhile(t *testing.T) {
	b := newBox(t)
	p, err := newPending(b.state, "two", pendingRecord{Run: "two", HostExec: *b.host()})
	if err != nil {
		t.Fatal(err)
	}
	p.leave()
	dir := filepath.Join(b.state, "pending")
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	open := func() int {
		fd, err := unix.Openat(dfd, "two.lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	fd := open()
	if finishedMeanwhile(dfd, fd, "two") {
		t.Fatal("a run whose record is there was taken for finished")
	}
	unix.Close(fd)
	// The run finishes: record first, then lock; Recover opens the lock
	// anew (O_CREAT) just after.
	os.Remove(filepath.Join(dir, "two.json"))
	os.Remove(filepath.Join(dir, "two.lock"))
	fd = open()
	if !finishedMeanwhile(dfd, fd, "two") {
		t.Fatal("a finished run was not taken for finished")
	}
	if _, err := os.Stat(filepath.Join(dir, "two.lock")); !os.IsNotExist(err) {
		t.Errorf("the lock Recover made is left: %v", err)
	}
	if err := Recover(b.state, &events{}); err != nil {
		t.Errorf("Recover after a run finished: %v", err)
	}
}

// The box's process group is recorded in the run's lock, which the run
// holds; a killed run's recovery reads it there, or from <run>.pgrp as
// earlier versions wrote it, and never reads a number that is not one.
func TestPendingProcessGroup(t *testing.T) {
	b := newBox(t)
	pend, err := newPending(b.state, "run", pendingRecord{Run: "run"})
	if err != nil {
		t.Fatal(err)
	}
	defer pend.done()
	pend.pgrp(123456)
	pend.pgrp(0) // the end of the box: nothing to record
	if exists(filepath.Join(b.state, "pending", "run.pgrp")) {
		t.Error("a file of its own was made for the process group")
	}
	if got := recordedPgrp(pend.dir, pend.fd, "run"); got != 123456 {
		t.Errorf("from the lock: %d, want 123456", got)
	}
	pend.pgrp(99)
	if got := recordedPgrp(pend.dir, pend.fd, "run"); got != 99 {
		t.Errorf("recorded again: %d, want 99", got)
	}
	for _, c := range []struct {
		file string
		want int
	}{{"4242\n", 4242}, {"", 99}, {"x", 0}, {"-3", 0}} {
		f := filepath.Join(b.state, "pending", "run.pgrp")
		if c.file == "" {
			os.Remove(f)
		} else if err := os.WriteFile(f, []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := recordedPgrp(pend.dir, pend.fd, "run"); got != c.want {
			t.Errorf("with run.pgrp %q: %d, want %d", c.file, got, c.want)
		}
	}
	empty, err := newPending(b.state, "empty", pendingRecord{Run: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.done()
	if got := recordedPgrp(empty.dir, empty.fd, "empty"); got != 0 {
		t.Errorf("before the box started: %d, want 0", got)
	}
}

// A run writes its pending record once, before its box starts, not a
// first time before its placeholders are made: killed in between, it
// leaves a lock without a record, and the next run's recovery releases
// its placeholders and removes the lock, with no check (no box ran) and
// no refusal. Once saved, the record is whole on disk before the box.
func TestPendingRecordBeforeBox(t *testing.T) {
	b := newBox(t)
	h := b.host()
	p := &plan.Plan{RunID: "killed", HostExec: *h, Prepare: []plan.Prepare{
		{Path: b.p(".claude"), Placeholder: "dir"},
		{Path: b.p(".mcp.json"), Placeholder: "file", Content: "{}\n"},
	}}
	g, err := startGuard(p, &events{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(b.state, "pending")
	if exists(filepath.Join(dir, "killed.json")) {
		t.Error("a record was written before the run knew what its check needs")
	}
	if !exists(filepath.Join(dir, "killed.lock")) || !exists(filepath.Join(dir, "killed.holds")) || !exists(b.p(".claude")) {
		t.Fatal("the lock, the placeholders or their record are missing")
	}
	// agentbox is killed here: its descriptors close, its lock goes.
	g.pend.leave()
	if err := Recover(b.state, &events{}); err != nil {
		t.Fatalf("the next run refused to start: %v", err)
	}
	for _, f := range []string{b.p(".claude"), b.p(".mcp.json"), filepath.Join(dir, "killed.lock"), filepath.Join(dir, "killed.holds")} {
		if exists(f) {
			t.Errorf("%s is left after the recovery", f)
		}
	}

	p.RunID = "saved"
	g, err = startGuard(p, &events{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.release()
	if err := g.saveRecord(nil); err != nil {
		t.Fatal(err)
	}
	var r pendingRecord
	data, err := os.ReadFile(filepath.Join(dir, "saved.json"))
	if err != nil || json.Unmarshal(data, &r) != nil || r.Run != "saved" || len(r.HostExec.Roots) != 1 || r.Started == 0 {
		t.Fatalf("the saved record is not whole: %v %q", err, data)
	}
}

// The check does not write the search's index again when it differs from
// the file there only where this run's placeholders moved it (the root's
// change time, the placeholder folders made anew): their removal moves
// those again. Anything else changed, and it is written.
func TestCheckIndexPlaceholdersOnly(t *testing.T) {
	b := newBox(t)
	os.MkdirAll(b.p("a/b"), 0o755)
	h := b.host()
	p := &plan.Plan{HostExec: *h, Prepare: []plan.Prepare{
		{Path: b.p(".vscode"), Placeholder: "dir"},
		{Path: b.p(".mcp.json"), Placeholder: "file", Content: "{}\n"},
	}}
	index := hostexec.IndexFile(b.state, b.root)
	run := func(id string, during func()) unix.Stat_t {
		t.Helper()
		p.RunID = id
		g, err := startGuard(p, &events{})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.saveRecord(nil); err != nil {
			t.Fatal(err)
		}
		if during != nil {
			during()
		}
		if err := g.check(); err != nil {
			t.Fatal(err)
		}
		g.release()
		var st unix.Stat_t
		if err := unix.Stat(index, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	first := run("one", nil)
	time.Sleep(20 * time.Millisecond) // a change time the file system can tell apart
	if second := run("two", nil); second.Ino != first.Ino {
		t.Error("the index was written again although only the placeholders moved the root")
	}
	time.Sleep(20 * time.Millisecond)
	third := run("three", func() { os.Mkdir(b.p("a/new"), 0o755) })
	if third.Ino == first.Ino {
		t.Error("the index was not written although a folder changed")
	}
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if tr := hostexec.DecodeIndex(data, b.root); tr == nil || tr.Find("a/new") < 0 {
		t.Error("the index written does not hold the new folder")
	}
}
