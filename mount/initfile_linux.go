package mount

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// InitEnv names the variable that chooses the box's init: "go" starts
// agentbox's own init (agentbox __init) even where the C init would run.
// For comparing the two and for debugging; the default is the C init.
const InitEnv = "AGENTBOX_INIT"

// Init kinds, as InitKind reports them.
const (
	InitC  = "c"
	InitGo = "go"
)

// InitKind says which init a box of d starts as its pid 1, and why when it
// is not the C init. The C init (mount/cinit) does everything the Go init
// does but be agentbox itself: agentbox verify's probe starts the Go init.
func InitKind(d Detail) (kind, why string) {
	switch {
	case len(cInit) == 0:
		return InitGo, "no C init is built for this architecture"
	case os.Getenv(InitEnv) == InitGo:
		return InitGo, InitEnv + "=go"
	case checksSize(d) > cCheckMax:
		return InitGo, "the mounts to check exceed the C init's buffer"
	case runsSelf(d):
		// agentbox verify's probe is agentbox itself, started in the box
		// as /proc/self/exe: the init's own executable.
		return InitGo, "the command is agentbox itself (/proc/self/exe)"
	}
	return InitC, ""
}

// cCheckMax is the largest check file (fd 8) the C init reads: its buffer
// is 4 MiB.
const cCheckMax = 4<<20 - 1

// checksSize is at least the size of d's check file: each record is its
// kind, two numbers of at most 20 digits, the path, three tabs and a NUL.
func checksSize(d Detail) int {
	n := 0
	for _, c := range d.Checks {
		n += len(c.Kind) + 2*20 + len(c.Path) + 4
	}
	return n
}

// runsSelf reports whether the box's command is /proc/self/exe, which the
// init execs as its own executable.
func runsSelf(d Detail) bool {
	if d.CommandAt <= 0 || d.CommandAt >= len(d.Args) {
		return false
	}
	cmd := d.Args[d.CommandAt+1:] // past the "--" before the init
	for i, a := range cmd {
		if a == "--" {
			return i+1 < len(cmd) && cmd[i+1] == "/proc/self/exe"
		}
	}
	return false
}

// initFile opens the program bwrap runs as the box's pid 1 (fd 5, started
// as /proc/self/fd/5 __init ...): the C init in a sealed memfd, or the
// running agentbox executable itself (the Go init) when InitKind says so or
// the kernel will not execute a memfd. Both take the same arguments.
func initFile(d Detail) (*os.File, error) {
	if kind, _ := InitKind(d); kind == InitC {
		if f := cInitMemfd(); f != nil {
			return f, nil
		}
	}
	// The running executable itself, not the file at its path now.
	return os.Open("/proc/self/exe")
}

// cInitMemfd copies the C init into a memfd and seals it, so nothing can
// change the program between here and bwrap's exec. nil when the kernel
// refuses (no memfd, or vm.memfd_noexec=2 forbids executing one).
func cInitMemfd() *os.File {
	const mfdExec = 0x10 // MFD_EXEC (Linux 6.3+): executable even under vm.memfd_noexec=1
	fd, err := unix.MemfdCreate("agentbox-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|mfdExec)
	if err == unix.EINVAL {
		// Before 6.3 MFD_EXEC is unknown and every memfd is executable.
		fd, err = unix.MemfdCreate("agentbox-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil
	}
	for b := cInit; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err != nil {
			unix.Close(fd)
			return nil
		}
		b = b[n:]
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "agentbox-init")
}

// InitReport says which init a run's box starts here, for agentbox doctor,
// having started the C init once from its memory file.
func InitReport() string {
	kind, why := InitKind(Detail{})
	if kind == InitC {
		f := cInitMemfd()
		if f == nil {
			return "agentbox's Go init: the kernel refused a sealed executable memory file for the C init (vm.memfd_noexec = 2?)"
		}
		defer f.Close()
		// What a security module may refuse: executing it.
		pid, err := syscall.ForkExec("/proc/self/fd/3", []string{"agentbox-init", InitCommand, "--", "/bin/true"},
			&syscall.ProcAttr{Files: []uintptr{^uintptr(0), ^uintptr(0), ^uintptr(0), f.Fd()}})
		if err == nil {
			var ws syscall.WaitStatus
			_, err = syscall.Wait4(pid, &ws, 0, nil)
			if err == nil && ws.ExitStatus() != 0 {
				err = fmt.Errorf("it exited with %v", ws)
			}
		}
		if err != nil {
			return "agentbox's C init, which does not run here (" + err.Error() + "): every run fails; set " + InitEnv + "=go"
		}
		return "agentbox's C init, from a sealed memory file"
	}
	return "agentbox's Go init: " + why
}

// CHelper is the C init in a sealed memory file for the Landlock run's
// child (its __landlock mode), or nil where the Go child must run instead:
// no C init for this architecture, AGENTBOX_INIT=go, or a kernel that
// will not execute a memory file.
func CHelper() *os.File {
	if len(cInit) == 0 || os.Getenv(InitEnv) == InitGo {
		return nil
	}
	return cInitMemfd()
}
