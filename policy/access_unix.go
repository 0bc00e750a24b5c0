//go:build !windows

package policy

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// CanCreate reports whether the caller can create entries in the folder
// dir, now or after changing its mode: a folder the caller owns counts
// whatever its mode (its owner can chmod it), any other one counts when
// access(2) with W_OK and X_OK says so, which counts ACLs, read-only
// mounts and root's rights. A box runs with the caller's own rights on
// host files, so what the caller cannot create there, no box can either.
func (OSFS) CanCreate(dir string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err == nil && int(st.Uid) == os.Getuid() {
		return true
	}
	return unix.Access(dir, unix.W_OK|unix.X_OK) == nil
}

// fileUID is the owner of the file fi describes, when the system says.
func fileUID(fi os.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}
