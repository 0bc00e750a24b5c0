package hostexec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"

	"github.com/agentbox/agentbox/plan"
)

// The index of a search is kept from run to run, one file per writable
// root, in agentbox's state folder (which the box cannot write): the next
// search lists again only the folders that changed since (see
// Search.Index), which makes a search of a large tree that has not changed
// about twice as fast. An index is never trusted beyond that: a folder
// whose identity or ctime differ is listed again, and the index only ever
// says which entries a folder held when it had that very ctime.

// indexMagic starts an index file; a file without it is ignored. The
// rest is binary: varints and length-prefixed strings (see EncodeIndex),
// read by a decoder that checks every length against what is left. Not
// encoding/gob: its package initialisation alone cost about half a
// million instructions in every agentbox process, the box's init
// included.
const indexMagic = "agentbox-index-2\n"

// IndexFile is where the index of the search of root is kept.
func IndexFile(state, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(state, "index", hex.EncodeToString(sum[:16]))
}

// EncodeIndex encodes what idx says of the folders in root: root, the
// time the search began, the number of folders, then for each its path,
// device, inode, ctime, entry count, whether it is bare, its subfolders
// and its noted entries.
func EncodeIndex(idx *plan.Index, root string) []byte {
	b := make([]byte, 0, 4096)
	b = append(b, indexMagic...)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	strs := func(list []string) {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, s := range list {
			str(s)
		}
	}
	str(root)
	b = binary.AppendVarint(b, idx.Taken)
	var dirs []string
	for d := range idx.Dirs {
		if d == root || len(d) > len(root) && d[:len(root)] == root && d[len(root)] == '/' {
			dirs = append(dirs, d)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(dirs)))
	for _, d := range dirs {
		v := idx.Dirs[d]
		str(d)
		b = binary.AppendUvarint(b, v.Dev)
		b = binary.AppendUvarint(b, v.Ino)
		b = binary.AppendVarint(b, v.Ctime)
		b = binary.AppendUvarint(b, uint64(v.Count))
		bare := byte(0)
		if v.Bare {
			bare = 1
		}
		b = append(b, bare)
		strs(v.Subdirs)
		strs(v.Notes)
	}
	return b
}

// DecodeIndex reads an index of root; nil when data is not one (another
// root, another format, cut short or damaged).
func DecodeIndex(data []byte, root string) *plan.Index {
	rest, ok := bytes.CutPrefix(data, []byte(indexMagic))
	if !ok {
		return nil
	}
	r := &indexReader{b: rest}
	if r.str() != root {
		return nil
	}
	idx := &plan.Index{Taken: r.varint(), Dirs: map[string]plan.IndexDir{}}
	n := r.count()
	for i := 0; i < n && !r.bad; i++ {
		d := r.str()
		v := plan.IndexDir{Dev: r.uvarint(), Ino: r.uvarint(), Ctime: r.varint(), Count: int(r.uvarint())}
		switch r.byte() {
		case 0:
		case 1:
			v.Bare = true
		default:
			r.bad = true
		}
		v.Subdirs = r.strs()
		v.Notes = r.strs()
		idx.Dirs[d] = v
	}
	if r.bad || len(r.b) != 0 {
		return nil
	}
	return idx
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

func (r *indexReader) str() string {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *indexReader) strs() []string {
	n := r.count()
	var out []string
	for i := 0; i < n && !r.bad; i++ {
		out = append(out, r.str())
	}
	return out
}
