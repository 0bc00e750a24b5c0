package supervise

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// NotDumpable makes the calling process non-dumpable: no other process of
// the same user, in particular none in the box, can open its
// /proc/PID/mem, /proc/PID/fd or /proc/PID/environ or attach to it, and it
// leaves no core file. agentbox's processes in or beside a box call it:
// the supervisor and bwrap's init (pid 1 in the box, which holds no
// limits: a box that could rewrite its memory could lift them), and the
// rlimit exec. Only the calling process changes, and an exec resets it,
// so CMD itself stays an ordinary process. (The Landlock child does not
// need it: no process of its box exists before it, and Landlock keeps
// every other box away from it.)
func NotDumpable() {
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// CloseOnExec marks every descriptor from 3 up close-on-exec, so that a
// process started next inherits only the descriptors it is given
// explicitly (syscall.ProcAttr.Files clears the flag on those). What
// agentbox itself inherited from whatever started it — a shell
// redirection, an IDE, a CI runner, make's jobserver — never reaches a box.
func CloseOnExec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Kernels before 5.11: one descriptor at a time.
	entries, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("close_range: %v; listing /proc/self/fd: %w", err, rerr)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
	}
	return nil
}

// SealedFile returns a memory file holding data, positioned at its start,
// sealed so that no process holding it can change it.
func SealedFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("creating a memory file: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing a memory file: %w", err)
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("sealing a memory file: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
