package hostexec

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// sampleTree is a small tree: the root with a and "b c", and a/x.
func sampleTree() *plan.Tree {
	t := &plan.Tree{Root: "/r", Taken: 1_700_000_000_123_456_789, Names: noteTable([]string{".claude"}), Entries: 9}
	add := func(name string, parent int32, end int32, notes ...uint16) {
		t.Dirs = append(t.Dirs, plan.TreeDir{Dev: 2049, Ino: uint64(10 + len(t.Dirs)), Ctime: 1_699_999_999_000_000_001 + int64(len(t.Dirs)),
			Parent: parent, End: end, NameOff: uint32(len(t.Text)), NameLen: uint8(len(name)),
			NoteOff: uint32(len(t.Notes)), NoteLen: uint16(len(notes)), Count: uint32(3 * len(t.Dirs))})
		t.Text = append(t.Text, name...)
		t.Notes = append(t.Notes, notes...)
	}
	add("", -1, 4, 0)
	add("a", 0, 3)
	add("x", 1, 3, 1, 2, 3)
	add("b c", 0, 4, 5)
	t.Dirs[2].Flags = plan.DirGit
	t.Dirs[3].Flags = plan.DirUnlisted | plan.DirListed
	return t
}

// A tree reads back as it was written (but for DirListed, which says what
// one search did), and a file cut short, grown, made for another root, or
// inconsistent reads as no tree at all, without a panic.
func TestIndexRoundTrip(t *testing.T) {
	tree := sampleTree()
	if !tree.Valid() {
		t.Fatal("the sample tree is not valid")
	}
	data := EncodeIndex(tree)
	got := DecodeIndex(data, "/r")
	want := *tree
	want.Dirs = append([]plan.TreeDir(nil), tree.Dirs...)
	want.Dirs[3].Flags &^= plan.DirListed
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got.Path(2) != "/r/a/x" || got.Path(3) != "/r/b c" || got.Find("a/x") != 2 || got.Find("a/y") != -1 {
		t.Errorf("paths: %q %q, find %d %d", got.Path(2), got.Path(3), got.Find("a/x"), got.Find("a/y"))
	}
	if DecodeIndex(data, "/other") != nil {
		t.Error("a tree of /r was read as one of /other")
	}
	for n := 0; n < len(data); n++ {
		if DecodeIndex(data[:n], "/r") != nil {
			t.Fatalf("a tree cut to %d of %d bytes was read", n, len(data))
		}
	}
	if DecodeIndex(append(data[:len(data):len(data)], 0), "/r") != nil {
		t.Error("a tree with a byte more was read")
	}
	// Every single byte changed: never a panic, and never a tree that
	// is not Valid.
	for i := len(indexMagic); i < len(data); i++ {
		for _, b := range []byte{0, 1, 0x7f, 0xff} {
			bad := append([]byte(nil), data...)
			bad[i] = b
			if tr := DecodeIndex(bad, "/r"); tr != nil && !tr.Valid() {
				t.Fatalf("byte %d set to %#x: an invalid tree was read", i, b)
			}
		}
	}
	// A count larger than the file: refused before anything is allocated.
	huge := append([]byte(indexMagic), 2, '/', 'r', 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)
	if DecodeIndex(huge, "/r") != nil {
		t.Error("a tree claiming 2^64-1 folders was read")
	}
}

// An index file need not be written again only when it says exactly what
// the new search saw, whenever that search began: any folder that differs
// in identity, change time, entries, notes or flags, another root, other
// noted names or a damaged file, and it is written.
func TestSameIndex(t *testing.T) {
	old := EncodeIndex(sampleTree())
	cases := []struct {
		name   string
		change func(*plan.Tree)
		same   bool
	}{
		{"the same tree", func(*plan.Tree) {}, true},
		{"a later search", func(tr *plan.Tree) { tr.Taken += 5_000_000_000 }, true},
		{"only listed this time", func(tr *plan.Tree) { tr.Dirs[1].Flags |= plan.DirListed }, true},
		{"a folder changed", func(tr *plan.Tree) { tr.Dirs[2].Ctime++ }, false},
		{"a folder replaced", func(tr *plan.Tree) { tr.Dirs[1].Ino++ }, false},
		{"another device", func(tr *plan.Tree) { tr.Dirs[0].Dev++ }, false},
		{"more entries", func(tr *plan.Tree) { tr.Dirs[3].Count++ }, false},
		{"more in the tree", func(tr *plan.Tree) { tr.Entries++ }, false},
		{"a note", func(tr *plan.Tree) { tr.Notes[tr.Dirs[2].NoteOff]++ }, false},
		{"a flag", func(tr *plan.Tree) { tr.Dirs[1].Flags |= plan.DirGit }, false},
		{"other names", func(tr *plan.Tree) { tr.Names = noteTable([]string{".codex"}) }, false},
		{"another root", func(tr *plan.Tree) { tr.Root = "/s" }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := sampleTree()
			c.change(tr)
			if got := SameIndex(old, tr); got != c.same {
				t.Errorf("SameIndex = %v, want %v", got, c.same)
			}
		})
	}
	if SameIndex(old[:len(old)-1], sampleTree()) || SameIndex(nil, sampleTree()) || SameIndex([]byte("agentbox-index-3\n"), sampleTree()) {
		t.Error("a damaged or older file counts as the same")
	}
}

