//go:build linux && (amd64 || arm64)

package seccomp

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// syscalls maps the names used in the group table to this architecture's
// syscall numbers. unix.SYS_* is generated per GOARCH from the kernel's own
// tables, so the numbers are right for the binary being built.
var syscalls = map[string]uint32{
	"ioctl":              unix.SYS_IOCTL,
	"keyctl":             unix.SYS_KEYCTL,
	"add_key":            unix.SYS_ADD_KEY,
	"request_key":        unix.SYS_REQUEST_KEY,
	"bpf":                unix.SYS_BPF,
	"perf_event_open":    unix.SYS_PERF_EVENT_OPEN,
	"userfaultfd":        unix.SYS_USERFAULTFD,
	"kexec_load":         unix.SYS_KEXEC_LOAD,
	"kexec_file_load":    unix.SYS_KEXEC_FILE_LOAD,
	"init_module":        unix.SYS_INIT_MODULE,
	"finit_module":       unix.SYS_FINIT_MODULE,
	"delete_module":      unix.SYS_DELETE_MODULE,
	"ptrace":             unix.SYS_PTRACE,
	"process_vm_readv":   unix.SYS_PROCESS_VM_READV,
	"process_vm_writev":  unix.SYS_PROCESS_VM_WRITEV,
	"pidfd_getfd":        unix.SYS_PIDFD_GETFD,
	"io_uring_setup":     unix.SYS_IO_URING_SETUP,
	"io_uring_enter":     unix.SYS_IO_URING_ENTER,
	"io_uring_register":  unix.SYS_IO_URING_REGISTER,
	"unshare":            unix.SYS_UNSHARE,
	"clone":              unix.SYS_CLONE,
	"clone3":             unix.SYS_CLONE3,
	"sendto":             unix.SYS_SENDTO,
	"sendmsg":            unix.SYS_SENDMSG,
	"sendmmsg":           unix.SYS_SENDMMSG,
	"socket":             unix.SYS_SOCKET,
	"socketpair":         unix.SYS_SOCKETPAIR,
	"listen":             unix.SYS_LISTEN,
	"prlimit64":          unix.SYS_PRLIMIT64,
	"setpriority":        unix.SYS_SETPRIORITY,
	"ioprio_set":         unix.SYS_IOPRIO_SET,
	"sched_setaffinity":  unix.SYS_SCHED_SETAFFINITY,
	"sched_setscheduler": unix.SYS_SCHED_SETSCHEDULER,
	"sched_setparam":     unix.SYS_SCHED_SETPARAM,
	"sched_setattr":      unix.SYS_SCHED_SETATTR,
	"migrate_pages":      unix.SYS_MIGRATE_PAGES,
	"move_pages":         unix.SYS_MOVE_PAGES,
	"fchmod":             unix.SYS_FCHMOD,
	"fchmodat":           unix.SYS_FCHMODAT,
	"fchmodat2":          unix.SYS_FCHMODAT2,
	"openat":             unix.SYS_OPENAT,
	"openat2":            unix.SYS_OPENAT2,
	"mknodat":            unix.SYS_MKNODAT,
	"fchown":             unix.SYS_FCHOWN,
	"fchownat":           unix.SYS_FCHOWNAT,
	"utimensat":          unix.SYS_UTIMENSAT,
	"setxattr":           unix.SYS_SETXATTR,
	"lsetxattr":          unix.SYS_LSETXATTR,
	"fsetxattr":          unix.SYS_FSETXATTR,
	"removexattr":        unix.SYS_REMOVEXATTR,
	"lremovexattr":       unix.SYS_LREMOVEXATTR,
	"fremovexattr":       unix.SYS_FREMOVEXATTR,
	"setxattrat":         unix.SYS_SETXATTRAT,
	"removexattrat":      unix.SYS_REMOVEXATTRAT,
	"file_setattr":       unix.SYS_FILE_SETATTR,
}

// Numbers returns the syscall numbers of the rules of g on this
// architecture, once each, in order (the calls a listener must take when g
// notifies).
func Numbers(g Group) []uint32 {
	var out []uint32
	seen := map[uint32]bool{}
	for _, r := range g.Rules {
		if nr, ok := syscalls[r.Syscall]; ok && !seen[nr] {
			seen[nr] = true
			out = append(out, nr)
		}
	}
	return out
}

// legacy are the syscalls x86-64 has besides the *at ones and arm64 does
// not (its table has only the *at forms): a rule for one of them is left
// out of an arm64 filter, where nothing can make the call.
var legacy = map[string]bool{
	"chmod": true, "creat": true, "open": true, "mknod": true,
	"chown": true, "lchown": true, "utime": true, "utimes": true, "futimesat": true,
}

var errnos = map[string]unix.Errno{
	"EPERM":        unix.EPERM,
	"EACCES":       unix.EACCES,
	"ENOSYS":       unix.ENOSYS,
	"EAFNOSUPPORT": unix.EAFNOSUPPORT,
}

