package winsandbox

import "strings"

// Windows paths are handled as opaque strings, with three exceptions that
// the ACL rules need: comparing two paths (case-insensitively, as NTFS does
// for the ASCII range), asking whether one lies inside another, and listing
// the folders between a root and a path below it. Both separators are
// accepted so a plan written with forward slashes still compares correctly.

// winKey is the comparison form of a Windows path: backslashes, no trailing
// separator (except for a drive root such as `c:\`), lower case.
//
// strings.ToLower is close to, but not exactly, the NTFS upcase table; for
// the paths agentbox handles (drive letters, ASCII folder names) they agree.
func winKey(p string) string {
	p = strings.ReplaceAll(p, "/", `\`)
	for len(p) > 3 && strings.HasSuffix(p, `\`) {
		p = p[:len(p)-1]
	}
	return strings.ToLower(p)
}

// winWithin reports whether p is dir or lies below it.
func winWithin(p, dir string) bool {
	p, dir = winKey(p), winKey(dir)
	if p == dir {
		return true
	}
	if !strings.HasSuffix(dir, `\`) {
		dir += `\`
	}
	return strings.HasPrefix(p, dir)
}

// winBetween returns the folders strictly between root and p (p below
// root), outermost first, spelled as in p.
func winBetween(root, p string) []string {
	if !winWithin(p, root) || winKey(p) == winKey(root) {
		return nil
	}
	np := strings.ReplaceAll(p, "/", `\`)
	var out []string
	for i := len(winKey(root)) + 1; i < len(np); i++ {
		if np[i] == '\\' && winKey(np[:i]) != winKey(root) {
			out = append(out, np[:i])
		}
	}
	return out
}

// winAbs reports whether p looks like an absolute Windows path: a drive
// letter followed by a separator, or a UNC path.
func winAbs(p string) bool {
	if len(p) >= 3 && isLetter(p[0]) && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		return true
	}
	return strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, "//")
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// winUNC reports whether p is a network (UNC) path, \\server\share\...,
// but not a local device path such as \\?\C:\ or \\.\NUL.
func winUNC(p string) bool {
	p = strings.ReplaceAll(p, "/", `\`)
	if !strings.HasPrefix(p, `\\`) {
		return false
	}
	if strings.HasPrefix(p, `\\?\`) || strings.HasPrefix(p, `\\.\`) {
		rest := p[4:]
		return strings.HasPrefix(strings.ToUpper(rest), `UNC\`)
	}
	return true
}

// winBase is the last element of a Windows path.
func winBase(p string) string {
	p = strings.TrimRight(strings.ReplaceAll(p, "/", `\`), `\`)
	return p[strings.LastIndex(p, `\`)+1:]
}

// winDir is a Windows path without its last element.
func winDir(p string) string {
	p = strings.TrimRight(strings.ReplaceAll(p, "/", `\`), `\`)
	i := strings.LastIndex(p, `\`)
	if i < 0 {
		return p
	}
	if i == 2 && p[1] == ':' {
		return p[:3] // C:\
	}
	return p[:i]
}

// winJoin joins a Windows folder and a name.
func winJoin(dir, name string) string {
	return strings.TrimRight(dir, `\/`) + `\` + name
}
