package hostexec

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Held is a placeholder another run of the user's stands at a missing
// guarded path for its time (package supervise: <state>/pending/RUN.holds),
// by path, kind ("dir" or "file"), content and identity.
type Held struct {
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Content string `json:"content,omitempty"`
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
}

// heldPlaceholders reads the placeholders the runs recorded in state hold.
// A run that died may still be listed: its placeholders are still there
// too, until the next run's recovery removes them.
func heldPlaceholders(state string) map[string]Held {
	if state == "" {
		return nil
	}
	dir := filepath.Join(state, "pending")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string]Held{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".holds") || !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || len(data) > 1<<20 {
			continue
		}
		var hs []Held
		if json.Unmarshal(data, &hs) == nil {
			for _, h := range hs {
				out[filepath.Clean(h.Path)] = h
			}
		}
	}
	return out
}

// heldFS is the search's view of the writable roots with the placeholders
// of other runs taken for what they stand for: nothing. Without it a run
// that starts while another holds a placeholder plans the placeholder as
// the user's own file or folder, and the other run, ending first, takes
// it away before this one binds it (or leaves it for good when this one
// made a placeholder inside it). Planned as missing, the path gets this
// run's own placeholder, which joins the other run's hold. Only an
// untouched placeholder counts: the same file (device and inode), a
// folder still empty, a file still holding what it was made with;
// anything else is the user's now and searched as such.
type heldFS struct {
	FS
	held  map[string]Held
	holds map[string]bool // the untouched ones, by path
}

// withHeld is f with the placeholders of state's runs taken for nothing.
// They are read, and judged untouched or not, at once under the shared
// placeholder lock (lockShared), so no run is seen between making a
// placeholder and recording that it holds it.
func withHeld(f FS, state string) FS {
	unlock := lockShared(state)
	defer unlock()
	held := heldPlaceholders(state)
	if len(held) == 0 {
		return f
	}
	h := &heldFS{FS: f, held: held, holds: map[string]bool{}}
	for p, ph := range held {
		if h.untouched(ph) {
			h.holds[p] = true
		}
	}
	if len(h.holds) == 0 {
		return f
	}
	return h
}

// Real forwards the real file system's mark (see resolver.search).
func (h *heldFS) Real() bool {
	x, ok := h.FS.(interface{ Real() bool })
	return ok && x.Real()
}

// placeholder reports whether p is, or lies beneath, an untouched
// placeholder of another run.
func (h *heldFS) placeholder(p string) bool {
	p = filepath.Clean(p)
	for q := p; ; q = filepath.Dir(q) {
		if h.holds[q] {
			return true
		}
		if q == filepath.Dir(q) {
			return false
		}
	}
}

// untouched reports whether placeholder ph is as its run made it. A
// folder may hold placeholders of other runs, each as made (a run that
// planned the folder as the user's made its own inside it), and nothing
// else.
func (h *heldFS) untouched(ph Held) bool {
	return h.untouchedAt(ph, 0)
}

func (h *heldFS) untouchedAt(ph Held, depth int) bool {
	if depth > 8 {
		return false
	}
	fi, err := h.FS.Lstat(ph.Path)
	if err != nil {
		return false
	}
	dev, ino, ok := fileIdentity(fi)
	if !ok || dev != ph.Dev || ino != ph.Ino {
		return false
	}
	switch ph.Kind {
	case "dir":
		if !fi.IsDir() {
			return false
		}
		entries, err := h.FS.ReadDir(ph.Path)
		if err != nil {
			return false
		}
		for _, e := range entries {
			in, ok := h.held[filepath.Join(ph.Path, e.Name())]
			if !ok || !h.untouchedAt(in, depth+1) {
				return false
			}
		}
		return true
	default:
		if !fi.Mode().IsRegular() || fi.Size() != int64(len(ph.Content)) {
			return false
		}
		data, err := h.FS.ReadFile(ph.Path)
		return err == nil && string(data) == ph.Content
	}
}

func (h *heldFS) missing(op, p string) error {
	return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
}

func (h *heldFS) Lstat(p string) (fs.FileInfo, error) {
	if h.placeholder(p) {
		return nil, h.missing("lstat", p)
	}
	return h.FS.Lstat(p)
}

func (h *heldFS) Stat(p string) (fs.FileInfo, error) {
	if h.placeholder(p) {
		return nil, h.missing("stat", p)
	}
	return h.FS.Stat(p)
}

func (h *heldFS) ReadFile(p string) ([]byte, error) {
	if h.placeholder(p) {
		return nil, h.missing("open", p)
	}
	return h.FS.ReadFile(p)
}

func (h *heldFS) ReadDir(p string) ([]fs.DirEntry, error) {
	if h.placeholder(p) {
		return nil, h.missing("open", p)
	}
	return h.FS.ReadDir(p)
}
