//go:build linux && (amd64 || arm64)

package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/fslog"
)

// viaProc makes the broker read the caller's memory and descriptors
// through /proc, as it does where a seccomp filter refuses
// process_vm_readv and pidfd_getfd (tests set it).
var viaProc = false

// FileID is a file by device and inode.
type FileID struct{ Dev, Ino uint64 }

// Broker decides a Landlock box's metadata calls (see the package doc).
type Broker struct {
	grant map[FileID]bool
}

// New returns a broker for a box whose write grant is the files and
// folders grant (every file below one of them is writable).
func New(grant []FileID) (*Broker, error) {
	b := &Broker{grant: map[FileID]bool{}}
	for _, id := range grant {
		b.grant[id] = true
	}
	return b, nil
}

// Close does nothing: the thread Prepare changed ends with its goroutine.
func (b *Broker) Close() {}

// Prepare locks the calling goroutine to its thread for good: Answer
// changes that thread's credentials while it works (see Answer). When the
// goroutine ends, the thread ends with it.
func (b *Broker) Prepare() error {
	runtime.LockOSThread()
	return nil
}

// Answer decides one call (fslog.Broker), on the goroutine Prepare locked.
// Run as root it empties the thread's effective capabilities while it
// works, as the box's processes have none, so that the calls it performs
// meet the kernel's permission checks the box would meet; it puts them
// back for the rest of the supervisor's work on this thread (the
// filesystem log reads the box's processes with them).
func (b *Broker) Answer(req fslog.Request, valid func() bool) (int64, int) {
	if os.Geteuid() == 0 {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var saved, data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &saved[0]); err != nil {
			return 0, int(unix.EPERM)
		}
		data = saved
		data[0].Effective, data[1].Effective = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return 0, int(unix.EPERM)
		}
		defer unix.Capset(&hdr, &saved[0])
	}
	return b.answer(req, valid)
}

// caller is the calling thread and what the broker holds of its process
// while it answers.
type caller struct {
	tid, tgid int
	pidfd     int
	memfd     int // /proc/TID/mem, opened when process_vm_readv is refused
}

func (c *caller) close() {
	if c.pidfd >= 0 {
		unix.Close(c.pidfd)
	}
	if c.memfd >= 0 {
		unix.Close(c.memfd)
	}
}

// errnoOf is err's errno, EACCES when it has none.
func errnoOf(err error) int {
	var e unix.Errno
	if errors.As(err, &e) {
		return int(e)
	}
	return int(unix.EACCES)
}

