package plan

import (
	"slices"
	"strings"
)

// Tree is what a search of one writable root saw: every folder below the
// root (symlinks not followed), in preorder, with its identity and change
// time and the names in it that the registry of what host programs run
// looks for (package hostexec). A later search takes a folder whose
// identity and change time are the same as they were — an entry added,
// removed or renamed in a folder changes its ctime, which no process can
// set back — as holding the same entries, without listing it again.
//
// It is compact on purpose: one record of fixed size per folder, the
// folders' names in one byte slice, no pointer per folder, so a tree of a
// million files costs a few megabytes and nothing for the garbage
// collector to scan.
type Tree struct {
	// Root is the folder searched (absolute, clean).
	Root string
	// Taken is when the search began (Unix nanoseconds): a folder that
	// changed shortly before is listed again by the next search whatever
	// its stamp says (file system clocks tick coarsely).
	Taken int64
	// Names are the names the search noted; TreeDir's notes index them.
	Names []string
	// Dirs are the folders in preorder; Dirs[0] is Root.
	Dirs []TreeDir
	// Text holds the folders' names, Notes their notes (indexes into
	// Names), each folder's at its offset.
	Text  []byte
	Notes []uint16
	// Entries is how many files and folders the folders held.
	Entries int64
	// Links are the symlinks in the folders this search listed (paths
	// relative to Root), when the search was asked for them.
	Links []string
	// Fixed are the folders whose mode the search changed to list them
	// (relative to Root): the box had taken the owner's read or search
	// permission away.
	Fixed []string
	// Shared are the regular files, in the folders this search listed,
	// that have more than one link and that the box could write (paths
	// relative to Root), when the search was asked for them: a write to
	// one would change the same data under its other names, which may lie
	// outside every writable root (a package store, another project).
	Shared []string
	// Unshared are the folders (relative to Root) in which agentbox gave
	// the Shared files copies of their own before the run, after this
	// search: their change times in Dirs are the ones those copies left,
	// which are agentbox's doing, not the box's.
	Unshared map[string]bool
}

// TreeDir is one folder of a Tree.
type TreeDir struct {
	Dev, Ino uint64
	Ctime    int64
	// Parent is the index of the folder holding it (-1 for the root);
	// End is the index just after its subtree, so its first child is the
	// next folder and each next sibling is at the previous one's End.
	Parent, End int32
	NameOff     uint32
	NoteOff     uint32
	Count       uint32 // entries the folder held
	NoteLen     uint16
	NameLen     uint8
	Flags       uint8
}

// The flags of a TreeDir.
const (
	// DirListed: this search listed the folder (it is new or changed
	// since the tree it was compared with); otherwise its entries were
	// taken from that tree.
	DirListed uint8 = 1 << iota
	// DirUnlisted: the folder could not be listed (no read or search
	// permission): what is in it is unknown, so it is kept from the box.
	DirUnlisted
	// DirGit: git takes the folder for a git folder of its own (HEAD, and
	// objects/ and refs/ or a commondir): its config applies when git
	// runs in it.
	DirGit
	// DirSkipped: the search did not go into the folder (a path the box
	// could not write in that run): what is in it is unknown, so a later
	// search that goes in lists it.
	DirSkipped
	// DirShared: the folder held a regular file with more than one link
	// (Tree.Shared) when it was listed. A later search that looks for
	// such files lists it again, whatever its stamp says: a link made or
	// removed elsewhere changes the file, not its folder.
	DirShared
)

// Len is the number of folders.
func (t *Tree) Len() int { return len(t.Dirs) }

// Name is the name of folder i ("" for the root).
func (t *Tree) Name(i int) string {
	d := &t.Dirs[i]
	return string(t.Text[d.NameOff : d.NameOff+uint32(d.NameLen)])
}

// Rel is folder i's path relative to Root, slash-separated ("" for the
// root).
func (t *Tree) Rel(i int) string {
	var parts []string
	for ; i > 0; i = int(t.Dirs[i].Parent) {
		parts = append(parts, t.Name(i))
	}
	slices.Reverse(parts)
	return strings.Join(parts, "/")
}

