//go:build linux && (amd64 || arm64)

package fslog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/seccomp"
)

const (
	ldW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ret  = unix.BPF_RET | unix.BPF_K
)

// Offsets into struct seccomp_data: int nr; __u32 arch; __u64 ip; __u64 args[6].
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

func nativeArch() uint32 {
	if runtime.GOARCH == "arm64" {
		return unix.AUDIT_ARCH_AARCH64
	}
	return unix.AUDIT_ARCH_X86_64
}

// spec says what a box's notification filter hands the supervisor: the
// log's calls (reads: every open, not only those that may write), the
// broker's (Broker), or both.
type spec struct {
	log, reads, broker bool
	// sockets: every connect(2) goes to the supervisor, and datagram
	// unix sockets cannot be made (sockets_linux.go).
	sockets bool
}

// brokered are the calls a broker decides (the NOTIFY rules of
// seccomp.Metadata), by number, and the ioctl requests among them.
var brokered, brokeredIoctls = func() (map[uint32]bool, []uint32) {
	nrs := map[uint32]bool{}
	var ioctls []uint32
	one := seccomp.Group{Name: seccomp.Metadata.Name}
	for _, r := range seccomp.Metadata.Rules {
		if r.Errno != "NOTIFY" {
			continue
		}
		if r.Syscall == "ioctl" {
			ioctls = append(ioctls, r.Equal...)
			continue
		}
		one.Rules = []seccomp.Rule{r}
		for _, nr := range seccomp.Numbers(one) {
			nrs[nr] = true
		}
	}
	return nrs, ioctls
}()

// Brokered reports whether req is a call a broker decides.
func Brokered(req Request) bool {
	if req.Nr == unix.SYS_IOCTL {
		for _, v := range brokeredIoctls {
			if uint32(req.Args[1]) == v {
				return true
			}
		}
		return false
	}
	return brokered[req.Nr]
}

// program is a box's notification filter. The calls of the log's table
// (with log) and the broker's (with broker) go to the supervisor; a new
// seccomp filter with a notification listener is refused, because its
// listener would receive the calls before this one's (the kernel hands a
// notification to the newest filter that asks for one); everything else
// is allowed, and left to the box's other filter and the kernel. Other
// architectures are allowed here: the box's main filter kills them.
//
// Without reads, an open(2) or openat(2) goes to the supervisor only when
// its flags ask to write, create or truncate: an open for reading can be
// refused only by a hidden or denied path, and an open for reading is most
// of what a build does, so watching them all costs a round trip to the
// supervisor per file read. openat2(2) keeps its flags in memory the
// filter cannot read: every one is watched. An ioctl goes to the
// supervisor only for the broker's requests.
//
// Only the syscall number and architecture decide for every call but
// seccomp(2), ioctl and (without reads) the two opens, so the kernel caches
// "allowed" for every other syscall and runs no filter for them at all.
func program(sp spec) []unix.SockFilter {
	set := map[uint32]bool{}
	if sp.log {
		for nr := range calls {
			set[nr] = true
		}
	}
	if sp.broker {
		for nr := range brokered {
			set[nr] = true
		}
		set[unix.SYS_IOCTL] = true
	}
	nrs := make([]uint32, 0, len(set))
	for nr := range set {
		nrs = append(nrs, nr)
	}
	sort.Slice(nrs, func(i, j int) bool { return nrs[i] < nrs[j] })
	notify := stmt(ret, unix.SECCOMP_RET_USER_NOTIF)
	allow := stmt(ret, unix.SECCOMP_RET_ALLOW)
	prog := []unix.SockFilter{
		stmt(ldW, offArch),
		jump(jeq, nativeArch(), 1, 0),
		allow,
		stmt(ldW, offNr),
		// seccomp(SECCOMP_SET_MODE_FILTER, flags with NEW_LISTENER, …):
		// EPERM. The operation and flags are unsigned ints: the low 32
		// bits are all the kernel reads.
		jump(jeq, unix.SYS_SECCOMP, 0, 6),
		stmt(ldW, offArgs),
		jump(jeq, unix.SECCOMP_SET_MODE_FILTER, 0, 2),
		stmt(ldW, offArgs+8),
		jump(jset, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, 1, 0),
		allow,
		stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)),
	}
	if sp.sockets {
		prog = append(prog, socketRules()...)
	}
	for _, nr := range nrs {
		c, logged := calls[nr]
		logged = logged && sp.log
		switch {
		case nr == unix.SYS_IOCTL:
			// The request is an unsigned int: the low 32 bits are
			// all the kernel reads.
			prog = append(prog, jump(jeq, nr, 0, uint8(len(brokeredIoctls)+3)), stmt(ldW, offArgs+8))
			for i, v := range brokeredIoctls {
				prog = append(prog, jump(jeq, v, uint8(len(brokeredIoctls)-i), 0))
			}
			prog = append(prog, allow, notify)
		case sp.broker && brokered[nr], sp.reads || c.op != "" || c.open < 0:
			prog = append(prog, jump(jeq, nr, 0, 1), notify)
		case logged:
			// The open flags are an int: the low 32 bits are all the
			// kernel reads. The number is loaded again for the next
			// comparison.
			prog = append(prog,
				jump(jeq, nr, 0, 4),
				stmt(ldW, offArgs+8*uint32(c.open)),
				jump(jset, writeFlags, 0, 1),
				notify,
				allow)
		}
	}
	return append(prog, allow)
}

// The messages the box's side sends the supervisor over the log socket,
// one byte each, the second followed by its pid (8 bytes, little-endian)
// and the third by an error message.
const (
	msgListener = 'N' // a seccomp notification listener comes with it
	msgDomain   = 'D' // this process is about to restrict itself with Landlock
	msgFailed   = 'E' // the log could not be set up in the box
)