// answer decides req on the broker's thread.
func (b *Broker) answer(req fslog.Request, valid func() bool) (int64, int) {
	c, err := open(req.Pid)
	if err != nil {
		return 0, errnoOf(err)
	}
	defer c.close()
	// Everything read from here on belongs to this call only while the
	// caller waits in it: its thread ID names it, and the pidfd its
	// process, from now on.
	if !valid() {
		return 0, int(unix.EINTR)
	}
	a := req.Args
	switch req.Nr {
	case unix.SYS_FCHMOD:
		return b.onFD(c, int32(a[0]), func(fd int) error {
			if uint32(a[1])&(unix.S_ISUID|unix.S_ISGID) != 0 {
				return unix.EPERM // as chmod
			}
			return unix.Fchmod(fd, uint32(a[1]))
		})
	case unix.SYS_FCHMODAT:
		return b.onPath(c, int32(a[0]), a[1], true, false, valid, func(t *target) error { return t.chmod(uint32(a[2])) })
	case unix.SYS_FCHMODAT2:
		return b.onPath(c, int32(a[0]), a[1], a[3]&unix.AT_SYMLINK_NOFOLLOW == 0, a[3]&unix.AT_EMPTY_PATH != 0, valid,
			func(t *target) error { return t.chmod(uint32(a[2])) })
	case unix.SYS_FCHOWN:
		return b.onFD(c, int32(a[0]), func(fd int) error { return unix.Fchown(fd, int(int32(a[1])), int(int32(a[2]))) })
	case unix.SYS_FCHOWNAT:
		return b.onPath(c, int32(a[0]), a[1], a[4]&unix.AT_SYMLINK_NOFOLLOW == 0, a[4]&unix.AT_EMPTY_PATH != 0, valid,
			func(t *target) error { return t.chown(int(int32(a[2])), int(int32(a[3]))) })
	case unix.SYS_UTIMENSAT:
		ts, err := c.timespecs(a[2])
		if err != nil {
			return 0, errnoOf(err)
		}
		if a[1] == 0 {
			// utimensat(fd, NULL, ...): futimens.
			return b.onFD(c, int32(a[0]), func(fd int) error { return utimensat(fd, "", ts, 0) })
		}
		return b.onPath(c, int32(a[0]), a[1], a[3]&unix.AT_SYMLINK_NOFOLLOW == 0, a[3]&unix.AT_EMPTY_PATH != 0, valid,
			func(t *target) error { return t.utimes(ts) })
	case unix.SYS_SETXATTR, unix.SYS_LSETXATTR:
		name, value, err := c.xattr(a[1], a[2], a[3])
		if err != nil {
			return 0, errnoOf(err)
		}
		return b.onPath(c, unix.AT_FDCWD, a[0], req.Nr == unix.SYS_SETXATTR, false, valid,
			func(t *target) error { return t.setxattr(name, value, int(a[4])) })
	case unix.SYS_FSETXATTR:
		name, value, err := c.xattr(a[1], a[2], a[3])
		if err != nil {
			return 0, errnoOf(err)
		}
		return b.onFD(c, int32(a[0]), func(fd int) error { return unix.Fsetxattr(fd, name, value, int(a[4])) })
	case unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR:
		name, err := c.name(a[1])
		if err != nil {
			return 0, errnoOf(err)
		}
		return b.onPath(c, unix.AT_FDCWD, a[0], req.Nr == unix.SYS_REMOVEXATTR, false, valid,
			func(t *target) error { return t.removexattr(name) })
	case unix.SYS_FREMOVEXATTR:
		name, err := c.name(a[1])
		if err != nil {
			return 0, errnoOf(err)
		}
		return b.onFD(c, int32(a[0]), func(fd int) error { return unix.Fremovexattr(fd, name) })
	case unix.SYS_SETXATTRAT:
		// struct xattr_args { __aligned_u64 value; __u32 size; __u32 flags; }
		if a[5] != 16 {
			return 0, int(unix.EINVAL)
		}
		var args [16]byte
		if err := c.mem(a[4], args[:]); err != nil {
			return 0, errnoOf(err)
		}
		name, value, err := c.xattr(a[3], binary.LittleEndian.Uint64(args[0:]), uint64(binary.LittleEndian.Uint32(args[8:])))
		if err != nil {
			return 0, errnoOf(err)
		}
		flags := int(binary.LittleEndian.Uint32(args[12:]))
		return b.onPath(c, int32(a[0]), a[1], a[2]&unix.AT_SYMLINK_NOFOLLOW == 0, a[2]&unix.AT_EMPTY_PATH != 0, valid,
			func(t *target) error { return t.setxattr(name, value, flags) })
	case unix.SYS_REMOVEXATTRAT:
		name, err := c.name(a[3])
		if err != nil {
			return 0, errnoOf(err)
		}
		return b.onPath(c, int32(a[0]), a[1], a[2]&unix.AT_SYMLINK_NOFOLLOW == 0, a[2]&unix.AT_EMPTY_PATH != 0, valid,
			func(t *target) error { return t.removexattr(name) })
	case unix.SYS_IOCTL:
		if uint32(a[1]) == unix.TIOCGPTPEER {
			return ptyPeer(c, req, a)
		}
		return b.ioctl(c, a)
	}
	return legacy(b, c, req, valid)
}

// ioctl decides the attribute ioctls on a descriptor: FS_IOC_SETFLAGS (an
// int, whichever size the request names) and FS_IOC_FSSETXATTR (struct
// fsxattr, 28 bytes).
func (b *Broker) ioctl(c *caller, a [6]uint64) (int64, int) {
	req := uint(uint32(a[1]))
	size := 4
	if req == 0x401c5820 { // FS_IOC_FSSETXATTR
		size = 28
	}
	arg := make([]byte, size)
	if err := c.mem(a[2], arg); err != nil {
		return 0, errnoOf(err)
	}
	return b.onFD(c, int32(a[0]), func(fd int) error {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&arg[0])))
		runtime.KeepAlive(arg)
		if errno != 0 {
			return errno
		}
		return nil
	})
}

