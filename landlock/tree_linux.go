package landlock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/supervise"
)

// fdTree is the real filesystem seen through descriptors: every file is
// opened without following a link (relative to its folder's descriptor),
// identified by device and inode, and granted through its descriptor.
// Folders the supervisor prepared and checked come from pins.
type fdTree struct {
	pins *supervise.Pins
}

func (t fdTree) open(p string) (node, error) {
	var fd int
	var err error
	if f := t.pins.Pinned(p); f != nil {
		fd, err = unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	} else if fd, err = supervise.OpenFD(p); errors.Is(err, supervise.ErrSymlink) {
		err = errors.Join(errLink, err)
	}
	if err != nil {
		return node{}, err
	}
	// OpenFD refuses a link at the end of the path too: taken for the
	// folder it stood for a moment before (a box swapping the two), its
	// identity would leave the folder out of the carving, which would then
	// grant it whole.
	return stat(p, fd)
}

func (t fdTree) names(n node) ([]string, error) {
	fd, err := unix.Openat(n.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: n.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), n.path)
	defer f.Close()
	return f.Readdirnames(-1)
}

func (t fdTree) child(n node, name string) (node, error) {
	p := n.path + "/" + name
	if n.path == "/" {
		p = "/" + name
	}
	fd, err := unix.Openat(n.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return node{}, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return stat(p, fd)
}

func (fdTree) close(n node) { unix.Close(n.fd) }

// stat makes the node of the descriptor fd, which it takes over.
func stat(p string, fd int) (node, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return node{}, &os.PathError{Op: "stat", Path: p, Err: err}
	}
	mode := st.Mode & unix.S_IFMT
	return node{path: p, fd: fd, id: fileID{dev: st.Dev, ino: st.Ino},
		dir: mode == unix.S_IFDIR, link: mode == unix.S_IFLNK}, nil
}
