//go:build linux && (amd64 || arm64)

package seccomp

import (
	"io"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// program builds the filter for allow and decodes the bytes bwrap would get.
func program(t *testing.T, allow []string) []unix.SockFilter {
	t.Helper()
	f, err := Build(allow)
	if err != nil {
		t.Fatalf("Build(%q): %v", allow, err)
	}
	prog, err := decode(f.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// foreignArch is an architecture the kernel can run next to the native one:
// i386 on x86-64 (int $0x80), 32-bit ARM on arm64.
func foreignArch() uint32 {
	if runtime.GOARCH == "arm64" {
		return unix.AUDIT_ARCH_ARM
	}
	return unix.AUDIT_ARCH_I386
}

func TestVerdicts(t *testing.T) {
	native := nativeArch()
	all := Names()
	type tc struct {
		name  string
		allow []string
		call  call
		want  verdict
	}
	tests := []tc{
		{"read allowed", nil, call{arch: native, nr: unix.SYS_READ}, allow},
		{"write allowed", nil, call{arch: native, nr: unix.SYS_WRITE, args: [6]uint64{1, 0, 3}}, allow},
		{"keyctl blocked", nil, call{arch: native, nr: unix.SYS_KEYCTL}, eperm},
		{"bpf blocked", nil, call{arch: native, nr: unix.SYS_BPF}, eperm},
		{"ptrace blocked", nil, call{arch: native, nr: unix.SYS_PTRACE}, eperm},
		{"io_uring_setup blocked", nil, call{arch: native, nr: unix.SYS_IO_URING_SETUP}, eperm},

		{"ioctl TIOCSTI blocked", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCSTI}}, eperm},
		{"ioctl (1<<32)|TIOCSTI blocked", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, 1<<32 | unix.TIOCSTI}}, eperm},
		{"ioctl all-ones high half with TIOCSTI blocked", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, 0xffffffff<<32 | unix.TIOCSTI}}, eperm},
		{"ioctl TIOCLINUX blocked", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCLINUX}}, eperm},
		{"ioctl (1<<32)|TIOCLINUX blocked", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, 1<<32 | unix.TIOCLINUX}}, eperm},
		{"ioctl TCGETS allowed", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TCGETS}}, allow},
		{"ioctl TIOCSTI only in the high half allowed", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCSTI << 32}}, allow},
		{"ioctl TIOCSTI as the third argument allowed", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TCGETS, unix.TIOCSTI}}, allow},
		{"ioctl TIOCSTI with tiocsti reopened allowed", []string{"tiocsti"}, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCSTI}}, allow},

		{"foreign arch ioctl killed", nil, call{arch: foreignArch(), nr: 54, args: [6]uint64{0, unix.TIOCSTI}}, kill},
		{"foreign arch read killed", nil, call{arch: foreignArch(), nr: 3}, kill},
		{"foreign arch killed with every group reopened", all, call{arch: foreignArch(), nr: 54, args: [6]uint64{0, unix.TIOCSTI}}, kill},
		{"unknown arch killed", nil, call{arch: 0, nr: unix.SYS_READ}, kill},

		{"clone with CLONE_NEWUSER blocked", nil, call{arch: native, nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}}, eperm},
		{"clone with CLONE_NEWUSER|CLONE_NEWNS blocked", nil, call{arch: native, nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNS}}, eperm},
		{"plain clone (fork) allowed", nil, call{arch: native, nr: unix.SYS_CLONE, args: [6]uint64{uint64(unix.SIGCHLD)}}, allow},
		{"thread clone allowed", nil, call{arch: native, nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID}}, allow},
		{"clone with CLONE_NEWUSER only in the high half allowed", nil, call{arch: native, nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_NEWUSER << 32}}, allow},
		{"unshare CLONE_NEWUSER blocked", nil, call{arch: native, nr: unix.SYS_UNSHARE, args: [6]uint64{unix.CLONE_NEWUSER}}, eperm},
		{"unshare CLONE_NEWNS allowed", nil, call{arch: native, nr: unix.SYS_UNSHARE, args: [6]uint64{unix.CLONE_NEWNS}}, allow},
		{"clone3 ENOSYS", nil, call{arch: native, nr: unix.SYS_CLONE3}, enosys},
		{"openat2 ENOSYS", nil, call{arch: native, nr: unix.SYS_OPENAT2, args: [6]uint64{0, 0, 0, 24}}, enosys},
		{"setuid reopened: openat2 allowed", []string{"setuid"}, call{arch: native, nr: unix.SYS_OPENAT2}, allow},
		{"userns reopened: openat2 still ENOSYS", []string{"userns"}, call{arch: native, nr: unix.SYS_OPENAT2}, enosys},

		{"userns reopened: clone with CLONE_NEWUSER allowed", []string{"userns"}, call{arch: native, nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_NEWUSER}}, allow},
		{"userns reopened: unshare CLONE_NEWUSER allowed", []string{"userns"}, call{arch: native, nr: unix.SYS_UNSHARE, args: [6]uint64{unix.CLONE_NEWUSER}}, allow},
		{"userns reopened: clone3 allowed", []string{"userns"}, call{arch: native, nr: unix.SYS_CLONE3}, allow},
		{"userns reopened: keyctl still blocked", []string{"userns"}, call{arch: native, nr: unix.SYS_KEYCTL}, eperm},
		{"ptrace reopened: process_vm_readv allowed", []string{"ptrace"}, call{arch: native, nr: unix.SYS_PROCESS_VM_READV}, allow},
		{"every group reopened: keyctl allowed", all, call{arch: native, nr: unix.SYS_KEYCTL}, allow},

		{"ioctl TIOCSETD blocked", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, 1<<32 | unix.TIOCSETD}}, eperm},
		{"ioctl TIOCEXCL blocked", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCEXCL}}, eperm},
		{"ioctl TIOCNXCL allowed", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCNXCL}}, allow},
		{"ioctl KDSETMODE blocked", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, 0x4b3a}}, eperm},
		{"ioctl VT_ACTIVATE blocked", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, 0x5606}}, eperm},
		{"ioctl with K type and a size allowed (not a console ioctl)", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, 0x80044b3a}}, allow},
		{"ioctl TIOCSWINSZ allowed", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCSWINSZ}}, allow},
		{"ioctl TIOCSCTTY allowed (a terminal of the box's own)", nil, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCSCTTY}}, allow},

		{"prlimit64 on itself allowed", nil, call{arch: native, nr: unix.SYS_PRLIMIT64, args: [6]uint64{0, unix.RLIMIT_NOFILE, 1}}, allow},
		{"prlimit64 on another pid blocked", nil, call{arch: native, nr: unix.SYS_PRLIMIT64, args: [6]uint64{4242, unix.RLIMIT_NOFILE, 1}}, eperm},
		{"prlimit64 on a negative pid blocked", nil, call{arch: native, nr: unix.SYS_PRLIMIT64, args: [6]uint64{1 << 31, unix.RLIMIT_NOFILE, 1}}, eperm},
		// The kernel reads a pid_t (an int): 1<<32 is 0 to it, the caller.
		{"prlimit64 with 0 in the low half allowed (the kernel reads 0)", nil, call{arch: native, nr: unix.SYS_PRLIMIT64, args: [6]uint64{1 << 32, unix.RLIMIT_NOFILE, 1}}, allow},
		{"setpriority of itself allowed", nil, call{arch: native, nr: unix.SYS_SETPRIORITY, args: [6]uint64{unix.PRIO_PROCESS, 0, 10}}, allow},
		{"setpriority of a process group blocked", nil, call{arch: native, nr: unix.SYS_SETPRIORITY, args: [6]uint64{unix.PRIO_PGRP, 0, 10}}, eperm},
		{"setpriority of a user blocked", nil, call{arch: native, nr: unix.SYS_SETPRIORITY, args: [6]uint64{unix.PRIO_USER, 1000, 10}}, eperm},
		{"setpriority of another pid blocked", nil, call{arch: native, nr: unix.SYS_SETPRIORITY, args: [6]uint64{unix.PRIO_PROCESS, 4242, 10}}, eperm},
		{"sched_setaffinity of itself allowed", nil, call{arch: native, nr: unix.SYS_SCHED_SETAFFINITY, args: [6]uint64{0, 8, 1}}, allow},
		{"sched_setaffinity of another pid blocked", nil, call{arch: native, nr: unix.SYS_SCHED_SETAFFINITY, args: [6]uint64{4242, 8, 1}}, eperm},
		{"sched_getaffinity of another pid allowed (it reads)", nil, call{arch: native, nr: unix.SYS_SCHED_GETAFFINITY, args: [6]uint64{4242, 8, 1}}, allow},
		{"other-processes reopened: prlimit64 on another pid allowed", []string{"other-processes"}, call{arch: native, nr: unix.SYS_PRLIMIT64, args: [6]uint64{4242}}, allow},

		{"chmod 0755 allowed", nil, call{arch: native, nr: unix.SYS_FCHMODAT, args: [6]uint64{0, 1, 0o755}}, allow},
		{"chmod 04755 blocked", nil, call{arch: native, nr: unix.SYS_FCHMODAT, args: [6]uint64{0, 1, 0o4755}}, eperm},
		{"fchmod 02755 blocked", nil, call{arch: native, nr: unix.SYS_FCHMOD, args: [6]uint64{3, 0o2755}}, eperm},
		{"fchmod 01777 (sticky) allowed", nil, call{arch: native, nr: unix.SYS_FCHMOD, args: [6]uint64{3, 0o1777}}, allow},
		{"openat O_CREAT 04755 blocked", nil, call{arch: native, nr: unix.SYS_OPENAT, args: [6]uint64{0, 1, unix.O_CREAT | unix.O_WRONLY, 0o4755}}, eperm},
		{"openat O_TMPFILE 02755 blocked", nil, call{arch: native, nr: unix.SYS_OPENAT, args: [6]uint64{0, 1, unix.O_TMPFILE | unix.O_RDWR, 0o2755}}, eperm},
		{"openat without O_CREAT, mode bits ignored, allowed", nil, call{arch: native, nr: unix.SYS_OPENAT, args: [6]uint64{0, 1, unix.O_RDONLY, 0o4755}}, allow},
		{"openat O_CREAT 0644 allowed", nil, call{arch: native, nr: unix.SYS_OPENAT, args: [6]uint64{0, 1, unix.O_CREAT | unix.O_WRONLY, 0o644}}, allow},
		{"mknodat a setuid file blocked", nil, call{arch: native, nr: unix.SYS_MKNODAT, args: [6]uint64{0, 1, unix.S_IFREG | 0o4755}}, eperm},
	}
	if runtime.GOARCH == "amd64" {
		tests = append(tests,
			tc{"x32 keyctl ENOSYS", nil, call{arch: native, nr: x32Bit | unix.SYS_KEYCTL}, enosys},
			tc{"x32 ioctl TIOCSTI ENOSYS", nil, call{arch: native, nr: x32Bit | 514, args: [6]uint64{0, unix.TIOCSTI}}, enosys},
			tc{"x32 read ENOSYS", nil, call{arch: native, nr: x32Bit | unix.SYS_READ}, enosys},
			tc{"x32 ENOSYS with every group reopened", all, call{arch: native, nr: x32Bit | unix.SYS_KEYCTL}, enosys},
			tc{"nr -1 ENOSYS as the kernel would answer", nil, call{arch: native, nr: 0xffffffff}, enosys},
			tc{"highest x86-64 number below x32 allowed", nil, call{arch: native, nr: x32Bit - 1}, allow},
		)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ret, err := run(program(t, tc.allow), tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, verdictOf(ret)); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEveryRule runs each rule of each group through the filter, blocked and
// reopened, so a rule added to the table cannot go untested: a call that
// meets every condition of the rule, and for a conditional rule one that
// misses it.
func TestEveryRule(t *testing.T) {
	native := nativeArch()
	for _, g := range Groups() {
		for _, r := range g.Rules {
			nr, ok := syscalls[r.Syscall]
			if !ok && legacy[r.Syscall] {
				continue // not on this architecture
			}
			c := call{arch: native, nr: nr}
			for _, cd := range r.conds() {
				c.args[cd.Arg] = uint64(meets(cd))
			}
			want := verdictFor(r.Errno)
			t.Run(g.Name+"/"+r.Syscall+"/"+r.When, func(t *testing.T) {
				for _, tc := range []struct {
					allow []string
					want  verdict
				}{
					{nil, want},
					{[]string{g.Name}, allow},
				} {
					ret, err := run(program(t, tc.allow), c)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(tc.want, verdictOf(ret)); diff != "" {
						t.Errorf("allow %q: verdict mismatch (-want +got):\n%s", tc.allow, diff)
					}
				}
				// Missing any one condition, the rule lets the call
				// through (another rule for the syscall may refuse it).
				for i, cd := range r.conds() {
					miss := c
					miss.args[cd.Arg] = uint64(misses(cd))
					prog, err := compile([]Group{{Name: g.Name, Rules: []Rule{r}}})
					if err != nil {
						t.Fatal(err)
					}
					ret, err := run(prog, miss)
					if err != nil {
						t.Fatal(err)
					}
					if got := verdictOf(ret); got != allow {
						t.Errorf("condition %d missed (args %v): %+v, want allow", i, miss.args, got)
					}
				}
			})
		}
	}
}

// meets returns an argument value for which c holds.
func meets(c Cond) uint32 {
	switch {
	case len(c.Equal) > 0:
		return c.Equal[0]
	case c.Bits != 0:
		return c.Bits
	}
	// Unless: a value none of the list is, even masked.
	for v := uint32(1); ; v++ {
		if !contains(c.Unless, v&maskOf(c)) {
			return v
		}
	}
}

// misses returns an argument value for which c does not hold.
func misses(c Cond) uint32 {
	if len(c.Unless) > 0 {
		return c.Unless[0]
	}
	for v := uint32(0); ; v++ {
		if !contains(c.Equal, v&maskOf(c)) && v&c.Bits == 0 {
			return v
		}
	}
}

func maskOf(c Cond) uint32 {
	if c.Mask == 0 {
		return ^uint32(0)
	}
	return c.Mask
}

func contains(list []uint32, v uint32) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// verdictFor is what a rule's Errno makes the filter answer.
func verdictFor(errno string) verdict {
	if errno == "NOTIFY" {
		return notify
	}
	return verdict{Action: "errno", Errno: errnos[errno]}
}

func TestGroupTable(t *testing.T) {
	// The UAPI values groups.go spells out must be the kernel's.
	kernel := []uint32{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD, unix.TIOCEXCL, unix.TCXONC, unix.TIOCCONS, unix.TIOCVHANGUP, unix.TIOCSLCKTRMIOS,
		unix.CLONE_NEWUSER, unix.S_ISUID, unix.S_ISGID, unix.O_CREAT, unix.O_TMPFILE &^ unix.O_DIRECTORY, unix.PRIO_PROCESS, unix.SOCK_DGRAM,
		unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, 0x4b33 &^ 0xff /* KDGKBTYPE */, 0x5600 /* VT_OPENQRY */}
	ours := []uint32{tiocsti, tioclinux, tiocsetd, tiocexcl, tcxonc, tioccons, tiocvhangup, tiocslcktrm,
		cloneNewUser, sIsuid, sIsgid, oCreat, oTmpfile, prioProcess, sockDgram, afUnix, afInet, afInet6, kdIoctls, vtIoctls}
	if diff := cmp.Diff(kernel, ours); diff != "" {
		t.Errorf("UAPI constants (-want +got):\n%s", diff)
	}
	names := map[string]bool{}
	seen := map[string]string{}
	for _, g := range Groups() {
		if names[g.Name] {
			t.Errorf("group %s listed twice", g.Name)
		}
		names[g.Name] = true
		if g.Why == "" || len(g.Rules) == 0 {
			t.Errorf("group %s needs a why and at least one rule", g.Name)
		}
		for _, r := range g.Rules {
			if _, ok := syscalls[r.Syscall]; !ok && !legacy[r.Syscall] {
				t.Errorf("group %s: no syscall number for %s", g.Name, r.Syscall)
			}
			if _, ok := action(r.Errno); !ok {
				t.Errorf("group %s: unknown errno %q", g.Name, r.Errno)
			}
			// One syscall in two groups: reopening one group would leave
			// the syscall refused by the other, which no one would guess.
			if other, ok := seen[r.Syscall]; ok && other != g.Name {
				t.Errorf("%s is in groups %s and %s", r.Syscall, other, g.Name)
			}
			seen[r.Syscall] = g.Name
			if r.conditional() && r.When == "" {
				t.Errorf("group %s: %s: a conditional rule needs a When", g.Name, r.Syscall)
			}
			for _, cd := range r.conds() {
				if cd.Arg < 0 || cd.Arg > 5 {
					t.Errorf("group %s: %s: argument %d out of range", g.Name, r.Syscall, cd.Arg)
				}
			}
		}
	}
	want := []string{"tiocsti", "keyring", "bpf", "perf", "userfaultfd", "kexec", "modules", "ptrace", "io_uring", "other-processes", "setuid", "userns"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
}

func TestGroupsIsACopy(t *testing.T) {
	before := program(t, nil)
	g := Groups()
	g[0].Rules[0].Equal[0] = 0
	g[0].Rules[0].Syscall = "read"
	g[1].Name = "tiocsti"
	if diff := cmp.Diff(before, program(t, nil)); diff != "" {
		t.Errorf("changing Groups() changed the filter (-want +got):\n%s", diff)
	}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name         string
		allow        []string
		wantBlocked  []string
		wantReopened []string
		wantErr      string
	}{
		{
			name:        "nothing reopened",
			wantBlocked: Names(),
		},
		{
			name:         "two reopened, given out of order and twice",
			allow:        []string{"userns", "ptrace", "userns"},
			wantBlocked:  []string{"tiocsti", "keyring", "bpf", "perf", "userfaultfd", "kexec", "modules", "io_uring", "other-processes", "setuid"},
			wantReopened: []string{"ptrace", "userns"},
		},
		{
			name:    "unknown group",
			allow:   []string{"userns", "network"},
			wantErr: `unknown seccomp group "network" (valid: tiocsti, keyring, bpf, perf, userfaultfd, kexec, modules, ptrace, io_uring, other-processes, setuid, userns)`,
		},
		{
			name:    "names are exact",
			allow:   []string{"UserNS"},
			wantErr: `unknown seccomp group "UserNS" (valid: tiocsti, keyring, bpf, perf, userfaultfd, kexec, modules, ptrace, io_uring, other-processes, setuid, userns)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Build(tc.allow)
			if checkErr := Check(tc.allow); (checkErr == nil) != (err == nil) {
				t.Errorf("Check and Build disagree: %v vs %v", checkErr, err)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Build(%q) error = %v, want %s", tc.allow, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := struct{ Blocked, Reopened []string }{groupNames(f.Blocked), groupNames(f.Reopened)}
			want := struct{ Blocked, Reopened []string }{tc.wantBlocked, tc.wantReopened}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
}

func groupNames(gs []Group) []string {
	var names []string
	for _, g := range gs {
		names = append(names, g.Name)
	}
	return names
}

func TestBytes(t *testing.T) {
	f, err := Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := compile(f.Blocked)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decode(f.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(prog, got); diff != "" {
		t.Errorf("Bytes() does not decode to the compiled program (-want +got):\n%s", diff)
	}
	if f.Len() != len(prog) {
		t.Errorf("Len() = %d, want %d", f.Len(), len(prog))
	}
	// The first instruction as bwrap reads it: ld [4] (the arch), little-endian.
	if diff := cmp.Diff([]byte{0x20, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00}, f.Bytes()[:8]); diff != "" {
		t.Errorf("first instruction bytes (-want +got):\n%s", diff)
	}
	b := f.Bytes()
	b[0] = 0xff
	if f.Bytes()[0] == 0xff {
		t.Error("Bytes() returned the filter's own buffer")
	}
}

func TestMemfd(t *testing.T) {
	f, err := Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	file, err := f.Memfd()
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	got, err := io.ReadAll(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f.Bytes(), got); diff != "" {
		t.Errorf("memfd content (-want +got):\n%s", diff)
	}
	seals, err := unix.FcntlInt(file.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if seals != want {
		t.Errorf("seals = %#x, want %#x", seals, want)
	}
	if _, err := file.WriteAt([]byte{0}, 0); err == nil {
		t.Error("writing to the sealed memfd succeeded")
	}
}

// The extra groups a backend adds for a network mode: only the socket
// families the box needs, and under Landlock none the ways past its
// connect check. socket(2) is named by two rules then; each one answers.
func TestNetworkGroups(t *testing.T) {
	native := nativeArch()
	build := func(t *testing.T, extra []Group) []unix.SockFilter {
		f, err := Build(nil, extra...)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := decode(f.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return prog
	}
	eafnosupport := verdict{Action: "errno", Errno: unix.EAFNOSUPPORT}
	sock := func(family, typ, proto uint64) call {
		return call{arch: native, nr: unix.SYS_SOCKET, args: [6]uint64{family, typ, proto}}
	}
	tests := []struct {
		name string
		mode string
		ll   bool
		call call
		want verdict
	}{
		{"unix allowed", "none", false, sock(unix.AF_UNIX, unix.SOCK_STREAM, 0), allow},
		{"inet allowed", "none", false, sock(unix.AF_INET, unix.SOCK_STREAM, 0), allow},
		{"inet6 allowed", "allowlist", false, sock(unix.AF_INET6, unix.SOCK_DGRAM, 0), allow},
		{"netlink allowed", "none", false, sock(unix.AF_NETLINK, unix.SOCK_RAW, 0), allow},
		{"vsock refused", "none", false, sock(unix.AF_VSOCK, unix.SOCK_STREAM, 0), eafnosupport},
		{"vsock refused under allowlist", "allowlist", false, sock(unix.AF_VSOCK, unix.SOCK_STREAM, 0), eafnosupport},
		{"tipc refused", "none", false, sock(unix.AF_TIPC, unix.SOCK_RDM, 0), eafnosupport},
		{"packet refused", "none", false, sock(unix.AF_PACKET, unix.SOCK_RAW, 0), eafnosupport},
		{"smc refused", "none", false, sock(unix.AF_SMC, unix.SOCK_STREAM, 0), eafnosupport},
		{"vsock in the high half still vsock", "none", false, sock(1<<32|unix.AF_VSOCK, unix.SOCK_STREAM, 0), eafnosupport},
		{"family 0 refused", "none", false, sock(0, unix.SOCK_STREAM, 0), eafnosupport},
		{"a family the kernel gains later refused", "none", false, sock(63, unix.SOCK_STREAM, 0), eafnosupport},
		{"vsock allowed with the network open", "open", false, sock(unix.AF_VSOCK, unix.SOCK_STREAM, 0), allow},
		{"landlock: MPTCP refused by the other socket rule", "none", true, sock(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), eperm},
		{"landlock: SMC protocol refused", "none", true, sock(unix.AF_INET, unix.SOCK_STREAM, 256), eperm},
		{"landlock: vsock refused", "none", true, sock(unix.AF_VSOCK, unix.SOCK_STREAM, 0), eafnosupport},
		{"landlock: plain TCP allowed (Landlock refuses connect)", "none", true, sock(unix.AF_INET, unix.SOCK_STREAM, 0), allow},
		{"landlock: TCP Fast Open refused", "none", true, call{arch: native, nr: unix.SYS_SENDTO, args: [6]uint64{3, 0, 0, unix.MSG_FASTOPEN}}, eperm},
		{"landlock: ICMP ping socket refused", "none", true, sock(unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP), eperm},
		{"landlock: ICMPv6 ping socket refused", "allowlist", true, sock(unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_ICMPV6), eperm},
		{"landlock: listen refused (it binds a port itself)", "none", true, call{arch: native, nr: unix.SYS_LISTEN, args: [6]uint64{3, 1}}, eperm},
		{"landlock allowlist: listen refused", "allowlist", true, call{arch: native, nr: unix.SYS_LISTEN, args: [6]uint64{3, 1}}, eperm},
		{"landlock open: listen allowed", "open", true, call{arch: native, nr: unix.SYS_LISTEN, args: [6]uint64{3, 1}}, allow},
		{"bwrap none: listen allowed (its own loopback)", "none", false, call{arch: native, nr: unix.SYS_LISTEN, args: [6]uint64{3, 1}}, allow},
		{"bwrap none: MPTCP allowed (its namespace has only loopback)", "none", false, sock(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), allow},
		{"keyctl still refused", "none", true, call{arch: native, nr: unix.SYS_KEYCTL}, eperm},
		{"read allowed", "none", true, call{arch: native, nr: unix.SYS_READ}, allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ret, err := run(build(t, ForNetwork(tc.mode, tc.ll)), tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, verdictOf(ret)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

// The Landlock box's own extra groups: no datagram socket of IPv4 or IPv6
// (before Landlock ABI 10), no unix socket but socketpair.
func TestLandlockGroups(t *testing.T) {
	native := nativeArch()
	sock := func(family, typ uint64) call {
		return call{arch: native, nr: unix.SYS_SOCKET, args: [6]uint64{family, typ, 0}}
	}
	tests := []struct {
		name  string
		extra []Group
		call  call
		want  verdict
	}{
		{"udp refused", []Group{NoUDP}, sock(unix.AF_INET, unix.SOCK_DGRAM), eperm},
		{"udp with flags refused", []Group{NoUDP}, sock(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC), eperm},
		{"tcp allowed", []Group{NoUDP}, sock(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC), allow},
		{"unix datagram not refused by no-udp", []Group{NoUDP}, sock(unix.AF_UNIX, unix.SOCK_DGRAM), allow},
		{"netlink datagram not refused by no-udp", []Group{NoUDP}, sock(unix.AF_NETLINK, unix.SOCK_DGRAM), allow},
		{"unix socket refused", []Group{NoUnixSockets}, sock(unix.AF_UNIX, unix.SOCK_STREAM), eperm},
		{"chmod goes to the supervisor", []Group{Metadata}, call{arch: native, nr: unix.SYS_FCHMODAT, args: [6]uint64{0, 1, 0o644}}, notify},
		{"chmod with a setuid bit refused first", []Group{Metadata}, call{arch: native, nr: unix.SYS_FCHMODAT, args: [6]uint64{0, 1, 0o4755}}, eperm},
		{"fsetxattr goes to the supervisor", []Group{Metadata}, call{arch: native, nr: unix.SYS_FSETXATTR}, notify},
		{"chattr goes to the supervisor", []Group{Metadata}, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{3, unix.FS_IOC_SETFLAGS}}, notify},
		{"verity refused", []Group{Metadata}, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{3, unix.FS_IOC_ENABLE_VERITY}}, eperm},
		{"TIOCSTI still refused", []Group{Metadata}, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCSTI}}, eperm},
		{"TCGETS allowed", []Group{Metadata}, call{arch: native, nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TCGETS}}, allow},
		{"write allowed", []Group{Metadata}, call{arch: native, nr: unix.SYS_WRITE}, allow},
		{"unix socketpair allowed", []Group{NoUnixSockets}, call{arch: native, nr: unix.SYS_SOCKETPAIR, args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}}, allow},
		{"unix datagram socketpair refused", []Group{NoUnixSockets}, call{arch: native, nr: unix.SYS_SOCKETPAIR, args: [6]uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC}}, eperm},
		{"inet allowed by no-unix-sockets", []Group{NoUnixSockets}, sock(unix.AF_INET, unix.SOCK_STREAM), allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Build(nil, tc.extra...)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := decode(f.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			ret, err := run(prog, tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, verdictOf(ret)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

// The hidden seccomp command's arguments round-trip: extra groups as
// +NAME, then the reopened ones.
func TestArgs(t *testing.T) {
	args := Args([]string{"userns"}, ForNetwork("none", true))
	if diff := cmp.Diff([]string{"+no-net-bypass", "+socket-families", "userns"}, args); diff != "" {
		t.Errorf("Args (-want +got):\n%s", diff)
	}
	allow, extra, err := ParseArgs(args)
	if err != nil || len(extra) != 2 || extra[1].Name != "socket-families" || len(allow) != 1 {
		t.Errorf("ParseArgs = %v, %v, %v", allow, extra, err)
	}
	if _, _, err := ParseArgs([]string{"+nope"}); err == nil {
		t.Error("an unknown extra group was accepted")
	}
	a, _ := Build([]string{"userns"}, ForNetwork("none", true)...)
	b, _ := BuildArgs(args)
	if diff := cmp.Diff(a.Bytes(), b.Bytes()); diff != "" {
		t.Errorf("BuildArgs differs from Build (-want +got):\n%s", diff)
	}
}