// ptyPeer answers TIOCGPTPEER: it opens the terminal of a pseudo-terminal
// the caller holds the master of, and hands it to the caller. Under
// Landlock the box may not open what lies in /dev/pts (the host's devpts,
// with every other session's terminal in it), and the kernel checks the
// peer's open against that path too, so without the broker a box could
// not use a terminal it made (script, tmux, a pty in Python or node).
// The broker opens only the peer of a master the caller holds, by its
// descriptor copied with pidfd_getfd (never reopened by path, which
// would make a new terminal): what it hands over is the caller's own.
func ptyPeer(c *caller, req fslog.Request, a [6]uint64) (int64, int) {
	const allowed = unix.O_ACCMODE | unix.O_NOCTTY | unix.O_NONBLOCK | unix.O_CLOEXEC
	flags := int(int32(a[2]))
	if flags&^allowed != 0 {
		return 0, int(unix.EINVAL)
	}
	if req.AddFD == nil || a[0] > 1<<31-1 {
		return 0, int(unix.EACCES)
	}
	n, _, errno := unix.Syscall(unix.SYS_PIDFD_GETFD, uintptr(c.pidfd), uintptr(a[0]), 0)
	if errno != 0 {
		if errno == unix.EBADF {
			return 0, int(unix.EBADF)
		}
		return 0, int(unix.EACCES)
	}
	master := int(n)
	defer unix.Close(master)
	var st unix.Stat_t
	if err := unix.Fstat(master, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR ||
		unix.Major(st.Rdev) != 5 || unix.Minor(st.Rdev) != 2 {
		return 0, int(unix.ENOTTY) // not a master, as the kernel says
	}
	peer, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCGPTPEER, uintptr(flags|unix.O_CLOEXEC))
	if errno != 0 {
		return 0, int(errno)
	}
	defer unix.Close(int(peer))
	got, err := req.AddFD(int(peer), flags&unix.O_CLOEXEC != 0)
	if err != nil {
		return 0, errnoOf(err)
	}
	return int64(got), 0
}

// open finds the process of thread tid and opens a pidfd for it.
func open(tid int) (*caller, error) {
	c := &caller{tid: tid, pidfd: -1, memfd: -1}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return nil, unix.ESRCH
	}
	_, rest, ok := strings.Cut(string(status), "\nTgid:\t")
	if !ok {
		return nil, unix.ESRCH
	}
	if c.tgid, err = strconv.Atoi(strings.Fields(rest)[0]); err != nil {
		return nil, unix.ESRCH
	}
	if c.pidfd, err = unix.PidfdOpen(c.tgid, 0); err != nil {
		return nil, err
	}
	return c, nil
}

// mem fills b from the caller's memory at addr: process_vm_readv, or,
// where a seccomp filter refuses that (agentbox inside another box, whose
// ptrace group it is), /proc/TID/mem, which the kernel checks the same way.
func (c *caller) mem(addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := 0, error(unix.EPERM)
	if !viaProc {
		n, err = unix.ProcessVMReadv(c.tid, local, remote, 0)
	}
	if err == unix.EPERM || err == unix.ENOSYS {
		n, err = c.procMem(addr, b)
	}
	switch {
	case err == unix.EPERM || err == unix.EACCES:
		// A process that made itself non-dumpable cannot be read:
		// the call cannot be checked, so it is refused.
		return unix.EPERM
	case err != nil:
		return unix.EFAULT
	case n != len(b):
		return unix.EFAULT
	}
	return nil
}

// procMem reads the caller's memory through /proc/TID/mem.
func (c *caller) procMem(addr uint64, b []byte) (int, error) {
	if c.memfd < 0 {
		fd, err := unix.Open("/proc/"+strconv.Itoa(c.tid)+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, err
		}
		c.memfd = fd
	}
	if addr > 1<<63-1 {
		return 0, unix.EFAULT
	}
	return unix.Pread(c.memfd, b, int64(addr))
}

