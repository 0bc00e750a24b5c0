package plan

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// Keep says how one thing a host program runs or obeys is kept safe from
// the box.
type Keep string

// The ways a guarded path is kept safe, strongest first.
const (
	// KeepReadOnly: it exists and is bound read-only for the run (the
	// folders above it pinned), so the box cannot change, remove or
	// replace it; a host program that looks during the run finds it as
	// it was.
	KeepReadOnly Keep = "read-only"
	// KeepBlocked: it does not exist; an empty read-only placeholder is
	// put at its place for the run (Prepare.Placeholder) and removed
	// afterwards, so the box cannot create it.
	KeepBlocked Keep = "blocked"
	// KeepRestored: the box can change it during the run; agentbox records
	// it before the run and, with every process of the run ended, puts
	// back any change and moves what the box put there into quarantine.
	KeepRestored Keep = "restored"
	// KeepChecked: created during the run (a new repository, a new .git
	// entry, a new control file deep in a tree); agentbox neutralises it
	// after the run, with every process of the run ended.
	KeepChecked Keep = "checked"
	// KeepPathDir: a folder a host program puts on PATH (direnv's
	// PATH_add, layout node): after the run, with every process of the run
	// ended, a program the box added or changed there under the name of a
	// command on the user's PATH is moved away, so typing that command in
	// the folder's shell does not run it.
	KeepPathDir Keep = "path dir"
	// KeepPthDir: the site-packages of an interpreter a host program runs
	// (the one pre-commit's hooks run): after the run, a .pth file or a
	// sitecustomize/usercustomize module the box added or changed there is
	// moved away, since each runs at every start of the interpreter.
	KeepPthDir Keep = "pth dir"
	// KeepAgentDir: an agent CLI's own folder, of which the box may write
	// only the entries the CLI writes in its work (Guard.Allow): the
	// others that exist are kept read-only (guards of their own), and
	// after the run, with every process of the run ended, any other entry
	// the box added or changed there is moved away, whatever its name.
	KeepAgentDir Keep = "agent dir"
	// KeepNone: not covered on this system; the plan says why.
	KeepNone Keep = "not covered"
)

// Guard is one path a host program runs or obeys (git hooks and config,
// an agent CLI's settings and hooks, editor tasks, shell startup files)
// that lies within the box's reach, and how it is kept safe.
type Guard struct {
	// Path is the absolute path, symlinks not followed.
	Path string `json:"path"`
	// Rule names the registry entry: "git hooks", "claude settings".
	Rule string `json:"rule"`
	// Kind is what was found there before the run: "file", "dir",
	// "symlink" or "missing".
	Kind string `json:"kind"`
	// Keep is how it is kept safe.
	Keep Keep `json:"keep"`
	// Target is, for a symlink, what it points to, as read.
	Target string `json:"target,omitempty"`
	// Note says more: why it is kept the way it is.
	Note string `json:"note,omitempty"`
	// Allow are, for KeepAgentDir, the entries of the folder the box may
	// write (names or path.Match patterns).
	Allow []string `json:"allow,omitempty"`
}

// Allows reports whether name, an entry of a KeepAgentDir folder, is one
// the box may write.
func (g Guard) Allows(name string) bool {
	for _, a := range g.Allow {
		if ok, _ := path.Match(a, name); ok {
			return true
		}
	}
	return false
}

// RuleUnlisted is the rule of a guard for a folder the search could not
// list: what is in it is unknown, so it is kept read-only (a backend that
// cannot keep it so must refuse the run), never kept by recording.
const RuleUnlisted = "unreadable folder"

// The kinds of Guard.Kind.
const (
	KindFile    = "file"
	KindDir     = "dir"
	KindSymlink = "symlink"
	KindMissing = "missing"
)

// HostExec is what host programs run or obey within the box's reach, how
// each is kept safe, and what the after-run check needs: the folders it
// searches for repositories and control files created during the run,
// and the repositories known before.
type HostExec struct {
	// Guards are the registry's entries that lie within the writable
	// roots, each with how it is kept safe.
	Guards []Guard `json:"guards,omitempty"`
	// Roots are the folders searched, before and after the run, for git
	// repositories and control files at any depth.
	Roots []string `json:"roots,omitempty"`
	// Outside are folders outside the Roots that the box can write (the
	// host folder behind its /tmp; under Landlock the host's /dev/shm): a
	// symlink the box leaves in a root that leads there would take a host
	// program into what the box wrote, so the check moves such links away.
	Outside []string `json:"outside,omitempty"`
	// ReadOnly are the folders and files within the Roots that the
	// policy makes read-only for the box (filesystem.read_only; every
	// backend keeps them so): the search does not go into them, before
	// or after the run.
	ReadOnly []string `json:"read_only,omitempty"`
	// Controls are the control files the search looks for in every
	// folder (relative paths: ".claude/settings.json", ".vscode"); one
	// found after the run that was not there before is moved away.
	Controls []string `json:"controls,omitempty"`
	// Limit is the most folders the search keeps in memory (0: the
	// default); more is an error (the search fails closed).
	Limit int `json:"limit"`
	// Visited is how many files and folders the writable roots held
	// when the search before the run looked.
	Visited int64 `json:"visited"`
	// Folders is how many folders they held, Listed how many of those
	// the search listed (the others had not changed since the last one).
	Folders int `json:"folders"`
	Listed  int `json:"listed"`
	// Noted are the names the search notes in every folder besides git's
	// (first elements of the control paths, and files like .envrc that
	// are followed, not kept): the search after the run notes the same.
	Noted []string `json:"noted,omitempty"`
	// GitDirs are the git folders known before the run (repositories,
	// worktrees' folders, submodules). One found after the run that is
	// not here is new, and is neutralised.
	GitDirs []string `json:"git_dirs,omitempty"`
	// Metadata says, for each repository's metadata folder found before
	// the run (git's, Mercurial's, Jujutsu's, Sapling's, Bazaar's,
	// Fossil's), what the box may write there and what is kept.
	Metadata []Metadata `json:"metadata,omitempty"`
	// State is agentbox's own state folder: the after-run check's
	// pending records and its quarantine live there, out of the box's
	// reach.
	State string `json:"state,omitempty"`
	// Shared is how many regular files in the Roots the search before
	// the run found with more than one link that the box could write
	// (Tree.Shared): a write to one would change the same data under its
	// other names, which may lie outside every root (pnpm's and uv's
	// package stores, cp -al, git clone --local). Each is given a copy of
	// its own, with the same content, mode, owner and times, before the
	// box starts.
	Shared int `json:"shared,omitempty"`
	// Trees are what the search before the run saw of each root, so the
	// search after it only lists the folders that changed. Not part of
	// the plan's JSON form (they can be large): a plan read back has
	// none, and the search after the run then lists every folder.
	Trees map[string]*Tree `json:"-"`
	// Made are the folders agentbox itself made or checked for the run
	// (Prepare), by path, as they were once made, before the box
	// started: the after-run check compares with these, so what agentbox
	// made is not reported as the box's change. Set by the run, never by
	// resolution.
	Made map[string]Stamp `json:"made,omitempty"`
}

