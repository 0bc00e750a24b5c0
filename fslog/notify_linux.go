//go:build linux && (amd64 || arm64)

package fslog

import (
	"bytes"
	"encoding/binary"
	"path"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
)

// seccompNotif and seccompResp are struct seccomp_notif (with its struct
// seccomp_data) and struct seccomp_notif_resp (linux/seccomp.h).
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

// seccompAddFD is struct seccomp_notif_addfd (linux/seccomp.h).
type seccompAddFD struct {
	ID         uint64
	Flags      uint32
	SrcFD      uint32
	NewFD      uint32
	NewFDFlags uint32
}

type seccompResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// notifier serves one run's notification listener.
type notifier struct {
	lfd   int
	root  int   // the box's root folder (O_PATH), from the first caller
	judge Judge // nil when only a broker listens
	// broker decides the calls Brokered names; nil for none. prepared
	// is what its Prepare answered on the serving goroutine.
	broker   Broker
	prepared error
	// sock judges the box's connects, each on a goroutine of its own
	// (a connect may wait); nil for none.
	sock *sockJudge
	ev   event.Emitter
	seen *dedup
	buf  []byte
	// denied is set when the last attempt could not be read because the
	// kernel refused agentbox the caller's memory; blinded are the
	// processes already reported so.
	denied  bool
	blinded map[string]bool
}

// caught is a call as the supervisor read it while the caller waits: its
// paths made absolute in the box's view, not yet resolved.
type caught struct {
	a     Attempt
	abs   [2]string
	given [2]string
	// follow says the first path's last link is followed.
	follow bool
}

