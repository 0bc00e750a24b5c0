package cinit

import (
	"bytes"
	"debug/elf"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Memfd returns the C init in a sealed memory file, so nothing can change
// the program between here and its exec, or nil where there is none to
// run: no C init for this architecture, or a kernel that refuses (no
// memfd, or vm.memfd_noexec=2 forbids executing one).
func Memfd() *os.File {
	if len(cInit) == 0 {
		return nil
	}
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

// Helper is the C init for the Landlock run's child (its __landlock
// mode), or nil where the Go child must run instead: no C init for this
// architecture, AGENTBOX_INIT=go, or a kernel that will not execute a
// memory file.
func Helper() *os.File {
	if os.Getenv(Env) == "go" {
		return nil
	}
	return Memfd()
}

var checkMax = sync.OnceValue(func() int {
	if len(cInit) == 0 {
		return 0
	}
	f, err := elf.NewFile(bytes.NewReader(cInit))
	if err != nil {
		return 0
	}
	s := f.Section(".agentbox_limits")
	if s == nil {
		return 0
	}
	data, err := s.Data()
	if err != nil || len(data) < 8 {
		return 0
	}
	return int(f.ByteOrder.Uint64(data[:8]))
})

// CheckMax is the size of the C init's buffer for the check file (the
// mounts it verifies before the command starts): a check file must be
// shorter. It is read from the program itself (init.c defines it once);
// 0 where there is no C init, or it says nothing, and then no check file
// fits.
func CheckMax() int { return checkMax() }
