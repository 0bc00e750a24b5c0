package mount

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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

// TestSweepDevDirsByDescriptor: the sweep of earlier versions' device
// node folders removes only what lies in the state folder's own dev
// folder: old folders go, a new one stays, a symlink there is removed
// without following it, and a dev folder reached through a symlink is
// not swept at all (it removed the folders where the symlink led).
func TestSweepDevDirsByDescriptor(t *testing.T) {
	old := time.Now().Add(-2 * time.Minute)
	mk := func(t *testing.T, dir string, aged bool) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "null"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if aged {
			if err := os.Chtimes(dir, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	t.Run("its own folder", func(t *testing.T) {
		base := t.TempDir()
		dev := filepath.Join(base, "state", "dev")
		outside := filepath.Join(base, "outside")
		mk(t, filepath.Join(dev, "oldrun"), true)
		mk(t, filepath.Join(dev, "newrun"), false)
		mk(t, outside, true)
		if err := os.Symlink(outside, filepath.Join(dev, "link")); err != nil {
			t.Fatal(err)
		}
		ln := filepath.Join(dev, "link")
		tv := unix.NsecToTimeval(old.UnixNano())
		if err := unix.Lutimes(ln, []unix.Timeval{tv, tv}); err != nil {
			t.Fatal(err)
		}
		sweepDevDirs(dev)
		if exists(filepath.Join(dev, "oldrun")) {
			t.Error("an old folder was left")
		}
		if !exists(filepath.Join(dev, "newrun", "null")) {
			t.Error("a new folder was removed")
		}
		if exists(ln) {
			t.Error("an old symlink was left")
		}
		if !exists(filepath.Join(outside, "null")) {
			t.Error("the sweep followed a symlink and removed what it leads to")
		}
	})
	t.Run("reached through a symlink", func(t *testing.T) {
		base := t.TempDir()
		elsewhere := filepath.Join(base, "elsewhere")
		mk(t, filepath.Join(elsewhere, "precious"), true)
		state := filepath.Join(base, "state")
		if err := os.MkdirAll(state, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, filepath.Join(state, "dev")); err != nil {
			t.Fatal(err)
		}
		sweepDevDirs(filepath.Join(state, "dev"))
		if !exists(filepath.Join(elsewhere, "precious", "null")) {
			t.Error("the sweep removed what a symlinked dev folder leads to")
		}
	})
	t.Run("a folder others may write", func(t *testing.T) {
		dev := filepath.Join(t.TempDir(), "dev")
		mk(t, filepath.Join(dev, "planted"), true)
		if err := os.Chmod(dev, 0o777); err != nil {
			t.Fatal(err)
		}
		sweepDevDirs(dev)
		if !exists(filepath.Join(dev, "planted", "null")) {
			t.Error("the sweep removed from a folder others may write")
		}
	})
}
