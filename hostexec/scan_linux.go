package hostexec

import (
	"errors"
	"path"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Walk lists every folder below root, not following symlinks and not
// crossing into folders visit turns down, and calls visit for each. It
// reads folders with getdents(2) on descriptors (openat with O_NOFOLLOW, so
// a folder swapped for a symlink while the walk runs is not followed), and
// takes entry types from the listing itself, so a walk costs one open and
// a few getdents per folder and no stat per entry. More than limit entries
// is a *LimitError. stamps, when not nil, receives each folder's Stamp.
func Walk(root string, limit int, visit Visit, stamps func(rel string, s Stamp)) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &pathError{"opening", root, err}
	}
	w := &walker{root: root, limit: limit, visit: visit, stamps: stamps, buf: make([]byte, 64<<10)}
	err = w.dir(fd, "")
	return w.n, err
}

type walker struct {
	root   string
	limit  int
	n      int
	visit  Visit
	stamps func(string, Stamp)
	buf    []byte
}

// dir walks the folder open at fd (and closes it).
func (w *walker) dir(fd int, rel string) error {
	if w.stamps != nil {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil {
			w.stamps(rel, Stamp{Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim.Nano()})
		}
	}
	entries, err := w.list(fd)
	if err != nil {
		unix.Close(fd)
		if errors.Is(err, errLimit) {
			return &LimitError{Root: w.root, Limit: w.limit, At: path.Join(w.root, rel)}
		}
		return nil // a folder that cannot be read holds nothing the box could write either
	}
	if !w.visit(rel, entries) {
		unix.Close(fd)
		return nil
	}
	for _, e := range entries {
		if e.Type != TypeDir {
			continue
		}
		sub, err := unix.Openat(fd, e.Name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone, or swapped for a symlink meanwhile
		}
		if err := w.dir(sub, path.Join(rel, e.Name)); err != nil {
			unix.Close(fd)
			return err
		}
	}
	unix.Close(fd)
	return nil
}

var errLimit = errors.New("limit")

// list reads the entries of the folder at fd.
func (w *walker) list(fd int) ([]Entry, error) {
	var out []Entry
	for {
		n, err := unix.Getdents(fd, w.buf)
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
			if w.n > w.limit {
				return nil, errLimit
			}
			e := Entry{Name: string(name)}
			switch typ {
			case unix.DT_DIR:
				e.Type = TypeDir
			case unix.DT_REG:
				e.Type = TypeFile
			case unix.DT_LNK:
				e.Type = TypeSymlink
			case unix.DT_UNKNOWN:
				// Some file systems do not fill d_type: ask.
				var st unix.Stat_t
				if unix.Fstatat(fd, e.Name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					e.Type = typeOfMode(st.Mode)
				}
			}
			out = append(out, e)
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
