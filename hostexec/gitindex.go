package hostexec

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
)

// Git's index (the file .git/index, gitformat-index(5)) can hide a change
// of a tracked file from git status and git diff: an entry marked
// assume-unchanged (assume-valid, bit 15 of its flags) or skip-worktree
// (bit 14 of its extended flags, index versions 3 and 4) is not compared
// with the work tree. A box that sets either on a file it changed makes
// the user's review miss the change; the after-run check clears the marks
// the run set.

// IndexFlag is one entry of a git index that hides the work tree's copy
// of a file from git.
type IndexFlag struct {
	Path          string
	AssumeValid   bool
	SkipWorktree  bool
	flagsOff, ext int // offsets of the flags and the extended flags (-1: none)
}

var errIndex = errors.New("not a git index this reader understands")

// IndexFlags returns the entries of index data (a .git/index file) marked
// assume-unchanged or skip-worktree. hashSize is the size of an object
// name: 20 (SHA-1) or 32 (SHA-256). It reads data once, in time and memory
// linear in its size: every offset is checked before use, and a version-4
// name is rebuilt in one buffer (cut to the shared prefix, then extended),
// never copied whole per entry. What it cannot read is an error, never a
// panic.
func IndexFlags(data []byte, hashSize int) ([]IndexFlag, error) {
	var out []IndexFlag
	budget := nameBudget(data)
	err := walkIndex(data, hashSize, func(e rawEntry) error {
		if e.flags&0x8000 != 0 || e.extFlags&0x4000 != 0 {
			if budget -= len(e.name); budget < 0 {
				return errIndex
			}
			out = append(out, IndexFlag{Path: string(e.name), AssumeValid: e.flags&0x8000 != 0, SkipWorktree: e.extFlags&0x4000 != 0, flagsOff: e.fo, ext: e.ext})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// nameBudget is what the names an index reader returns may add up to: the
// names a version-4 index rebuilds from shared prefixes can be far longer
// than the file; past this the index is not one git made in ordinary work.
func nameBudget(data []byte) int { return 4*len(data) + 1<<20 }

// IndexEntry is one entry of a git index: its name, what git cached of
// the file's stat data (seconds, size), its mode and object name.
type IndexEntry struct {
	Path         string
	Ctime, Mtime uint32
	Mode, Size   uint32
	ID           []byte
}

// IndexEntriesSince returns the entries of index data whose cached change
// or modification time is at or after since (Unix seconds): the entries
// written (or refreshed) since then. Read as IndexFlags reads.
func IndexEntriesSince(data []byte, hashSize int, since int64) ([]IndexEntry, error) {
	var out []IndexEntry
	budget := nameBudget(data)
	err := walkIndex(data, hashSize, func(e rawEntry) error {
		b := data[e.off:]
		ctime, mtime := binary.BigEndian.Uint32(b[0:]), binary.BigEndian.Uint32(b[8:])
		if int64(ctime) < since && int64(mtime) < since {
			return nil
		}
		if budget -= len(e.name); budget < 0 {
			return errIndex
		}
		out = append(out, IndexEntry{Path: string(e.name), Ctime: ctime, Mtime: mtime, Mode: binary.BigEndian.Uint32(b[24:]),
			Size: binary.BigEndian.Uint32(b[36:]), ID: bytes.Clone(b[40 : 40+hashSize])})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ClearIndexStat returns data with the cached stat data (times, size) of
// the entries named in paths set to zero, so that git compares those files'
// content with their objects again, and the checksum made anew.
func ClearIndexStat(data []byte, hashSize int, paths map[string]bool) ([]byte, error) {
	out := bytes.Clone(data)
	err := walkIndex(data, hashSize, func(e rawEntry) error {
		if paths[string(e.name)] {
			for _, f := range []int{0, 4, 8, 12, 36} { // ctime, mtime (s, ns), size
				binary.BigEndian.PutUint32(out[e.off+f:], 0)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	resum(out, hashSize)
	return out, nil
}

// rawEntry is one entry as walkIndex reads it: where it starts, where its
// flags and extended flags are (-1: none), their values, and its name
// (valid until the next entry).
type rawEntry struct {
	off, fo, ext    int
	flags, extFlags uint16
	name            []byte
}

// walkIndex calls visit for each entry of index data, in order; the first
// error stops it.
func walkIndex(data []byte, hashSize int, visit func(rawEntry) error) error {
	_, err := walkEntries(data, hashSize, visit)
	return err
}

// IndexExtensions returns the signatures of index data's extensions, in
// order ("TREE", "link", "UNTR", ...).
func IndexExtensions(data []byte, hashSize int) ([]string, error) {
	off, err := walkEntries(data, hashSize, func(rawEntry) error { return nil })
	if err != nil {
		return nil, err
	}
	var out []string
	end := len(data) - hashSize
	for off < end {
		if end-off < 8 {
			return nil, errIndex
		}
		size := uint64(binary.BigEndian.Uint32(data[off+4:]))
		if size > uint64(end-off-8) {
			return nil, errIndex
		}
		out = append(out, string(data[off:off+4]))
		off += 8 + int(size)
	}
	return out, nil
}

// walkEntries is walkIndex; it returns the offset just past the last
// entry, where the extensions start.
func walkEntries(data []byte, hashSize int, visit func(rawEntry) error) (int, error) {
	if hashSize <= 0 || len(data) < 12+hashSize || string(data[:4]) != "DIRC" {
		return 0, errIndex
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return 0, errIndex
	}
	n := uint64(binary.BigEndian.Uint32(data[8:12]))
	off := 12
	end := len(data) - hashSize
	var name []byte // the current entry's name (version 4: rebuilt in place)
	for i := uint64(0); i < n; i++ {
		// ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each),
		// the object name, then 16 bits of flags.
		if off > end || end-off < 40+hashSize+2 {
			return 0, errIndex
		}
		fo := off + 40 + hashSize
		flags := binary.BigEndian.Uint16(data[fo:])
		p := fo + 2
		ext := -1
		var extFlags uint16
		if flags&0x4000 != 0 {
			if version < 3 || end-p < 2 {
				return 0, errIndex
			}
			ext = p
			extFlags = binary.BigEndian.Uint16(data[p:])
			p += 2
		}
		if version == 4 {
			// The name: how many bytes of the previous name to drop (a
			// varint of git's own form), then the rest, NUL-terminated.
			drop, k := gitVarint(data[p:end])
			if k <= 0 || drop > uint64(len(name)) {
				return 0, errIndex
			}
			p += k
			z := bytes.IndexByte(data[p:end], 0)
			if z < 0 {
				return 0, errIndex
			}
			name = append(name[:len(name)-int(drop)], data[p:p+z]...)
			p += z + 1
		} else {
			z := bytes.IndexByte(data[p:end], 0)
			if z < 0 {
				return 0, errIndex
			}
			name = data[p : p+z]
			// Padded with 1 to 8 NULs to a multiple of 8 from the entry's
			// start.
			l := p + z - off
			p = off + (l+8)&^7
		}
		if p > end {
			return 0, errIndex
		}
		if err := visit(rawEntry{off: off, fo: fo, ext: ext, flags: flags, extFlags: extFlags, name: name}); err != nil {
			return 0, err
		}
		off = p
	}
	return off, nil
}

// gitVarint reads git's offset varint (each continuation adds one before
// shifting); k is the bytes read, 0 when cut short or past 64 bits.
func gitVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 0x7f)
	i := 1
	for c&0x80 != 0 {
		if i >= len(b) || i > 9 || v+1 > 1<<57-1 {
			return 0, 0
		}
		c = b[i]
		i++
		v = (v+1)<<7 | uint64(c&0x7f)
	}
	return v, i
}

// ClearIndexFlags returns data with the assume-unchanged and skip-worktree
// marks of the entries in clear taken off (skipWorktree false leaves
// skip-worktree marks alone, as a sparse checkout needs them) and the
// trailing checksum made anew — unless the index has none (index.skipHash:
// zeros), which stays so.
func ClearIndexFlags(data []byte, hashSize int, clear map[string]bool, skipWorktree bool) ([]byte, error) {
	flags, err := IndexFlags(data, hashSize)
	if err != nil {
		return nil, err
	}
	out := bytes.Clone(data)
	for _, f := range flags {
		if !clear[f.Path] {
			continue
		}
		if f.AssumeValid {
			v := binary.BigEndian.Uint16(out[f.flagsOff:])
			binary.BigEndian.PutUint16(out[f.flagsOff:], v&^0x8000)
		}
		if f.SkipWorktree && skipWorktree && f.ext >= 0 {
			v := binary.BigEndian.Uint16(out[f.ext:])
			binary.BigEndian.PutUint16(out[f.ext:], v&^0x4000)
		}
	}
	resum(out, hashSize)
	return out, nil
}

// resum makes the trailing checksum of index data anew, unless the index
// has none (index.skipHash: zeros), which stays so.
func resum(out []byte, hashSize int) {
	body := len(out) - hashSize
	if bytes.Count(out[body:], []byte{0}) == hashSize {
		return
	}
	var h hash.Hash = sha1.New()
	if hashSize == 32 {
		h = sha256.New()
	}
	h.Write(out[:body])
	copy(out[body:], h.Sum(nil))
}
