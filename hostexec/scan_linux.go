package hostexec

import (
	"errors"
	"path"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// Walk searches the tree at root (see Search). It reads folders with
// getdents(2) on descriptors (each opened from its parent's with
// O_NOFOLLOW, so a folder swapped for a symlink while the walk runs is not
// followed) and takes entry types from the listing itself: one open and a
// few getdents per folder, no stat per entry, and no string for a file
// whose name the search does not want.
func (s *Search) Walk(root string) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &pathError{"opening", root, err}
	}
	w := &walker{s: s, root: root, buf: make([]byte, 64<<10)}
	err = w.dir(fd, "", 0)
	return w.n, err
}

type walker struct {
	s    *Search
	root string
	n    int
	buf  []byte
}

var errLimit = errors.New("limit")

// dir walks the folder open at fd (and closes it).
func (w *walker) dir(fd int, rel string, depth int) error {
	defer rawClose(fd)
	abs := path.Join(w.root, rel)
	if depth > maxDepth {
		return &LimitError{Root: w.root, Limit: w.s.Limit, At: abs}
	}
	var st unix.Stat_t
	stamped := rawFstat(fd, &st) == nil
	now := Stamp{Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim.Nano()}
	var entries []Entry
	count := 0
	if idx := w.s.Index; idx != nil && stamped {
		if d, ok := idx.Dirs[abs]; ok && d.Dev == now.Dev && d.Ino == now.Ino && d.Ctime == now.Ctime && d.Ctime < idx.Taken-recent {
			entries, count = indexed(d), d.Count
			// The bound counts what the folder holds, listed or not.
			if w.n += count; w.n > w.s.Limit {
				return &LimitError{Root: w.root, Limit: w.s.Limit, At: abs}
			}
		}
	}
	if entries == nil {
		before := w.n
		var err error
		if entries, err = w.list(fd); err != nil {
			if errors.Is(err, errLimit) {
				return &LimitError{Root: w.root, Limit: w.s.Limit, At: abs}
			}
			return nil // a folder that cannot be read holds nothing the box could write either
		}
		count = w.n - before
	}
	descend := w.s.Visit(rel, entries)
	if rec := w.s.Record; rec != nil && stamped {
		d := plan.IndexDir{Dev: now.Dev, Ino: now.Ino, Ctime: now.Ctime, Count: count, Bare: !descend && rel != "" && IsBare(entries)}
		if !d.Bare {
			for _, e := range entries {
				switch {
				case w.s.Names[e.Name]:
					d.Notes = append(d.Notes, e.Name)
				case e.Type == TypeDir && descend:
					d.Subdirs = append(d.Subdirs, e.Name)
				}
			}
		}
		rec.Dirs[abs] = d
	}
	if !descend {
		return nil
	}
	for _, e := range entries {
		if e.Type != TypeDir {
			continue
		}
		sub, err := rawOpenat(fd, e.Name)
		if err != nil {
			continue // gone, or swapped for a symlink meanwhile
		}
		if err := w.dir(sub, path.Join(rel, e.Name), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// indexed are the entries an index recorded for a folder.
func indexed(d plan.IndexDir) []Entry {
	out := make([]Entry, 0, len(d.Subdirs)+len(d.Notes)+1)
	if d.Bare {
		return append(out, Entry{"HEAD", TypeFile}, Entry{"objects", TypeDir}, Entry{"refs", TypeDir})
	}
	for _, n := range d.Notes {
		// A wanted name: what it is, the visit looks at again itself.
		out = append(out, Entry{Name: n, Type: TypeOther})
	}
	for _, s := range d.Subdirs {
		out = append(out, Entry{Name: s, Type: TypeDir})
	}
	return out
}

// list reads the entries of the folder at fd.
func (w *walker) list(fd int) ([]Entry, error) {
	var out []Entry
	for {
		n, err := rawGetdents(fd, w.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		for off := 0; off < n; {
			// struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2),
			// d_type (1), d_name (NUL-terminated).
			reclen := int(*(*uint16)(unsafe.Pointer(&w.buf[off+16])))
			typ := w.buf[off+18]
			name := w.buf[off+19 : off+reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			off += reclen
			if len(name) == 1 && name[0] == '.' || len(name) == 2 && name[0] == '.' && name[1] == '.' {
				continue
			}
			w.n++
			if w.n > w.s.Limit {
				return nil, errLimit
			}
			t := TypeOther
			switch typ {
			case unix.DT_DIR:
				t = TypeDir
			case unix.DT_REG:
				t = TypeFile
			case unix.DT_LNK:
				t = TypeSymlink
			case unix.DT_UNKNOWN:
				// Some file systems do not fill d_type: ask.
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					t = typeOfMode(st.Mode)
				}
			}
			if t != TypeDir && !w.s.Names[string(name)] && !(w.s.Links && t == TypeSymlink) {
				continue
			}
			out = append(out, Entry{Name: string(name), Type: t})
		}
	}
}

func typeOfMode(m uint32) EntryType {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return TypeDir
	case unix.S_IFREG:
		return TypeFile
	case unix.S_IFLNK:
		return TypeSymlink
	}
	return TypeOther
}

type pathError struct {
	op, path string
	err      error
}

func (e *pathError) Error() string { return e.op + " " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// The walk's system calls on a local folder return at once; made raw, they
// skip the Go scheduler's bookkeeping for a call that may block, which
// otherwise costs more than the call itself over tens of thousands of
// folders.

func rawOpenat(dirfd int, name string) (int, error) {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return -1, err
	}
	r, _, e := unix.RawSyscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func rawFstat(fd int, st *unix.Stat_t) error {
	if _, _, e := unix.RawSyscall(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)), 0); e != 0 {
		return e
	}
	return nil
}

func rawGetdents(fd int, buf []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func rawClose(fd int) { unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0) }
