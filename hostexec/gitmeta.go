package hostexec

import (
	"bytes"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// What the box may write in a git folder is an allow list: what git itself
// writes in ordinary work (commit, fetch, pull, merge, stash, gc, bisect,
// notes, a rebase, cherry-pick or am that runs no program). Anything else
// there that the run made or changed is moved away after the run — git
// obeys new files under new names in every release, and a list of what it
// obeys would always be one behind.

// GitWrites are the entries at the top of a git folder that the box may
// write: git's data (objects, refs, logs, the index), the *_HEAD files and
// the messages git keeps for the next commit. The config, hooks, info/,
// commondir, config.worktree, worktrees/ and modules/ have checks of their
// own; the in-progress state folders are judged by GitStateSafe.
var GitWrites = map[string]bool{
	"objects": true, "refs": true, "packed-refs": true, "logs": true, "reftable": true,
	"index": true, "HEAD": true, "ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true,
	"MERGE_MSG": true, "MERGE_MODE": true, "MERGE_RR": true, "MERGE_AUTOSTASH": true, "AUTO_MERGE": true,
	"CHERRY_PICK_HEAD": true, "REVERT_HEAD": true, "REBASE_HEAD": true,
	"COMMIT_EDITMSG": true, "SQUASH_MSG": true, "TAG_EDITMSG": true, "NOTES_EDITMSG": true,
	"EDIT_DESCRIPTION": true, "NOTES_MERGE_PARTIAL": true, "NOTES_MERGE_REF": true, "NOTES_MERGE_WORKTREE": true,
	"BISECT_HEAD": true, "BISECT_LOG": true, "BISECT_NAMES": true, "BISECT_START": true,
	"BISECT_EXPECTED_REV": true, "BISECT_ANCESTORS_OK": true, "BISECT_TERMS": true, "BISECT_FIRST_PARENT": true,
	"BISECT_RUN":  true,
	"description": true, "shallow": true, "branches": true, "rr-cache": true, "lfs": true,
	"gc.pid": true, "gc.log": true, "lost-found": true, "fsmonitor--daemon": true, "fsmonitor--daemon.ipc": true,
	// A linked worktree's own folder: gitdir names the work tree, locked
	// says why it is locked.
	"gitdir": true, "locked": true,
	// What git's companions keep as data in ordinary work: git-annex's
	// content and git-svn's metadata (their settings are in the config).
	"annex": true, "svn": true,
}

// GitChecked are the entries of a git folder that other checks look at.
var GitChecked = map[string]bool{
	"config": true, "config.worktree": true, "hooks": true, "info": true, "commondir": true,
	"worktrees": true, "modules": true,
}

// GitStates are the folders git keeps an operation in progress in: the
// next git rebase --continue, cherry-pick --continue or am --continue does
// what they say.
var GitStates = []string{"rebase-merge", "rebase-apply", "sequencer"}

// GitMayWrite reports whether the box may leave name, an entry at the top
// of a git folder, as it likes: git's data, a lock or temporary file git
// makes (index.lock, sharedindex.*, index.stash.*), or an entry another
// check covers.
func GitMayWrite(name string) bool {
	if GitWrites[name] || GitChecked[name] {
		return true
	}
	return strings.HasSuffix(name, ".lock") || strings.HasPrefix(name, "sharedindex.") ||
		strings.HasPrefix(name, "index.stash.") || strings.HasPrefix(name, "next-index-")
}

// stateFiles are the files git writes in each state folder (sequencer.c,
// builtin/rebase.c, builtin/am.c).
var stateFiles = map[string]map[string]bool{
	"rebase-merge": set("git-rebase-todo", "git-rebase-todo.backup", "done", "msgnum", "end", "message",
		"message-squash", "message-fixup", "squash-onto", "author-script", "amend", "stopped-sha",
		"rewritten-list", "rewritten-pending", "current-fixups", "gpg_sign_opt", "signoff", "strategy",
		"strategy_opts", "allow_rerere_autoupdate", "quiet", "verbose", "drop_redundant_commits",
		"keep_redundant_commits", "reschedule-failed-exec", "no-reschedule-failed-exec", "cdate_is_adate",
		"ignore_date", "autostash", "orig-head", "onto", "head-name", "interactive", "update-refs",
		"refs-to-delete", "dropped", "patch"),
	"rebase-apply": set("next", "last", "info", "msg", "msg-clean", "final-commit", "author-script", "keep",
		"keepcr", "messageid", "quoted-cr", "scissors", "threeway", "quiet", "sign", "utf8", "apply-opt",
		"abort-safety", "original-commit", "rebasing", "applying", "head-name", "onto", "orig-head", "patch",
		"autostash", "patch-merged", "patch-merge-index", "dirtyindex", "ignore-date", "committer-date-is-author-date",
		"empty", "verbose"),
	"sequencer": set("todo", "opts", "head", "abort-safety"),
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// builtinStrategies are the merge strategies git carries itself; any
// other name makes git run a program git-merge-NAME found on PATH.
var builtinStrategies = map[string]bool{"ort": true, "recursive": true, "resolve": true, "octopus": true, "ours": true, "subtree": true}

// amPatch is the name of one patch of a mailbox git am works through.
var amPatch = lazyRegexp(`^[0-9]{4,}$`)

// GitStateSafe reports whether a state folder (state, one of GitStates)
// holding files (name to content; a folder inside it is not allowed) runs
// nothing when the host continues the operation, and if not, why: every
// file must be one git writes there, a todo list may hold no command that
// runs a program (exec, x, or anything git might read as a command that
// is not one of the known ones), a strategy must be built in, and git am
// may be given no options for git apply.
func GitStateSafe(state string, files map[string][]byte) (bool, string) {
	known := stateFiles[state]
	if known == nil {
		return false, "not a state folder git makes"
	}
	for name, data := range files {
		switch {
		case state == "rebase-apply" && amPatch().MatchString(name):
		case !known[name]:
			return false, "holds " + name + ", which git does not write there"
		case name == "git-rebase-todo" || name == "git-rebase-todo.backup" || state == "sequencer" && name == "todo":
			if ok, why := TodoSafe(data); !ok {
				return false, name + ": " + why
			}
		case name == "strategy":
			if s := strings.TrimSpace(string(data)); s != "" && !builtinStrategies[s] {
				return false, "strategy " + s + " makes git run the program git-merge-" + s
			}
		case name == "apply-opt":
			if len(bytes.TrimSpace(data)) > 0 {
				return false, "apply-opt passes options to git apply (--unsafe-paths lets it write outside the work tree)"
			}
		case state == "sequencer" && name == "opts":
			pc := ParseConfig(data)
			if !pc.Plain {
				return false, "opts is not a config git would read as it stands"
			}
			for _, v := range pc.Vars {
				if v.Section != "options" || v.Sub != "" {
					return false, "opts sets " + v.Name()
				}
				if v.Key == "strategy" && !builtinStrategies[v.Value] {
					return false, "strategy " + v.Value + " makes git run the program git-merge-" + v.Value
				}
			}
		}
	}
	return true, ""
}

// GitStateRead reports whether GitStateSafe reads the content of a state
// folder's file name (the others count by their names alone).
func GitStateRead(name string) bool {
	switch name {
	case "git-rebase-todo", "git-rebase-todo.backup", "todo", "strategy", "apply-opt", "opts":
		return true
	}
	return false
}

// todoCommands are the commands of a rebase todo list that run no program
// (sequencer.c todo_command_info): long name and short one.
var todoCommands = set("pick", "p", "reword", "r", "edit", "e", "squash", "s", "fixup", "f", "break", "b",
	"drop", "d", "label", "l", "reset", "t", "merge", "m", "update-ref", "u", "noop")

// TodoSafe reports whether a rebase or sequencer todo list runs no
// program, and if not, why. Each line is read the way git's
// parse_insn_line does (blanks and tabs skipped, then a command ending at
// a blank, tab, CR or the end of the line); comment lines start with '#'
// (a comment character set elsewhere makes git refuse such a line, which
// runs nothing either). A command it does not know is not safe: exec and
// x run a program, and anything else is what git may learn next.
func TodoSafe(data []byte) (bool, string) {
	if bytes.IndexByte(data, 0) >= 0 {
		return false, "holds a NUL byte"
	}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimLeft(line, " \t")
		if line == "" || line == "\r" || line[0] == '#' {
			continue
		}
		cmd := line
		if i := strings.IndexAny(line, " \t\r"); i >= 0 {
			cmd = line[:i]
		}
		if !todoCommands[cmd] {
			if cmd == "exec" || cmd == "x" {
				return false, "line " + itoa(n+1) + " runs a program (" + cmd + ")"
			}
			return false, "line " + itoa(n+1) + ": " + quoteShort(cmd) + " is not a command that runs nothing"
		}
	}
	return true, ""
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return "\"" + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s) + "\""
}

