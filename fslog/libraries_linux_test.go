//go:build linux && (amd64 || arm64)

package fslog

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// placeIn makes a run's fresh folder in parent and places the libraries
// in it, as listenPreloadSocket does.
func placeIn(t *testing.T, parent, run string) string {
	t.Helper()
	dir := filepath.Join(parent, "fslog-"+run)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	if err := placeLibraries(dfd, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// statOf is the file at p, not followed.
func statOf(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// expectLibraries checks that every library in dir holds exactly the
// embedded bytes, read-only.
func expectLibraries(t *testing.T, dir string) {
	t.Helper()
	for platform, lib := range preloadLibraries {
		p := filepath.Join(dir, "agentbox-fslog-"+platform+".so")
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, lib) {
			t.Errorf("%s does not hold the library (%d bytes, want %d)", p, len(got), len(lib))
		}
		if st := statOf(t, p); st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o7777 != 0o444 {
			t.Errorf("%s: mode %o, want a regular file of mode 0444", p, st.Mode)
		}
	}
}

// A run links the kept copy once it verifies; the next run links the
// same file again; no run writes the libraries anew.
func TestPlaceLibrariesLinksKeptCopy(t *testing.T) {
	parent := t.TempDir()
	first := placeIn(t, parent, "a")
	expectLibraries(t, first)
	kept := filepath.Join(parent, SharedLibraries)
	expectLibraries(t, kept)
	if st := statOf(t, kept); st.Mode&0o777 != 0o700 {
		t.Errorf("%s: mode %o, want 0700", kept, st.Mode&0o777)
	}
	ids := map[string]uint64{}
	for platform := range preloadLibraries {
		name := "agentbox-fslog-" + platform + ".so"
		k, r := statOf(t, filepath.Join(kept, name)), statOf(t, filepath.Join(first, name))
		if k.Ino != r.Ino || k.Dev != r.Dev {
			t.Errorf("%s in the run's folder is not the kept copy", name)
		}
		ids[name] = k.Ino
	}
	// The run is over: its folder goes, the kept copy stays, and the
	// next run links the same file.
	if err := os.RemoveAll(first); err != nil {
		t.Fatal(err)
	}
	second := placeIn(t, parent, "b")
	expectLibraries(t, second)
	for name, ino := range ids {
		if st := statOf(t, filepath.Join(second, name)); st.Ino != ino {
			t.Errorf("%s was written again although the kept copy verified", name)
		}
	}
}

// What stands where the kept copy should is used only when it verifies:
// anything else is replaced, never linked into a run's folder.
func TestPlaceLibrariesRefusesUnverifiedCopy(t *testing.T) {
	var platform string
	var lib []byte
	for platform, lib = range preloadLibraries {
		break
	}
	name := "agentbox-fslog-" + platform + ".so"
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, p string)
	}{
		{"a changed byte", func(t *testing.T, p string) {
			b := bytes.Clone(lib)
			b[len(b)/2] ^= 0xff
			rewrite(t, p, b, 0o444)
		}},
		{"half written", func(t *testing.T, p string) { rewrite(t, p, lib[:len(lib)/2], 0o444) }},
		{"longer", func(t *testing.T, p string) { rewrite(t, p, append(bytes.Clone(lib), 0), 0o444) }},
		{"writable", func(t *testing.T, p string) { rewrite(t, p, lib, 0o644) }},
		{"a second name", func(t *testing.T, p string) {
			if err := os.Link(p, filepath.Join(t.TempDir(), "other")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a symlink to a copy", func(t *testing.T, p string) {
			other := filepath.Join(t.TempDir(), "other.so")
			if err := os.WriteFile(other, lib, 0o444); err != nil {
				t.Fatal(err)
			}
			os.Remove(p)
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"a folder", func(t *testing.T, p string) {
			os.Remove(p)
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"another user's", func(t *testing.T, p string) {
			if os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			if err := os.Lchown(p, 12345, 12345); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			os.RemoveAll(placeIn(t, parent, "first"))
			kept := filepath.Join(parent, SharedLibraries, name)
			c.spoil(t, kept)
			spoiled := statOf(t, kept)
			dir := placeIn(t, parent, "next")
			expectLibraries(t, dir)
			if st := statOf(t, filepath.Join(dir, name)); st.Ino == spoiled.Ino && st.Dev == spoiled.Dev {
				t.Errorf("the spoiled copy was linked into the run's folder")
			}
			if c.name != "a folder" {
				// Replaced by a good copy, which the next run links.
				expectLibraries(t, filepath.Join(parent, SharedLibraries))
			}
		})
	}
}

// A kept folder that is not the user's alone is not used: the run's
// folder gets copies of its own.
func TestPlaceLibrariesSharedFolderNotOwn(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, p string)
	}{
		{"open to others", func(t *testing.T, p string) {
			if err := os.Chmod(p, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"a symlink", func(t *testing.T, p string) {
			other := t.TempDir()
			os.RemoveAll(p)
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			os.RemoveAll(placeIn(t, parent, "first"))
			c.spoil(t, filepath.Join(parent, SharedLibraries))
			dir := placeIn(t, parent, "next")
			expectLibraries(t, dir)
			for platform := range preloadLibraries {
				if st := statOf(t, filepath.Join(dir, "agentbox-fslog-"+platform+".so")); st.Nlink != 1 {
					t.Errorf("%s has %d names: linked from a folder that is not the user's alone", platform, st.Nlink)
				}
			}
		})
	}
}

// rewrite replaces the file at p in place (the same inode) with b and
// gives it mode.
func rewrite(t *testing.T, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
