package seccomp

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrUnsupported is wrapped by Build where no filter can be built (an OS
// other than Linux, or a Linux architecture this package has no table for).
// Callers degrade or refuse on it.
var ErrUnsupported = errors.New("seccomp filter not supported on this platform")

// Group is a set of syscall rules that a policy blocks or reopens together.
type Group struct {
	// Name is how `[seccomp] allow` spells the group.
	Name string
	// Why says in one line what a process gains from these syscalls.
	Why string
	// Rules are the syscalls the group refuses, and how.
	Rules []Rule
}

// Rule refuses one syscall: every call, or only the calls whose argument
// Arg matches Equal or Bits, or does not match Unless, and, when Also is
// set, whose other argument matches Also too. Conditions compare the low
// 32 bits of an argument only; each rule that has one says why that is
// enough. Several rules may name one syscall: a call is refused when any
// of them refuses it.
type Rule struct {
	// Syscall is the kernel's name for the syscall, as in its syscall table.
	Syscall string
	// When describes, for people, which calls are refused ("" = every call).
	When string
	// Arg is the argument the condition looks at (0-based).
	Arg int
	// Mask, when not 0, is ANDed with the argument's low 32 bits before
	// Equal and Unless compare them (a range of ioctl requests, a socket
	// type without its flags).
	Mask uint32
	// Equal refuses the call when the argument's low 32 bits equal one of these.
	Equal []uint32
	// Bits refuses the call when the argument's low 32 bits have any of these bits set.
	Bits uint32
	// Unless refuses the call when the argument's low 32 bits equal none
	// of these: a list of what is allowed, so that anything the kernel
	// adds later is refused too. A rule has Unless or Equal and Bits.
	Unless []uint32
	// Also is a second condition, on another argument, that must hold
	// too for the call to be refused.
	Also *Cond
	// Errno is what the refused call returns: "EPERM", "EACCES",
	// "ENOSYS" or "EAFNOSUPPORT"; or "NOTIFY": the call waits for
	// agentbox's supervisor, which decides it (seccomp user notification),
	// and fails with ENOSYS when no supervisor listens.
	Errno string
}

// Cond is a condition on one argument, as in Rule.
type Cond struct {
	Arg    int
	Mask   uint32
	Equal  []uint32
	Bits   uint32
	Unless []uint32
}

// conditional reports whether the rule looks at an argument.
func (r Rule) conditional() bool {
	return len(r.Equal) > 0 || r.Bits != 0 || len(r.Unless) > 0
}

// conds returns the rule's conditions: its own and Also.
func (r Rule) conds() []Cond {
	if !r.conditional() {
		return nil
	}
	out := []Cond{{Arg: r.Arg, Mask: r.Mask, Equal: r.Equal, Bits: r.Bits, Unless: r.Unless}}
	if r.Also != nil {
		out = append(out, *r.Also)
	}
	return out
}

// Values from the Linux UAPI headers that the rules compare against. They are
// the same on amd64 and arm64 (asm-generic); seccomp_linux_test.go checks
// them against golang.org/x/sys/unix. They are spelled out here, not taken
// from x/sys, so the table compiles and can be shown on every OS.
const (
	tiocsti      = 0x5412     // TIOCSTI, asm-generic/ioctls.h
	tioclinux    = 0x541c     // TIOCLINUX, asm-generic/ioctls.h
	tiocsetd     = 0x5423     // TIOCSETD
	tiocexcl     = 0x540c     // TIOCEXCL
	tcxonc       = 0x540a     // TCXONC
	tioccons     = 0x541d     // TIOCCONS
	tiocvhangup  = 0x5437     // TIOCVHANGUP
	tiocslcktrm  = 0x5457     // TIOCSLCKTRMIOS
	kdIoctls     = 0x4b00     // 0x4bXX: the Linux console's KD* ioctls, linux/kd.h
	vtIoctls     = 0x5600     // 0x56XX: the VT_* ioctls, linux/vt.h
	sIsuid       = 0o4000     // S_ISUID, linux/stat.h
	sIsgid       = 0o2000     // S_ISGID
	oCreat       = 0o100      // O_CREAT, asm-generic/fcntl.h (amd64 and arm64)
	oTmpfile     = 0o20000000 // __O_TMPFILE
	prioProcess  = 0          // PRIO_PROCESS, linux/resource.h
	ioprioWhoPid = 1          // IOPRIO_WHO_PROCESS, linux/ioprio.h
	sockDgram    = 2          // SOCK_DGRAM, the same on amd64 and arm64
	sockTypeMask = 0xf        // SOCK_TYPE_MASK: the type without SOCK_NONBLOCK and SOCK_CLOEXEC
	cloneNewUser = 0x10000000 // CLONE_NEWUSER, linux/sched.h
	msgFastOpen  = 0x20000000 // MSG_FASTOPEN, linux/socket.h
	ipprotoICMP  = 1          // IPPROTO_ICMP, linux/in.h
	ipprotoICMP6 = 58         // IPPROTO_ICMPV6, linux/in6.h
	ipprotoSCTP  = 132        // IPPROTO_SCTP, linux/in.h
	ipprotoSMC   = 256        // IPPROTO_SMC, linux/in.h (Linux 6.11)
	ipprotoMPTCP = 262        // IPPROTO_MPTCP, linux/in.h
	afUnix       = 1          // AF_UNIX, linux/socket.h
	afInet       = 2          // AF_INET
	afInet6      = 10         // AF_INET6
	afNetlink    = 16         // AF_NETLINK
)

// NoNetBypass is an extra group, off unless a backend asks for it: the
// Landlock backend adds it under network "none". Landlock's TCP rules check
// connect(2) and bind(2) only, so TCP Fast Open (a send with MSG_FASTOPEN
// connects without connect) and MPTCP and SCTP sockets reach the network
// past them (landlock-lsm/linux issue 41). bwrap needs none of this: its
// box has no network at all.
//
// listen(2) is refused whole: on a socket that was never bound it picks a
// port itself, on every address of the host, with no bind(2) for Landlock
// to check, and a seccomp filter cannot tell an Internet socket from a
// unix one by its descriptor. ICMP sockets (ping sockets, which the
// kernel's ping_group_range gives most users) send and receive past
// Landlock, which has no rule for them.
var NoNetBypass = Group{
	Name: "no-net-bypass",
	Why:  "TCP Fast Open and MPTCP, SCTP and SMC sockets connect without connect(2), which is all Landlock checks; listen(2) takes a port without bind(2); ICMP sockets are not checked at all",
	Rules: []Rule{
		{Syscall: "sendto", When: "flags include MSG_FASTOPEN", Arg: 3, Bits: msgFastOpen, Errno: "EPERM"},
		{Syscall: "sendmsg", When: "flags include MSG_FASTOPEN", Arg: 2, Bits: msgFastOpen, Errno: "EPERM"},
		{Syscall: "sendmmsg", When: "flags include MSG_FASTOPEN", Arg: 3, Bits: msgFastOpen, Errno: "EPERM"},
		{Syscall: "socket", When: "protocol is ICMP, ICMPv6, SCTP, MPTCP or SMC", Arg: 2, Equal: []uint32{ipprotoICMP, ipprotoICMP6, ipprotoSCTP, ipprotoMPTCP, ipprotoSMC}, Errno: "EPERM"},
		{Syscall: "listen", Errno: "EPERM"},
	},
}

// NoNetBypassListening is NoNetBypass for a Landlock box with published
// ports: listen(2) is let through, since the box's server must listen on
// its published port. Landlock still allows bind(2) on that port only; but
// listen(2) on a socket that was never bound takes a port of its own on
// every address, which no rule checks (the plan says so).
var NoNetBypassListening = Group{
	Name:  "no-net-bypass-listening",
	Why:   "TCP Fast Open and MPTCP, SCTP and SMC sockets connect without connect(2), which is all Landlock checks; ICMP sockets are not checked at all",
	Rules: NoNetBypass.Rules[:len(NoNetBypass.Rules)-1],
}

// Listening returns groups with NoNetBypass in place of NoNetBypassListening:
// a Landlock box whose published ports need listen(2).
func Listening(groups []Group) []Group {
	out := make([]Group, len(groups))
	for i, g := range groups {
		out[i] = g
		if g.Name == NoNetBypass.Name {
			out[i] = NoNetBypassListening
		}
	}
	return out
}

// SocketFamilies is an extra group for a box whose network is cut
// ("none") or goes through the proxy ("allowlist"): the box may open the
// socket families it needs for loopback, the proxy and local tools (unix,
// IPv4, IPv6, netlink) and no other. Not every family is cut by a network
// namespace or checked by Landlock: AF_VSOCK reaches the hypervisor of a
// VM from any namespace, and AF_TIPC, AF_RDS, AF_SMC or AF_BLUETOOTH leave
// the host by ways of their own. The list says what is allowed, so a
// family the kernel gains later is refused too. socket(2) answers
// EAFNOSUPPORT, what a kernel without the family says, so programs fall
// back instead of failing.
var SocketFamilies = Group{
	Name: "socket-families",
	Why:  "socket families other than unix, IPv4, IPv6 and netlink (AF_VSOCK to the hypervisor, AF_TIPC, AF_RDS, AF_SMC, AF_BLUETOOTH, ...) reach past the box's network namespace and past Landlock",
	Rules: []Rule{
		// The family is an int; the kernel rejects any value it does not
		// know (family >= NPROTO), so the low 32 bits are all of it.
		{Syscall: "socket", When: "family is not AF_UNIX, AF_INET, AF_INET6 or AF_NETLINK", Arg: 0,
			Unless: []uint32{afUnix, afInet, afInet6, afNetlink}, Errno: "EAFNOSUPPORT"},
	},
}

// NoUDP is an extra group for a Landlock box whose network is cut ("none")
// or goes through the proxy ("allowlist") on a kernel whose Landlock cannot
// refuse UDP itself (before ABI 10): it refuses every IPv4 and IPv6
// datagram socket, so no datagram leaves the box (DNS included; under
// "allowlist" the proxy resolves names). Refusing the socket is the only
// place a filter can: sendto, sendmsg and connect carry their address in
// memory it cannot read.
var NoUDP = Group{
	Name: "no-udp",
	Why:  "Landlock before ABI 10 does not restrict UDP, so a datagram socket reaches any address",
	Rules: []Rule{
		// The type is an int; SOCK_NONBLOCK and SOCK_CLOEXEC are flags
		// above the type's four bits.
		{Syscall: "socket", When: "family is AF_INET or AF_INET6 and the type is SOCK_DGRAM", Arg: 1, Mask: sockTypeMask, Equal: []uint32{sockDgram},
			Also: &Cond{Arg: 0, Equal: []uint32{afInet, afInet6}}, Errno: "EPERM"},
	},
}

// NoUnixSockets is an extra group for a Landlock box: it may not create a
// unix socket (socketpair(2), a connected pair that reaches nothing
// outside, still works). Landlock does not restrict connecting to a
// socket on the filesystem, so without this every host service behind a
// unix socket the user can open (a session bus, docker.sock, ssh-agent)
// answers the box. Abstract sockets are kept in by Landlock's own scope
// (ABI 6).
var NoUnixSockets = Group{
	Name: "no-unix-sockets",
	Why:  "Landlock does not restrict connecting to a unix socket on the filesystem, so every host service behind one would answer the box",
	Rules: []Rule{
		{Syscall: "socket", When: "family is AF_UNIX", Arg: 0, Equal: []uint32{afUnix}, Errno: "EPERM"},
		// A datagram pair can send to, or connect to, any datagram
		// socket on the filesystem (syslog, the journal): refused too.
		// Stream and seqpacket pairs are connected for good.
		{Syscall: "socketpair", When: "type is SOCK_DGRAM", Arg: 1, Mask: sockTypeMask, Equal: []uint32{sockDgram}, Errno: "EPERM"},
	},
}

// ioctl requests that change a file's attributes rather than its content
// (linux/fs.h, linux/fscrypt.h, linux/fsverity.h; the same on amd64 and
// arm64). The kernel reads the request as an unsigned int.
const (
	fsIocSetflags   = 0x40086602 // FS_IOC_SETFLAGS (chattr)
	fsIoc32Setflags = 0x40046602 // FS_IOC32_SETFLAGS
	fsIocFssetxattr = 0x401c5820 // FS_IOC_FSSETXATTR (extended flags, project id)
	fsIocSetversion = 0x40087602 // FS_IOC_SETVERSION (the inode's generation)
	fsIoc32Setvers  = 0x40047602 // FS_IOC32_SETVERSION
	fsIocSetEncrypt = 0x800c6613 // FS_IOC_SET_ENCRYPTION_POLICY (an empty folder's)
	fsIocEnVerity   = 0x40806685 // FS_IOC_ENABLE_VERITY (a file read-only for good)
	tiocgptpeer     = 0x5441     // TIOCGPTPEER (asm-generic/ioctls.h): a pty master's terminal
)

// Metadata is an extra group for a Landlock box. Landlock has no right for
// a file's metadata: chmod, chown, utimes, extended attributes (ACLs
// among them) and the attribute flags of chattr reach every file the
// caller owns, as root every file. These calls go to agentbox's
// supervisor instead (NOTIFY): it looks at what the call names, performs
// it itself when that lies in the box's write grant and refuses it
// otherwise (package broker). When no supervisor listens (the listener
// could not be handed over) they fail with ENOSYS: closed, not open. The
// rarer attribute ioctls are refused outright.
var Metadata = Group{
	Name: "metadata",
	Why:  "Landlock has no right for a file's mode, owner, times, extended attributes or attribute flags: the supervisor decides each such call (and opens a pty's terminal for the box, which may not open /dev/pts)",
	Rules: []Rule{
		{Syscall: "chmod", Errno: "NOTIFY"},
		{Syscall: "fchmod", Errno: "NOTIFY"},
		{Syscall: "fchmodat", Errno: "NOTIFY"},
		{Syscall: "fchmodat2", Errno: "NOTIFY"},
		{Syscall: "chown", Errno: "NOTIFY"},
		{Syscall: "lchown", Errno: "NOTIFY"},
		{Syscall: "fchown", Errno: "NOTIFY"},
		{Syscall: "fchownat", Errno: "NOTIFY"},
		{Syscall: "utime", Errno: "NOTIFY"},
		{Syscall: "utimes", Errno: "NOTIFY"},
		{Syscall: "futimesat", Errno: "NOTIFY"},
		{Syscall: "utimensat", Errno: "NOTIFY"},
		{Syscall: "setxattr", Errno: "NOTIFY"},
		{Syscall: "lsetxattr", Errno: "NOTIFY"},
		{Syscall: "fsetxattr", Errno: "NOTIFY"},
		{Syscall: "removexattr", Errno: "NOTIFY"},
		{Syscall: "lremovexattr", Errno: "NOTIFY"},
		{Syscall: "fremovexattr", Errno: "NOTIFY"},
		{Syscall: "setxattrat", Errno: "NOTIFY"},
		{Syscall: "removexattrat", Errno: "NOTIFY"},
		// file_setattr (Linux 6.17) sets the same flags as FS_IOC_FSSETXATTR, by path.
		{Syscall: "file_setattr", Errno: "EPERM"},
		{Syscall: "ioctl", When: "request is FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS or FS_IOC_FSSETXATTR (low 32 bits)", Arg: 1,
			Equal: []uint32{fsIocSetflags, fsIoc32Setflags, fsIocFssetxattr}, Errno: "NOTIFY"},
		// Under Landlock the box may not open /dev/pts (the host's, with
		// every session's terminal): the supervisor opens the terminal of
		// a master the caller holds and hands it over.
		{Syscall: "ioctl", When: "request is TIOCGPTPEER (low 32 bits)", Arg: 1, Equal: []uint32{tiocgptpeer}, Errno: "NOTIFY"},
		{Syscall: "ioctl", When: "request is FS_IOC_SETVERSION, FS_IOC32_SETVERSION, FS_IOC_SET_ENCRYPTION_POLICY or FS_IOC_ENABLE_VERITY (low 32 bits)", Arg: 1,
			Equal: []uint32{fsIocSetversion, fsIoc32Setvers, fsIocSetEncrypt, fsIocEnVerity}, Errno: "EPERM"},
	},
}

// ForNetwork returns the extra groups a box with network mode mode needs
// ("open", "none" or "allowlist"): landlock says whether the box is a
// Landlock one, which has no network namespace of its own.
func ForNetwork(mode string, landlock bool) []Group {
	var out []Group
	switch mode {
	case "none":
		if landlock {
			out = append(out, NoNetBypass)
		}
		out = append(out, SocketFamilies)
	case "allowlist":
		if landlock {
			// The box reaches the network only through the proxy's
			// port: the same ways around connect(2) are closed.
			out = append(out, NoNetBypass)
		}
		out = append(out, SocketFamilies)
	}
	return out
}

// extraGroups are the groups a backend adds (never reopened by a policy).
var extraGroups = []Group{NoNetBypass, NoNetBypassListening, SocketFamilies, NoUDP, NoUnixSockets, Metadata}

// Extra returns the extra group named name.
func Extra(name string) (Group, bool) {
	for _, g := range extraGroups {
		if g.Name == name {
			return g, true
		}
	}
	return Group{}, false
}

// Args renders what Build is given as the arguments of agentbox's hidden
// seccomp command: each extra group as "+NAME", then the reopened groups.
// ParseArgs reads them back.
func Args(allow []string, extra []Group) []string {
	var out []string
	for _, g := range extra {
		out = append(out, "+"+g.Name)
	}
	return append(out, allow...)
}

// ParseArgs reads what Args wrote.
func ParseArgs(args []string) (allow []string, extra []Group, err error) {
	for _, a := range args {
		name, isExtra := strings.CutPrefix(a, "+")
		if !isExtra {
			allow = append(allow, a)
			continue
		}
		g, ok := Extra(name)
		if !ok {
			return nil, nil, fmt.Errorf("unknown extra seccomp group %q", name)
		}
		extra = append(extra, g)
	}
	return allow, extra, nil
}

// groups is the table every filter is built from. Order is the order of the
// generated checks and of Filter.Blocked.
var groups = []Group{
	{
		Name: "tiocsti",
		Why: "TIOCSTI types characters into the terminal's input queue, so a boxed process could run commands in the user's shell after it exits; TIOCLINUX can paste the console selection the same way; " +
			"and what outlasts the run on the user's terminal: TIOCSETD changes its line discipline (N_NULL: it shows nothing afterwards, and it may load a module), TIOCEXCL locks everyone else out of it, TCXONC stops its output, " +
			"TIOCCONS, TIOCVHANGUP and TIOCSLCKTRMIOS take the console, hang up or lock its settings, and the Linux console's KD* and VT_* ioctls switch off its keyboard or display or change its keymap",
		Rules: []Rule{{
			Syscall: "ioctl",
			When:    "request is TIOCSTI, TIOCLINUX, TIOCSETD, TIOCEXCL, TCXONC, TIOCCONS, TIOCVHANGUP or TIOCSLCKTRMIOS (low 32 bits)",
			// The kernel declares the request as `unsigned int cmd`, so it
			// ignores the upper half: (1<<32)|TIOCSTI is still TIOCSTI, and a
			// 64-bit comparison would let it through. Compare the low 32 bits.
			Arg:   1,
			Equal: []uint32{tiocsti, tioclinux, tiocsetd, tiocexcl, tcxonc, tioccons, tiocvhangup, tiocslcktrm},
			Errno: "EPERM",
		}, {
			Syscall: "ioctl",
			When:    "request is a Linux console ioctl, 0x4b00-0x4bff (KD*) or 0x5600-0x56ff (VT_*), low 32 bits",
			Arg:     1,
			Mask:    0xffffff00,
			Equal:   []uint32{kdIoctls, vtIoctls},
			Errno:   "EPERM",
		}},
	},
	{
		Name: "keyring",
		Why:  "the kernel keyring is not isolated by the box: a process could read or plant keys in the session keyring it inherits",
		Rules: []Rule{
			{Syscall: "keyctl", Errno: "EPERM"},
			{Syscall: "add_key", Errno: "EPERM"},
			{Syscall: "request_key", Errno: "EPERM"},
		},
	},
	{
		Name:  "bpf",
		Why:   "loads programs into the kernel; a frequent source of kernel exploits and side channels",
		Rules: []Rule{{Syscall: "bpf", Errno: "EPERM"}},
	},
	{
		Name:  "perf",
		Why:   "performance counters observe other processes and the kernel (side channels, kernel address leaks) and are a frequent source of kernel bugs",
		Rules: []Rule{{Syscall: "perf_event_open", Errno: "EPERM"}},
	},
	{
		Name:  "userfaultfd",
		Why:   "lets a process pause the kernel in the middle of a page fault, the usual way to win a kernel race in an exploit",
		Rules: []Rule{{Syscall: "userfaultfd", Errno: "EPERM"}},
	},
	{
		Name: "kexec",
		Why:  "replaces the running kernel; nothing in a box has a reason to try, even as root",
		Rules: []Rule{
			{Syscall: "kexec_load", Errno: "EPERM"},
			{Syscall: "kexec_file_load", Errno: "EPERM"},
		},
	},
	{
		Name: "modules",
		Why:  "loads or unloads kernel code; nothing in a box has a reason to try, even as root",
		Rules: []Rule{
			{Syscall: "init_module", Errno: "EPERM"},
			{Syscall: "finit_module", Errno: "EPERM"},
			{Syscall: "delete_module", Errno: "EPERM"},
		},
	},
	{
		Name: "ptrace",
		Why:  "reads and writes the memory of other processes in the box, such as the agent CLI holding its API token (reopen for gdb or strace)",
		Rules: []Rule{
			{Syscall: "ptrace", Errno: "EPERM"},
			{Syscall: "process_vm_readv", Errno: "EPERM"},
			{Syscall: "process_vm_writev", Errno: "EPERM"},
			// Copies another process's file descriptor (such as the init's
			// channel to the proxy) under the same rules as ptrace attach.
			{Syscall: "pidfd_getfd", Errno: "EPERM"},
		},
	},
	{
		Name: "io_uring",
		Why:  "io_uring performs file and network operations that this filter never sees as syscalls, and is a frequent source of kernel exploits",
		Rules: []Rule{
			{Syscall: "io_uring_setup", Errno: "EPERM"},
			{Syscall: "io_uring_enter", Errno: "EPERM"},
			{Syscall: "io_uring_register", Errno: "EPERM"},
		},
	},
	{
		Name: "other-processes",
		Why:  "changes another process's limits, priority, scheduling, CPUs or memory placement by its pid; a box whose processes see the host's (Landlock) could set agentbox's own open-file limit to 5, or renice every process of the user",
		Rules: []Rule{
			// A pid is an int: the low 32 bits are all of it. 0 is the
			// caller itself, the only target left.
			{Syscall: "prlimit64", When: "pid is not 0 (the caller)", Arg: 0, Unless: []uint32{0}, Errno: "EPERM"},
			{Syscall: "setpriority", When: "which is not PRIO_PROCESS", Arg: 0, Unless: []uint32{prioProcess}, Errno: "EPERM"},
			{Syscall: "setpriority", When: "who is not 0 (the caller)", Arg: 1, Unless: []uint32{0}, Errno: "EPERM"},
			{Syscall: "ioprio_set", When: "which is not IOPRIO_WHO_PROCESS", Arg: 0, Unless: []uint32{ioprioWhoPid}, Errno: "EPERM"},
			{Syscall: "ioprio_set", When: "who is not 0 (the caller)", Arg: 1, Unless: []uint32{0}, Errno: "EPERM"},
			{Syscall: "sched_setaffinity", When: "pid is not 0 (the caller)", Arg: 0, Unless: []uint32{0}, Errno: "EPERM"},
			{Syscall: "sched_setscheduler", When: "pid is not 0 (the caller)", Arg: 0, Unless: []uint32{0}, Errno: "EPERM"},
			{Syscall: "sched_setparam", When: "pid is not 0 (the caller)", Arg: 0, Unless: []uint32{0}, Errno: "EPERM"},
			{Syscall: "sched_setattr", When: "pid is not 0 (the caller)", Arg: 0, Unless: []uint32{0}, Errno: "EPERM"},
			{Syscall: "migrate_pages", When: "pid is not 0 (the caller)", Arg: 0, Unless: []uint32{0}, Errno: "EPERM"},
			{Syscall: "move_pages", When: "pid is not 0 (the caller)", Arg: 0, Unless: []uint32{0}, Errno: "EPERM"},
		},
	},
	{
		Name: "setuid",
		Why:  "a setuid or setgid bit on a file the box writes (as root, on a file root owns) is a privilege any user who runs that file gets, on the host, after the run",
		Rules: []Rule{
			// A mode is an unsigned int (umode_t): the low 32 bits are all of it.
			{Syscall: "chmod", When: "mode has S_ISUID or S_ISGID", Arg: 1, Bits: sIsuid | sIsgid, Errno: "EPERM"},
			{Syscall: "fchmod", When: "mode has S_ISUID or S_ISGID", Arg: 1, Bits: sIsuid | sIsgid, Errno: "EPERM"},
			{Syscall: "fchmodat", When: "mode has S_ISUID or S_ISGID", Arg: 2, Bits: sIsuid | sIsgid, Errno: "EPERM"},
			{Syscall: "fchmodat2", When: "mode has S_ISUID or S_ISGID", Arg: 2, Bits: sIsuid | sIsgid, Errno: "EPERM"},
			{Syscall: "creat", When: "mode has S_ISUID or S_ISGID", Arg: 1, Bits: sIsuid | sIsgid, Errno: "EPERM"},
			// The mode of open is read only with O_CREAT or O_TMPFILE (the
			// flags are an int): without them it may be anything.
			{Syscall: "open", When: "flags have O_CREAT or O_TMPFILE and mode has S_ISUID or S_ISGID", Arg: 2, Bits: sIsuid | sIsgid,
				Also: &Cond{Arg: 1, Bits: oCreat | oTmpfile}, Errno: "EPERM"},
			{Syscall: "openat", When: "flags have O_CREAT or O_TMPFILE and mode has S_ISUID or S_ISGID", Arg: 3, Bits: sIsuid | sIsgid,
				Also: &Cond{Arg: 2, Bits: oCreat | oTmpfile}, Errno: "EPERM"},
			{Syscall: "mknod", When: "mode has S_ISUID or S_ISGID", Arg: 1, Bits: sIsuid | sIsgid, Errno: "EPERM"},
			{Syscall: "mknodat", When: "mode has S_ISUID or S_ISGID", Arg: 2, Bits: sIsuid | sIsgid, Errno: "EPERM"},
			// openat2(2) takes its flags and the new file's mode in struct
			// open_how in user memory, which a seccomp filter cannot read,
			// so a mode of 06755 cannot be told apart from 0644. Refuse
			// every openat2 with ENOSYS, what a kernel before 5.6 says:
			// glibc never calls it for open(3), and the programs that do
			// (agentbox's own C init among them) fall back to openat(2),
			// whose mode the rule above checks. EPERM would be taken as a
			// real failure.
			{Syscall: "openat2", When: "every call (its mode cannot be inspected)", Errno: "ENOSYS"},
		},
	},
	{
		Name: "userns",
		Why:  "a new user namespace hands the process every capability over fresh mount and network namespaces, the entry point of many kernel exploits (reopen for nested sandboxes such as bwrap or Chromium)",
		Rules: []Rule{
			// unshare(2) and clone(2) take the flags in argument 0 on amd64
			// and arm64. The kernel keeps only their low 32 bits
			// (lower_32_bits() in kernel/fork.c for clone; unshare rejects
			// unknown high bits with EINVAL), and CLONE_NEWUSER is a low bit.
			{Syscall: "unshare", When: "flags include CLONE_NEWUSER", Arg: 0, Bits: cloneNewUser, Errno: "EPERM"},
			{Syscall: "clone", When: "flags include CLONE_NEWUSER", Arg: 0, Bits: cloneNewUser, Errno: "EPERM"},
			// clone3(2) takes its flags in a struct in user memory, which a
			// seccomp filter cannot read, so CLONE_NEWUSER cannot be told
			// apart from a plain fork. Refuse every clone3 with ENOSYS: that
			// is what an older kernel says, and glibc (2.34+) and other libcs
			// then fall back to clone(2), whose flags the rule above checks.
			// EPERM would be taken as a real failure and break thread creation.
			{Syscall: "clone3", When: "every call (its flags cannot be inspected)", Errno: "ENOSYS"},
		},
	},
}

// Groups returns every group, blocked by default, in filter order. The
// result is a copy: changing it does not change any filter.
func Groups() []Group {
	out := make([]Group, len(groups))
	for i, g := range groups {
		out[i] = g
		out[i].Rules = make([]Rule, len(g.Rules))
		for j, r := range g.Rules {
			out[i].Rules[j] = r
			out[i].Rules[j].Equal = append([]uint32(nil), r.Equal...)
		}
	}
	return out
}

// Names returns the group names in filter order.
func Names() []string {
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.Name
	}
	return names
}

