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
// exclusive to make, join and release placeholders) shared, when there is
// one; the returned function releases it. It makes nothing: a plan changes
// nothing on disk. A run that makes its first placeholder after this look
// is met where the run's own placeholders are made (it joins it, or holds
// the folder around its own).
func lockShared(state string) func() {
	if state == "" {
		return func() {}
	}
	f, err := os.OpenFile(filepath.Join(state, "placeholders.lock"), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return func() {}
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_SH) != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() }
}
