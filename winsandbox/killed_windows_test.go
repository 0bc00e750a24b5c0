package winsandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/windows"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/supervise"
)

// killedRunPlan resolves a plan for command in proj by real Windows
// resolution (the registry included), completed by the Windows backend.
func killedRunPlan(t *testing.T, home, proj, tmp, run string, command ...string) *plan.Plan {
	t.Helper()
	me, _ := currentUserSID()
	env := policy.Env{
		GOOS: "windows", UID: -1, GID: -1, User: me, Home: home, Cwd: proj, TempDir: tmp,
		Environ: append(os.Environ(), "USERPROFILE="+home),
		FS:      policy.OSFS{},
	}
	layers, err := policy.Load(env, policy.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Resolve(layers, env, command, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.RunID = run
	w := &Windows{Facts: func(q *plan.Plan) Options {
		o := machineFacts(q)
		o.TempDir, o.User = tmp, me
		return o
	}}
	if err := w.Complete(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWindowsKilledRunPlaceholders: agentbox running a box is killed
// (TerminateProcess, as kill -9) while its placeholders (control folders,
// git files) are in place; then, as `agentbox run` does, the leftovers are taken care of
// before the killed run's after-run check and the next plan. Before, the
// check moved agentbox's own .vscode, .claude, commondir and
// config.worktree to quarantine as files the box had planted (and a plan made before it took them for
// the user's: no placeholder of its own there, and the file stayed for
// good). Now the very placeholder the killed run made and recorded is
// removed, and a file of the same name and content that is not that file
// (here config.worktree, replaced by another empty file, as the box could
// where nothing kept it) is left to the check, which moves it away. The
// next run makes its own placeholders and removes them.
func TestWindowsKilledRunPlaceholders(t *testing.T) {
	base, home, proj, tmp := wineRepo(t)
	commondir, worktree := filepath.Join(proj, ".git", "commondir"), filepath.Join(proj, ".git", "config.worktree")

	// Run 1, in a process of its own, killed once its placeholders are
	// there.
	p1 := killedRunPlan(t, home, proj, tmp, "RUN1", "cmd", "/d", "/c", "ping -n 120 127.0.0.1 >nul")
	var controls []string
	if s, err := SpecOf(p1); err == nil {
		controls = s.Placeholders
	}
	if len(controls) == 0 {
		t.Fatal("the plan makes no control folder placeholder")
	}
	child, childOut := startPlanChild(t, base, "1", p1)
	// The record names the placeholders once they are made; the command
	// starts after that.
	recPath, user, _ := aclRecordFile()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		rec := &aclRecord{}
		if peekRecord(recPath, user, rec) == nil && len(rec.Placeholders) == 2+len(controls) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	childPID := uint32(child.Process.Pid)
	child.Process.Kill()
	child.Wait()
	// Windows ends the run's processes with the job when agentbox dies;
	// Wine does not, and nothing this test starts may outlive it.
	killDescendants(childPID)
	for _, f := range append([]string{commondir, worktree}, controls...) {
		if _, err := os.Lstat(f); err != nil {
			b, _ := os.ReadFile(childOut)
			t.Fatalf("the killed run left no placeholder %s: %v (its output: %q)", f, err, b)
		}
	}
	// Another empty config.worktree in place of agentbox's: same name,
	// same content, another file.
	replaceWithLookalike(t, worktree)

	if err := RemoveLeftoverPlaceholders(); err != nil {
		t.Fatalf("RemoveLeftoverPlaceholders: %v", err)
	}
	for _, f := range append([]string{commondir}, controls...) {
		if _, err := os.Lstat(f); !os.IsNotExist(err) {
			t.Errorf("the killed run's own placeholder %s is still there: %v", f, err)
		}
	}
	if _, err := os.Lstat(worktree); err != nil {
		t.Errorf("a config.worktree that is not agentbox's placeholder was removed: %v", err)
	}
	noPlaceholdersLeft(t, "after the cleanup")

	// The next run: the killed run's check, then its own placeholders.
	p2 := killedRunPlan(t, home, proj, tmp, "RUN2", "cmd", "/d", "/c", `type .git\commondir`)
	var ev evlog
	outR, outW, _ := os.Pipe()
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(outR); got <- string(b) }()
	code, err := supervise.Run(New(), p2, backend.Context{Stdin: nil, Stdout: outW, Stderr: outW, Events: &ev})
	outW.Close()
	out := <-got
	if err != nil || code != 0 || !strings.Contains(out, ".") {
		t.Errorf("the next run: status %d, output %q, error %v; want commondir's \".\" (its own placeholder)", code, out, err)
	}
	movedWorktree := false
	for _, e := range ev.all {
		if e.Kind != event.Quarantine {
			continue
		}
		if strings.HasSuffix(e.Path, "config.worktree") {
			movedWorktree = true
		} else {
			t.Errorf("agentbox's own placeholder %s of the killed run was reported as planted by the box: %s", e.Path, e.Detail)
		}
	}
	if !movedWorktree {
		t.Error("the config.worktree that is not agentbox's was not moved away by the killed run's check")
	}
	for _, f := range []string{commondir, worktree} {
		if _, err := os.Lstat(f); !os.IsNotExist(err) {
			t.Errorf("%s is there after the next run: %v", f, err)
		}
	}
}

// TestWindowsLeftoverPlaceholderReused: a run whose plan took a killed
// run's placeholder for a file that exists (planned before the leftovers
// were removed) takes it over instead: it stays for the run, and goes
// after it. A recorded placeholder that is another file now is forgotten
// and left where it is.
func TestWindowsLeftoverPlaceholderReused(t *testing.T) {
	_, git := gitProject(t)
	ours, theirs := filepath.Join(git, "commondir"), filepath.Join(git, "config.worktree")
	killed := aclHolder{PID: uint32(os.Getpid()), Started: 1}
	var recorded []recPlaceholder
	for _, g := range []GitPlaceholder{{Path: ours, Content: ".\n"}, {Path: theirs}} {
		id, made, err := makeGitPlaceholder(g)
		if err != nil || !made {
			t.Fatal(made, err)
		}
		recorded = append(recorded, recPlaceholder{Path: g.Path, Content: g.Content, Volume: id.VolumeSerialNumber, FileID: uint64(id.FileIndexHigh)<<32 | uint64(id.FileIndexLow), Holder: killed})
	}
	recPath, user, _ := aclRecordFile()
	if err := withRecord(recPath, user, testGroup, true, func(rec *aclRecord, _ func() error) error {
		rec.Placeholders = recorded
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// config.worktree replaced by another file of the same content.
	replaceWithLookalike(t, theirs)
	held, err := holdPlaceholders(nil, nil, nil, testGroup)
	if err != nil || len(held) != 1 || held[0].Path != ours {
		t.Fatalf("holdPlaceholders = %+v, %v; want the killed run's commondir taken over", held, err)
	}
	if _, err := os.Lstat(ours); err != nil {
		t.Errorf("the taken-over placeholder is gone during the run: %v", err)
	}
	releasePlaceholders(held, testGroup)
	if _, err := os.Lstat(ours); !os.IsNotExist(err) {
		t.Errorf("the taken-over placeholder is still there after the run: %v", err)
	}
	if _, err := os.Lstat(theirs); err != nil {
		t.Errorf("a config.worktree that is not agentbox's was removed: %v", err)
	}
	noPlaceholdersLeft(t, "after the run")
}

// TestWindowsPlaceholderSharedByTwoRuns: two runs of one workspace at
// once. Run A makes the placeholders (a .vscode folder, a commondir);
// run B, planned while they were there, took them for what exists (a
// deny ACE on each, no placeholder of its own) and relies on them. A ends
// first: before, A's end removed them while B's box still ran, and B's
// box (whose root grant lets it create there) could create .vscode or
// .git\commondir for host programs to obey during its run. Now B holds
// them too: they stay while B runs, also when A was killed and a third
// run cleans up after it, and go when B ends. Run A is stood for by a
// live process of its own (a sleeping ping), so that B sees it alive.
func TestWindowsPlaceholderSharedByTwoRuns(t *testing.T) {
	proj, git := gitProject(t)
	vscode, commondir := filepath.Join(proj, ".vscode"), filepath.Join(git, "commondir")
	sleeper := exec.Command("ping", "-n", "120", "127.0.0.1")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	runA := holderOf(t, uint32(sleeper.Process.Pid))
	orig := self
	asA := func(f func()) {
		self = func() aclHolder { return runA }
		defer func() { self = orig }()
		f()
	}

	var heldA []recPlaceholder
	var err error
	asA(func() {
		heldA, err = holdPlaceholders([]string{vscode}, []GitPlaceholder{{Path: commondir, Content: ".\n"}}, nil, testGroup)
	})
	if err != nil || len(heldA) != 2 {
		t.Fatalf("run A: holdPlaceholders = %+v, %v", heldA, err)
	}
	// A run of another workspace does not hold them.
	if held, err := holdPlaceholders(nil, nil, []string{filepath.Join(proj, "elsewhere")}, testGroup); err != nil || len(held) != 0 {
		t.Errorf("a run of another workspace holds %+v (%v); want none", held, err)
	}
	// Run B planned both as there: no placeholder of its own.
	heldB, err := holdPlaceholders(nil, nil, []string{proj}, testGroup)
	if err != nil {
		t.Fatal(err)
	}
	there := func(when string) {
		t.Helper()
		for _, p := range []string{vscode, commondir} {
			if _, err := os.Lstat(p); err != nil {
				t.Errorf("%s: the placeholder %s run B relies on is gone: %v", when, p, err)
			}
		}
	}
	asA(func() { releasePlaceholders(heldA, testGroup) })
	there("run A ended while run B runs")

	// Run A again, killed this time; a third run cleans up after it
	// while B still runs.
	asA(func() { heldA, err = holdPlaceholders(nil, nil, []string{proj}, testGroup) })
	if err != nil {
		t.Fatal(err)
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	if err := removeLeftoverPlaceholders(testGroup); err != nil {
		t.Fatal(err)
	}
	there("run A was killed and a third run cleaned up while run B runs")

	releasePlaceholders(heldB, testGroup)
	for _, p := range []string{vscode, commondir} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is there after the last run holding it ended: %v", p, err)
		}
	}
	noPlaceholdersLeft(t, "after both runs")
}

// TestWindowsUninstallMidRun: `setup --uninstall` while a run is live,
// and a record naming what is not the user's.
// Before, it removed every recorded placeholder first, the live run's
// included, before any grant: between the two, that run's box, its root
// grant still in place, could create the .vscode or .git\commondir the
// placeholder kept (and a failed grant removal left it so). Now a
// placeholder a live run holds is that run's to remove when it ends, and
// a killed run's goes after the grants.
func TestWindowsUninstallMidRun(t *testing.T) {
	proj, git := gitProject(t)
	live, killed := filepath.Join(proj, ".vscode"), filepath.Join(git, "commondir")
	held, err := holdPlaceholders([]string{live}, nil, nil, testGroup)
	if err != nil || len(held) != 1 {
		t.Fatalf("holdPlaceholders = %+v, %v", held, err)
	}
	id, made, err := makeGitPlaceholder(GitPlaceholder{Path: killed, Content: ".\n"})
	if err != nil || !made {
		t.Fatal(made, err)
	}
	recPath, user, _ := aclRecordFile()
	if err := withRecord(recPath, user, testGroup, true, func(rec *aclRecord, _ func() error) error {
		rec.Placeholders = append(rec.Placeholders, recPlaceholder{Path: killed, Content: ".\n", Volume: id.VolumeSerialNumber,
			FileID: uint64(id.FileIndexHigh)<<32 | uint64(id.FileIndexLow), Holder: aclHolder{PID: uint32(os.Getpid()), Started: 1}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A record is its user's to write: another user's record naming a
	// small file that user does not own (here this user's), with its
	// identity and content, as a killed run's placeholder must not make
	// the elevated uninstall delete it. (That record is taken for its
	// user's own here: its owner cannot be another user's under Wine,
	// nor set to one on Windows without privileges.)
	notTheirs := filepath.Join(proj, "not-theirs")
	nid, made, err := makeGitPlaceholder(GitPlaceholder{Path: notTheirs, Content: "x"})
	if err != nil || !made {
		t.Fatal(made, err)
	}
	const otherUser = "S-1-5-21-7-7-7-1007"
	recordTrustProblem = func(fileTrust, string) string { return "" }
	t.Cleanup(func() { recordTrustProblem = trustProblem })
	other := filepath.Join(filepath.Dir(recPath), otherUser+".json")
	if err := writeRecord(other, user, &aclRecord{Version: aclRecordVersion, Placeholders: []recPlaceholder{{Path: notTheirs, Content: "x",
		Volume: nid.VolumeSerialNumber, FileID: uint64(nid.FileIndexHigh)<<32 | uint64(nid.FileIndexLow), Holder: aclHolder{PID: uint32(os.Getpid()), Started: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if err := removeAllACEs(testGroup); err != nil {
		t.Fatalf("removeAllACEs: %v", err)
	}
	if _, err := os.Lstat(notTheirs); err != nil {
		t.Errorf("uninstall removed a file another user's record named, not that user's: %v", err)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("uninstall removed the placeholder of a live run: %v", err)
	}
	if _, err := os.Lstat(killed); !os.IsNotExist(err) {
		t.Errorf("uninstall left a killed run's placeholder: %v", err)
	}
	// The live run ends: its own knowledge of what it made decides (the
	// record is gone).
	releasePlaceholders(held, testGroup)
	if _, err := os.Lstat(live); !os.IsNotExist(err) {
		t.Errorf("the live run's placeholder is there after it ended: %v", err)
	}
}

// TestWindowsKeptFolderGoneBeforeTheRun: the plan of run B found a
// .vscode (run A's placeholder) and kept it as what exists, with a deny
// ACE; run A ended between B's plan and its start and removed it. Before,
// B's deny ACE on a missing path was skipped ("nothing there to deny")
// and B's box, its root grant in place, could create .vscode for the
// host's editor to obey during the run. Now B makes a placeholder of its
// own there, removed after it.
func TestWindowsKeptFolderGoneBeforeTheRun(t *testing.T) {
	_, home, proj, tmp := wineRepo(t)
	vscode := filepath.Join(proj, ".vscode")
	if err := os.Mkdir(vscode, 0o755); err != nil {
		t.Fatal(err)
	}
	p := killedRunPlan(t, home, proj, tmp, "RUNB", "cmd", "/d", "/c", "if exist .vscode (echo THERE) else (echo GONE)")
	s, err := SpecOf(p)
	if err != nil {
		t.Fatal(err)
	}
	if dirs, _ := keptExisting(s); !slices.ContainsFunc(dirs, func(d string) bool { return strings.EqualFold(d, vscode) }) {
		t.Fatalf("the plan does not keep the existing %s by a deny ACE (kept: %v)", vscode, dirs)
	}
	// Run A ends: its placeholder goes.
	if err := os.Remove(vscode); err != nil {
		t.Fatal(err)
	}
	outR, outW, _ := os.Pipe()
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(outR); got <- string(b) }()
	code, err := supervise.Run(New(), p, backend.Context{Stdin: nil, Stdout: outW, Stderr: outW, Events: &evlog{}})
	outW.Close()
	out := <-got
	if err != nil || code != 0 || !strings.Contains(out, "THERE") {
		t.Errorf("the run: status %d, output %q, error %v; want .vscode there during the run (a placeholder)", code, out, err)
	}
	if _, err := os.Lstat(vscode); !os.IsNotExist(err) {
		t.Errorf("%s is there after the run: %v", vscode, err)
	}
}

// TestWindowsTwoRunsOneEnds: two runs of one workspace through the whole
// run path. Run A makes the placeholders; run B, in a process of its own,
// is planned and starts while they are there and relies on them (a deny
// ACE each); A ends while B runs. The placeholders must stay for B: not
// removed by A's end, not moved away by A's after-run check as something
// that appeared during A's run, and A's check reports nothing of them.
func TestWindowsTwoRunsOneEnds(t *testing.T) {
	base, home, proj, tmp := wineRepo(t)
	commondir := filepath.Join(proj, ".git", "commondir")
	flag := filepath.Join(tmp, "a-may-end")
	// Run A waits for the flag (a loop of looks: ping is no sleep in
	// the box under Wine), and says so by its status when the flag never
	// came.
	pA := killedRunPlan(t, home, proj, tmp, "RUNA", "cmd", "/d", "/c", "(for /l %i in (1,1,400000) do @if exist "+flag+" exit 0) & exit 3")
	sA, err := SpecOf(pA)
	if err != nil || len(sA.Placeholders) == 0 {
		t.Fatalf("run A's plan makes no control folder placeholder: %v", err)
	}
	kept := append([]string{commondir}, sA.Placeholders...)
	var evA evlog
	doneA := make(chan error, 1)
	go func() {
		code, err := supervise.Run(New(), pA, backend.Context{Stdin: nil, Stdout: nil, Stderr: nil, Events: &evA})
		if err == nil && code != 0 {
			err = fmt.Errorf("status %d", code)
		}
		doneA <- err
	}()
	var ended sync.Once
	endA := func() {
		ended.Do(func() {
			os.WriteFile(flag, nil, 0o644)
			select {
			case err := <-doneA:
				if err != nil {
					t.Errorf("run A: %v", err)
				}
			case <-time.After(120 * time.Second):
				t.Error("run A did not end")
			}
		})
	}
	t.Cleanup(endA)
	recPath, user, _ := aclRecordFile()
	waitRecord := func(what string, ok func(*aclRecord) bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			rec := &aclRecord{}
			if peekRecord(recPath, user, rec) == nil && ok(rec) {
				return
			}
		}
		rec := &aclRecord{}
		peekRecord(recPath, user, rec)
		endA()
		t.Fatalf("the record never showed %s: %+v", what, rec.Placeholders)
	}
	waitRecord("run A's placeholders", func(r *aclRecord) bool { return len(r.Placeholders) >= len(kept) })

	// Run B, planned now: it finds A's placeholders there.
	pB := killedRunPlan(t, home, proj, tmp, "RUNB", "cmd", "/d", "/c", "(for /l %i in (1,1,400000) do @if exist "+flag+".b exit 0) & exit 3")
	child, childOut := startPlanChild(t, base, "B", pB)
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(childOut)
			t.Logf("run B's output: %q", b)
		}
		pid := uint32(child.Process.Pid)
		child.Process.Kill()
		child.Wait()
		killDescendants(pid)
	}()
	// B holds its grants once its placeholders are made or joined.
	waitRecord("run B started", func(r *aclRecord) bool {
		for _, a := range r.ACEs {
			for _, h := range a.Holders {
				if h.PID == uint32(child.Process.Pid) {
					return true
				}
			}
		}
		return false
	})

	endA()
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("run A ended while run B runs: the placeholder %s B relies on is gone: %v", p, err)
		}
	}
	for _, e := range evA.all {
		if e.Kind == event.Quarantine {
			t.Errorf("run A's check moved away %s (%s)", e.Path, e.Detail)
		}
	}
}

// TestWindowsHolderAlive: a run is this process only with its creation
// time (a reused process ID is another run), and an ID no process has is
// gone, both for a grant's holder and a placeholder's; an ended process
// whose handle is still open (its object lives on) is gone too.
func TestWindowsHolderAlive(t *testing.T) {
	me := self()
	if !alive(me) || !placeholderAlive(me) {
		t.Errorf("this run is not alive: %v, %v", alive(me), placeholderAlive(me))
	}
	reused := aclHolder{PID: me.PID, Started: me.Started + 1}
	if alive(reused) || placeholderAlive(reused) {
		t.Error("a reused process ID (another creation time) is taken for the run")
	}
	nobody := aclHolder{PID: 0xFFFFFFF0, Started: me.Started}
	if alive(nobody) || placeholderAlive(nobody) {
		t.Error("a process ID no process has is taken for a live run")
	}
	c := exec.Command("cmd", "/d", "/c", "exit 0")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	h := holderOf(t, uint32(c.Process.Pid))
	c.Wait() // the os.Process keeps its handle open until it is released
	if alive(h) || placeholderAlive(h) {
		t.Error("an ended process is taken for a live run")
	}
	c.Process.Release()
}

// TestWindowsPeekWaitsForWrites: a look at the record that writes
// nothing (RemoveLeftoverPlaceholders' at every run's start) holds the
// lock shared while it reads, so a run writing the record at that moment
// waits instead of failing: before, the look read without the lock, and
// a run that renamed its new record over the one held open failed to
// record its ACEs and was refused (seen under Wine: "rename …: Access
// denied"). Here the look is held open mid-read while another run writes.
func TestWindowsPeekWaitsForWrites(t *testing.T) {
	recordHome(t)
	recPath, user, _ := aclRecordFile()
	if err := withRecord(recPath, user, testGroup, true, func(*aclRecord, func() error) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// The look, as peekRecord takes it, stopped while it reads.
	lock, err := openRecordFile(recPath+".lock", windows.GENERIC_READ|windows.GENERIC_WRITE, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, false, user)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(lock)
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(lock, 0, 0, 1, 0, ol); err != nil {
		t.Fatal(err)
	}
	reading, err := openRecordFile(recPath, windows.GENERIC_READ, windows.FILE_SHARE_READ, false, user)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		wrote <- withRecord(recPath, user, testGroup, true, func(rec *aclRecord, _ func() error) error {
			rec.Placeholders = append(rec.Placeholders, recPlaceholder{Path: `C:\x\.vscode`, Dir: true, FileID: 1, Holder: aclHolder{PID: 1, Started: 1}})
			return nil
		})
	}()
	time.Sleep(200 * time.Millisecond) // let the writer reach the lock
	windows.CloseHandle(reading)
	windows.UnlockFileEx(lock, 0, 1, 0, ol)
	select {
	case err := <-wrote:
		if err != nil {
			t.Errorf("a run writing the record while another looked at it failed: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the write never finished")
	}
	rec := &aclRecord{}
	if err := peekRecord(recPath, user, rec); err != nil || len(rec.Placeholders) != 1 {
		t.Errorf("the record after the write: %+v, %v", rec.Placeholders, err)
	}
}

// holderOf is the run a live process stands for.
func holderOf(t *testing.T, pid uint32) aclHolder {
	t.Helper()
	p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(p)
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(p, &c, &e, &k, &u); err != nil {
		t.Fatal(err)
	}
	return aclHolder{PID: pid, Started: c.Nanoseconds()}
}

// replaceWithLookalike puts another file with the same content in place
// of path (made before the old one goes, so it cannot get its file ID,
// which Wine takes from the inode and Linux reuses at once).
func replaceWithLookalike(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// killDescendants ends every process descended from pid.
func killDescendants(pid uint32) {
	for round := 0; round < 10; round++ {
		snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
		if err != nil {
			return
		}
		parents := map[uint32]bool{pid: true}
		var all []windows.ProcessEntry32
		e := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
		for err := windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
			all = append(all, e)
		}
		windows.CloseHandle(snap)
		for grew := true; grew; {
			grew = false
			for _, p := range all {
				if parents[p.ParentProcessID] && !parents[p.ProcessID] {
					parents[p.ProcessID], grew = true, true
				}
			}
		}
		delete(parents, pid)
		if len(parents) == 0 {
			return
		}
		for p := range parents {
			if h, err := windows.OpenProcess(windows.PROCESS_TERMINATE|windows.SYNCHRONIZE, false, p); err == nil {
				windows.TerminateProcess(h, 1)
				windows.WaitForSingleObject(h, 5000)
				windows.CloseHandle(h)
			}
		}
	}
}

type evlog struct{ all []event.Event }

func (e *evlog) Emit(ev event.Event) { e.all = append(e.all, ev) }

// runPlanFile runs the plan in file through supervise.Run with the
// Windows backend, the runner started as the caller (Wine), and returns
// its status.
func runPlanFile(file string) int {
	data, err := os.ReadFile(file)
	if err != nil {
		return 3
	}
	var p plan.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		os.Stderr.WriteString(err.Error())
		return 3
	}
	launchRunner = callerLauncher
	if underWine() {
		recordTrustProblem = func(f fileTrust, user string) string {
			f.Protected = true
			return trustProblem(f, user)
		}
	}
	code, err := supervise.Run(New(), &p, backend.Context{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		os.Stderr.WriteString(err.Error())
	}
	return code
}

// testGroup stands for the sandbox group in tests that keep an ACL record
// of their own (recordHome).
const testGroup = "S-1-5-21-1-2-3-4242"

// recordHome gives the test a machine folder of its own (ProgramData),
// where the user's ACL record is kept, trusted under Wine as on Windows.
func recordHome(t *testing.T) {
	t.Helper()
	wineTrust(t)
	t.Setenv("ProgramData", tempDir(t))
	path, _, err := aclRecordFile()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestWindowsMarkLivePlaceholders: a killed run's after-run check, done
// by a later run, leaves alone a placeholder a live run holds, still the
// very one made (before, it moved it away as something the killed run's
// box planted, while the live run's box relied on it): its guard is
// marked existing and read-only. A placeholder only a dead run holds, and
// a live run's that was replaced by a look-alike, stay missing, for the
// check to judge.
func TestWindowsMarkLivePlaceholders(t *testing.T) {
	_, git := gitProject(t)
	live, dead, swapped := filepath.Join(git, "commondir"), filepath.Join(git, "config.worktree"), filepath.Join(git, "other")
	holders := map[string]aclHolder{live: self(), dead: {PID: uint32(os.Getpid()), Started: 1}, swapped: self()}
	var recorded []recPlaceholder
	for _, p := range []string{live, dead, swapped} {
		id, made, err := makeGitPlaceholder(GitPlaceholder{Path: p, Content: ".\n"})
		if err != nil || !made {
			t.Fatal(made, err)
		}
		recorded = append(recorded, recPlaceholder{Path: p, Content: ".\n", Volume: id.VolumeSerialNumber,
			FileID: uint64(id.FileIndexHigh)<<32 | uint64(id.FileIndexLow), Holder: holders[p]})
	}
	recPath, user, _ := aclRecordFile()
	if err := withRecord(recPath, user, testGroup, true, func(rec *aclRecord, _ func() error) error {
		rec.Placeholders = recorded
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	replaceWithLookalike(t, swapped)
	h := &plan.HostExec{}
	for _, p := range []string{live, dead, swapped} {
		h.Guards = append(h.Guards, plan.Guard{Path: p, Kind: plan.KindMissing, Rule: "git " + filepath.Base(p)})
	}
	MarkLivePlaceholders(h)
	got := map[string]string{}
	for _, g := range h.Guards {
		got[filepath.Base(g.Path)] = g.Kind
		if g.Path == live && g.Keep != plan.KeepReadOnly {
			t.Errorf("the live run's placeholder is marked %v, not kept read-only", g.Keep)
		}
	}
	want := map[string]string{"commondir": plan.KindFile, "config.worktree": plan.KindMissing, "other": plan.KindMissing}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("guards after MarkLivePlaceholders (-want +got):\n%s", diff)
	}
}

// gitProject makes a project folder holding an empty .git folder, with
// the ACL record in a home of the test's own, and returns both folders.
func gitProject(t *testing.T) (proj, git string) {
	t.Helper()
	recordHome(t)
	proj = tempDir(t)
	git = filepath.Join(proj, ".git")
	if err := os.Mkdir(git, 0o755); err != nil {
		t.Fatal(err)
	}
	return proj, git
}

// noPlaceholdersLeft fails t when the ACL record still names a
// placeholder; when says at which point.
func noPlaceholdersLeft(t *testing.T, when string) {
	t.Helper()
	recPath, user, _ := aclRecordFile()
	rec := &aclRecord{}
	if err := readRecord(recPath, user, rec); err != nil || len(rec.Placeholders) != 0 {
		t.Errorf("the record %s: %+v, %v; want no placeholders", when, rec.Placeholders, err)
	}
}

// wineRepo makes, in a fresh folder base, a home holding a git project
// (proj, with HEAD, config, hooks, objects and refs) and a folder for
// temporary files, after wineSetup.
func wineRepo(t *testing.T) (base, home, proj, tmp string) {
	t.Helper()
	wineSetup(t)
	base = tempDir(t)
	home = filepath.Join(base, "home")
	proj = filepath.Join(home, "proj")
	tmp = filepath.Join(base, "tmp")
	for _, d := range []string{`.git\hooks`, `.git\objects`, `.git\refs`} {
		if err := os.MkdirAll(filepath.Join(proj, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"HEAD": "ref: refs/heads/main\n", "config": "[core]\n\trepositoryformatversion = 0\n"} {
		if err := os.WriteFile(filepath.Join(proj, ".git", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return base, home, proj, tmp
}

// startPlanChild starts this test binary as a process of its own that
// runs the plan p (AGENTBOX_TEST_RUN_PLAN), its output in a file of base
// named after name, and returns the process and that file.
func startPlanChild(t *testing.T, base, name string, p *plan.Plan) (*exec.Cmd, string) {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(base, "plan"+name+".json")
	if err := os.WriteFile(planFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "AGENTBOX_TEST_RUN_PLAN="+planFile)
	out := filepath.Join(base, "child"+name+".out")
	if f, err := os.Create(out); err == nil {
		child.Stdout, child.Stderr = f, f
		t.Cleanup(func() { f.Close() })
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	return child, out
}
