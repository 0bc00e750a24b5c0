package hostexec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"

	"github.com/agentbox/agentbox/plan"
)

// What a search saw of each writable root (a plan.Tree) is kept from run
// to run, one file per root, in agentbox's state folder, which the box
// cannot write: the next search lists again only the folders that changed
// since, and checks each of the others with one statx. It is never trusted
// beyond that: a folder whose identity or change time differ is listed
// again, the tree only says which entries a folder held when it had that
// very ctime, a file that is not exactly a tree of this root in this form
// is no tree, and the file is read by descriptor from a folder of the
// user's own that nobody else can write (ReadIndex).

// indexMagic starts an index file; a file without it is ignored. The
// rest is binary: varints and length-prefixed strings (see EncodeIndex),
// read by a decoder that checks every length against what is left. Not
// encoding/gob: its package initialisation alone cost about half a
// million instructions in every agentbox process, the box's init
// included. Form 4 added plan.DirShared: a tree of an earlier form never
// looked at its files' links, so none of its folders may be taken as
// holding no shared file.
const indexMagic = "agentbox-index-4\n"

// IndexFile is where the tree of the search of root is kept.
func IndexFile(state, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(state, "index", hex.EncodeToString(sum[:16]))
}

// EncodeIndex encodes t: its root, the time the search began, the noted
// names, then per folder in preorder its subtree size, name, device,
// inode, ctime, entry count, flags (without DirListed) and notes.
func EncodeIndex(t *plan.Tree) []byte {
	b := make([]byte, 0, 64+len(t.Text)+len(t.Dirs)*24)
	b = append(b, indexMagic...)
	str := func(s []byte) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str([]byte(t.Root))
	b = binary.AppendVarint(b, t.Taken)
	b = binary.AppendUvarint(b, uint64(len(t.Names)))
	for _, n := range t.Names {
		str([]byte(n))
	}
	b = binary.AppendUvarint(b, uint64(t.Entries))
	b = binary.AppendUvarint(b, uint64(len(t.Dirs)))
	for i := range t.Dirs {
		d := &t.Dirs[i]
		b = binary.AppendUvarint(b, uint64(d.End-int32(i)))
		str(t.NameBytes(i))
		b = binary.AppendUvarint(b, d.Dev)
		b = binary.AppendUvarint(b, d.Ino)
		b = binary.AppendVarint(b, d.Ctime)
		b = binary.AppendUvarint(b, uint64(d.Count))
		b = append(b, d.Flags&^plan.DirListed)
		b = binary.AppendUvarint(b, uint64(d.NoteLen))
		for _, x := range t.Notes[d.NoteOff : d.NoteOff+uint32(d.NoteLen)] {
			b = binary.AppendUvarint(b, uint64(x))
		}
	}
	return b
}

// SameIndex reports whether old, the bytes of an index file, are t as
// EncodeIndex writes it but for the time its search began: every folder
// with the same identity, change time, entries and notes. Such a file need
// not be written again: what it says still holds, and by its older time a
// later search trusts no folder this one's would not.
func SameIndex(old []byte, t *plan.Tree) bool {
	return sameIndex(old, t, nil)
}

// SameIndexMoving is SameIndex, but a folder of t for which moving (its
// absolute path) says moved may have another change time in old, and one
// for which it says replaced another identity too (the same entries and
// notes otherwise). Those are the folders this run's placeholders stand
// in (moved) and the placeholder folders themselves (replaced: made anew
// every run): removing them after the check moves the change times of
// their folders again, so a later search lists those again whatever the
// file says, and does not find the placeholders there; writing t would
// tell it nothing old does not.
func SameIndexMoving(old []byte, t *plan.Tree, moving func(path string) (moved, replaced bool)) bool {
	return sameIndex(old, t, moving)
}

