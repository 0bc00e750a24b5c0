package winsandbox

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
	"github.com/google/go-cmp/cmp"
)

// TestControlKeep: a missing control folder (.vscode, .claude) gets a
// placeholder that the box cannot write; a missing file in an existing
// control folder gets a deny-create ACE on that folder; a place with no
// folder of its own (.git\commondir, a root's file), a guard kept another
// way, and a link where a folder is expected get neither.
func TestControlKeep(t *testing.T) {
	const root = `C:\Users\me\proj`
	dirs := map[string]bool{winKey(root + `\.claude`): true, winKey(root + `\.git`): true}
	isDir := func(p string) bool { return dirs[winKey(p)] }
	guards := []plan.Guard{
		{Path: root + `\.vscode`, Rule: "vscode .vscode", Kind: plan.KindMissing, Keep: plan.KeepNone},
		{Path: root + `\.claude\settings.json`, Rule: "claude .claude/settings.json", Kind: plan.KindMissing, Keep: plan.KeepNone},
		{Path: root + `\.claude\settings.local.json`, Rule: "claude .claude/settings.local.json", Kind: plan.KindMissing, Keep: plan.KeepNone},
		{Path: root + `\.git\commondir`, Rule: "git commondir", Kind: plan.KindMissing, Keep: plan.KeepNone},
		{Path: root + `\.envrc`, Rule: "direnv .envrc", Kind: plan.KindMissing, Keep: plan.KeepNone},
		{Path: root + `\.cursor\rules`, Rule: "cursor rules", Kind: plan.KindMissing, Keep: plan.KeepNone}, // .cursor is not a folder here
		{Path: root + `\.idea`, Rule: "idea", Kind: plan.KindMissing, Keep: plan.KeepReadOnly},
		{Path: root + `\.zed`, Rule: "zed", Kind: plan.KindDir, Keep: plan.KeepNone},
	}
	placeholders, aces := controlKeep(guards, isDir)
	if diff := cmp.Diff([]string{root + `\.vscode`}, placeholders); diff != "" {
		t.Errorf("placeholders (-want +got):\n%s", diff)
	}
	var got []string
	for _, a := range aces {
		if !a.Deny || a.Trustee != GroupName {
			t.Errorf("ACE %+v is not a deny for the sandbox group", a)
		}
		got = append(got, a.Path+" "+string(a.Rights)+map[bool]string{true: " inherit", false: ""}[a.Inherit])
	}
	want := []string{root + `\.vscode write inherit`, root + `\.claude create`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ACEs (-want +got):\n%s", diff)
	}
	if FileRights(RightsCreate) != 0x6 {
		t.Errorf("create rights %#x, want FILE_ADD_FILE|FILE_ADD_SUBDIRECTORY (0x6)", FileRights(RightsCreate))
	}
	if _, aces := controlKeep(guards, nil); len(aces) != 1 {
		t.Errorf("without isDir, %d ACEs, want the placeholder's only", len(aces))
	}
}

// TestCompleteKeepsControlFolders: a plan whose registry search found no
// .vscode and a .claude without its settings gets, from Complete, the
// placeholder and the deny-create ACE, and `plan` says each is kept
// during the run.
func TestCompleteKeepsControlFolders(t *testing.T) {
	p := base()
	root := `C:\Users\me\proj`
	p.HostExec.Guards = []plan.Guard{
		{Path: root + `\.vscode`, Rule: "vscode .vscode", Kind: plan.KindMissing, Keep: plan.KeepNone},
		{Path: root + `\.claude\settings.json`, Rule: "claude .claude/settings.json", Kind: plan.KindMissing, Keep: plan.KeepNone},
		{Path: root + `\.git\commondir`, Rule: "git commondir", Kind: plan.KindMissing, Keep: plan.KeepNone},
		{Path: root + `\.envrc`, Rule: "direnv .envrc", Kind: plan.KindMissing, Keep: plan.KeepNone},
	}
	opts := Options{Exists: exists, IsDir: func(x string) bool { return winKey(x) == winKey(root+`\.claude`) }}
	s, err := Build(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	keepAfterRun(p, s)
	notes := map[string]string{}
	for _, g := range p.HostExec.Guards {
		notes[winBase(g.Path)] = g.Note
	}
	for name, want := range map[string]string{".vscode": "an empty folder the box cannot write", "settings.json": "deny-create", "commondir": "a file holding . (git reads it as this folder itself", ".envrc": "nothing stands in for it"} {
		if !strings.Contains(notes[name], want) {
			t.Errorf("%s: note %q, want it to say %q", name, notes[name], want)
		}
	}
	if !strings.Contains(s.Render(), `placeholder C:\Users\me\proj\.vscode`) {
		t.Error("the rendered spec does not show the placeholder")
	}
}

// TestKeptExisting: the control folders and git files a spec keeps as
// what exists (a deny ACE in a writable root, no placeholder of its own)
// are the ones a run makes a placeholder for when they are gone by the
// time it starts; grants, paths outside the roots, the root itself and
// what already has a placeholder are not.
func TestKeptExisting(t *testing.T) {
	s := &Spec{
		Capabilities:    []Capability{{Root: `C:\p`, SID: "S-1-5-21-9-9-9-9"}},
		Placeholders:    []string{`C:\p\.claude`},
		GitPlaceholders: []GitPlaceholder{{Path: `C:\p\.git\config.worktree`}},
		ACEs: []ACE{
			{Path: `C:\p`, Trustee: GroupName, Rights: RightsModify, Inherit: true},
			{Path: `C:\p\.VSCode`, Deny: true, Trustee: GroupName, Rights: RightsWrite, Inherit: true},
			{Path: `C:\p\.cursor`, Deny: true, Trustee: GroupName, Rights: RightsCreate},
			{Path: `C:\p\.claude`, Deny: true, Trustee: GroupName, Rights: RightsWrite, Inherit: true},
			{Path: `C:\p\.git\commondir`, Deny: true, Trustee: GroupName, Rights: RightsWrite, Inherit: true},
			{Path: `C:\p\.git\config.worktree`, Deny: true, Trustee: GroupName, Rights: RightsWrite},
			{Path: `C:\p\.git\worktrees\w\config.worktree`, Deny: true, Trustee: GroupName, Rights: RightsWrite},
			{Path: `C:\p\.git\hooks`, Deny: true, Trustee: GroupName, Rights: RightsWrite, Inherit: true},
			{Path: `C:\Users\u\.vscode`, Deny: true, Trustee: GroupName, Rights: RightsWrite, Inherit: true},
			{Path: `C:\p\sub\.idea`, Trustee: GroupName, Rights: RightsRead},
			{Path: `C:\p\.vscode`, Deny: true, Trustee: GroupName, Rights: RightsDelete},
		},
	}
	dirs, files := keptExisting(s)
	if diff := cmp.Diff([]string{`C:\p\.VSCode`, `C:\p\.cursor`}, dirs); diff != "" {
		t.Errorf("folders (-want +got):\n%s", diff)
	}
	want := []GitPlaceholder{
		{Path: `C:\p\.git\commondir`, Content: ".\n", Rule: "git commondir"},
		{Path: `C:\p\.git\worktrees\w\config.worktree`, Rule: "git config.worktree"},
	}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("git files (-want +got):\n%s", diff)
	}
}
