package supervise

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// A file with another name gets a copy of its own: same content, mode and
// times, one link; the other name keeps the old file, unchanged by a write
// to the copy. A file with one link, a symlink and a missing file are left
// alone.
func TestUnshareFiles(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "store")
	root := filepath.Join(dir, "root", "pkg")
	for _, d := range []string{outside, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	write(filepath.Join(outside, "index.js"), "module.exports = 1\n", 0o444)
	write(filepath.Join(outside, "empty"), "", 0o644)
	when := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(filepath.Join(outside, "index.js"), when, when)
	for _, n := range []string{"index.js", "empty"} {
		if err := os.Link(filepath.Join(outside, n), filepath.Join(root, n)); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "solo"), "solo\n", 0o644)
	os.Symlink(filepath.Join(outside, "index.js"), filepath.Join(root, "link"))
	files := []string{"index.js", "empty", "solo", "link", "missing"}
	var abs []string
	for _, f := range files {
		abs = append(abs, filepath.Join(root, f))
	}
	n, err := unshareFiles(abs)
	if err != nil || n != 2 {
		t.Fatalf("unshareFiles: %d copies, %v; want 2, nil", n, err)
	}
	for _, f := range []string{"index.js", "empty"} {
		var in, out unix.Stat_t
		unix.Lstat(filepath.Join(root, f), &in)
		unix.Lstat(filepath.Join(outside, f), &out)
		if in.Nlink != 1 || out.Nlink != 1 || in.Ino == out.Ino {
			t.Errorf("%s: links %d and %d, same inode %v: want a copy of its own", f, in.Nlink, out.Nlink, in.Ino == out.Ino)
		}
		if diff := cmp.Diff([]any{out.Mode, out.Uid, out.Gid, out.Size, out.Mtim}, []any{in.Mode, in.Uid, in.Gid, in.Size, in.Mtim}); diff != "" {
			t.Errorf("%s: the copy differs (-original +copy):\n%s", f, diff)
		}
	}
	os.Chmod(filepath.Join(root, "index.js"), 0o644)
	os.WriteFile(filepath.Join(root, "index.js"), []byte("changed\n"), 0o644)
	if b, _ := os.ReadFile(filepath.Join(outside, "index.js")); string(b) != "module.exports = 1\n" {
		t.Errorf("a write to the copy reached the other name: %q", b)
	}
	if l, err := os.Readlink(filepath.Join(root, "link")); err != nil || l != filepath.Join(outside, "index.js") {
		t.Errorf("the symlink was touched: %q %v", l, err)
	}
	left, _ := filepath.Glob(filepath.Join(root, ".agentbox-copy-*"))
	if len(left) != 0 {
		t.Errorf("temporary copies left: %v", left)
	}
}