// An index need not be written again when it differs only in the change
// times of the folders the run's placeholders stand in or are (moving):
// anything else, in those folders or elsewhere, and it is written.
func TestSameIndexMoving(t *testing.T) {
	old := EncodeIndex(sampleTree())
	// The root and a hold placeholders; x is one.
	moving := func(p string) (bool, bool) { return p == "/r" || p == "/r/a", p == "/r/a/x" }
	cases := []struct {
		name   string
		change func(*plan.Tree)
		same   bool
	}{
		{"the same tree", func(*plan.Tree) {}, true},
		{"a later search", func(tr *plan.Tree) { tr.Taken += 5_000_000_000 }, true},
		{"the root's change time", func(tr *plan.Tree) { tr.Dirs[0].Ctime += 7 }, true},
		{"both placeholders' folders' change times", func(tr *plan.Tree) { tr.Dirs[0].Ctime++; tr.Dirs[1].Ctime += 3 }, true},
		{"another folder's change time", func(tr *plan.Tree) { tr.Dirs[3].Ctime++ }, false},
		{"the root's and another folder's", func(tr *plan.Tree) { tr.Dirs[0].Ctime++; tr.Dirs[3].Ctime++ }, false},
		{"a placeholders' folder replaced", func(tr *plan.Tree) { tr.Dirs[1].Ctime++; tr.Dirs[1].Ino++ }, false},
		{"a placeholder made anew", func(tr *plan.Tree) { tr.Dirs[2].Ctime++; tr.Dirs[2].Ino += 40; tr.Dirs[1].Ctime++ }, true},
		{"a placeholder made anew with an entry", func(tr *plan.Tree) { tr.Dirs[2].Ino += 40; tr.Dirs[2].Count++ }, false},
		{"a placeholder on another device", func(tr *plan.Tree) { tr.Dirs[2].Dev++ }, true},
		{"more entries in the root", func(tr *plan.Tree) { tr.Dirs[0].Ctime++; tr.Dirs[0].Count++ }, false},
		{"a note in the root", func(tr *plan.Tree) { tr.Dirs[0].Ctime++; tr.Notes[tr.Dirs[0].NoteOff]++ }, false},
		{"a flag", func(tr *plan.Tree) { tr.Dirs[0].Ctime++; tr.Dirs[1].Flags |= plan.DirGit }, false},
		{"more in the tree", func(tr *plan.Tree) { tr.Dirs[0].Ctime++; tr.Entries++ }, false},
		{"other names", func(tr *plan.Tree) { tr.Names = noteTable([]string{".codex"}) }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := sampleTree()
			c.change(tr)
			if got := SameIndexMoving(old, tr, moving); got != c.same {
				t.Errorf("SameIndexMoving = %v, want %v", got, c.same)
			}
		})
	}
	grown := sampleTree()
	grown.Dirs = append(grown.Dirs, grown.Dirs[3])
	if SameIndexMoving(old, grown, moving) || SameIndexMoving(old[:len(old)-1], sampleTree(), moving) || SameIndexMoving(nil, sampleTree(), moving) {
		t.Error("another number of folders, or a damaged file, counts as the same")
	}
	tr := sampleTree()
	tr.Dirs[0].Ctime++
	if SameIndexMoving(old, tr, func(string) (bool, bool) { return false, false }) {
		t.Error("a change time moved in a folder no placeholder is in counts as the same")
	}
}
