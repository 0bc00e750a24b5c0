package winsandbox

import (
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Git's redirecting files kept during the run, not only after it (the
// pure half; run_windows.go makes the files).
//
// A git folder (.git, .git\worktrees\NAME, .git\modules\NAME) must stay
// writable for git in the box, and NTFS has no ACE for one missing name in
// a folder, so a commondir or config.worktree the box wrote there used to
// be moved away only after the run: a host program running git while the
// box ran (VS Code's git extension, a prompt's git status, every few
// seconds) obeyed it at once, and a commondir naming a folder whose config
// sets core.fsmonitor runs that program as the user. Each missing one now
// gets a file of agentbox's before the command starts, with a deny-write
// ACE for the sandbox group (the box cannot write, remove, rename or
// replace it: it has no FILE_DELETE_CHILD on the folder), removed after
// the run when it still holds what agentbox wrote:
//   - commondir holds ".": git takes it as the git folder itself, which is
//     what it takes when there is no commondir (git reads an empty one as
//     an error, so it cannot be empty); `git rev-parse --git-common-dir`
//     prints the folder's absolute path instead of ".git" meanwhile;
//   - config.worktree is empty: git reads it only when the repository's
//     config sets extensions.worktreeConfig, and then finds nothing in it;
//     `git config --worktree` and `git sparse-checkout` cannot write it
//     during the run.
// One that exists is kept read-only by the plan's own guard.

// GitPlaceholder is one missing git file Run makes for the run (see above).
type GitPlaceholder struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Rule is the registry rule it stands for: "git commondir", "git
	// config.worktree".
	Rule string `json:"rule"`
}

// gitPlaceholderContent is what each of git's redirecting files holds
// while it stands in for a missing one.
var gitPlaceholderContent = map[string]string{"commondir": ".\n", "config.worktree": ""}

// gitKeep is how Build keeps the git folders' missing redirecting files
// during the run: a placeholder and a deny-write ACE for each commondir
// and config.worktree of every git folder the plan found in a writable
// root (gitDirs) that is not a guard of its own (one that exists). within
// reports whether a path is in a writable root the box may write (not
// under a read-only or hidden path).
func gitKeep(gitDirs []string, guards []plan.Guard, within func(string) bool) (files []GitPlaceholder, aces []ACE) {
	existing := map[string]bool{}
	for _, g := range guards {
		if g.Kind != plan.KindMissing {
			existing[winKey(g.Path)] = true
		}
	}
	done := map[string]bool{}
	for _, dir := range gitDirs {
		if !winAbs(dir) || !within(dir) {
			continue
		}
		for _, name := range hostexecGitFiles {
			p := winJoin(dir, name)
			if existing[winKey(p)] || done[winKey(p)] {
				continue
			}
			done[winKey(p)] = true
			rule := "git " + name
			files = append(files, GitPlaceholder{Path: p, Content: gitPlaceholderContent[name], Rule: rule})
			aces = append(aces, ACE{Path: p, Deny: true, Trustee: GroupName, Rights: RightsWrite,
				Origin: "placeholder for " + rule + ": the box cannot create it during the run"})
		}
	}
	return files, aces
}

// hostexecGitFiles are hostexec.GitFiles, the files of a git folder that
// redirect git or add configuration (repeated: hostexec is not imported
// by the pure half).
var hostexecGitFiles = []string{"commondir", "config.worktree"}

// gitPlaceholderGuards are the guards `plan` lists for the git files
// Build keeps: a missing place, checked after the run, with a note saying
// what stands in for it during the run. A guard the plan already has for
// the path gets the note instead.
func gitPlaceholderGuards(guards []plan.Guard, files []GitPlaceholder) []plan.Guard {
	for _, f := range files {
		what := "an empty file"
		if f.Content != "" {
			what = "a file holding " + strings.TrimSpace(f.Content) + " (git reads it as this folder itself, as when there is none)"
		}
		note := "does not exist: " + what + ", which the box cannot write, remove or replace, stands in for it during the run (removed after it), and what appears here anyway is moved away after the run"
		found := false
		for i := range guards {
			if winKey(guards[i].Path) == winKey(f.Path) {
				found = true
				if guards[i].Kind == plan.KindMissing {
					guards[i].Keep, guards[i].Note = plan.KeepChecked, note
				}
			}
		}
		if !found {
			guards = append(guards, plan.Guard{Path: f.Path, Rule: f.Rule, Kind: plan.KindMissing, Keep: plan.KeepChecked, Note: note})
		}
	}
	return guards
}