// serve answers every notification until stop is readable or no process
// is left under the filter. Each call is allowed to continue, unchanged:
// what the supervisor reads and judges never decides anything.
func (n *notifier) serve(stop int) {
	if n.broker != nil {
		n.prepared = n.broker.Prepare()
		if n.prepared != nil {
			n.ev.Emit(event.Event{Kind: event.Warning, Detail: "the broker of the box's metadata calls could not start (" + n.prepared.Error() + "): they are refused"})
		}
	}
	fds := []unix.PollFd{{Fd: int32(n.lfd), Events: unix.POLLIN}, {Fd: int32(stop), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			n.one()
			continue
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 || fds[1].Revents != 0 {
			// No process is left under the filter, or the box has
			// ended: take what is still waiting, and stop.
			n.drain()
			return
		}
	}
}

// drain answers the notifications already waiting, without blocking.
func (n *notifier) drain() {
	fds := []unix.PollFd{{Fd: int32(n.lfd), Events: unix.POLLIN}}
	for {
		fds[0].Revents = 0
		if c, err := unix.Poll(fds, 0); err != nil || c == 0 || fds[0].Revents&unix.POLLIN == 0 {
			return
		}
		n.one()
	}
}

// one receives a notification, reads and judges the call and lets it
// continue.
func (n *notifier) one() {
	var req seccompNotif // the kernel wants it zeroed
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(n.lfd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req))); errno != 0 {
		return // ENOENT: the caller was interrupted and the call withdrawn
	}
	if n.sock != nil && req.Nr == unix.SYS_CONNECT {
		// Its own copy of the listener: the serving may end (and
		// close lfd) while a connect still waits.
		if lfd, err := unix.Dup(n.lfd); err == nil {
			unix.CloseOnExec(lfd)
			go n.sock.connect(lfd, req)
			return
		}
		resp := seccompResp{ID: req.ID, Val: -1, Error: -int32(unix.EMFILE)}
		unix.Syscall(unix.SYS_IOCTL, uintptr(n.lfd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
		return
	}
	var e event.Event
	refused, blind := false, false
	if c, known := calls[uint32(req.Nr)]; known && n.judge != nil {
		if got, ok := n.read(&req, c); ok {
			a := got.a
			for i := range a.Targets {
				a.Targets[i] = n.resolve(got.given[i], got.abs[i], got.follow && i == 0)
			}
			e, refused = n.judge(a)
			if refused {
				e.Process = n.process(a.Pid)
			}
		}
		blind = n.denied
	}
	resp := seccompResp{ID: req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	if r := (Request{Pid: int(req.Pid), Nr: uint32(req.Nr), Args: req.Args}); n.broker != nil && Brokered(r) {
		// Decided here, never let go on: the broker performed the call
		// or refused it, and says what the call returns.
		id := req.ID
		valid := func() bool {
			_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(n.lfd), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
			return errno == 0
		}
		r.AddFD = func(fd int, cloexec bool) (int, error) {
			add := seccompAddFD{ID: id, SrcFD: uint32(fd)}
			if cloexec {
				add.NewFDFlags = unix.O_CLOEXEC
			}
			got, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(n.lfd), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(&add)))
			if errno != 0 {
				return -1, errno
			}
			return int(got), nil
		}
		val, errno := int64(0), int(unix.EPERM)
		if n.prepared == nil {
			val, errno = n.broker.Answer(r, valid)
		}
		resp = seccompResp{ID: req.ID, Val: val, Error: -int32(errno)}
	}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(n.lfd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
	// Everything read above belongs to this call only if the caller was
	// still waiting in it: the kernel takes the answer only then (a
	// thread ID can be reused once its thread is gone).
	if errno != 0 {
		return
	}
	if refused && n.seen.first(e) {
		n.ev.Emit(e)
	}
	if blind {
		n.blind(int(req.Pid))
	}
}

// blind says, once per process and up to a bound, that a process's
// calls cannot be judged: the kernel does not let agentbox read a
// process that made itself non-dumpable, or that runs a program it may
// not read, unless agentbox holds CAP_SYS_PTRACE over it (as root, or
// over bwrap's user namespace). The gap is recorded, not silent.
func (n *notifier) blind(tid int) {
	if n.blinded == nil {
		n.blinded = map[string]bool{}
	}
	tgid := tid
	if st, err := readFile("/proc/" + strconv.Itoa(tid) + "/status"); err == nil {
		if _, rest, ok := strings.Cut(st, "\nTgid:\t"); ok {
			tgid, _ = strconv.Atoi(strings.Fields(rest)[0])
		}
	}
	key := strconv.Itoa(tgid)
	if n.blinded[key] || len(n.blinded) >= 64 {
		return
	}
	n.blinded[key] = true
	n.ev.Emit(event.Event{Kind: event.Warning, Process: n.process(tid),
		Detail: "filesystem log: agentbox may not look at " + n.process(tid) +
			" (it made itself non-dumpable, or runs a program agentbox may not read): what it is refused is not recorded"})
}

// The flags that make an open a write.
const writeFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// read reads the call's paths and makes them absolute in the box's view,
// while the caller waits: the path strings from its memory, and the
// folders relative paths start from (its working folder, or the
// descriptor it named), which it could change once it goes on.
func (n *notifier) read(req *seccompNotif, c call) (caught, bool) {
	tid := int(req.Pid)
	n.denied = false
	if n.root < 0 {
		// Every process of a box has its root: bwrap's new root, or the
		// host's under Landlock. The box cannot change it (chroot needs
		// a capability no boxed process has).
		fd, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return caught{}, false
		}
		n.root = fd
	}
	s := caught{a: Attempt{Pid: tid, Syscall: c.name, Op: c.op}}
	a := &s.a
	at := uint64(0)
	if c.at >= 0 {
		at = req.Args[c.at]
	}
	follow := c.follow
	switch {
	case c.open >= 0:
		a.Flags = req.Args[c.open]
	case c.how:
		var how [8]byte
		if !n.mem(tid, req.Args[2], how[:]) {
			return caught{}, false
		}
		a.Flags = binary.LittleEndian.Uint64(how[:])
	}
	if c.op == "" {
		switch {
		case a.Flags&unix.O_PATH != 0:
			return caught{}, false // a handle, not an open for reading or writing
		case a.Flags&unix.O_CREAT != 0:
			a.Op = Create
		case a.Flags&writeFlags != 0:
			a.Op = Write
		default:
			a.Op = Read
		}
		if a.Flags&unix.O_NOFOLLOW != 0 || a.Flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
			follow = false
		}
	}
	switch c.op {
	case Remove:
		if at&unix.AT_REMOVEDIR != 0 {
			a.Op = Rmdir
		}
	case Link:
		follow = at&unix.AT_SYMLINK_FOLLOW != 0
	default:
		if at&unix.AT_SYMLINK_NOFOLLOW != 0 {
			follow = false
		}
	}
	if req.Args[c.path] == 0 {
		return caught{}, false // utimensat(fd, NULL, …): a descriptor, not a path
	}
	p, ok := n.str(tid, req.Args[c.path])
	if !ok {
		return caught{}, false
	}
	// The source of a rename or link is judged where it is now; a link
	// to a symbolic link is made of the link itself.
	s.follow = follow && c.path2 < 0
	s.given[0], s.abs[0] = p, n.absolute(tid, c.dirfd, req, p)
	a.Targets = make([]Target, 1, 2)
	if c.path2 >= 0 {
		p2, ok := n.str(tid, req.Args[c.path2])
		if !ok {
			return caught{}, false
		}
		s.given[1], s.abs[1] = p2, n.absolute(tid, c.dirfd2, req, p2)
		a.Targets = a.Targets[:2]
	}
	return s, true
}