// str reads a NUL-terminated string of at most max bytes at addr, a page
// at a time so that it never reads past the page it ends on.
func (c *caller) str(addr uint64, max int, tooLong unix.Errno) (string, error) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	buf := make([]byte, max+1)
	got := 0
	for got < len(buf) {
		chunk := 4096 - int((addr+uint64(got))%4096)
		if chunk > len(buf)-got {
			chunk = len(buf) - got
		}
		if err := c.mem(addr+uint64(got), buf[got:got+chunk]); err != nil {
			return "", err
		}
		if i := bytes.IndexByte(buf[got:got+chunk], 0); i >= 0 {
			return string(buf[:got+i]), nil
		}
		got += chunk
	}
	return "", tooLong
}

// name reads an extended attribute's name (at most XATTR_NAME_MAX).
func (c *caller) name(addr uint64) (string, error) {
	n, err := c.str(addr, 255, unix.ERANGE)
	if err == nil && n == "" {
		err = unix.ERANGE
	}
	return n, err
}

// xattr reads an extended attribute's name and value (at most
// XATTR_SIZE_MAX bytes).
func (c *caller) xattr(nameAddr, valueAddr, size uint64) (string, []byte, error) {
	name, err := c.name(nameAddr)
	if err != nil {
		return "", nil, err
	}
	if size > 65536 {
		return "", nil, unix.E2BIG
	}
	value := make([]byte, size)
	if size > 0 {
		if err := c.mem(valueAddr, value); err != nil {
			return "", nil, err
		}
	}
	return name, value, nil
}

// timespecs reads struct timespec[2] at addr; nil for a NULL pointer (the
// current time).
func (c *caller) timespecs(addr uint64) ([]unix.Timespec, error) {
	if addr == 0 {
		return nil, nil
	}
	var raw [32]byte
	if err := c.mem(addr, raw[:]); err != nil {
		return nil, err
	}
	return []unix.Timespec{
		{Sec: int64(binary.LittleEndian.Uint64(raw[0:])), Nsec: int64(binary.LittleEndian.Uint64(raw[8:]))},
		{Sec: int64(binary.LittleEndian.Uint64(raw[16:])), Nsec: int64(binary.LittleEndian.Uint64(raw[24:]))},
	}, nil
}

// timevals reads struct timeval[2] at addr as timespecs; nil for NULL.
func (c *caller) timevals(addr uint64) ([]unix.Timespec, error) {
	if addr == 0 {
		return nil, nil
	}
	var raw [32]byte
	if err := c.mem(addr, raw[:]); err != nil {
		return nil, err
	}
	ts := make([]unix.Timespec, 2)
	for i := range ts {
		usec := int64(binary.LittleEndian.Uint64(raw[16*i+8:]))
		if usec < 0 || usec >= 1000000 {
			return nil, unix.EINVAL
		}
		ts[i] = unix.Timespec{Sec: int64(binary.LittleEndian.Uint64(raw[16*i:])), Nsec: usec * 1000}
	}
	return ts, nil
}

// getfd copies the caller's descriptor fd (the same open file) into the
// supervisor: pidfd_getfd, or, where a seccomp filter refuses that (agentbox
// inside another box, whose ptrace group it is), the file /proc/TGID/fd/N
// leads to, opened again with the access mode /proc/TGID/fdinfo/N gives
// (the very file; a file of the same name cannot take its place).
func (c *caller) getfd(fd int32) (int, error) {
	if fd < 0 {
		return -1, unix.EBADF
	}
	n, errno := uintptr(0), unix.EPERM
	if !viaProc {
		n, _, errno = unix.Syscall(unix.SYS_PIDFD_GETFD, uintptr(c.pidfd), uintptr(fd), 0)
	}
	switch {
	case errno == unix.EPERM || errno == unix.ENOSYS:
		return c.reopen(fd)
	case errno != 0:
		return -1, unix.EBADF
	}
	unix.CloseOnExec(int(n))
	return int(n), nil
}

// reopen is getfd through /proc.
func (c *caller) reopen(fd int32) (int, error) {
	dir := "/proc/" + strconv.Itoa(c.tgid)
	info, err := os.ReadFile(dir + "/fdinfo/" + strconv.Itoa(int(fd)))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return -1, unix.EBADF
		}
		return -1, unix.EPERM
	}
	_, rest, ok := strings.Cut(string(info), "flags:\t")
	if !ok {
		return -1, unix.EPERM
	}
	flags, err := strconv.ParseUint(strings.Fields(rest)[0], 8, 32)
	if err != nil {
		return -1, unix.EPERM
	}
	mode := int(flags) & (unix.O_ACCMODE | unix.O_PATH | unix.O_DIRECTORY)
	f, err := unix.Open(dir+"/fd/"+strconv.Itoa(int(fd)), mode|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return -1, unix.EBADF
		}
		return -1, unix.EPERM
	}
	return f, nil
}

