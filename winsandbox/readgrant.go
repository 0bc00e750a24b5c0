package winsandbox

import (
	"fmt"
	"strings"
)

// What the sandbox users may read besides what the plan names, and how
// far such a grant may reach (the pure half).
//
// A user's profile (C:\Users\me) is readable by that user, SYSTEM and
// Administrators only, so a program there is invisible to the sandbox
// users unless agentbox grants them read on it: the runner (agentbox.exe),
// the command's program, and the working directory when it lies outside
// the writable roots. Such a grant is an inherited ACE that stays after
// the run (it is removed with the project's other ACEs), so its breadth
// matters: a read grant on the folder of an agentbox.exe in Downloads, or
// in the profile itself, would let every box read AppData (browser
// profiles, tokens of other tools), .gitconfig, .npmrc and the rest, for
// good. So:
//   - the runner gets read on its own file, never its folder: it needs
//     nothing else (a Go program loads only system DLLs);
//   - the command's program gets read on its folder when that folder is
//     narrow (npm's global folder, a program's own folder), and on the
//     file alone when it is broad (broadFolder);
//   - a working directory outside the writable roots that is broad is
//     refused, with the fix, rather than granted.

// readGrant is one read ACE agentbox adds for the sandbox group.
type readGrant struct {
	Path string
	// Folder is true for a folder, whose grant is inherited by what is in
	// it; false for one file.
	Folder bool
	Origin string
}

// appDataFolders are the profile's folders every program keeps its data
// in: never granted as a whole.
var appDataFolders = []string{`AppData`, `AppData\Local`, `AppData\Roaming`, `AppData\LocalLow`, `AppData\Local\Programs`}

// broadFolder says why a read grant on dir would reach too far, or "": dir
// is the home folder or holds it, lies directly in it (Downloads, Desktop,
// Documents, a bin of the user's), is one of AppData's folders that every
// program keeps its data in, or is the temporary folder or holds it. An
// unknown home folder makes every folder broad: nothing is known to be
// narrow.
func broadFolder(dir, home, temp string) string {
	if home == "" {
		return "the home folder is not known, so no folder is known to be narrow"
	}
	switch {
	case winKey(dir) == winKey(home):
		return "it is your home folder"
	case winWithin(home, dir):
		return "it holds your home folder"
	case winKey(winDir(dir)) == winKey(home):
		return "it lies directly in your home folder, which holds your other files there"
	}
	for _, a := range appDataFolders {
		if winKey(dir) == winKey(winJoin(home, a)) {
			return "every program keeps its data in it"
		}
	}
	if temp != "" && winWithin(temp, dir) {
		return "it is or holds your temporary folder, where every program leaves files"
	}
	return ""
}

// readGrants returns the read grants a run needs besides the plan's own
// paths: the runner's file, the command's program (its folder, or the file
// alone when the folder is broad) and the working directory when no
// writable root holds it. inWritable reports whether a writable root
// holds a path (no grant is needed there). A broad working directory is
// an error that says how to run instead.
func readGrants(runner, program, cwd, home, temp string, inWritable func(string) bool) ([]readGrant, error) {
	var out []readGrant
	seen := map[string]bool{}
	add := func(g readGrant) {
		if seen[winKey(g.Path)] || inWritable(g.Path) {
			return
		}
		seen[winKey(g.Path)] = true
		out = append(out, g)
	}
	if runner != "" {
		add(readGrant{Path: runner, Origin: "the runner (agentbox.exe): this file only"})
	}
	if program != "" {
		if dir := winDir(program); broadFolder(dir, home, temp) == "" {
			add(readGrant{Path: dir, Folder: true, Origin: "the command's folder"})
		} else {
			add(readGrant{Path: program, Origin: "the command's program: this file only (its folder " + dir + " is too broad to share)"})
		}
	}
	if !inWritable(cwd) {
		if why := broadFolder(cwd, home, temp); why != "" {
			return nil, fmt.Errorf("the working directory %s lies outside the writable roots, and the sandbox users would have to read all of it: %s; run agentbox from a project folder, or make this one writable (--writable %s)", cwd, why, quoteIfSpace(cwd))
		}
		add(readGrant{Path: cwd, Folder: true, Origin: "the working directory"})
	}
	return out, nil
}

func quoteIfSpace(p string) string {
	if strings.ContainsAny(p, " \t") {
		return `"` + p + `"`
	}
	return p
}
