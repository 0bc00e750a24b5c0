package winsandbox

import (
	"testing"

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

// TestDropPlaceholder: a run's release takes only its own entry for the
// path out of the record.
func TestDropPlaceholder(t *testing.T) {
	me, other := aclHolder{PID: 1, Started: 1}, aclHolder{PID: 2, Started: 2}
	r := aclRecord{Placeholders: []recPlaceholder{
		{Path: `C:\a\.git\commondir`, Holder: me},
		{Path: `C:\a\.git\commondir`, Holder: other},
		{Path: `C:\b\.git\commondir`, Holder: me},
	}}
	r.dropPlaceholder(`c:\A\.git\COMMONDIR`, me)
	want := []recPlaceholder{{Path: `C:\a\.git\commondir`, Holder: other}, {Path: `C:\b\.git\commondir`, Holder: me}}
	if diff := cmp.Diff(want, r.Placeholders); diff != "" {
		t.Errorf("after dropPlaceholder (-want +got):\n%s", diff)
	}
}