// sameIndex compares old with t as it reads it, folder by folder, with
// no copy of either (a project of many folders would hold its tree
// several times over at the end of a run otherwise): every value EncodeIndex
// writes but the search's time, and a folder's identity and change time
// as moving allows (nil: none may differ).
func sameIndex(old []byte, t *plan.Tree, moving func(path string) (moved, replaced bool)) bool {
	rest, ok := bytes.CutPrefix(old, []byte(indexMagic))
	if !ok {
		return false
	}
	r := &indexReader{b: rest}
	if string(r.str()) != t.Root {
		return false
	}
	r.varint() // the time its search began
	if r.uvarint() != uint64(len(t.Names)) {
		return false
	}
	for _, n := range t.Names {
		if string(r.str()) != n {
			return false
		}
	}
	if r.uvarint() != uint64(t.Entries) || r.uvarint() != uint64(len(t.Dirs)) {
		return false
	}
	for i := range t.Dirs {
		d := &t.Dirs[i]
		if r.uvarint() != uint64(d.End-int32(i)) || !bytes.Equal(r.str(), t.NameBytes(i)) {
			return false
		}
		dev, ino, ctime := r.uvarint(), r.uvarint(), r.varint()
		if r.uvarint() != uint64(d.Count) || r.byte() != d.Flags&^plan.DirListed || r.uvarint() != uint64(d.NoteLen) {
			return false
		}
		for _, x := range t.Notes[d.NoteOff : d.NoteOff+uint32(d.NoteLen)] {
			if r.uvarint() != uint64(x) {
				return false
			}
		}
		if r.bad {
			return false
		}
		if dev == d.Dev && ino == d.Ino && ctime == d.Ctime {
			continue
		}
		if moving == nil {
			return false
		}
		moved, replaced := moving(t.Path(i))
		if !replaced && !(moved && dev == d.Dev && ino == d.Ino) {
			return false
		}
	}
	return !r.bad && len(r.b) == 0
}

// DecodeIndex reads the tree of root from data; nil when data is not one
// (another root, another form, cut short, damaged or inconsistent).
func DecodeIndex(data []byte, root string) *plan.Tree {
	rest, ok := bytes.CutPrefix(data, []byte(indexMagic))
	if !ok {
		return nil
	}
	r := &indexReader{b: rest}
	if string(r.str()) != root {
		return nil
	}
	t := &plan.Tree{Root: root, Taken: r.varint()}
	nn := r.count()
	for i := 0; i < nn && !r.bad; i++ {
		t.Names = append(t.Names, string(r.str()))
	}
	t.Entries = int64(r.uvarint())
	n := r.count()
	if r.bad || n > 1<<31-1 {
		return nil
	}
	if n > liftAt {
		liftLimit()
	}
	t.Dirs = make([]plan.TreeDir, 0, n)
	// The parent of each folder: the nearest folder before it whose
	// subtree still holds it.
	var stack []int32
	for i := 0; i < n && !r.bad; i++ {
		size := r.uvarint()
		name := r.str()
		d := plan.TreeDir{End: int32(i) + int32(min(size, uint64(n))), Dev: r.uvarint(), Ino: r.uvarint(), Ctime: r.varint()}
		d.Count = uint32(r.uvarint())
		d.Flags = r.byte()
		nl := r.count()
		if size == 0 || size > uint64(n-i) || len(name) > 255 || (i > 0) != (len(name) > 0) || nl > 1<<16-1 {
			return nil
		}
		for len(stack) > 0 && t.Dirs[stack[len(stack)-1]].End <= int32(i) {
			stack = stack[:len(stack)-1]
		}
		d.Parent = -1
		if len(stack) > 0 {
			d.Parent = stack[len(stack)-1]
		} else if i > 0 {
			return nil
		}
		d.NameOff, d.NameLen = uint32(len(t.Text)), uint8(len(name))
		t.Text = append(t.Text, name...)
		d.NoteOff, d.NoteLen = uint32(len(t.Notes)), uint16(nl)
		for j := 0; j < nl && !r.bad; j++ {
			t.Notes = append(t.Notes, uint16(min(r.uvarint(), 1<<16-1)))
		}
		t.Dirs = append(t.Dirs, d)
		stack = append(stack, int32(i))
	}
	if r.bad || len(r.b) != 0 || !t.Valid() {
		return nil
	}
	return t
}

// indexReader reads EncodeIndex's form; after the first fault every read
// gives a zero value and bad is true.
type indexReader struct {
	b   []byte
	bad bool
}

func (r *indexReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || r.bad {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *indexReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 || r.bad {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *indexReader) byte() byte {
	if len(r.b) == 0 || r.bad {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// count reads a number of items, each at least one byte long: more than
// the bytes left is a damaged file (and no allocation is made for it).
func (r *indexReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad = true
		return 0
	}
	return int(n)
}

func (r *indexReader) str() []byte {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}
