package mount

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/supervise"
)

// The check file (fd 8) holds one record per Check, each ended by a NUL:
// kind, device, inode and path separated by tabs (the path last, so it may
// hold a tab itself). The device and inode are 0 for what bwrap makes.

// checkFile writes the binds the init makes (makes, in order, first) and
// the checks of d for the init: each bind's device and inode are taken
// from the descriptor opened for it (slots, from firstFD).
func checkFile(d Detail, makes []InitMount, slots []*os.File) (*os.File, error) {
	var b bytes.Buffer
	all := make([]Check, 0, len(makes)+len(d.Checks))
	for _, m := range makes {
		all = append(all, Check{Kind: m.Kind, Path: m.Path, FD: m.FD})
	}
	for _, c := range append(all, d.Checks...) {
		var dev, ino uint64
		if c.FD > 0 {
			f := slots[c.FD-firstFD]
			var st unix.Stat_t
			if err := unix.Fstat(int(f.Fd()), &st); err != nil {
				return nil, &os.PathError{Op: "stat", Path: c.Path, Err: err}
			}
			dev, ino = st.Dev, st.Ino
		}
		fmt.Fprintf(&b, "%s\t%d\t%d\t%s\x00", c.Kind, dev, ino, c.Path)
	}
	return supervise.SealedFile("agentbox-checks", b.Bytes())
}

// verifyMounts checks, in the box, every record of the check file data.
func verifyMounts(data []byte) error {
	for _, rec := range bytes.Split(data, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		f := strings.SplitN(string(rec), "\t", 4)
		if len(f) != 4 {
			return fmt.Errorf("bad check record %q", rec)
		}
		dev, err1 := strconv.ParseUint(f[1], 10, 64)
		ino, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("bad check record %q", rec)
		}
		if strings.HasPrefix(f[0], "make-") {
			// Only the C init makes mounts (InitMount: the Go init's
			// threads each have a mount namespace of their own).
			return fmt.Errorf("%s: the Go init cannot make this mount: %s", f[3], errSwapped)
		}
		if err := verifyMount(f[0], dev, ino, f[3]); err != nil {
			return fmt.Errorf("%s: %w", f[3], err)
		}
	}
	return nil
}

// errSwapped is the end of every message about a mount that is not what
// agentbox asked for.
const errSwapped = "a path was swapped while the box started (another box writing the same folders?); nothing ran"

// verifyMount checks one mount: reached without following a link, the root
// of a mount, and the file agentbox opened (a bind) or an empty tmpfs
// folder or file bwrap made (a hidden path).
func verifyMount(kind string, dev, ino uint64, path string) error {
	fd, err := supervise.OpenFD(path)
	if kind == "ro" {
		return verifyReadOnly(fd, err)
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%v: %s", err, errSwapped)
	}
	defer unix.Close(fd)
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_SIZE, &stx); err != nil {
		return err
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return errors.New("not mounted there: " + errSwapped)
	}
	if kind == "bind" || kind == "bind-ro" {
		if unix.Mkdev(stx.Dev_major, stx.Dev_minor) != dev || stx.Ino != ino {
			return errors.New("not the folder or file agentbox opened: " + errSwapped)
		}
		if kind == "bind-ro" {
			var st unix.Statfs_t
			if err := unix.Fstatfs(fd, &st); err != nil {
				return err
			}
			if st.Flags&unix.ST_RDONLY == 0 {
				return errors.New("writable in the box (it must be read-only): " + errSwapped)
			}
		}
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return err
	}
	if st.Type != unix.TMPFS_MAGIC {
		return errors.New("not the empty tmpfs agentbox put there: " + errSwapped)
	}
	switch kind {
	case "hide-dir":
		if st.Flags&unix.ST_RDONLY == 0 || stx.Mode&unix.S_IFMT != unix.S_IFDIR {
			return errors.New("not an empty read-only folder: " + errSwapped)
		}
	case "hide-file":
		if st.Flags&unix.ST_RDONLY == 0 || stx.Mode&unix.S_IFMT != unix.S_IFREG || stx.Size != 0 {
			return errors.New("not an empty read-only file: " + errSwapped)
		}
	}
	return nil
}

// verifyReadOnly checks a path bwrap makes read-only itself (kind "ro"),
// opened as fd (or not, err): missing is fine, there it must be on a
// read-only mount.
func verifyReadOnly(fd int, err error) error {
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return err
	}
	defer unix.Close(fd)
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return err
	}
	if st.Flags&unix.ST_RDONLY == 0 {
		return errors.New("writable in the box (bubblewrap did not make it read-only): nothing ran")
	}
	return nil
}

// MountAPI reports whether this kernel lets agentbox use the mount API the
// C init makes mounts with (open_tree, move_mount, fsopen, fsconfig and
// fsmount: Linux 5.2; mount_setattr: 5.12), each asked without a
// capability, as any user may: open_tree without a clone is an open,
// which on no descriptor fails with EBADF, fsconfig refuses no descriptor,
// and mount_setattr, move_mount, fsopen and fsmount refuse an unknown flag
// with EINVAL before they look at anything else (the last three after
// their capability check). Missing,
// they fail with ENOSYS; a filter that refuses one (a container's seccomp
// profile) answers something else too, or EPERM, which for a process
// without CAP_SYS_ADMIN under any seccomp filter is taken as refused.
// Either way the mounts stay bwrap's, rather than every box failing at
// the init's first mount.
var MountAPI = sync.OnceValue(func() bool {
	fd, err := unix.OpenTree(-1, "", unix.AT_EMPTY_PATH)
	if err == nil {
		unix.Close(fd)
		return false
	}
	if !errors.Is(err, unix.EBADF) || !errors.Is(unix.MountSetattr(-1, "", 1<<31, &unix.MountAttr{}), unix.EINVAL) {
		return false
	}
	// fsconfig refuses no descriptor with EINVAL before it looks further.
	if err := unix.FsconfigCreate(-1); !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EBADF) {
		return false
	}
	// move_mount, fsopen and fsmount ask for CAP_SYS_ADMIN first:
	// without it (a user's agentbox; the init has it in the box) EPERM is
	// all they say. A seccomp filter refusing them says EPERM too (a
	// container runtime's profile, to a process without the capability):
	// EPERM is taken for the capability check only where no filter is in
	// force, or the box would fail at the init's first mount.
	lacksCap := !canMount() && !seccompFiltered()
	refused := func(err error) bool {
		return !errors.Is(err, unix.EINVAL) && !(errors.Is(err, unix.EPERM) && lacksCap)
	}
	if refused(unix.MoveMount(-1, "", -1, "", 1<<31)) {
		return false
	}
	if fd, err := unix.Fsopen("tmpfs", 1<<31); err == nil {
		unix.Close(fd)
		return false
	} else if refused(err) {
		return false
	}
	if fd, err := unix.Fsmount(-1, 1<<31, 0); err == nil {
		unix.Close(fd)
		return false
	} else if refused(err) {
		return false
	}
	return true
})

// seccompFiltered reports whether a seccomp filter (or strict mode) is in
// force for this process; when the kernel will not say, it is taken to be.
func seccompFiltered() bool {
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return err != nil || mode != 0
}

// canMount reports whether this process holds CAP_SYS_ADMIN.
func canMount() bool {
	h := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var d [2]unix.CapUserData
	if unix.Capget(&h, &d[0]) != nil {
		return true // unknown: EPERM then means refused
	}
	return d[unix.CAP_SYS_ADMIN/32].Effective&(1<<(unix.CAP_SYS_ADMIN%32)) != 0
}