// Offsets into struct seccomp_data (linux/seccomp.h), the input of every
// filter: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// argLow is the offset of the low 32 bits of argument i. Classic BPF loads
// 32 bits at a time; on little-endian machines (amd64 and arm64, the only
// ones this file is built for) the low half comes first.
func argLow(i int) uint32 {
	return offArgs + 8*uint32(i)
}

// x32Bit marks a syscall number as the x32 ABI on x86-64
// (__X32_SYSCALL_BIT in arch/x86/include/uapi/asm/unistd.h).
const x32Bit = 0x40000000

// nativeArch is the AUDIT_ARCH_* value the kernel reports for this
// architecture's native syscalls.
func nativeArch() uint32 {
	if runtime.GOARCH == "arm64" {
		return unix.AUDIT_ARCH_AARCH64
	}
	return unix.AUDIT_ARCH_X86_64
}

// BuildArgs builds the filter that Args describes (the arguments of
// agentbox's hidden seccomp command).
func BuildArgs(args []string) (*Filter, error) {
	allow, extra, err := ParseArgs(args)
	if err != nil {
		return nil, err
	}
	return Build(allow, extra...)
}

// Build compiles the filter that blocks every group except those named in
// allow, plus the extra groups given (such as NoNetBypass). An unknown name
// is an error that lists the valid ones.
func Build(allow []string, extra ...Group) (*Filter, error) {
	blocked, reopened, err := split(allow)
	if err != nil {
		return nil, err
	}
	blocked = append(blocked, extra...)
	prog, err := compile(blocked)
	if err != nil {
		return nil, err
	}
	return &Filter{Blocked: blocked, Reopened: reopened, raw: encode(prog)}, nil
}

func stmt(code uint16, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k}
}

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

const (
	ldW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	ja   = unix.BPF_JMP | unix.BPF_JA
	jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ret  = unix.BPF_RET | unix.BPF_K
	and  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
)

func retErrno(e unix.Errno) unix.SockFilter {
	return stmt(ret, actionErrno(e))
}

func actionErrno(e unix.Errno) uint32 {
	return unix.SECCOMP_RET_ERRNO | (uint32(e) & unix.SECCOMP_RET_DATA)
}

// action is what a rule's Errno means as a filter's return value.
func action(name string) (uint32, bool) {
	if name == "NOTIFY" {
		return unix.SECCOMP_RET_USER_NOTIF, true
	}
	e, ok := errnos[name]
	return actionErrno(e), ok
}

// compile writes the program. Its shape, top to bottom:
//
//  1. the architecture check;
//  2. on x86-64, the x32 check;
//  3. for each rule: "is it this syscall?" and, if so, a body that either
//     returns the rule's errno or loads the syscall number again and falls
//     through to the next rule (so the accumulator holds the syscall
//     number whenever a rule is checked, and several rules can name one
//     syscall);
//  4. allow.
//
// Steps 1, 2 and the syscall comparisons only read nr and arch, so the
// kernel (5.11+) can precompute "always allowed" for every syscall no rule
// names and skip running the filter for them (seccomp_cache_prepare).
func compile(blocked []Group) ([]unix.SockFilter, error) {
	prog := []unix.SockFilter{
		// Syscall numbers only mean something for one architecture: an
		// x86-64 process can enter the i386 table with `int $0x80`, where
		// 54 is ioctl and 16 is lchown. So check the architecture before
		// looking at the number.
		stmt(ldW, offArch),
		jump(jeq, nativeArch(), 1, 0),
		// A foreign architecture is killed, not answered with an errno: no
		// per-syscall decision is possible without its table, the only
		// legitimate users (32-bit binaries) cannot run at all without
		// syscalls, not even exit, and a SIGSYS death ("Bad system call") is
		// loud and logged by the kernel's audit, where an errno would be a
		// silent puzzle.
		stmt(ret, unix.SECCOMP_RET_KILL_PROCESS),
		stmt(ldW, offNr),
	}
	if runtime.GOARCH == "amd64" {
		// x32 syscalls arrive with the native x86-64 arch value and the
		// number ORed with 0x40000000; they reach the same kernel code
		// through a second table, so keyctl|0x40000000 would slip past an
		// exact comparison with keyctl. Refuse every number from there up
		// with ENOSYS, which is what kernels built or booted without x32
		// (Debian's default) answer anyway; -1 (0xffffffff) gets ENOSYS from
		// the kernel too, so it changes nothing there.
		prog = append(prog,
			jump(jge, x32Bit, 0, 1),
			retErrno(unix.ENOSYS),
		)
	}
	for _, g := range blocked {
		for _, r := range g.Rules {
			nr, ok := syscalls[r.Syscall]
			if !ok && legacy[r.Syscall] {
				continue
			}
			if !ok {
				return nil, fmt.Errorf("seccomp group %s: no syscall number for %s on %s", g.Name, r.Syscall, runtime.GOARCH)
			}
			act, ok := action(r.Errno)
			if !ok {
				return nil, fmt.Errorf("seccomp group %s: unknown errno %q for %s", g.Name, r.Errno, r.Syscall)
			}
			body := ruleBody(r, act)
			if len(body) > 255 {
				return nil, fmt.Errorf("seccomp group %s: rule for %s is too long to jump over", g.Name, r.Syscall)
			}
			prog = append(prog, jump(jeq, nr, 0, uint8(len(body))))
			prog = append(prog, body...)
		}
	}
	prog = append(prog, stmt(ret, unix.SECCOMP_RET_ALLOW))
	// The kernel refuses longer programs (BPF_MAXINSNS in linux/bpf_common.h).
	if len(prog) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp program has %d instructions, the kernel accepts %d", len(prog), unix.BPF_MAXINSNS)
	}
	return prog, nil
}

