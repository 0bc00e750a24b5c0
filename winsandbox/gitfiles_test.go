package winsandbox

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
	"github.com/google/go-cmp/cmp"
)

// TestGitKeep: every git folder in a writable root (the repository's, a
// linked worktree's, a submodule's) gets a commondir holding "." and an
// empty config.worktree with a deny-write ACE for the sandbox group,
// unless the file exists (a guard of its own keeps it read-only); a git
// folder outside the writable roots, or under a read-only or hidden path,
// gets none; a git folder named twice gets them once.
func TestGitKeep(t *testing.T) {
	const root = `C:\Users\me\proj`
	dirs := []string{
		root + `\.git`,
		root + `\.git\worktrees\wt`,
		root + `\.git\modules\sub`,
		root + `\.GIT`, // the same folder, NTFS compares names case-insensitively
		`C:\Users\me\other\.git`,
		root + `\vendored\.git`,
		`relative\.git`,
	}
	guards := []plan.Guard{
		{Path: root + `\.git\worktrees\wt\commondir`, Rule: "git commondir", Kind: plan.KindFile, Keep: plan.KeepReadOnly},
		{Path: root + `\.git\modules\sub\config.worktree`, Rule: "git config.worktree", Kind: plan.KindFile, Keep: plan.KeepReadOnly},
		{Path: root + `\.git\config.worktree`, Rule: "git config.worktree", Kind: plan.KindMissing, Keep: plan.KeepNone},
	}
	within := func(p string) bool {
		return winWithin(p, root) && !winWithin(p, root+`\vendored`)
	}
	files, aces := gitKeep(dirs, guards, within)
	want := []GitPlaceholder{
		{Path: root + `\.git\commondir`, Content: ".\n", Rule: "git commondir"},
		{Path: root + `\.git\config.worktree`, Content: "", Rule: "git config.worktree"},
		{Path: root + `\.git\worktrees\wt\config.worktree`, Content: "", Rule: "git config.worktree"},
		{Path: root + `\.git\modules\sub\commondir`, Content: ".\n", Rule: "git commondir"},
	}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("placeholders (-want +got):\n%s", diff)
	}
	var got []string
	for _, a := range aces {
		got = append(got, a.Path)
		if !a.Deny || a.Trustee != GroupName || a.Rights != RightsWrite || a.Inherit {
			t.Errorf("ACE %+v: want a deny-write ACE for the sandbox group on the file alone", a)
		}
	}
	var wantPaths []string
	for _, f := range want {
		wantPaths = append(wantPaths, f.Path)
	}
	if diff := cmp.Diff(wantPaths, got); diff != "" {
		t.Errorf("ACE paths (-want +got):\n%s", diff)
	}
	// The deny-write rights refuse writing, appending, removing and
	// renaming the file (DELETE), and rewriting its ACL.
	if r := FileRights(RightsWrite); r&(fileWriteData|fileAppendData|accessDelete|writeDAC|writeOwner) != fileWriteData|fileAppendData|accessDelete|writeDAC|writeOwner {
		t.Errorf("write rights %#x miss one of write, append, delete, write-DAC, write-owner", r)
	}
	// And the writable root's modify grant has no FILE_DELETE_CHILD, which
	// would let the box remove the file through its folder.
	if FileRights(RightsModify)&fileDeleteChild != 0 {
		t.Error("modify grants FILE_DELETE_CHILD: the box could remove the placeholder through its folder")
	}
}

// TestBuildKeepsGitFiles: Build gives the plan's git folder its
// placeholders and their ACEs; Complete lists each as a guard kept
// during the run, and `plan` shows the files. A plan whose .git is
// read-only as a whole gets none.
func TestBuildKeepsGitFiles(t *testing.T) {
	p := base()
	s, err := Build(p, Options{Exists: exists})
	if err != nil {
		t.Fatal(err)
	}
	want := []GitPlaceholder{
		{Path: `C:\Users\me\proj\.git\commondir`, Content: ".\n", Rule: "git commondir"},
		{Path: `C:\Users\me\proj\.git\config.worktree`, Content: "", Rule: "git config.worktree"},
	}
	if diff := cmp.Diff(want, s.GitPlaceholders); diff != "" {
		t.Errorf("git placeholders (-want +got):\n%s", diff)
	}
	denied := map[string]bool{}
	for _, a := range s.ACEs {
		if a.Deny && a.Rights == RightsWrite {
			denied[a.Path] = true
		}
	}
	for _, f := range want {
		if !denied[f.Path] {
			t.Errorf("%s: no deny-write ACE", f.Path)
		}
	}
	keepAfterRun(p, s)
	for _, f := range want {
		found := false
		for _, g := range p.HostExec.Guards {
			if g.Path == f.Path {
				found = true
				if g.Keep != plan.KeepChecked || g.Kind != plan.KindMissing || !strings.Contains(g.Note, "stands in for it during the run") {
					t.Errorf("guard %+v: want a missing place checked after the run, kept during it", g)
				}
			}
		}
		if !found {
			t.Errorf("%s: not among the plan's guards", f.Path)
		}
	}
	text := s.Render()
	for _, line := range []string{`placeholder C:\Users\me\proj\.git\commondir ".\n"`, `placeholder C:\Users\me\proj\.git\config.worktree ""`} {
		if !strings.Contains(text, line) {
			t.Errorf("render lacks %q:\n%s", line, text)
		}
	}

	ro := base()
	ro.Mounts = append(ro.Mounts, plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\proj\.git`, Access: plan.ReadOnly, Origin: origin("filesystem.read_only")})
	s, err = Build(ro, Options{Exists: exists})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GitPlaceholders) != 0 {
		t.Errorf("a read-only .git got placeholders: %+v", s.GitPlaceholders)
	}
}
