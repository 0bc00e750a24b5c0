package seatbelt

import "path/filepath"

// canonFS resolves path through the file system, as Seatbelt sees it; a
// path that does not exist yet keeps its resolved parent.
func canonFS(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	dir, name := filepath.Split(path)
	if dir == "" || dir == path {
		return Canonical(path)
	}
	return filepath.Join(canonFS(filepath.Clean(dir)), name)
}