// ruleBody is what runs once the syscall number matched r: it returns the
// rule's action, or leaves the syscall number in the accumulator and falls
// through to the instruction after it.
//
// Each condition loads its argument (ANDed with its mask), and jumps to
// the end (the reload of the syscall number) when it does not hold; when
// every condition held, the action is returned:
//
//	ld arg1 [and mask]; tests -> next or fail; ...; ret action; fail: ld nr
func ruleBody(r Rule, action uint32) []unix.SockFilter {
	if !r.conditional() {
		return []unix.SockFilter{stmt(ret, action)}
	}
	// Offsets are worked out from the end: fail is the last
	// instruction, the action the one before it.
	var blocks [][]unix.SockFilter
	for _, c := range r.conds() {
		blocks = append(blocks, condBlock(c))
	}
	var body []unix.SockFilter
	// Each block ends where the next begins; a test that fails jumps to
	// fail, which lies after the remaining blocks and the action.
	for i, b := range blocks {
		after := 1 // the action
		for _, later := range blocks[i+1:] {
			after += len(later)
		}
		for j := range b {
			if b[j].Jt == failJump {
				b[j].Jt = uint8(len(b) - j - 1 + after)
			}
			if b[j].Jf == failJump {
				b[j].Jf = uint8(len(b) - j - 1 + after)
			}
			if b[j].Code == ja && b[j].K == failJump {
				b[j].K = uint32(len(b) - j - 1 + after)
			}
		}
		body = append(body, b...)
	}
	return append(body, stmt(ret, action), stmt(ldW, offNr))
}

// failJump marks, in a block condBlock makes, a jump to where the rule's
// condition fails; ruleBody replaces it with the offset.
const failJump = 0xff

// condBlock is one condition: it falls through (to the next condition, or
// the action) when c holds, and jumps to failJump when it does not.
func condBlock(c Cond) []unix.SockFilter {
	b := []unix.SockFilter{stmt(ldW, argLow(c.Arg))}
	if c.Mask != 0 {
		b = append(b, stmt(and, c.Mask))
	}
	if len(c.Unless) > 0 {
		// Any value on the list: fail. None: fall through.
		for _, v := range c.Unless {
			b = append(b, jump(jeq, v, failJump, 0))
		}
		return b
	}
	// Any test that matches jumps over the remaining tests and the final
	// "ja fail": it holds. None matches: fail.
	var tests []unix.SockFilter
	for _, v := range c.Equal {
		tests = append(tests, jump(jeq, v, 0, 0))
	}
	if c.Bits != 0 {
		tests = append(tests, jump(jset, c.Bits, 0, 0))
	}
	for i := range tests {
		tests[i].Jt = uint8(len(tests) - i)
	}
	b = append(b, tests...)
	return append(b, stmt(ja, failJump))
}

// encode lays the program out as struct sock_filter { __u16 code; __u8 jt;
// __u8 jf; __u32 k; }, in little-endian, the byte order of amd64 and arm64.
func encode(prog []unix.SockFilter) []byte {
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}

// Memfd returns a sealed memory file holding the program, positioned at its
// start, to pass to bwrap as --add-seccomp-fd (for example through
// exec.Cmd.ExtraFiles). bwrap reads from the current position to the end,
// and the position is shared with the child, so use a fresh file for each
// bwrap run. The caller closes it.
func (f *Filter) Memfd() (*os.File, error) {
	// MFD_CLOEXEC: only the child we hand it to explicitly gets the fd.
	fd, err := unix.MemfdCreate("agentbox-seccomp", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("creating seccomp memfd: %w", err)
	}
	file := os.NewFile(uintptr(fd), "agentbox-seccomp")
	if _, err := file.Write(f.raw); err != nil {
		file.Close()
		return nil, fmt.Errorf("writing seccomp memfd: %w", err)
	}
	// Seal it: whoever else ends up holding the fd cannot change the program
	// bwrap will load, nor add or remove seals.
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		file.Close()
		return nil, fmt.Errorf("sealing seccomp memfd: %w", err)
	}
	if _, err := file.Seek(0, 0); err != nil {
		file.Close()
		return nil, fmt.Errorf("rewinding seccomp memfd: %w", err)
	}
	return file, nil
}
