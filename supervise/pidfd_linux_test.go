package supervise

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func startChild(t *testing.T, script string) int {
	t.Helper()
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", script},
		&syscall.ProcAttr{Files: []uintptr{0, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitExit reaps the child and reports how it ended: its exit code, or the
// signal that killed it, through the pidfd where the kernel has one.
func TestWaitExit(t *testing.T) {
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err != nil {
		t.Logf("no pidfd here (%v): waitExit takes wait4", err)
	} else {
		unix.Close(fd)
	}
	pid := startChild(t, "exit 3")
	if ws := waitExit(pid); !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("exit 3: status %#x", ws)
	}
	pid = startChild(t, "exec sleep 30")
	time.AfterFunc(50*time.Millisecond, func() { unix.Kill(pid, unix.SIGKILL) })
	if ws := waitExit(pid); !ws.Signaled() || ws.Signal() != unix.SIGKILL {
		t.Errorf("killed: status %#x", ws)
	}
	// Reaped: the pid is no child of ours any more.
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); !errors.Is(err, unix.ECHILD) {
		t.Errorf("wait4 after waitExit: %v, want ECHILD", err)
	}
}

// The pidfd path itself, where the kernel has it: it reaps the child and
// returns its status without a thread blocked in wait4.
func TestWaitPidfd(t *testing.T) {
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err != nil {
		// AGENTBOX_MUST_WORK=1 (CI) forbids the skip.
		if os.Getenv("AGENTBOX_MUST_WORK") == "1" {
			t.Fatalf("no pidfd_open here (%v) and AGENTBOX_MUST_WORK=1", err)
		}
		t.Skipf("no pidfd_open here: %v", err)
	} else {
		unix.Close(fd)
	}
	pid := startChild(t, "sleep 0.1; exit 7")
	ws, ok := waitPidfd(pid)
	if !ok || !ws.Exited() || ws.ExitStatus() != 7 {
		t.Errorf("waitPidfd = %#x, %v; want exit 7 through the pidfd", ws, ok)
	}
}
