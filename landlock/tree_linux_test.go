package landlock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/supervise"
)

// TestCarveLinkWhereFolderStood: a box swaps a folder holding a read-only
// file with a symlink while another box's rules are carved. Carving the
// project around the read-only file by the name of the folder, then met
// as the link, must refuse: before, the link was opened as itself (openat2
// with O_PATH|O_NOFOLLOW returns a link at the end of a path without an
// error), its identity stood for the folder's, and the folder, now under
// the other name, was granted whole, the read-only file in it writable.
func TestCarveLinkWhereFolderStood(t *testing.T) {
	proj := t.TempDir()
	real := filepath.Join(proj, "l")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "ro"), []byte("read-only\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The swap's other side: d, the name the plan knows the folder by,
	// is a link now, and the folder is l.
	if err := os.Symlink(t.TempDir(), filepath.Join(proj, "d")); err != nil {
		t.Fatal(err)
	}
	tree := fdTree{pins: supervise.NewPins()}
	if _, err := tree.open(filepath.Join(proj, "d")); !errors.Is(err, errLink) {
		t.Fatalf("opening the link where the folder stood: %v, want errLink", err)
	}
	g := Grant{Path: proj, Rights: readRights | writeRights, Except: []string{filepath.Join(proj, "d", "ro")}}
	var granted []string
	err := carve([]Grant{g}, tree, func(n node, r Rights) error {
		granted = append(granted, n.path)
		return nil
	})
	if err == nil {
		t.Fatalf("carved around a link: granted %q", granted)
	}
}