// Stamp is a folder's identity and change time.
type Stamp struct {
	Dev, Ino uint64
	Ctime    int64
}

// Metadata is the rule for one repository's metadata folder.
type Metadata struct {
	// Path is the folder (a .git folder, a worktree's or submodule's git
	// folder, .hg, .jj, .sl, .bzr, or the checkout's top for Fossil).
	Path string `json:"path"`
	// Tool is the version-control system: git, hg, jj, sl, bzr, fossil.
	Tool string `json:"tool"`
	// May is what the box may write there; Kept what is kept from it or
	// cleaned after the run.
	May  string `json:"may"`
	Kept string `json:"kept"`
}

// GuardAt returns the guard for path, if any.
func (h *HostExec) GuardAt(path string) (Guard, bool) {
	for _, g := range h.Guards {
		if g.Path == path {
			return g, true
		}
	}
	return Guard{}, false
}

// writeText prints the guards and the after-run check, as `agentbox plan`
// shows them (with Fit's table marks, every name escaped).
func (h *HostExec) writeText(w io.Writer) {
	if len(h.Roots) == 0 {
		return
	}
	fmt.Fprintf(w, "host programs: what git, agent CLIs, editors and shells run or obey within the box's reach (%d files and folders searched; %d of %d folders listed, the others unchanged since the last search):\n", h.Visited, h.Listed, h.Folders)
	for i := 0; i < len(h.Guards); {
		g := h.Guards[i]
		j := i + 1
		for j < len(h.Guards) && sameLine(h.Guards[j], g) {
			j++
		}
		kind, where := Escape(g.Kind), g.Path
		if g.Target != "" {
			kind += " -> " + Escape(g.Target)
		}
		if j-i >= foldGuards {
			where = foldedPaths(h.Guards[i:j])
		} else {
			j = i + 1
		}
		fmt.Fprintf(w, "  %s\t%s\v%s\t%s\t%s\n", g.Keep, Escape(where), Escape(g.Rule), kind, Escape(g.Note))
		i = j
	}
	for _, m := range h.Metadata {
		fmt.Fprintf(w, "  metadata\t%s\v%s repository\tmay write: %s\tkept: %s\n", Escape(m.Path), m.Tool, m.May, m.Kept)
	}
	roots := make([]string, len(h.Roots))
	for i, r := range h.Roots {
		roots[i] = Escape(r)
	}
	if h.Shared > 0 {
		fmt.Fprintf(w, "  before the run: %d files in the writable roots share their data with other names (hard links, as pnpm, uv, cp -al and git clone --local make them): each gets a copy of its own, so a write in the box cannot change a file outside the roots (pnpm: package-import-method=copy, uv: link-mode=copy avoid the copying)\n", h.Shared)
	}
	fmt.Fprintf(w, "  after the run, with every process of the run ended: new repositories, .git entries, worktree and submodule folders and control files anywhere in %s are neutralised (moved to %s)\n",
		strings.Join(roots, ", "), Escape(h.State+"/quarantine"))
}

// foldGuards is how many guards in a row, alike but for their names in
// one folder, `agentbox plan` shows as one line (the modules a Python
// hook would import from a work tree: hundreds of names); the JSON form
// lists each.
const foldGuards = 16

// sameLine reports whether guards a and b differ only in their names in
// one folder.
func sameLine(a, b Guard) bool {
	return a.Keep == b.Keep && a.Rule == b.Rule && a.Kind == b.Kind && a.Note == b.Note && a.Target == "" && b.Target == "" &&
		dirOf(a.Path) == dirOf(b.Path)
}

// dirOf is the folder part of p, a path of any system ("" for none).
func dirOf(p string) string {
	return p[:max(strings.LastIndexAny(p, `/\`), 0)]
}

// foldedPaths shows the paths of gs, alike in one folder, as one:
// "/top/{a.py, a.pyc, … (300 names; plan --json lists each)}".
func foldedPaths(gs []Guard) string {
	var names []string
	for _, g := range gs[:min(len(gs), 6)] {
		names = append(names, g.Path[len(dirOf(g.Path))+1:])
	}
	d := dirOf(gs[0].Path)
	return fmt.Sprintf("%s%c{%s, … (%d names; plan --json lists each)}", d, gs[0].Path[len(d)], strings.Join(names, ", "), len(gs))
}
