package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// OpenHostFile opens, for appending, a file agentbox writes on the host
// while a box runs (the network log, a run's record), creating it with mode
// 0600 when it is missing. Text agentbox writes there comes partly from the
// box, so the file must be one the box cannot swap for another:
//
//   - it may not lie in a folder the box can write (a writable root, the
//     workspace, the box's temporary folder), judged on the path as given
//     and on the folder it really is once opened: the box could replace it
//     with a link to ~/.bashrc between two runs;
//   - its last element is never followed when it is a symbolic link
//     (O_NOFOLLOW), and what is opened must be a regular file of the user's
//     with no other name (a hard link made elsewhere would send the text
//     there).
func OpenHostFile(path string, p *plan.Plan) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	writable := boxWritable(p)
	if w := within(abs, writable); w != "" {
		return nil, fmt.Errorf("it is inside a writable folder of the box (%s), which could replace it; name a file outside it", w)
	}
	dir, err := os.OpenFile(filepath.Dir(abs), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(dir.Fd())))
	if err != nil {
		return nil, err
	}
	if w := within(filepath.Join(real, filepath.Base(abs)), writable); w != "" {
		return nil, fmt.Errorf("its folder is %s, inside a writable folder of the box (%s), which could replace it; name a file outside it", real, w)
	}
	// O_NONBLOCK: a FIFO planted there must not hang agentbox at open.
	fd, err := unix.Openat(int(dir.Fd()), filepath.Base(abs), unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	switch err {
	case unix.ELOOP:
		return nil, errors.New("it is a symlink; agentbox does not write through one")
	case unix.ENXIO:
		return nil, errors.New("it is not a regular file (a FIFO)")
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), abs)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		err = errors.New("it is not a regular file")
	case int(st.Uid) != p.Identity.UID:
		err = fmt.Errorf("it belongs to uid %d, not to you (uid %d)", st.Uid, p.Identity.UID)
	case st.Nlink > 1:
		err = fmt.Errorf("it has %d names (hard links); agentbox writes only to a file with one", st.Nlink)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// boxWritable are the host folders a box of p can write, real paths.
func boxWritable(p *plan.Plan) []string {
	var out []string
	for _, m := range p.Mounts {
		if (m.Op == plan.Bind || m.Op == plan.Pin) && m.Access == plan.ReadWrite {
			out = append(out, m.Src())
		}
	}
	for _, d := range []string{p.Tmp.HostDir, p.Workspace.Dir, p.Workspace.RepoDir} {
		if d != "" {
			out = append(out, d)
		}
	}
	return append(out, p.Box.Writable...)
}

// within returns the folder of dirs that holds path, or "".
func within(path string, dirs []string) string {
	for _, d := range dirs {
		if plan.Within(path, d) {
			return d
		}
	}
	return ""
}
