package mount

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"golang.org/x/sys/unix"
)

// needMknod skips a test that makes device nodes when this process cannot
// (only root can).
func needMknod(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making device nodes needs root")
	}
}

func poolEntries(t *testing.T, parent string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(parent, devPool))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// A run's nodes are handed to the next run, which takes them only as what
// fresh ones would be: what the first box changed (mode, times, an ACL) is
// set back.
func TestDevNodesReused(t *testing.T) {
	needMknod(t)
	parent := filepath.Join(t.TempDir(), "dev")
	d, err := makeDevNodes(filepath.Join(parent, "run1"), false)
	if err != nil {
		t.Fatal(err)
	}
	null := filepath.Join(parent, "run1", "null")
	var first unix.Stat_t
	if err := unix.Stat(null, &first); err != nil {
		t.Fatal(err)
	}
	// What a root box can do to its own node.
	if err := unix.Chmod(null, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.UtimesNano(null, []unix.Timespec{{Sec: 1e9}, {Sec: 1e9}}); err != nil {
		t.Fatal(err)
	}
	// An ACL granting user 12345 read access (the xattr's binary form).
	acl := []byte{2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 4, 0, 0x39, 0x30, 0, 0, 4, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
		0x10, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, 0x20, 0, 6, 0, 0xff, 0xff, 0xff, 0xff}
	hasACL := unix.Lsetxattr(null, "system.posix_acl_access", acl, 0) == nil
	// A mark a fresh node does not have and the reset leaves (inode
	// numbers are reused at once, so they cannot tell).
	marked := unix.Lsetxattr(filepath.Join(parent, "run1", "full"), "trusted.agentbox-test", []byte("1"), 0) == nil
	d.release()
	if got := poolEntries(t, parent); len(got) != 1 || got[0] != "run1" {
		t.Fatalf("pool after the first run: %v, want [run1]", got)
	}
	d2, err := makeDevNodes(filepath.Join(parent, "run2"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.remove()
	if got := poolEntries(t, parent); len(got) != 0 {
		t.Fatalf("pool while the second run holds the folder: %v, want none", got)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(parent, "run2", "null"), &st); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(parent, "run2", "full"), "trusted.agentbox-test", nil); marked && err != nil {
		t.Errorf("the second run made new nodes (%v): the folder was not reused", err)
	}
	var host unix.Stat_t
	unix.Stat("/dev/null", &host)
	if st.Mode != host.Mode || st.Rdev != host.Rdev {
		t.Errorf("reused node: mode %o rdev %d, want the host's %o %d", st.Mode, st.Rdev, host.Mode, host.Rdev)
	}
	if st.Mtim.Sec == 1e9 {
		t.Error("reused node kept the first box's times")
	}
	if hasACL {
		if _, err := unix.Lgetxattr(filepath.Join(parent, "run2", "null"), "system.posix_acl_access", nil); err != unix.ENODATA {
			t.Errorf("reused node kept the first box's ACL (%v)", err)
		}
	}
}

// A folder in the pool that is not exactly the nodes agentbox made is
// removed, never used, and new nodes are made.
func TestDevNodesPoolRefused(t *testing.T) {
	needMknod(t)
	var null unix.Stat_t
	unix.Stat("/dev/null", &null)
	var zero unix.Stat_t
	unix.Stat("/dev/zero", &zero)
	cases := []struct {
		name  string
		spoil func(t *testing.T, dir string)
	}{
		{"another device", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "null"))
			if err := unix.Mknod(filepath.Join(dir, "null"), unix.S_IFCHR|0o666, int(zero.Rdev)); err != nil {
				t.Fatal(err)
			}
		}},
		{"a regular file", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "null"))
			os.WriteFile(filepath.Join(dir, "null"), nil, 0o666)
		}},
		{"a symlink", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "null"))
			os.Symlink("/dev/null", filepath.Join(dir, "null"))
		}},
		{"another link", func(t *testing.T, dir string) {
			os.Link(filepath.Join(dir, "null"), filepath.Join(t.TempDir(), "x"))
		}},
		{"another owner", func(t *testing.T, dir string) {
			os.Lchown(filepath.Join(dir, "tty"), 12345, 12345)
		}},
		{"a node missing", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "urandom"))
		}},
		{"one more entry", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "extra"), nil, 0o600)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := filepath.Join(t.TempDir(), "dev")
			d, err := makeDevNodes(filepath.Join(parent, "run1"), false)
			if err != nil {
				t.Fatal(err)
			}
			// A mark a fresh node does not have and the reset leaves
			// (inode numbers are reused at once).
			marked := unix.Lsetxattr(filepath.Join(parent, "run1", "full"), "trusted.agentbox-test", []byte("1"), 0) == nil
			d.release()
			c.spoil(t, filepath.Join(parent, devPool, "run1"))
			d2, err := makeDevNodes(filepath.Join(parent, "run2"), false)
			if err != nil {
				t.Fatal(err)
			}
			defer d2.remove()
			if got := poolEntries(t, parent); len(got) != 0 {
				t.Errorf("pool: %v, want the spoilt folder removed", got)
			}
			for _, n := range devNodes {
				var st, host unix.Stat_t
				if err := unix.Lstat(filepath.Join(parent, "run2", n), &st); err != nil {
					t.Fatal(err)
				}
				unix.Stat("/dev/"+n, &host)
				if st.Mode != host.Mode || st.Rdev != host.Rdev || st.Nlink != 1 || st.Uid != 0 {
					t.Errorf("%s: mode %o rdev %d links %d uid %d, want a fresh copy of the host's", n, st.Mode, st.Rdev, st.Nlink, st.Uid)
				}
			}
			if _, err := unix.Lgetxattr(filepath.Join(parent, "run2", "full"), "trusted.agentbox-test", nil); marked && err == nil {
				t.Error("the spoilt folder's nodes were used")
			}
		})
	}
}

// The pool keeps at most devPoolMax folders; a console node is never
// handed on.
func TestDevNodesPoolBounded(t *testing.T) {
	needMknod(t)
	parent := filepath.Join(t.TempDir(), "dev")
	var held []*devNodeDir
	for i := 0; i < devPoolMax+2; i++ {
		d, err := makeDevNodes(filepath.Join(parent, "run"+string(rune('a'+i))), false)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, d)
	}
	for _, d := range held {
		d.release()
	}
	if got := poolEntries(t, parent); len(got) != devPoolMax {
		t.Errorf("pool holds %d folders, want %d", len(got), devPoolMax)
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 {
		t.Errorf("%s holds %d entries, want only the pool", parent, len(entries))
	}
}
