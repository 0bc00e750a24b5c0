//go:build linux && (amd64 || arm64)

package fslog

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// run executes the classic BPF program on struct seccomp_data for a call
// with number nr, architecture arch and arguments args: the few
// instructions the log's program uses.
func run(t *testing.T, prog []unix.SockFilter, nr int, arch uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[offNr:], uint32(nr))
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[offArgs+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case ldW:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case jeq:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case jset:
			if acc&in.K != 0 {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case ret:
			return in.K
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// Every watched call goes to the supervisor; a new filter with a listener
// is refused; everything else, and every other architecture, is allowed.
func TestProgram(t *testing.T) {
	prog := program(spec{log: true, reads: true})
	arch := nativeArch()
	for nr, c := range calls {
		if got := run(t, prog, int(nr), arch); got != unix.SECCOMP_RET_USER_NOTIF {
			t.Errorf("%s: %#x, want user notification", c.name, got)
		}
	}
	for _, nr := range []int{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_CLOSE, unix.SYS_FSTAT, unix.SYS_EXECVE, unix.SYS_GETDENTS64} {
		if got := run(t, prog, nr, arch); got != unix.SECCOMP_RET_ALLOW {
			t.Errorf("syscall %d: %#x, want allow", nr, got)
		}
	}
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	for _, tc := range []struct {
		name      string
		op, flags uint64
		want      uint32
	}{
		{"a filter with a listener", unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, eperm},
		{"a listener with other flags", unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC, eperm},
		{"a listener in the high bits is not one", unix.SECCOMP_SET_MODE_FILTER, 1 << 40, unix.SECCOMP_RET_ALLOW},
		{"a plain filter", unix.SECCOMP_SET_MODE_FILTER, 0, unix.SECCOMP_RET_ALLOW},
		{"reading the actions", unix.SECCOMP_GET_ACTION_AVAIL, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, unix.SECCOMP_RET_ALLOW},
	} {
		if got := run(t, prog, unix.SYS_SECCOMP, arch, tc.op, tc.flags); got != tc.want {
			t.Errorf("seccomp, %s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
	if got := run(t, prog, unix.SYS_OPENAT, unix.AUDIT_ARCH_I386); got != unix.SECCOMP_RET_ALLOW {
		t.Errorf("another architecture: %#x, want allow (the box's main filter kills it)", got)
	}
}

// Without reads, an open goes to the supervisor when it may write, create
// or truncate, whatever else its flags say; an open for reading (or for a
// handle) does not; openat2, whose flags the filter cannot see, always
// does; every other watched call still does.
func TestProgramWithoutReads(t *testing.T) {
	prog := program(spec{log: true})
	arch := nativeArch()
	notify, allow := uint32(unix.SECCOMP_RET_USER_NOTIF), uint32(unix.SECCOMP_RET_ALLOW)
	high := uint64(0xffffffff) << 32 // flags are an int: the kernel ignores these
	for _, tc := range []struct {
		name  string
		flags uint64
		want  uint32
	}{
		{"read", unix.O_RDONLY, allow},
		{"read, cloexec, directory", unix.O_RDONLY | unix.O_CLOEXEC | unix.O_DIRECTORY, allow},
		{"read with noise in the high bits", unix.O_RDONLY | high, allow},
		{"handle", unix.O_PATH | unix.O_CLOEXEC, allow},
		{"append without writing", unix.O_APPEND, allow},
		{"write", unix.O_WRONLY, notify},
		{"read and write", unix.O_RDWR | unix.O_CLOEXEC, notify},
		{"create", unix.O_CREAT, notify},
		{"create exclusive", unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL, notify},
		{"truncate", unix.O_TRUNC, notify},
		{"tmpfile", unix.O_TMPFILE | unix.O_RDWR, notify},
		{"write with noise in the high bits", unix.O_WRONLY | high, notify},
	} {
		opens := 0
		for nr, c := range calls {
			if c.open < 0 {
				continue
			}
			opens++
			args := make([]uint64, 6)
			args[c.open] = tc.flags
			if got := run(t, prog, int(nr), arch, args...); got != tc.want {
				t.Errorf("%s, %s: %#x, want %#x", c.name, tc.name, got, tc.want)
			}
		}
		if opens == 0 {
			t.Fatal("no open call in the table")
		}
	}
	if got := run(t, prog, unix.SYS_OPENAT2, arch); got != notify {
		t.Errorf("openat2: %#x, want user notification", got)
	}
	for nr, c := range calls {
		if c.op == "" {
			continue
		}
		if got := run(t, prog, int(nr), arch); got != notify {
			t.Errorf("%s: %#x, want user notification", c.name, got)
		}
	}
	for _, nr := range []int{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_CLOSE, unix.SYS_FSTAT, unix.SYS_EXECVE} {
		if got := run(t, prog, nr, arch); got != allow {
			t.Errorf("syscall %d: %#x, want allow", nr, got)
		}
	}
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	if got := run(t, prog, unix.SYS_SECCOMP, arch, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER); got != eperm {
		t.Errorf("a filter with a listener: %#x, want EPERM", got)
	}
}

// The table names every path call of the architecture that can create,
// remove, rename, link, truncate or change a file by name.
func TestCallsComplete(t *testing.T) {
	want := []uint32{unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_MKDIRAT, unix.SYS_MKNODAT, unix.SYS_UNLINKAT,
		unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2, unix.SYS_LINKAT, unix.SYS_SYMLINKAT, unix.SYS_TRUNCATE,
		unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_FCHOWNAT, unix.SYS_UTIMENSAT, unix.SYS_SETXATTR,
		unix.SYS_LSETXATTR, unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR}
	for _, nr := range want {
		if _, ok := calls[nr]; !ok {
			t.Errorf("syscall %d is not watched", nr)
		}
	}
	for nr, c := range calls {
		if c.path < 0 || c.path > 5 || c.path2 > 5 || c.dirfd > 5 || c.at > 5 || c.open > 5 {
			t.Errorf("%s (%d): an argument index out of range: %+v", c.name, nr, c)
		}
	}
}

// The filter the supervisor offers the C init and C child is program's,
// byte for byte in the kernel's sock_filter layout.
func TestProgramBytes(t *testing.T) {
	for _, reads := range []bool{false, true} {
		b := programBytes(spec{log: true, reads: reads})
		prog := program(spec{log: true, reads: reads})
		if len(b) != 1+8*len(prog) || b[0] != msgProgram {
			t.Fatalf("reads=%v: %d bytes for %d instructions", reads, len(b), len(prog))
		}
		for i, f := range prog {
			r := b[1+8*i:]
			got := unix.SockFilter{Code: uint16(r[0]) | uint16(r[1])<<8, Jt: r[2], Jf: r[3], K: uint32(r[4]) | uint32(r[5])<<8 | uint32(r[6])<<16 | uint32(r[7])<<24}
			if got != f {
				t.Fatalf("reads=%v: instruction %d is %+v, want %+v", reads, i, got, f)
			}
		}
	}
}

// With a broker, its calls go to the supervisor too, every one of them
// (fchmod, fsetxattr and the attribute ioctls on a descriptor as well as
// the calls by path), and the log's own calls only when the log is on;
// any other ioctl is allowed.
func TestProgramWithBroker(t *testing.T) {
	arch := nativeArch()
	notify, allow := uint32(unix.SECCOMP_RET_USER_NOTIF), uint32(unix.SECCOMP_RET_ALLOW)
	for _, sp := range []spec{{broker: true}, {log: true, broker: true}} {
		prog := program(sp)
		for nr := range brokered {
			if got := run(t, prog, int(nr), arch); got != notify {
				t.Errorf("%+v: syscall %d: %#x, want user notification", sp, nr, got)
			}
			if !Brokered(Request{Nr: nr}) {
				t.Errorf("Brokered says no to syscall %d", nr)
			}
		}
		for _, tc := range []struct {
			req  uint64
			want uint32
		}{
			{unix.FS_IOC_SETFLAGS, notify},
			{1<<32 | unix.FS_IOC_SETFLAGS, notify},
			{0x401c5820 /* FS_IOC_FSSETXATTR */, notify},
			{unix.TCGETS, allow},
			{unix.FS_IOC_GETFLAGS, allow},
		} {
			if got := run(t, prog, unix.SYS_IOCTL, arch, 3, tc.req); got != tc.want {
				t.Errorf("%+v: ioctl %#x: %#x, want %#x", sp, tc.req, got, tc.want)
			}
			if Brokered(Request{Nr: unix.SYS_IOCTL, Args: [6]uint64{3, tc.req}}) != (tc.want == notify) {
				t.Errorf("Brokered disagrees with the filter on ioctl %#x", tc.req)
			}
		}
		want := allow
		if sp.log {
			want = notify
		}
		if got := run(t, prog, unix.SYS_UNLINKAT, arch); got != want {
			t.Errorf("%+v: unlinkat: %#x, want %#x", sp, got, want)
		}
		for _, nr := range []int{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_FSTAT} {
			if got := run(t, prog, nr, arch); got != allow {
				t.Errorf("%+v: syscall %d: %#x, want allow", sp, nr, got)
			}
		}
	}
}