// onFD checks the file the caller's descriptor fd refers to and, when it
// lies in the write grant, does op on a copy of that descriptor.
func (b *Broker) onFD(c *caller, fd int32, op func(fd int) error) (int64, int) {
	f, err := c.getfd(fd)
	if err != nil {
		return 0, errnoOf(err)
	}
	defer unix.Close(f)
	ok, err := b.fileAllowed(f)
	if err != nil {
		return 0, errnoOf(err)
	}
	if !ok {
		return 0, int(unix.EACCES)
	}
	if err := op(f); err != nil {
		return 0, errnoOf(err)
	}
	return 0, 0
}

// target is what a path of the caller resolved to: the file (O_PATH,
// never followed if it is a symbolic link the call does not follow) and
// the folder it was found in (-1 for a folder, which has its own "..").
type target struct {
	fd, parent int
	st         unix.Stat_t
}

func (t *target) close() {
	unix.Close(t.fd)
	if t.parent >= 0 {
		unix.Close(t.parent)
	}
}

func (t *target) link() bool { return t.st.Mode&unix.S_IFMT == unix.S_IFLNK }

// proc names the target through the supervisor's own /proc/self/fd, for
// the calls that take no descriptor and no AT_EMPTY_PATH: the magic link
// leads to the very file opened.
func (t *target) proc() string { return "/proc/self/fd/" + strconv.Itoa(t.fd) }

func (t *target) chmod(mode uint32) error {
	if t.link() {
		return unix.EOPNOTSUPP // a link has no mode of its own
	}
	if mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		// The box's filter refuses these before they come here
		// (seccomp's setuid group); refused here too, whoever asks.
		return unix.EPERM
	}
	// fchmodat2 (Linux 6.6) takes AT_EMPTY_PATH; before it, the
	// descriptor's /proc link.
	empty := [1]byte{}
	_, _, errno := unix.Syscall6(unix.SYS_FCHMODAT2, uintptr(t.fd), uintptr(unsafe.Pointer(&empty[0])), uintptr(mode), unix.AT_EMPTY_PATH, 0, 0)
	var err error
	if errno != 0 {
		err = errno
	}
	if err == unix.ENOSYS || err == unix.EINVAL {
		err = unix.Fchmodat(unix.AT_FDCWD, t.proc(), mode, 0)
	}
	return err
}

func (t *target) chown(uid, gid int) error {
	return unix.Fchownat(t.fd, "", uid, gid, unix.AT_EMPTY_PATH)
}

func (t *target) utimes(ts []unix.Timespec) error {
	err := utimensat(t.fd, "", ts, unix.AT_EMPTY_PATH)
	if err == unix.EINVAL && !t.link() {
		err = utimensat(unix.AT_FDCWD, t.proc(), ts, 0)
	}
	return err
}

func (t *target) setxattr(name string, value []byte, flags int) error {
	if t.link() {
		return unix.EPERM // no user attribute on a link; the others need a capability
	}
	return unix.Setxattr(t.proc(), name, value, flags)
}

func (t *target) removexattr(name string) error {
	if t.link() {
		return unix.EPERM
	}
	return unix.Removexattr(t.proc(), name)
}

// utimensat is utimensat(2) with a NULL path for "" without AT_EMPTY_PATH
// (futimens) and a NULL times pointer for nil (now).
func utimensat(dirfd int, p string, ts []unix.Timespec, flags int) error {
	var pp *byte
	if p != "" || flags&unix.AT_EMPTY_PATH != 0 {
		var err error
		if pp, err = unix.BytePtrFromString(p); err != nil {
			return err
		}
	}
	var tp unsafe.Pointer
	if ts != nil {
		tp = unsafe.Pointer(&ts[0])
	}
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(dirfd), uintptr(unsafe.Pointer(pp)), uintptr(tp), uintptr(flags), 0, 0)
	runtime.KeepAlive(ts)
	if errno != 0 {
		return errno
	}
	return nil
}

