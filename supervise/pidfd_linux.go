package supervise

import (
	"os"

	"golang.org/x/sys/unix"
)

// waitExit waits for child pid to end and reaps it. It waits through a
// pidfd in the Go runtime's poller where the kernel has pidfd_open (Linux
// 5.3): no thread sits blocked in wait4 meanwhile, so the runtime's
// monitor thread goes to sleep rather than waking every few tens of
// microseconds while the box starts, which on a small machine takes CPU
// from bwrap and CMD. Without pidfds it waits in wait4.
func waitExit(pid int) unix.WaitStatus {
	if ws, ok := waitPidfd(pid); ok {
		return ws
	}
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
			return ws
		}
	}
}

// waitPidfd is waitExit through a pidfd; ok is false when pidfds or the
// poller are not to be had here (the caller then waits in wait4; pid is
// not reaped in that case).
func waitPidfd(pid int) (unix.WaitStatus, bool) {
	// pid is our child and not reaped yet, so it names that process and
	// no other (a pid is reused only once its zombie is reaped).
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err == unix.EINVAL {
		// PIDFD_NONBLOCK is Linux 5.10.
		if fd, err = unix.PidfdOpen(pid, 0); err == nil {
			err = unix.SetNonblock(fd, true)
		}
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return 0, false
	}
	// A non-blocking descriptor goes to the poller; a pidfd becomes
	// readable when its process ends.
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ws unix.WaitStatus
	reaped := false
	err = rc.Read(func(uintptr) bool {
		for {
			r, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			switch {
			case err == unix.EINTR:
				continue
			case r == 0 && err == nil:
				return false // still running: wait until the pidfd is readable
			}
			reaped = r == pid && err == nil
			return true
		}
	})
	if err != nil || !reaped {
		// Not pollable here, or wait4 failed: the caller's wait4 says.
		return 0, false
	}
	return ws, true
}
