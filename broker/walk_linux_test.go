package broker

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// walk finds the folder openat2 finds, or fails where it fails, for the
// broker's lookups: links followed, ".." kept in the root, no link
// followed under RESOLVE_NO_SYMLINKS, no link under /proc.
func TestWalkAsOpenat2(t *testing.T) {
	top := t.TempDir()
	root := filepath.Join(top, "root")
	for _, d := range []string{"root/a/b", "root/c", "outside"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("a/b", filepath.Join(root, "rel"))
	os.Symlink("/c", filepath.Join(root, "abs"))
	os.Symlink("../../outside", filepath.Join(root, "up"))
	os.Symlink("loop", filepath.Join(root, "loop"))
	os.Symlink("/proc/self/cwd", filepath.Join(root, "magic"))
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rfd)
	nm := uint64(unix.RESOLVE_NO_MAGICLINKS)
	for _, tc := range []struct {
		dirfd   int
		path    string
		resolve uint64
	}{
		{rfd, "/a/b", nm | unix.RESOLVE_IN_ROOT},
		{rfd, "/rel", nm | unix.RESOLVE_IN_ROOT},
		{rfd, "/abs", nm | unix.RESOLVE_IN_ROOT},
		{rfd, "/up", nm | unix.RESOLVE_IN_ROOT},
		{rfd, "/../../..", nm | unix.RESOLVE_IN_ROOT},
		{rfd, "/loop", nm | unix.RESOLVE_IN_ROOT},
		{rfd, "/a/../c/", nm | unix.RESOLVE_IN_ROOT},
		{rfd, "/missing", nm | unix.RESOLVE_IN_ROOT},
		{rfd, "rel", nm},
		{rfd, "up", nm},
		{rfd, "rel", unix.RESOLVE_NO_SYMLINKS | nm},
		{unix.AT_FDCWD, root + "/rel", unix.RESOLVE_NO_SYMLINKS | nm},
		{unix.AT_FDCWD, root + "/a/b", unix.RESOLVE_NO_SYMLINKS | nm},
		{unix.AT_FDCWD, root + "/magic", nm},
	} {
		want, werr := unix.Openat2(tc.dirfd, tc.path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: tc.resolve})
		got, gerr := walk(tc.dirfd, tc.path, tc.resolve)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%q (resolve %#x): openat2 %v, walk %v", tc.path, tc.resolve, werr, gerr)
		}
		if werr == nil && gerr == nil {
			var ws, gs unix.Stat_t
			unix.Fstat(want, &ws)
			unix.Fstat(got, &gs)
			if ws.Dev != gs.Dev || ws.Ino != gs.Ino {
				t.Errorf("%q (resolve %#x): walk found another folder than openat2", tc.path, tc.resolve)
			}
		}
		if werr == nil {
			unix.Close(want)
		}
		if gerr == nil {
			unix.Close(got)
		}
	}
}
