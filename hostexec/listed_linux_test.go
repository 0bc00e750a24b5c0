package hostexec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// A listing proves a name missing only where lstat would fail: the name
// is not in its folder, its folder is missing, or a file or a dangling
// link stands where the folder would be. A name that is there, in any
// form, is never said missing.
func TestListedMissing(t *testing.T) {
	tr := newTree(t)
	tr.write("home/.bashrc", "")
	tr.mkdir("home/.config/git")
	tr.write("home/plain", "")
	tr.symlink("nowhere", "home/.dangling")
	tr.symlink(".config", "home/.cfg")
	tr.symlink("nowhere", "home/.ssh")
	l := newListed()
	for _, c := range []struct {
		rel     string
		missing bool
	}{
		{"home/.bashrc", false},
		{"home/.dangling", false}, // a link is there, wherever it leads
		{"home/.config", false},
		{"home/.config/git", false},
		{"home/.cfg/git", false}, // through a link to a folder, as lstat goes
		{"home/.zshrc", true},
		{"home/.config/fish", true},
		{"home/.local/bin", true},     // its folder is missing
		{"home/.local/share/x", true}, // and its folder's folder
		{"home/plain/x", true},        // a file where the folder would be
		{"home/.ssh/config", true},    // a dangling link there
	} {
		_, err := os.Lstat(tr.p(c.rel))
		if got := l.missing(tr.p(c.rel)); got != c.missing || (got && err == nil) {
			t.Errorf("missing(%s) = %v, want %v (lstat: %v)", c.rel, got, c.missing, err)
		}
	}
}

// A folder that cannot be listed proves nothing: its names are looked up.
func TestListedUnlistable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root lists any folder; the unprivileged pass runs this")
	}
	tr := newTree(t)
	tr.write("home/.config/git/config", "")
	if err := os.Chmod(tr.p("home/.config"), 0o311); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(tr.p("home/.config"), 0o755)
	if newListed().missing(tr.p("home/.config/git")) || newListed().missing(tr.p("home/.config/fish")) {
		t.Error("a folder that cannot be listed was taken to prove a name missing")
	}
}

// The registry's result is the same whether the home folder's names are
// answered from listings (the real file system) or looked up one by one.
func TestResolveHomeListed(t *testing.T) {
	tr := newTree(t)
	for _, s := range homeSpecs {
		// Every other spec there, as a file or a folder.
		if len(s.Path)%2 == 0 {
			if filepath.Ext(s.Path) != "" {
				tr.write(filepath.Join("home", s.Path), "")
			} else {
				tr.mkdir(filepath.Join("home", s.Path))
			}
		}
	}
	os.RemoveAll(tr.p("home/.zshrc"))
	tr.symlink("nowhere", "home/.zshrc")
	os.RemoveAll(tr.p("home/.ssh"))
	tr.write("home/.ssh", "") // a file where a folder would be
	in := tr.input("home")
	in.Projects = nil
	listed, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	in.FS = slowFS{}
	each, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(tr.guards(each), tr.guards(listed)); d != "" {
		t.Errorf("guards differ (-looked up +listed):\n%s", d)
	}
	if d := cmp.Diff(each.Placeholders, listed.Placeholders); d != "" {
		t.Errorf("placeholders differ (-looked up +listed):\n%s", d)
	}
	if len(listed.Guards) < 20 {
		t.Fatalf("only %d guards: the test's home holds too little", len(listed.Guards))
	}
}

// Only a folder whose names match byte for byte is trusted to prove a
// name missing: not one marked to fold case, not one whose flags cannot
// be read, not a file system that may fold case (XFS's ascii-ci, FAT,
// overlayfs, FUSE).
func TestListedExactNames(t *testing.T) {
	type c struct {
		fs    int64
		flags uint32
		err   error
	}
	var got []bool
	for _, x := range []c{
		{unix.EXT4_SUPER_MAGIC, 0, nil},
		{unix.EXT4_SUPER_MAGIC, fsCasefoldFL, nil},
		{unix.EXT4_SUPER_MAGIC, 0, unix.ENOTTY},
		{unix.TMPFS_MAGIC, 0, nil},
		{unix.TMPFS_MAGIC, fsCasefoldFL | 0x10, nil},
		{unix.BTRFS_SUPER_MAGIC, 0, nil},
		{unix.F2FS_SUPER_MAGIC, fsCasefoldFL, nil},
		{unix.XFS_SUPER_MAGIC, 0, nil},
		{unix.MSDOS_SUPER_MAGIC, 0, nil},
		{unix.OVERLAYFS_SUPER_MAGIC, 0, nil},
		{unix.FUSE_SUPER_MAGIC, 0, nil},
	} {
		got = append(got, exactNames(x.fs, x.flags, x.err))
	}
	want := []bool{true, false, false, true, false, true, false, false, false, false, false}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("exactNames (-want +got):\n%s", d)
	}
}