// vcsFolders are the metadata folders (and Fossil's checkout files) of
// the version-control systems other than git, by name, with their tool.
var vcsFolders = map[string]string{".hg": "hg", ".sl": "sl", ".jj": "jj", ".bzr": "bzr", ".fslckout": "fossil", "_FOSSIL_": "fossil"}

// metadataRules are what the box may write in each tool's metadata and
// what is kept (plan.Metadata); git's is the allow list of GitWrites.
var metadataRules = map[string][2]string{
	"git": {"objects, refs, packed-refs, logs, the index, HEAD, the *_HEAD files, the commit, merge and tag messages, and a rebase, cherry-pick or am left in progress whose continuation runs nothing (no exec line, a built-in strategy)",
		"the config, config.worktree, hooks, info/exclude and info/attributes, commondir (kept, or made safe after the run); anything else made or changed there, and an operation in progress whose continuation would run a program, is moved away after the run"},
	"hg":     {"anything but its config", "hgrc, hgrc-not-shared, sharedpath and the files hgrc %includes or names as extensions and hooks (read-only; one made during the run is moved away)"},
	"sl":     {"anything but its config", "config, hgrc, sharedpath and the files they %include or name (read-only; one made during the run is moved away)"},
	"jj":     {"anything but its config", "repo/config.toml and repo/store/git_target (read-only; one made during the run is moved away)"},
	"bzr":    {"anything but its branch configuration", "branch/branch.conf and branch/location (read-only; one made during the run is moved away)"},
	"fossil": {"nothing: the checkout database names the repository fossil obeys", "the checkout database and .fossil-settings (read-only, so fossil commands that write the checkout fail in the box)"},
}

// metadata records the rule of every repository's metadata folder found.
func (r *resolver) metadata() {
	add := func(p, tool string) {
		rule := metadataRules[tool]
		if tool == "git" && r.in.GOOS != "linux" {
			rule = [2]string{"anything but the config, hooks, info/exclude and info/attributes and commondir",
				"those (the allow list of what git writes is applied after the run on Linux only)"}
		}
		r.res.Metadata = append(r.res.Metadata, plan.Metadata{Path: p, Tool: tool, May: rule[0], Kept: rule[1]})
	}
	for _, g := range r.res.GitDirs {
		add(g, "git")
	}
	sort.Slice(r.vcs, func(i, j int) bool { return r.vcs[i][0] < r.vcs[j][0] })
	for _, v := range r.vcs {
		add(v[0], v[1])
	}
}