// onPath resolves the caller's path at addr, relative to its descriptor
// dirfd (or its working folder), following a last symbolic link when
// follow says so, checks what it resolved to and, when it lies in the
// write grant, does op on it. With emptyPath (AT_EMPTY_PATH) an empty
// path names dirfd itself.
func (b *Broker) onPath(c *caller, dirfd int32, addr uint64, follow, emptyPath bool, valid func() bool, op func(*target) error) (int64, int) {
	p, err := c.str(addr, unix.PathMax-1, unix.ENAMETOOLONG)
	if err != nil {
		return 0, errnoOf(err)
	}
	if p == "" {
		if !emptyPath {
			return 0, int(unix.ENOENT)
		}
		if dirfd == unix.AT_FDCWD {
			p = "."
		} else {
			return b.onFD(c, dirfd, func(fd int) error {
				t := &target{fd: fd, parent: -1}
				unix.Fstat(fd, &t.st)
				return op(t)
			})
		}
	}
	if fd, ok := procFD(p, c); ok {
		// /proc/self/fd/N names the caller's own descriptor: the file
		// it is open on (a chmod through it follows it).
		return b.onFD(c, int32(fd), func(fd int) error {
			t := &target{fd: fd, parent: -1}
			unix.Fstat(fd, &t.st)
			return op(t)
		})
	}
	t, err := c.resolve(dirfd, p, follow)
	if err != nil {
		return 0, errnoOf(err)
	}
	defer t.close()
	// The caller still waits: the working folder and descriptor the path
	// was resolved from were its own for this call.
	if !valid() {
		return 0, int(unix.EINTR)
	}
	start := t.parent
	if start < 0 {
		start = t.fd
	}
	ok, err := b.allowed(t.st, start)
	if err != nil {
		return 0, errnoOf(err)
	}
	if !ok {
		return 0, int(unix.EACCES)
	}
	if err := op(t); err != nil {
		return 0, errnoOf(err)
	}
	return 0, 0
}

// procFD recognises the caller's own descriptor links: /proc/self/fd/N,
// /proc/thread-self/fd/N and /proc/<its pid or tid>/fd/N.
func procFD(p string, c *caller) (int, bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return 0, false
	}
	who, rest, ok := strings.Cut(rest, "/fd/")
	if !ok || (who != "self" && who != "thread-self" && who != strconv.Itoa(c.tgid) && who != strconv.Itoa(c.tid)) {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// resolve resolves p as the kernel would for the caller: an absolute path
// from its root, a relative one from its descriptor dirfd or its working
// folder, every folder on the way followed through links (no magic link),
// the last component followed when follow says so, at most 40 links.
func (c *caller) resolve(dirfd int32, p string, follow bool) (*target, error) {
	root, err := unix.Open("/proc/"+strconv.Itoa(c.tid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, unix.EPERM
	}
	defer unix.Close(root)
	base := -1
	switch {
	case strings.HasPrefix(p, "/"):
	case dirfd == unix.AT_FDCWD:
		if base, err = unix.Open("/proc/"+strconv.Itoa(c.tid)+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return nil, unix.EPERM
		}
	default:
		if base, err = c.getfd(dirfd); err != nil {
			return nil, err
		}
	}
	defer func() {
		if base >= 0 {
			unix.Close(base)
		}
	}()
	for links := 0; ; links++ {
		if links > 40 {
			return nil, unix.ELOOP
		}
		from, how := base, uint64(unix.RESOLVE_NO_MAGICLINKS)
		if strings.HasPrefix(p, "/") {
			from, how = root, how|unix.RESOLVE_IN_ROOT
		}
		dir, last := path.Split(p)
		trailing := strings.HasSuffix(p, "/")
		if last == "" || last == "." || last == ".." || trailing {
			// A folder: it has a ".." of its own.
			fd, err := openat2(from, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: how})
			if err != nil {
				return nil, err
			}
			t := &target{fd: fd, parent: -1}
			if err := unix.Fstat(fd, &t.st); err != nil {
				t.close()
				return nil, err
			}
			return t, nil
		}
		if dir == "" {
			dir = "."
		}
		parent, err := openat2(from, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: how})
		if err != nil {
			return nil, err
		}
		fd, err := unix.Openat(parent, last, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(parent)
			return nil, err
		}
		t := &target{fd: fd, parent: parent}
		if err := unix.Fstat(fd, &t.st); err != nil {
			t.close()
			return nil, err
		}
		if !t.link() || !follow {
			if t.st.Mode&unix.S_IFMT == unix.S_IFDIR {
				unix.Close(parent)
				t.parent = -1
			}
			return t, nil
		}
		// Follow the link: its target, from the folder it is in.
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(parent, last, buf)
		t.close()
		if err != nil {
			return nil, err
		}
		target := string(buf[:n])
		if !strings.HasPrefix(target, "/") {
			// Relative to the link's folder, which becomes the base.
			if base >= 0 {
				unix.Close(base)
			}
			if base, err = openat2(from, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: how}); err != nil {
				base = -1
				return nil, err
			}
		}
		p = target
	}
}

