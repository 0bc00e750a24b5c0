package winsandbox

import (
	"fmt"
	"strings"
)

// PATH folders the sandbox users cannot read (the pure half; the run
// reads the DACLs: machineFacts).
//
// A folder of the user's PATH inside the user's profile (a Go, cargo,
// Volta, scoop or pyenv-win bin) is readable by the user alone, so a
// program there is not found in the box, or found and refused. Such a
// folder gets a read grant when it is narrow (as the command's own folder
// does: readgrant.go); `agentbox plan` names every other one, so the
// reason a tool fails in the box is on the page before the run.

// pathEntries splits a Windows PATH value into its folders, without empty
// ones and without quotes.
func pathEntries(value string) []string {
	var out []string
	for _, e := range strings.Split(value, ";") {
		e = strings.TrimSpace(strings.Trim(e, `"`))
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}

// envValue returns NAME's value in env ("NAME=value", names compared as
// Windows does), and whether it is there.
func envValue(env []string, name string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// pathReadGrants decides, for each folder of the command's PATH that the
// sandbox users cannot read and no writable root, read grant or hidden
// path of the run covers: a read grant when it lies in the home folder and
// is narrow (broadFolder: a Go, cargo, Volta or npm bin), a note for
// `agentbox plan` otherwise (a broad folder, one outside the home folder,
// one whose DACL could not be read). readable reports whether the sandbox
// users may read a folder (known false when that could not be read: a
// folder that is not there is skipped).
func pathReadGrants(env []string, readable func(dir string) (ok, known bool), covered func(dir string) bool, home, temp string) (grants []readGrant, notes []string) {
	if readable == nil {
		return nil, nil
	}
	path, _ := envValue(env, "PATH")
	seen := map[string]bool{}
	for _, dir := range pathEntries(path) {
		if seen[winKey(dir)] || !winAbs(dir) || covered(dir) {
			continue
		}
		seen[winKey(dir)] = true
		ok, known := readable(dir)
		switch {
		case !known:
			notes = append(notes, fmt.Sprintf("PATH folder %s: whether the sandbox users may read it could not be read; its programs may not run in the box", dir))
		case ok:
		case home != "" && winWithin(dir, home) && broadFolder(dir, home, temp) == "":
			grants = append(grants, readGrant{Path: dir, Folder: true, Origin: "a folder of the command's PATH in your profile: read only"})
		default:
			why := "it lies outside your profile"
			if home != "" && winWithin(dir, home) {
				why = "it is too broad to share: " + broadFolder(dir, home, temp)
			}
			notes = append(notes, fmt.Sprintf("PATH folder %s: the sandbox users cannot read it (%s), so its programs do not run in the box", dir, why))
		}
	}
	return grants, notes
}

// sandboxCanRead reports whether a folder of this DACL is readable by the
// sandbox users: Users, Authenticated Users or Everyone may read it
// (usersCanRead), or an allow ACE of the sandbox group grants reading and
// comes before any deny of it.
func sandboxCanRead(aces []rawACE, null bool, groupSID string) bool {
	if usersCanRead(aces, null) {
		return true
	}
	for _, a := range aces {
		if a.Flags&aceInheritOnly != 0 || groupSID == "" || !strings.EqualFold(a.SID, groupSID) {
			continue
		}
		reads := a.Mask&(fileListOrRead|genericRead|genericAll) != 0
		if a.deny() && reads {
			return false
		}
		if a.Type == aceAllow && reads {
			return true
		}
	}
	return false
}