// Check reports an error naming the valid groups when allow holds a name
// that is not a group. It works on every OS, so a policy is validated the
// same way wherever it is loaded.
func Check(allow []string) error {
	_, _, err := split(allow)
	return err
}

// split divides the groups into those that stay blocked and those that allow
// reopens, both in table order.
func split(allow []string) (blocked, reopened []Group, err error) {
	open := map[string]bool{}
	for _, name := range allow {
		if !known(name) {
			return nil, nil, fmt.Errorf("unknown seccomp group %q (valid: %s)", name, strings.Join(Names(), ", "))
		}
		open[name] = true
	}
	for _, g := range Groups() {
		if open[g.Name] {
			reopened = append(reopened, g)
		} else {
			blocked = append(blocked, g)
		}
	}
	return blocked, reopened, nil
}

func known(name string) bool {
	for _, g := range groups {
		if g.Name == name {
			return true
		}
	}
	return false
}

// Filter is a compiled seccomp program and the groups it enforces.
type Filter struct {
	// Blocked are the groups the program refuses.
	Blocked []Group
	// Reopened are the groups the policy allowed again.
	Reopened []Group
	// raw is the program as bwrap reads it: struct sock_filter entries of
	// 8 bytes each.
	raw []byte
}

// Bytes returns the program as an array of struct sock_filter in the
// machine's byte order (little-endian on amd64 and arm64), the format bwrap
// --add-seccomp-fd reads.
func (f *Filter) Bytes() []byte {
	return append([]byte(nil), f.raw...)
}

// Len returns the number of BPF instructions in the program.
func (f *Filter) Len() int {
	return len(f.raw) / 8
}

// Describe writes, for `agentbox plan`, which groups a filter with allow
// reopened and the extra groups blocks and which the policy reopened, and
// why.
func Describe(allow []string, extra []Group, w io.Writer) {
	blocked, reopened, err := split(allow)
	if err != nil {
		fmt.Fprintf(w, "seccomp:   NOT in force: %v\n", err)
		return
	}
	var b, r []string
	for _, g := range append(blocked, extra...) {
		b = append(b, g.Name)
	}
	for _, g := range reopened {
		r = append(r, g.Name+" ("+g.Why+")")
	}
	fmt.Fprintf(w, "seccomp:   blocked: %s; foreign architectures killed\n", strings.Join(b, ", "))
	if len(r) > 0 {
		fmt.Fprintf(w, "  reopened by policy: %s\n", strings.Join(r, "; "))
		for _, g := range reopened {
			if g.Name == "io_uring" && len(extra) > 0 {
				fmt.Fprintln(w, "  io_uring reopened: its socket operations do not pass through this filter, so the socket families it refuses are open to io_uring")
			}
		}
	}
}
