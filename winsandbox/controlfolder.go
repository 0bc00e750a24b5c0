package winsandbox

import (
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Control folders kept during the run, not only after it (the pure half;
// run_windows.go makes the placeholders).
//
// What does not exist carries no ACE, so a place of the registry that is
// missing used to be checked only after the run, and a host program
// reading it while the box ran (VS Code's tasks and settings, an agent
// CLI's settings) could obey what the box had just written there. NTFS
// has no ACE for one name in a folder, but a host program's own folder
// (.vscode, .claude, .cursor, …) holds nothing but what that program
// obeys, so:
//   - a missing control folder gets a placeholder: an empty folder made
//     before the run, with a deny-write ACE for the sandbox group on it and
//     everything below (nothing can be created in it, and it cannot be
//     removed or renamed), removed after the run when still empty;
//   - a missing file in an existing control folder gets a deny-create ACE
//     on that folder (no file or subfolder can be added to it; what is in
//     it keeps its access).
// A git folder's commondir and config.worktree have placeholders of
// their own (gitfiles.go); places elsewhere (a root's own files) have no
// such folder: they stay checked after the run only.

// controlFolders are the folders that belong to one host program and hold
// only what it obeys: its project settings, tasks, hooks and servers.
var controlFolders = map[string]bool{
	".vscode": true, ".claude": true, ".cursor": true, ".idea": true, ".zed": true, ".codex": true,
	".gemini": true, ".windsurf": true, ".continue": true, ".amazonq": true, ".devcontainer": true,
}

// controlKeep is how Build keeps the missing guards during the run:
// the placeholder folders to make, and the ACEs for them and for the
// control folders that hold a missing file. isDir reports whether a path
// is a folder; nil makes no deny-create ACE.
func controlKeep(guards []plan.Guard, isDir func(string) bool) (placeholders []string, aces []ACE) {
	done := map[string]bool{}
	for _, g := range guards {
		if g.Kind != plan.KindMissing || g.Keep != plan.KeepNone {
			continue
		}
		base := strings.ToLower(winBase(g.Path))
		if controlFolders[base] {
			if done[winKey(g.Path)] {
				continue
			}
			done[winKey(g.Path)] = true
			placeholders = append(placeholders, g.Path)
			aces = append(aces, ACE{Path: g.Path, Deny: true, Trustee: GroupName, Rights: RightsWrite, Inherit: true,
				Origin: "placeholder for " + g.Rule + ": nothing can be created in it during the run"})
			continue
		}
		dir := winDir(g.Path)
		if isDir == nil || !controlFolders[strings.ToLower(winBase(dir))] || done[winKey(dir)] || !isDir(dir) {
			continue
		}
		done[winKey(dir)] = true
		aces = append(aces, ACE{Path: dir, Deny: true, Trustee: GroupName, Rights: RightsCreate,
			Origin: "deny-create for " + g.Rule + ": no file can be added to the folder during the run"})
	}
	return placeholders, aces
}

// keptDuringRun reports, for keepAfterRun's note, how a missing guard is
// kept during the run by the spec: "placeholder", "deny-create" or "".
func keptDuringRun(s *Spec, g plan.Guard) string {
	for _, p := range s.Placeholders {
		if winKey(p) == winKey(g.Path) {
			return "placeholder"
		}
	}
	for _, a := range s.ACEs {
		if a.Rights == RightsCreate && a.Deny && winKey(a.Path) == winKey(winDir(g.Path)) {
			return "deny-create"
		}
	}
	return ""
}

// keptExisting returns the control folders and git files the spec keeps
// as what exists (a deny ACE on the path, in a writable root) and not by
// a placeholder of its own. A run makes a placeholder for each that is
// gone by the time it starts (run_windows.go): the plan took it for there
// (another run's placeholder, which that run removed when it ended
// between this run's plan and its start), and a deny ACE on a missing
// path is no ACE at all, so the box could create it.
func keptExisting(s *Spec) (dirs []string, files []GitPlaceholder) {
	seen := map[string]bool{}
	for _, p := range s.Placeholders {
		seen[winKey(p)] = true
	}
	for _, g := range s.GitPlaceholders {
		seen[winKey(g.Path)] = true
	}
	for _, a := range s.ACEs {
		if !a.Deny || seen[winKey(a.Path)] {
			continue
		}
		inRoot := false
		for _, c := range s.Capabilities {
			if winKey(a.Path) != winKey(c.Root) && winWithin(a.Path, c.Root) {
				inRoot = true
			}
		}
		if !inRoot {
			continue
		}
		base := strings.ToLower(winBase(a.Path))
		if controlFolders[base] {
			seen[winKey(a.Path)] = true
			dirs = append(dirs, a.Path)
		} else if content, ok := gitPlaceholderContent[base]; ok {
			seen[winKey(a.Path)] = true
			files = append(files, GitPlaceholder{Path: a.Path, Content: content, Rule: "git " + base})
		}
	}
	return dirs, files
}
