//go:build unix

package hostexec

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// fileIdentity is fi's device and inode.
func fileIdentity(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true
}

// lockShared takes state's placeholder lock (package supervise takes it
// exclusive to make, join and release placeholders) shared, making it when
// it is not there yet (a first run may be making its first placeholder
// right now); the returned function releases it. Where it cannot be made
// (a read-only state folder, inside another box) no run of this state
// makes placeholders either.
func lockShared(state string) func() {
	if state == "" || os.MkdirAll(state, 0o700) != nil {
		return func() {}
	}
	f, err := os.OpenFile(filepath.Join(state, "placeholders.lock"), os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return func() {}
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_SH) != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() }
}
