package hostexec

import (
	"path/filepath"
)

// listed answers "is there nothing at this path?" from one listing of the
// folder that would hold it, instead of one lstat per name: the home
// folder's registry looks up about a hundred names there, almost all
// missing. It answers only where a listing proves a name missing: its
// folder does not exist (or is not a folder), or it was listed, on a file
// system that matches names byte for byte, and the name is not in it.
// Anything else (a folder it cannot list, a file system or folder that
// folds case, a listing that failed) proves nothing, and the caller looks
// the name up itself.
type listed struct {
	dirs map[string]*dirNames
}

// dirNames is one folder's names, or that it has none (gone), or that
// nothing can be said from it (unknown).
type dirNames struct {
	names   map[string]bool
	gone    bool
	unknown bool
}

func newListed() *listed { return &listed{dirs: map[string]*dirNames{}} }

// missing reports whether nothing is at p, as a listing of its folder
// proves; false when it does not prove it.
func (l *listed) missing(p string) bool {
	if l == nil {
		return false
	}
	dir, name := filepath.Split(filepath.Clean(p))
	dir = filepath.Clean(dir)
	if name == "" || name == "." || name == ".." {
		return false
	}
	d, ok := l.dirs[dir]
	if !ok {
		d = listDir(dir)
		l.dirs[dir] = d
	}
	switch {
	case d.unknown:
		return false
	case d.gone:
		return true
	}
	return !d.names[name]
}