// msgProgram is the one message the supervisor sends the box's side, as
// soon as the socket exists: the filter to install (program, as the raw
// sock_filter array). agentbox's C init and C Landlock child, which cannot
// build it, install it; the Go ones build the same program themselves.
const msgProgram = 'P'

// msgSocketProgram is msgProgram for a filter that judges the box's
// connects: a box whose filter cannot be installed must not run CMD.
const msgSocketProgram = 'S'

// programBytes is program(sp) as the kernel's sock_filter array.
func programBytes(sp spec) []byte {
	prog := program(sp)
	out := make([]byte, 0, 1+8*len(prog))
	if sp.sockets {
		out = append(out, msgSocketProgram)
	} else {
		out = append(out, msgProgram)
	}
	for _, f := range prog {
		out = binary.LittleEndian.AppendUint16(out, f.Code)
		out = append(out, f.Jt, f.Jf)
		out = binary.LittleEndian.AppendUint32(out, f.K)
	}
	return out
}

// Arm installs the log's filter on the calling thread, which must be the
// one that execs or forks CMD (runtime.LockOSThread) and must have
// no_new_privs set, sends its notification listener over the socket sock
// and closes both: nothing in the box ever holds the listener, so nothing
// in the box can answer a notification. With reads, every open is watched
// (a read of a hidden or denied path is recorded too); without, only those
// that may write (see program).
//
// When the filter cannot be installed it tells the supervisor why and
// returns an error: CMD then runs without the log, as confined as ever.
// When the listener cannot be handed over after the filter is in place
// it returns ErrOrphan, and CMD must not start: with nobody to let them
// continue, the watched calls would fail.
func Arm(sock int, reads bool) error { return ArmWith(sock, true, reads, false, false) }

// ArmWith is Arm for the calls of the log (log, reads) and of a broker
// (broker); with more, sock stays open for Announce. A broker's calls are
// refused by the box's main filter too (ENOSYS) when no listener takes
// them, so a filter that cannot be installed leaves them closed, not open.
func ArmWith(sock int, log, reads, broker, more bool) error {
	if !more {
		defer unix.Close(sock)
	}
	if t, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || t != unix.SOCK_SEQPACKET {
		return fmt.Errorf("the log's socket (fd %d) is not there", sock)
	}
	// The program the supervisor offered for the C init (msgProgram):
	// read, so that closing the socket leaves nothing unread on it (the
	// supervisor's end would then see ECONNRESET before the listener).
	// This side builds the same program itself.
	offered := make([]byte, 1+8*4096)
	got, _, _ := unix.Recvfrom(sock, offered, unix.MSG_DONTWAIT)
	// The supervisor's tag says whether the filter judges connects
	// (msgSocketProgram): then it is required, and it is the one
	// offered, which says too whether the log's calls are watched.
	sockets := got > 0 && offered[0] == msgSocketProgram
	prog := program(spec{log: log, reads: reads, broker: broker})
	if sockets {
		if got < 9 || (got-1)%8 != 0 || got == len(offered) {
			err := errors.New("the box's filter did not come from agentbox")
			unix.Sendmsg(sock, append([]byte{msgFailed}, err.Error()...), nil, nil, 0)
			return fmt.Errorf("%w: %v", ErrRequired, err)
		}
		prog = make([]unix.SockFilter, (got-1)/8)
		for i := range prog {
			b := offered[1+8*i:]
			prog[i] = unix.SockFilter{Code: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.LittleEndian.Uint32(b[4:])}
		}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// WAIT_KILLABLE_RECV (5.19+): once the supervisor has the
	// notification, only a fatal signal interrupts the caller's wait, so
	// the Go runtime's preemption signals do not make a call start over
	// and be seen twice.
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	lfd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if errno == unix.EINVAL {
		lfd, _, errno = unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	}
	runtime.KeepAlive(prog)
	if errno != 0 {
		err := fmt.Errorf("installing the log's seccomp filter: %w", errno)
		unix.Sendmsg(sock, append([]byte{msgFailed}, err.Error()...), nil, nil, 0)
		if sockets {
			// Without it the box's connects are not judged: CMD
			// must not start.
			return fmt.Errorf("%w: %v", ErrRequired, err)
		}
		return err
	}
	defer unix.Close(int(lfd))
	if err := unix.Sendmsg(sock, []byte{msgListener}, unix.UnixRights(int(lfd)), nil, 0); err != nil {
		return fmt.Errorf("%w: %v", ErrOrphan, err)
	}
	return nil
}

// ErrOrphan is Arm's failure after the filter is in place: nobody
// received its listener.
var ErrOrphan = errors.New("the filesystem log's listener could not be handed to agentbox")

// ErrRequired is Arm's failure to install a filter that judges the box's
// connects: CMD must not start unjudged.
var ErrRequired = errors.New("the box's unix socket connects cannot be judged")

// Announce tells the supervisor over sock that the calling process is
// about to restrict itself with Landlock, whose audit records name the
// process that made the domain: that is how the supervisor tells this
// run's records from every other's. It closes sock.
func Announce(sock int) error {
	defer unix.Close(sock)
	msg := binary.LittleEndian.AppendUint64([]byte{msgDomain}, uint64(unix.Getpid()))
	if err := unix.Sendmsg(sock, msg, nil, nil, 0); err != nil {
		return fmt.Errorf("telling agentbox the Landlock domain: %w", err)
	}
	return nil
}

// errNoMessage is what the supervisor gets when the box's side closed the
// socket without a word: its init or child never reached the point of
// arming the log (the box failed to start).
var errNoMessage = errors.New("the box never armed the filesystem log")
