package mount

import (
	"fmt"
	"os"
	"syscall"

	"github.com/agentbox/agentbox/cinit"
)

// InitEnv names the variable that chooses the box's init: "go" starts
// agentbox's own init (agentbox __init) even where the C init would run.
// For comparing the two and for debugging; the default is the C init.
const InitEnv = cinit.Env

// Init kinds, as InitKind reports them.
const (
	InitC  = "c"
	InitGo = "go"
)

// InitKind says which init a box of d starts as its pid 1, and why when it
// is not the C init. The C init (package cinit) does everything the Go init
// does but be agentbox itself: agentbox verify's probe starts the Go init.
func InitKind(d Detail) (kind, why string) {
	switch {
	case len(cinit.Bytes()) == 0:
		return InitGo, "no C init is built for this architecture"
	case os.Getenv(InitEnv) == InitGo:
		return InitGo, InitEnv + "=go"
	case checksSize(d) >= cinit.CheckMax():
		return InitGo, "the mounts to check exceed the C init's buffer"
	case d.Self:
		// agentbox verify's probe is agentbox itself, started in the box
		// as /proc/self/exe: the init's own executable.
		return InitGo, "the command is agentbox itself (/proc/self/exe)"
	}
	return InitC, ""
}

// checksSize is at least the size of d's check file: each record is its
// kind, two numbers of at most 20 digits, the path, three tabs and a NUL.
func checksSize(d Detail) int {
	n := 0
	for _, c := range d.Checks {
		n += len(c.Kind) + 2*20 + len(c.Path) + 4
	}
	for _, m := range d.InitMounts {
		n += len(m.Kind) + 2*20 + len(m.Path) + 4
	}
	return n
}

// initFile opens the program bwrap runs as the box's pid 1 (fd 5, started
// as /proc/self/fd/5 __init ...): the C init in a sealed memfd, or the
// running agentbox executable itself (the Go init) when InitKind says so or
// the kernel will not execute a memfd. Both take the same arguments; c is
// true for the C init.
func initFile(d Detail) (f *os.File, c bool, err error) {
	if kind, _ := InitKind(d); kind == InitC {
		if f := cinit.Memfd(); f != nil {
			return f, true, nil
		}
	}
	// The running executable itself, not the file at its path now.
	f, err = os.Open("/proc/self/exe")
	return f, false, err
}

// capSetpcap is CAP_SETPCAP (linux/capability.h).
const capSetpcap = 8

// InitReport says which init a run's box starts here, for agentbox doctor,
// having started the C init once from its memory file.
func InitReport() string {
	kind, why := InitKind(Detail{})
	if kind == InitC {
		f := cinit.Memfd()
		if f == nil {
			return "agentbox's Go init: the kernel refused a sealed executable memory file for the C init (vm.memfd_noexec = 2?)"
		}
		defer f.Close()
		// What a security module may refuse: executing it.
		attr := &syscall.ProcAttr{Files: []uintptr{^uintptr(0), ^uintptr(0), ^uintptr(0), f.Fd()}}
		if os.Getuid() != 0 {
			// The init drops every capability, the bounding set too,
			// and refuses to start CMD if one is left: as in a box that
			// is not root's, where bwrap leaves it CAP_SETPCAP of the
			// box's own user namespace (Render), it runs in a user
			// namespace of its own holding that capability.
			attr.Sys = &syscall.SysProcAttr{
				Cloneflags:  syscall.CLONE_NEWUSER,
				UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
				GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
				AmbientCaps: []uintptr{capSetpcap},
			}
		}
		pid, err := syscall.ForkExec("/proc/self/fd/3", []string{"agentbox-init", InitCommand, "--", "/bin/true"}, attr)
		if err == nil {
			var ws syscall.WaitStatus
			_, err = syscall.Wait4(pid, &ws, 0, nil)
			if err == nil && ws.ExitStatus() != 0 {
				err = fmt.Errorf("it exited with %d", ws.ExitStatus())
			}
		}
		if err != nil && attr.Sys != nil {
			return "agentbox's C init, which does not run here in a user namespace of its own, as in a box (" + err.Error() + "): if bwrap runs, every run fails; set " + InitEnv + "=go"
		}
		if err != nil {
			return "agentbox's C init, which does not run here (" + err.Error() + "): every run fails; set " + InitEnv + "=go"
		}
		return "agentbox's C init, from a sealed memory file"
	}
	return "agentbox's Go init: " + why
}
