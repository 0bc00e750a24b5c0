package winsandbox

import (
	"slices"
	"strings"
)

// ACLs by handle, never through a link (the pure half; acl_windows.go
// opens the handles).
//
// agentbox reads and writes a DACL through a handle it opened without
// following a reparse point, and refuses the path when it is, or passes
// through, a junction or symbolic link: a junction the box swapped in for
// a nested writable root between runs would otherwise have the next run
// grant the box its target (the Startup folder, ~\.ssh). Only a read grant
// on one file (the runner's agentbox.exe, a command's program) follows
// links: it names that file and nothing beside it.
//
// Which reparse points redirect a name is the tag's name-surrogate bit
// (IsReparseTagNameSurrogate): junctions and volume mount points
// (IO_REPARSE_TAG_MOUNT_POINT), symbolic links, WSL's and AppExecLink
// aside. Reparse points that do not redirect (OneDrive's and other cloud
// files, deduplicated files) are ordinary folders and files for this.

const (
	fileAttributeDirectory    = 0x10
	fileAttributeReparsePoint = 0x400
	reparseTagNameSurrogate   = 0x20000000
	reparseTagMountPoint      = 0xA0000003
	reparseTagSymlink         = 0xA000000C
)

// redirects reports whether a file of these attributes and reparse tag
// (FILE_ATTRIBUTE_TAG_INFO) sends its name elsewhere.
func redirects(attributes, tag uint32) bool {
	return attributes&fileAttributeReparsePoint != 0 && tag&reparseTagNameSurrogate != 0
}

// mayFollow reports whether path's DACL may be read and written through
// links: only when every ACE the record has there, live or not, is a read
// grant on that one file (allow, read rights alone, not inherited).
func (r *aclRecord) mayFollow(path string) bool {
	n := 0
	for _, a := range r.ACEs {
		if winKey(a.Path) != winKey(path) {
			continue
		}
		if a.Deny || a.Inherit || a.Mask != FileRights(RightsRead) {
			return false
		}
		n++
	}
	return n > 0
}

// samePath reports whether the path a handle resolves to
// (GetFinalPathNameByHandle: "\\?\C:\…" or "\\?\UNC\…") is want (its long
// form), compared as Windows compares names: a difference means a link or
// a mapped drive (subst) lay on the way.
func samePath(final, want string) bool {
	norm := func(p string) string {
		p = strings.ReplaceAll(p, "/", `\`)
		if rest, ok := strings.CutPrefix(p, `\\?\UNC\`); ok {
			p = `\\` + rest
		} else if rest, ok := strings.CutPrefix(p, `\\?\`); ok {
			p = rest
		}
		if len(p) > 3 {
			p = strings.TrimRight(p, `\`)
		}
		return strings.ToUpper(p)
	}
	return norm(final) == norm(want)
}

// extendedPath is path as the Win32 file calls take it past MAX_PATH: a
// drive path of 248 characters or more gets "\\?\" (a UNC one
// "\\?\UNC\"), after its "." and ".." parts are resolved by name and its
// slashes turned into backslashes (the prefix turns both off). Shorter
// paths and paths that already have a prefix are left alone.
func extendedPath(path string) string {
	if len(path) < 248 || strings.HasPrefix(path, `\\?\`) || strings.HasPrefix(path, `\\.\`) {
		return path
	}
	p := strings.ReplaceAll(path, "/", `\`)
	unc := strings.HasPrefix(p, `\\`)
	if !unc && !(len(p) >= 3 && p[1] == ':' && p[2] == '\\') {
		return path // relative: only an absolute path can take the prefix
	}
	var parts []string
	for _, part := range strings.Split(strings.TrimPrefix(p, `\\`), `\`) {
		switch part {
		case "", ".":
		case "..":
			if len(parts) > 1 {
				parts = parts[:len(parts)-1]
			}
		default:
			parts = append(parts, part)
		}
	}
	if unc {
		return `\\?\UNC\` + strings.Join(parts, `\`)
	}
	return `\\?\` + strings.Join(parts, `\`)
}

// A link on the way to a file agentbox follows (mayFollow) must be one the
// user or the system made: a symbolic link or junction a box made (owned
// by a sandbox user; Developer Mode lets any user make symbolic links,
// and junctions need no privilege) in a folder it could write, such as
// another workspace's writable root holding the command's program, would
// otherwise have agentbox grant the sandbox users read on whatever file
// the box chose (~\.ssh\id_rsa), and remove agentbox's ACEs there when the
// grant ends.

// wellKnownLinkOwners are the owners besides the user whose links are
// followed: SYSTEM, Administrators (what an elevated installer makes) and
// TrustedInstaller.
var wellKnownLinkOwners = map[string]bool{
	"S-1-5-18":     true,
	"S-1-5-32-544": true,
	"S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464": true,
}

// trustedLinkOwner reports whether a link owned by owner may be followed
// for the user whose SID is user.
func trustedLinkOwner(owner, user string) bool {
	return wellKnownLinkOwners[strings.ToUpper(owner)] || user != "" && strings.EqualFold(owner, user)
}

// pathSteps returns each folder on the way to path below its volume's
// root, and path itself, outermost first: `C:\a\b` gives `C:\a`, `C:\a\b`.
func pathSteps(path string) []string {
	var out []string
	for p := strings.TrimRight(strings.ReplaceAll(path, "/", `\`), `\`); ; {
		d := winDir(p)
		if d == p || len(p) <= 3 || strings.HasPrefix(p, `\\`) && strings.Count(strings.TrimPrefix(p, `\\`), `\`) < 2 {
			break
		}
		out = append(out, p)
		p = strings.TrimRight(d, `\`)
	}
	slices.Reverse(out)
	return out
}