// Path is folder i's absolute path.
func (t *Tree) Path(i int) string {
	if r := t.Rel(i); r != "" {
		return t.Root + "/" + r
	}
	return t.Root
}

// NotesOf are the noted names in folder i.
func (t *Tree) NotesOf(i int) []string {
	d := &t.Dirs[i]
	out := make([]string, 0, d.NoteLen)
	for _, n := range t.Notes[d.NoteOff : d.NoteOff+uint32(d.NoteLen)] {
		out = append(out, t.Names[n])
	}
	return out
}

// Has reports whether folder i holds the noted name.
func (t *Tree) Has(i int, name string) bool {
	d := &t.Dirs[i]
	for _, n := range t.Notes[d.NoteOff : d.NoteOff+uint32(d.NoteLen)] {
		if t.Names[n] == name {
			return true
		}
	}
	return false
}

// Children calls f for each folder in folder i, in name order.
func (t *Tree) Children(i int, f func(j int)) {
	for j := i + 1; j < int(t.Dirs[i].End); j = int(t.Dirs[j].End) {
		f(j)
	}
}

// Child returns the index of the folder called name in folder i, or -1.
func (t *Tree) Child(i int, name string) int {
	for j := i + 1; j < int(t.Dirs[i].End); j = int(t.Dirs[j].End) {
		if t.Name(j) == name {
			return j
		}
	}
	return -1
}

// Find returns the index of the folder at rel (relative to Root,
// slash-separated), or -1.
func (t *Tree) Find(rel string) int {
	if len(t.Dirs) == 0 {
		return -1
	}
	i := 0
	for rel != "" {
		name, rest, _ := strings.Cut(rel, "/")
		if i = t.Child(i, name); i < 0 {
			return -1
		}
		rel = rest
	}
	return i
}

// Noted returns the folders with notes or flags other than DirListed, in
// preorder.
func (t *Tree) Noted() []int {
	var out []int
	for i := range t.Dirs {
		if t.Dirs[i].NoteLen > 0 || t.Dirs[i].Flags&^DirListed != 0 {
			out = append(out, i)
		}
	}
	return out
}

// Listed counts the folders this search listed.
func (t *Tree) Listed() int {
	n := 0
	for i := range t.Dirs {
		if t.Dirs[i].Flags&DirListed != 0 {
			n++
		}
	}
	return n
}

// Valid reports whether the tree's records are consistent: every
// subtree nested in its parent's, every offset within its slice. A tree
// read from a file is used only when it is.
func (t *Tree) Valid() bool {
	n := int32(len(t.Dirs))
	if n == 0 || t.Dirs[0].Parent != -1 || t.Dirs[0].End != n {
		return false
	}
	for i := int32(0); i < n; i++ {
		d := &t.Dirs[i]
		if d.End <= i || d.End > n {
			return false
		}
		if i > 0 {
			p := d.Parent
			if p < 0 || p >= i || d.End > t.Dirs[p].End || d.NameLen == 0 {
				return false
			}
		}
		if uint64(d.NameOff)+uint64(d.NameLen) > uint64(len(t.Text)) ||
			uint64(d.NoteOff)+uint64(d.NoteLen) > uint64(len(t.Notes)) {
			return false
		}
	}
	for _, x := range t.Notes {
		if int(x) >= len(t.Names) {
			return false
		}
	}
	// Each folder's first child is the next record, and the children
	// tile the parent's subtree.
	for i := int32(0); i < n; i++ {
		j := i + 1
		for j < t.Dirs[i].End {
			if t.Dirs[j].Parent != i {
				return false
			}
			j = t.Dirs[j].End
		}
		if j != t.Dirs[i].End {
			return false
		}
	}
	return true
}

// NameBytes is Name without a copy: the bytes must not be changed.
func (t *Tree) NameBytes(i int) []byte {
	d := &t.Dirs[i]
	return t.Text[d.NameOff : d.NameOff+uint32(d.NameLen)]
}
