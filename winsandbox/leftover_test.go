package winsandbox

import (
	"testing"

	"github.com/agentbox/agentbox/plan"
	"github.com/google/go-cmp/cmp"
)

// TestJudgeLeftover: a placeholder a killed run recorded is removed only
// while it is the very file that run made (same volume and file ID, a
// plain file with one link) holding exactly what it was made with, or the
// very folder, still empty. A file
// of the same name and content that is another file (the box's, anyone's)
// is not taken for it, by name or content alone; a live run's is never
// touched.
func TestJudgeLeftover(t *testing.T) {
	rec := recPlaceholder{Path: `C:\p\.git\commondir`, Content: ".\n", Volume: 7, FileID: 0x1000000000042, Holder: aclHolder{PID: 9, Started: 1}}
	same := fileFacts{Exists: true, Regular: true, Links: 1, Volume: 7, FileID: 0x1000000000042, Content: []byte(".\n")}
	with := func(f func(*fileFacts)) fileFacts { c := same; f(&c); return c }
	dirRec := recPlaceholder{Path: `C:\p\.vscode`, Dir: true, Volume: 7, FileID: 77}
	dirNow := fileFacts{Exists: true, Dir: true, Empty: true, Links: 1, Volume: 7, FileID: 77}
	withDir := func(f func(*fileFacts)) fileFacts { c := dirNow; f(&c); return c }
	for _, tc := range []struct {
		name  string
		rec   recPlaceholder
		alive bool
		now   fileFacts
		want  leftover
	}{
		{"the very file, untouched", rec, false, same, leftoverOurs},
		{"its run is alive", rec, true, same, leftoverHeld},
		{"gone", rec, false, fileFacts{}, leftoverForeign},
		{"another file, same content (new file ID)", rec, false, with(func(f *fileFacts) { f.FileID = 0x2000000000042 }), leftoverForeign},
		{"same file ID on another volume", rec, false, with(func(f *fileFacts) { f.Volume = 8 }), leftoverForeign},
		{"written since", rec, false, with(func(f *fileFacts) { f.Content = []byte("../evil\n") }), leftoverForeign},
		{"emptied", rec, false, with(func(f *fileFacts) { f.Content = nil }), leftoverForeign},
		{"a second link to it", rec, false, with(func(f *fileFacts) { f.Links = 2 }), leftoverForeign},
		{"a folder or reparse point now", rec, false, with(func(f *fileFacts) { f.Regular = false }), leftoverForeign},
		{"recorded without an identity", recPlaceholder{Path: rec.Path, Content: rec.Content}, false, with(func(f *fileFacts) { f.Volume, f.FileID = 0, 0 }), leftoverForeign},
		{"the very folder, still empty", dirRec, false, dirNow, leftoverOurs},
		{"the very folder, something in it", dirRec, false, withDir(func(f *fileFacts) { f.Empty = false }), leftoverForeign},
		{"another folder of the same name", dirRec, false, withDir(func(f *fileFacts) { f.FileID = 99 }), leftoverForeign},
		{"a file where the folder was", dirRec, false, withDir(func(f *fileFacts) { f.Dir, f.Regular = false, true }), leftoverForeign},
		{"a junction where the folder was", dirRec, false, withDir(func(f *fileFacts) { f.Dir = false }), leftoverForeign},
		{"a folder where the file was", rec, false, with(func(f *fileFacts) { f.Regular, f.Dir, f.Empty = false, true, true }), leftoverForeign},
		{"an empty config.worktree, untouched", recPlaceholder{Path: `C:\p\.git\config.worktree`, Volume: 7, FileID: 5}, false, fileFacts{Exists: true, Regular: true, Links: 1, Volume: 7, FileID: 5}, leftoverOurs},
	} {
		if got := judgeLeftover(tc.rec, tc.alive, tc.now); got != tc.want {
			t.Errorf("%s: judgeLeftover = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestPlaceholderHolders: a placeholder stays while any run that holds
// it is alive. Run B of the same workspace, started while run A holds
// the placeholder, planned it as there (a deny ACE, no placeholder of its
// own) and joins its holders: when A ends first, the placeholder stays
// for B (before, A's end removed it and B's box could create what it
// kept), and it goes when B ends; a holder that died is dropped.
func TestPlaceholderHolders(t *testing.T) {
	a, b, c := aclHolder{PID: 1, Started: 1}, aclHolder{PID: 2, Started: 2}, aclHolder{PID: 3, Started: 3}
	live := map[aclHolder]bool{a: true, b: true, c: true}
	alive := func(h aclHolder) bool { return live[h] }
	r := recPlaceholder{Path: `C:\p\.vscode`, Dir: true, Volume: 7, FileID: 77, Holder: a}
	r.join(b)
	r.join(b)
	if diff := cmp.Diff([]aclHolder{a, b}, r.holders()); diff != "" {
		t.Errorf("holders after B joined (twice) (-want +got):\n%s", diff)
	}
	if !r.leave(a, alive) {
		t.Error("A ended while B runs: the placeholder was given up; want it kept for B")
	}
	if diff := cmp.Diff(recPlaceholder{Path: r.Path, Dir: true, Volume: 7, FileID: 77, Holder: b}, r); diff != "" {
		t.Errorf("after A left (-want +got):\n%s", diff)
	}
	if r.leave(b, alive) {
		t.Error("B, the last holder, ended: the placeholder is still held")
	}
	// A holder that died (killed) holds nothing.
	r = recPlaceholder{Path: r.Path, Holder: a, Joined: []aclHolder{b, c}}
	live[b] = false
	if !r.leave(a, alive) || !cmp.Equal(r.holders(), []aclHolder{c}) {
		t.Errorf("after A left with B dead: holders %v; want C's only, still held", r.holders())
	}
	live[c] = false
	if r.held(alive) || len(r.holders()) != 0 {
		t.Errorf("every holder dead: held, holders %v; want none", r.holders())
	}
	// A record of the format before Joined: one holder.
	old := recPlaceholder{Path: r.Path, Holder: a}
	if !old.held(alive) || !cmp.Equal(old.holders(), []aclHolder{a}) {
		t.Errorf("a one-holder record: %v", old.holders())
	}
}

// TestLeaveToOthers: where a run leaves its placeholder to another live
// run that holds it, its after-run check takes the placeholder for what
// was there (kept read-only), not for something the box made; the other
// guards stay as they are.
func TestLeaveToOthers(t *testing.T) {
	h := plan.HostExec{Guards: []plan.Guard{
		{Path: `C:\p\.vscode`, Rule: "vscode", Kind: plan.KindMissing, Keep: plan.KeepChecked},
		{Path: `C:\p\.git\commondir`, Rule: "git commondir", Kind: plan.KindMissing, Keep: plan.KeepChecked},
		{Path: `C:\p\.claude`, Rule: "claude", Kind: plan.KindMissing, Keep: plan.KeepChecked},
		{Path: `C:\p\.git\hooks`, Rule: "git hooks", Kind: plan.KindDir, Keep: plan.KeepReadOnly},
	}}
	leaveToOthers(&h, []recPlaceholder{{Path: `c:\P\.VSCODE`, Dir: true}, {Path: `C:\p\.git\commondir`, Content: ".\n"}})
	note := "agentbox's placeholder, left after the run to another run that still runs and holds it (the box could not change it)"
	want := []plan.Guard{
		{Path: `C:\p\.vscode`, Rule: "vscode", Kind: plan.KindDir, Keep: plan.KeepReadOnly, Note: note},
		{Path: `C:\p\.git\commondir`, Rule: "git commondir", Kind: plan.KindFile, Keep: plan.KeepReadOnly, Note: note},
		{Path: `C:\p\.claude`, Rule: "claude", Kind: plan.KindMissing, Keep: plan.KeepChecked},
		{Path: `C:\p\.git\hooks`, Rule: "git hooks", Kind: plan.KindDir, Keep: plan.KeepReadOnly},
	}
	if diff := cmp.Diff(want, h.Guards); diff != "" {
		t.Errorf("guards (-want +got):\n%s", diff)
	}
}
