package supervise

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// A path can change between the moment agentbox checks it and the moment
// the box uses it: a second box writing the same project may swap a folder
// for a symlink to another project in between (renameat2 with
// RENAME_EXCHANGE). So every host path a run acts on is opened once, without
// following a symbolic link anywhere along it, checked through that
// descriptor, and handed on as the descriptor (bwrap's --bind-fd, Landlock
// rules on a file descriptor) — never looked up by name again.
//
// The plan's paths have their symlinks resolved during resolution, so a
// link met here was put there since: refusing it is failing closed.

// OpenPath opens path, which must be absolute, as an O_PATH descriptor
// without following any symbolic link along it (openat2 with
// RESOLVE_NO_SYMLINKS; a walk with O_NOFOLLOW on kernels before 5.6). A
// link anywhere along the path, the last part included, is an error that
// says so.
func OpenPath(path string) (*os.File, error) {
	fd, err := OpenFD(path)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenFD is OpenPath returning the bare descriptor, close-on-exec, which
// the caller closes. A link at the end of the path is refused too:
// openat2 with O_PATH|O_NOFOLLOW opens it as itself without an error,
// and a folder swapped with a link at that moment would be taken for the
// link.
func OpenFD(path string) (int, error) {
	fd, err := openNoFollow(unix.AT_FDCWD, path, unix.O_PATH)
	if err == nil && isLinkFD(fd) {
		unix.Close(fd)
		return -1, &os.PathError{Op: "open", Path: path, Err: ErrSymlink}
	}
	return fd, err
}

// openNoFollow opens path relative to dir with flags (plus O_CLOEXEC and
// O_NOFOLLOW), following no symbolic link along it.
func openNoFollow(dir int, path string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: unix.RESOLVE_NO_SYMLINKS}
	for {
		fd, err := unix.Openat2(dir, path, &how)
		switch {
		case err == nil:
			return fd, nil
		case err == unix.EINTR || err == unix.EAGAIN:
			// openat2 asks for a retry when a rename raced the lookup.
			continue
		case err == unix.ENOSYS:
			return walkNoFollow(dir, path, flags)
		case err == unix.ELOOP:
			return -1, &os.PathError{Op: "open", Path: path, Err: ErrSymlink}
		}
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
}

// ErrSymlink is the error of a symbolic link met where none is followed.
var ErrSymlink = errors.New("a symbolic link is in the way (it appeared after the plan was made, or the path names one); agentbox does not follow it")

// walkNoFollow is openNoFollow for kernels without openat2: one component
// at a time, each opened with O_NOFOLLOW relative to the last.
func walkNoFollow(dir int, path string, flags int) (int, error) {
	cur := dir
	if strings.HasPrefix(path, "/") {
		var err error
		if cur, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return -1, &os.PathError{Op: "open", Path: "/", Err: err}
		}
	}
	parts := strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
	if len(parts) == 0 {
		parts = []string{"."}
	}
	for i, p := range parts {
		f := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(parts)-1 {
			f = flags | unix.O_NOFOLLOW | unix.O_CLOEXEC
		}
		next, err := unix.Openat(cur, p, f, 0)
		if cur != dir {
			unix.Close(cur)
		}
		if err == unix.ELOOP {
			return -1, &os.PathError{Op: "open", Path: path, Err: ErrSymlink}
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		if i < len(parts)-1 {
			var st unix.Stat_t
			if err := unix.Fstat(next, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
				unix.Close(next)
				return -1, &os.PathError{Op: "open", Path: path, Err: ErrSymlink}
			}
		}
		cur = next
	}
	return cur, nil
}

// isLinkFD reports whether the O_PATH descriptor fd (opened with O_NOFOLLOW)
// is a symbolic link itself.
func isLinkFD(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// Pins are the host paths of one run, each opened once (OpenPath) and kept
// open until the box has its own reference to what they name.
type Pins struct {
	files map[string]*os.File
}

// NewPins returns an empty set of pins.
func NewPins() *Pins { return &Pins{files: map[string]*os.File{}} }

// PinsOf returns a set of pins holding the folders the supervisor
// prepared (backend.Context.Prepared), to which a backend adds its own.
// Closing it closes those too: a backend does so once the box holds its
// own references.
func PinsOf(prepared map[string]*os.File) *Pins {
	ps := NewPins()
	for path, f := range prepared {
		ps.files[path] = f
	}
	return ps
}

// Open returns the descriptor of path: the one Prepare made or checked,
// or a new OpenPath one. The Pins keep it; Close closes it.
func (ps *Pins) Open(path string) (*os.File, error) {
	if f, ok := ps.files[path]; ok {
		return f, nil
	}
	f, err := OpenPath(path)
	if err != nil {
		return nil, err
	}
	ps.files[path] = f
	return f, nil
}

// Pinned returns the descriptor Prepare made for path, or nil.
func (ps *Pins) Pinned(path string) *os.File {
	if ps == nil {
		return nil
	}
	return ps.files[path]
}

// Adopt takes over the descriptor fd, inherited from the process that
// pinned path.
func (ps *Pins) Adopt(path string, fd int) {
	unix.CloseOnExec(fd)
	ps.files[path] = os.NewFile(uintptr(fd), path)
}

// List returns every pinned path and its descriptor, for a child process.
func (ps *Pins) List() (paths []string, files []*os.File) {
	for p, f := range ps.files {
		paths = append(paths, p)
		files = append(files, f)
	}
	return paths, files
}

// Dir is Open for a path that must be a folder.
func (ps *Pins) Dir(path string) (*os.File, error) {
	f, err := ps.Open(path)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("not a folder (it was one when the plan was made)")}
	}
	return f, nil
}

// stamps are the identity and change time of every pinned folder, by path.
func (ps *Pins) stamps() map[string]plan.Stamp {
	if ps == nil || len(ps.files) == 0 {
		return nil
	}
	out := make(map[string]plan.Stamp, len(ps.files))
	for p, f := range ps.files {
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) == nil {
			// As a search's tree writes the device: major<<32 | minor.
			out[p] = plan.Stamp{Dev: uint64(unix.Major(st.Dev))<<32 | uint64(unix.Minor(st.Dev)), Ino: st.Ino, Ctime: st.Ctim.Nano()}
		}
	}
	return out
}

// Close closes every descriptor.
func (ps *Pins) Close() {
	if ps == nil {
		return
	}
	for _, f := range ps.files {
		f.Close()
	}
	ps.files = map[string]*os.File{}
}
