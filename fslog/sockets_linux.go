//go:build linux && (amd64 || arm64)

package fslog

import (
	"encoding/binary"
	"os"
	"path"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// Host services behind unix sockets are judged by what a socket is, not by
// where it lies: under bubblewrap the box's filter hands every connect(2)
// to the supervisor, which reads the address once from the caller's
// memory, takes a copy of the caller's socket (pidfd_getfd: the same open
// socket), resolves a path in the box's root as the kernel would for the
// caller, and connects its copy to the very file it judged
// (/proc/self/fd/N of an O_PATH descriptor): the box's socket is connected,
// or the call fails, and the box cannot change what is connected between
// the check and the connect (its memory, its descriptor table, a link).
// The call never goes on in the box. A socket answers only when it lies in
// a writable root or in a folder of the box's own (a tmpfs of the plan:
// /tmp, the runtime folders), or network.unix_sockets names it (the same
// file). Datagram unix sockets, which could send to any socket on the
// filesystem with sendto(2) or sendmsg(2), cannot be made (EPERM); stream
// and seqpacket sockets ignore or refuse an address on a send.

// SocketsSupported: a bubblewrap box's connects are judged here.
const SocketsSupported = true

// SocketsJudged reports whether a run of p has its unix socket connects
// judged by the supervisor (a bubblewrap box).
func SocketsJudged(p *plan.Plan) bool { return p.Box.Backend == "bwrap" }

// sockJudge decides one run's connects.
type sockJudge struct {
	// mounts are the plan's mounts, in the order the box has them;
	// named the sockets network.unix_sockets names (host paths, which
	// the box sees at the same place).
	mounts []plan.Mount
	named  []string
	// open: the box shares the host's network namespace, and with it
	// the host's abstract sockets.
	open bool
	ev   event.Emitter
	seen *dedup
	// failed records a panic of a judging goroutine (guard.go).
	failed *failure
}

func newSockJudge(p *plan.Plan, ev event.Emitter, seen *dedup) *sockJudge {
	return &sockJudge{mounts: p.Mounts, named: p.Network.UnixSockets, open: p.Network.Mode == plan.NetOpen, ev: ev, seen: seen}
}

// sizeofSockaddrStorage is the most the kernel copies of an address.
const sizeofSockaddrStorage = 128

// connect answers the notification req, a connect(2) of thread req.Pid,
// on listener lfd (its own copy, closed here): the supervisor performs the
// connect on the caller's socket, or refuses it.
func (j *sockJudge) connect(lfd int, req seccompNotif) {
	defer unix.Close(lfd)
	defer func() {
		if r := recover(); r != nil {
			// Refused: the caller does not wait for ever.
			resp := seccompResp{ID: req.ID, Val: -1, Error: -int32(unix.EPERM)}
			unix.Syscall(unix.SYS_IOCTL, uintptr(lfd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
			if j.failed == nil {
				j.failed = &failure{}
			}
			j.failed.recovered(j.ev, "judge of the box's connects", r)
		}
	}()
	val, errno := j.decide(lfd, &req)
	resp := seccompResp{ID: req.ID, Val: val, Error: -int32(errno)}
	unix.Syscall(unix.SYS_IOCTL, uintptr(lfd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
}

// valid reports whether the caller of notification id still waits in it.
func valid(lfd int, id uint64) bool {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(lfd), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
	return errno == 0
}

// decide returns connect's result for the caller: 0, or an errno.
func (j *sockJudge) decide(lfd int, req *seccompNotif) (int64, unix.Errno) {
	tid := int(req.Pid)
	ulen := int64(int32(req.Args[2]))
	if ulen < 0 || ulen > sizeofSockaddrStorage {
		return -1, unix.EINVAL
	}
	addr := make([]byte, ulen)
	if ulen > 0 {
		if err := readMem(tid, req.Args[1], addr); err != nil {
			return -1, err.(unix.Errno)
		}
	}
	sock, err := getFD(tid, int32(req.Args[0]))
	if err != nil {
		return -1, err.(unix.Errno)
	}
	defer unix.Close(sock)
	// What was read belongs to this call only while the caller waits in
	// it (a thread ID is reused once its thread is gone).
	if !valid(lfd, req.ID) {
		// Gone (the answer goes nowhere), or a kernel that cannot
		// tell: refused, never retried for ever.
		return -1, unix.EPERM
	}
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return -1, errnoOf(err)
	}
	if domain != unix.AF_UNIX {
		// Not a unix socket: connected as asked, on the box's socket
		// (in the box's network namespace).
		return rawConnect(sock, addr)
	}
	kind, p := parseUnixAddr(addr)
	switch kind {
	case addrInvalid:
		// The kernel refuses it (EINVAL), or it disconnects a
		// datagram socket (AF_UNSPEC): no file is reached.
		return rawConnect(sock, addr)
	case addrAbstract:
		// Abstract sockets live in the socket's network namespace:
		// the box's own, unless it shares the host's.
		if j.open || !j.boxNetns(tid, sock) {
			j.refuse(tid, "@"+p[1:], "an abstract unix socket of the host's network namespace")
			return -1, unix.EPERM
		}
		return rawConnect(sock, addr)
	}
	target, err := resolveSocket(tid, p)
	if err != nil {
		return -1, errnoOf(err)
	}
	defer unix.Close(target)
	var st unix.Stat_t
	if err := unix.Fstat(target, &st); err != nil {
		return -1, errnoOf(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return -1, unix.ECONNREFUSED // as the kernel answers for a file that is not a socket
	}
	where, _ := readlink("/proc/self/fd/" + strconv.Itoa(target))
	if !j.allowed(where, &st) {
		j.refuse(tid, where, "a host unix socket outside the writable roots that network.unix_sockets does not name")
		return -1, unix.EACCES
	}
	// The very file judged, through its descriptor: a link swapped since
	// changes nothing.
	return rawConnect(sock, unixAddr("/proc/self/fd/"+strconv.Itoa(target)))
}

// allowed reports whether the socket st, at where in the box's view, may
// answer the box: network.unix_sockets names it (the same file), or the
// mount it lies on is a writable root or a folder of the box's own.
func (j *sockJudge) allowed(where string, st *unix.Stat_t) bool {
	for _, n := range j.named {
		var nst unix.Stat_t
		if unix.Stat(n, &nst) == nil && nst.Dev == st.Dev && nst.Ino == st.Ino {
			return true
		}
	}
	if !strings.HasPrefix(where, "/") {
		return false
	}
	where = strings.TrimSuffix(where, " (deleted)")
	return socketPlace(j.mounts, where)
}

// socketPlace reports whether a socket at p (a path in the box's view) lies
// in a writable root or a folder of the box's own: the last of the plan's
// mounts that covers p decides, as the box's mount table does.
func socketPlace(mounts []plan.Mount, p string) bool {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return false // not a place the kernel named
	}
	var last *plan.Mount
	for i := range mounts {
		m := &mounts[i]
		if m.Op == plan.Pin || m.Op == plan.RemountRO {
			continue // the mount under it stays the same
		}
		if plan.Within(p, m.Path) {
			last = m
		}
	}
	if last == nil {
		return false
	}
	switch {
	case last.Op == plan.Bind && last.Access == plan.ReadWrite:
		return true
	case last.Op == plan.Tmpfs:
		return true
	}
	return false
}

// boxNetns reports whether sock was made in the network namespace of the
// caller.
func (j *sockJudge) boxNetns(tid int, sock int) bool {
	ns, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(sock), unix.SIOCGSKNS, 0)
	if errno != 0 {
		return false
	}
	defer unix.Close(int(ns))
	var a, b unix.Stat_t
	if unix.Fstat(int(ns), &a) != nil || unix.Stat("/proc/"+strconv.Itoa(tid)+"/ns/net", &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// refuse records a refused connect, once per socket.
func (j *sockJudge) refuse(tid int, where, why string) {
	e := event.Event{Kind: event.Denied, Path: where, Op: "connect", Errno: "EACCES",
		Rule:   "default: host unix sockets (network.unix_sockets names the ones the box may use)",
		Reason: why, Process: processName(tid)}
	if j.seen.first(e) {
		j.ev.Emit(e)
	}
}

// The kinds of a unix socket address.
const (
	addrInvalid  = iota // not one the kernel looks up
	addrAbstract        // "\x00name"
	addrPath            // a path
)

// parseUnixAddr reads a struct sockaddr_un of the given length as the
// kernel does: the family, then an abstract name (a NUL first, every byte
// up to the length) or a path (up to its first NUL or the length).
func parseUnixAddr(addr []byte) (int, string) {
	if len(addr) <= 2 || binary.NativeEndian.Uint16(addr) != unix.AF_UNIX {
		return addrInvalid, ""
	}
	p := addr[2:]
	if p[0] == 0 {
		return addrAbstract, string(p)
	}
	if i := strings.IndexByte(string(p), 0); i >= 0 {
		p = p[:i]
	}
	return addrPath, string(p)
}

// unixAddr is a struct sockaddr_un for path p.
func unixAddr(p string) []byte {
	b := make([]byte, 2, 2+len(p)+1)
	binary.NativeEndian.PutUint16(b, unix.AF_UNIX)
	return append(append(b, p...), 0)
}

// rawConnect connects sock to the address addr as given.
func rawConnect(sock int, addr []byte) (int64, unix.Errno) {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	for {
		_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(p), uintptr(len(addr)))
		if errno == unix.EINTR {
			// A signal of the supervisor's, not the caller's: the
			// connect goes on where it was.
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return 0, 0
	}
}

// resolveSocket opens (O_PATH) the file the caller reaches by p: from its
// root, or from its working folder for a relative path, links followed
// inside the box's root as the kernel follows them, never out of it, and
// no magic link (/proc/self/fd/N).
func resolveSocket(tid int, p string) (int, error) {
	dir := "/proc/" + strconv.Itoa(tid)
	root, err := unix.Open(dir+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, unix.EPERM
	}
	defer unix.Close(root)
	if !strings.HasPrefix(p, "/") {
		cwd, err := readlink(dir + "/cwd")
		if err != nil || !strings.HasPrefix(cwd, "/") || strings.HasSuffix(cwd, " (deleted)") {
			return -1, unix.ENOENT
		}
		p = cwd + "/" + p
	}
	return openat2(root, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
}

// readMem fills b from thread tid's memory at addr.
func readMem(tid int, addr uint64, b []byte) error {
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(tid, local, remote, 0)
	if err == unix.EPERM || err == unix.ENOSYS {
		// A seccomp filter of agentbox's own box may refuse
		// process_vm_readv: /proc/TID/mem, which the kernel checks the
		// same way.
		var f *os.File
		if f, err = os.Open("/proc/" + strconv.Itoa(tid) + "/mem"); err == nil {
			n, err = f.ReadAt(b, int64(addr))
			f.Close()
		}
	}
	switch {
	case err == unix.EPERM || err == unix.EACCES || os.IsPermission(err):
		// A process agentbox may not read cannot be checked: refused.
		return unix.EPERM
	case err != nil || n != len(b):
		return unix.EFAULT
	}
	return nil
}

// getFD copies thread tid's descriptor fd into the supervisor: the same
// open socket.
func getFD(tid int, fd int32) (int, error) {
	if fd < 0 {
		return -1, unix.EBADF
	}
	// The thread's own descriptor table (PIDFD_THREAD, 6.9), else its
	// process's.
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != nil {
		if pidfd, err = unix.PidfdOpen(tgidOf(tid), 0); err != nil {
			return -1, unix.EPERM
		}
	}
	defer unix.Close(pidfd)
	n, err := unix.PidfdGetfd(pidfd, int(fd), 0)
	switch {
	case err == unix.EBADF:
		return -1, unix.EBADF
	case err != nil:
		return -1, unix.EPERM
	}
	unix.CloseOnExec(n)
	return n, nil
}

// tgidOf is the process of thread tid.
func tgidOf(tid int) int {
	if st, err := readFile("/proc/" + strconv.Itoa(tid) + "/status"); err == nil {
		if _, rest, ok := strings.Cut(st, "\nTgid:\t"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if n, err := strconv.Atoi(f[0]); err == nil {
					return n
				}
			}
		}
	}
	return tid
}

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EPERM
}

// socketRules are the filter's instructions for sockets, with the syscall
// number loaded, which they leave loaded for what follows when they do not
// decide: connect(2) goes to the supervisor; socket(2) and socketpair(2)
// of a unix socket of another type than stream or seqpacket (datagram, or
// raw, which the kernel makes a datagram socket) are refused. The domain
// and type are ints: the low 32 bits are all the kernel reads; the type's
// low 4 bits are the type, the rest its flags.
func socketRules() []unix.SockFilter {
	return []unix.SockFilter{
		jump(jeq, unix.SYS_CONNECT, 0, 1),
		stmt(ret, unix.SECCOMP_RET_USER_NOTIF),
		jump(jeq, unix.SYS_SOCKET, 1, 0),
		jump(jeq, unix.SYS_SOCKETPAIR, 0, 8),
		stmt(ldW, offArgs),
		jump(jeq, unix.AF_UNIX, 0, 5),
		stmt(ldW, offArgs+8),
		stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf),
		jump(jeq, unix.SOCK_STREAM, 2, 0),
		jump(jeq, unix.SOCK_SEQPACKET, 1, 0),
		stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)),
		stmt(ret, unix.SECCOMP_RET_ALLOW),
	}
}