// absolute makes p absolute: relative to the descriptor in argument dirfd
// (or the working folder) of the waiting caller. It returns "" when that
// folder cannot be named.
func (n *notifier) absolute(tid, dirfd int, req *seccompNotif, p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	base := "/proc/" + strconv.Itoa(tid) + "/cwd"
	if dirfd >= 0 && int32(req.Args[dirfd]) != unix.AT_FDCWD {
		base = "/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.Itoa(int(int32(req.Args[dirfd])))
	}
	dir, err := readlink(base)
	if err != nil || !strings.HasPrefix(dir, "/") {
		return ""
	}
	if p == "" {
		return dir
	}
	return dir + "/" + p
}

// resolve resolves the absolute path abs (given as p) in the box's view:
// from the box's root, with the kernel following links as it would for
// the call.
func (n *notifier) resolve(p, abs string, follow bool) Target {
	return resolveIn(n.root, p, abs, follow)
}

// resolveIn resolves the absolute path abs (given as p) from root, the
// box's root folder (O_PATH): links are followed inside root as the kernel
// would follow them for the call, never out of it.
func resolveIn(root int, p, abs string, follow bool) Target {
	t := Target{Given: p}
	if abs == "" {
		t.Real = p
		return t
	}
	flags := uint64(unix.O_PATH | unix.O_CLOEXEC)
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	resolve := uint64(unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS)
	if fd, err := openat2(root, abs, &unix.OpenHow{Flags: flags, Resolve: resolve}); err == nil {
		t.Exists, t.Parent = true, true
		t.Real, _ = readlink("/proc/self/fd/" + strconv.Itoa(fd))
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil {
			t.Dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
		}
		unix.Close(fd)
		// A file bound over a path from one that was removed since (how
		// bwrap hides a file) reads as "… (deleted)": its place is the
		// folder's path and its name.
		if t.Real != "" && !strings.HasSuffix(t.Real, " (deleted)") {
			return t
		}
	}
	dir, last := path.Split(strings.TrimRight(abs, "/"))
	if last != "" && last != "." && last != ".." {
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve}
		if fd, err := openat2(root, dir, &how); err == nil {
			real, _ := readlink("/proc/self/fd/" + strconv.Itoa(fd))
			unix.Close(fd)
			if real != "" {
				t.Parent = true
				t.Real = path.Join(real, last)
				return t
			}
		}
	}
	t.Real = path.Clean(abs)
	return t
}

// str reads the NUL-terminated string at addr in process tid's memory,
// at most PATH_MAX bytes, one page at a time so that it never reads past
// the page the string ends on.
func (n *notifier) str(tid int, addr uint64) (string, bool) {
	if n.buf == nil {
		n.buf = make([]byte, unix.PathMax)
	}
	got := 0
	for got < len(n.buf) {
		chunk := 4096 - int((addr+uint64(got))%4096)
		if chunk > len(n.buf)-got {
			chunk = len(n.buf) - got
		}
		if !n.mem(tid, addr+uint64(got), n.buf[got:got+chunk]) {
			return "", false
		}
		if i := bytes.IndexByte(n.buf[got:got+chunk], 0); i >= 0 {
			return string(n.buf[:got+i]), true
		}
		got += chunk
	}
	return "", false // longer than PATH_MAX: the kernel refuses it anyway
}

// mem fills b from process tid's memory at addr.
func (n *notifier) mem(tid int, addr uint64, b []byte) bool {
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	got, err := unix.ProcessVMReadv(tid, local, remote, 0)
	if err == unix.EPERM || err == unix.EACCES {
		n.denied = true
	}
	return err == nil && got == len(b)
}

// process names the calling thread's process: its name (which it chose)
// and the executable (which it did not), and its pid on the host.
func (n *notifier) process(tid int) string { return processName(tid) }

// processName names process (or thread) tid: its name (which it chose)
// and the executable (which it did not), and its pid on the host, in the
// one shape of processLabel.
func processName(tid int) string {
	dir := "/proc/" + strconv.Itoa(tid)
	comm, _ := readFile(dir + "/comm")
	exe, _ := readlink(dir + "/exe")
	return processLabel(strings.TrimSpace(comm), tid, exe)
}

func readlink(p string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink(p, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func readFile(p string) (string, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	buf := make([]byte, 256)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// openat2 is unix.Openat2, once more when the kernel answers EAGAIN (a
// rename or a mount anywhere on the system raced a lookup that met "..",
// under RESOLVE_IN_ROOT or RESOLVE_BENEATH) or EINTR: a lookup the caller
// asked for must not fail because the machine is busy.
func openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, path, how)
		if (err == unix.EAGAIN || err == unix.EINTR) && i < 100 {
			continue
		}
		return fd, err
	}
}