// fileAllowed checks the file of descriptor fd. A regular file the
// descriptor was opened on for writing is the box's to change: Landlock
// let the box open it so (it lies in the write grant), or it was handed
// the box so (a redirection of agentbox's own output), and its content is
// the box's to change either way. A device node never is, whatever it was
// opened for (/dev/tty, /dev/null are the host's). A folder is checked
// from itself upwards. For another file the folder it is in is found by its
// name (/proc/self/fd), opened without following any link and accepted
// only if it holds this very file (device and inode): a box renaming it
// meanwhile keeps it in its region of the filesystem, which is what the
// check answers. A file with no name left (unlinked, no other link) can
// change nothing anyone else sees.
func (b *Broker) fileAllowed(fd int) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return b.allowed(st, fd)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil && fl&unix.O_PATH == 0 && fl&unix.O_ACCMODE != unix.O_RDONLY {
			return true, nil
		}
	}
	if b.grant[FileID{st.Dev, st.Ino}] {
		return true, nil
	}
	for try := 0; try < 3; try++ {
		name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil {
			return false, err
		}
		if strings.HasSuffix(name, " (deleted)") {
			return st.Nlink == 0, nil
		}
		if !strings.HasPrefix(name, "/") {
			return false, nil // a pipe, a socket, a memory file: no folder
		}
		dir, last := path.Split(name)
		parent, err := openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			continue
		}
		var here unix.Stat_t
		err = unix.Fstatat(parent, last, &here, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && here.Dev == st.Dev && here.Ino == st.Ino {
			ok, err := b.allowed(st, parent)
			unix.Close(parent)
			return ok, err
		}
		unix.Close(parent)
	}
	return false, nil
}

// allowed reports whether the file st, or the folder dir or a folder above
// it (by ".."), is in the write grant.
func (b *Broker) allowed(st unix.Stat_t, dir int) (bool, error) {
	if b.grant[FileID{st.Dev, st.Ino}] {
		return true, nil
	}
	cur, err := unix.FcntlInt(uintptr(dir), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	for depth := 0; depth < 4096; depth++ {
		var cst unix.Stat_t
		if err := unix.Fstat(cur, &cst); err != nil {
			unix.Close(cur)
			return false, err
		}
		if b.grant[FileID{cst.Dev, cst.Ino}] {
			unix.Close(cur)
			return true, nil
		}
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return false, err
		}
		var ust unix.Stat_t
		if err := unix.Fstat(up, &ust); err != nil {
			unix.Close(up)
			return false, err
		}
		if ust.Dev == cst.Dev && ust.Ino == cst.Ino {
			unix.Close(up)
			return false, nil // the root: nothing above grants it
		}
		cur = up
	}
	unix.Close(cur)
	return false, nil
}

// openat2 is unix.Openat2, once more when the kernel answers EAGAIN (a
// rename or a mount anywhere on the system raced a lookup that met "..",
// under RESOLVE_IN_ROOT or RESOLVE_BENEATH) or EINTR: a lookup the caller
// asked for must not fail because the machine is busy. Where openat2 is
// refused (ENOSYS: agentbox in a box of its own) the lookup is walked
// instead.
func openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, path, how)
		if (err == unix.EAGAIN || err == unix.EINTR) && i < 100 {
			continue
		}
		if err == unix.ENOSYS {
			return walk(dirfd, path, how.Resolve)
		}
		return fd, err
	}
}
