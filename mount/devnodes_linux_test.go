package mount

import (
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// forkWithNodes makes its mount namespace on a thread of its own, never on
// the process's main thread: that thread's namespace is what /proc/self
// shows every thread (its mountinfo, root, ns/mnt), and Go never ends it
// (a goroutine that exits locked to it leaves it parked), so the process
// would see the box's tmpfs /dev from then on. Called from goroutines not
// locked to a thread, as the probe calls it, the work may be scheduled on
// the main thread.
func TestForkWithNodesOffTheMainThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root makes the box's device nodes")
	}
	want, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	d, err := hostDevNodes(false)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		release := make(chan struct{})
		pid, err := forkWithNodes("/bin/true", []string{"true"}, &syscall.ProcAttr{}, d, release)
		if err != nil {
			t.Fatal(err)
		}
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
				break
			}
		}
		close(release)
		if got, _ := os.Readlink("/proc/self/ns/mnt"); got != want {
			t.Fatalf("after %d starts the process's mount namespace (its main thread's) is %s, want %s", i+1, got, want)
		}
	}
}
