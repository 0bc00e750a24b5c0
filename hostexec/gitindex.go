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
	if hashSize <= 0 || len(data) < 12+hashSize || string(data[:4]) != "DIRC" {
		return nil, errIndex
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return nil, errIndex
	}
	n := uint64(binary.BigEndian.Uint32(data[8:12]))
	off := 12
	end := len(data) - hashSize
	// What the marked entries' names may add up to: the names a version-4
	// index rebuilds from shared prefixes can be far longer than the file;
	// past this the index is not one git made in ordinary work.
	budget := 4*len(data) + 1<<20
	var out []IndexFlag
	var name []byte // the current entry's name (version 4: rebuilt in place)
	for i := uint64(0); i < n; i++ {
		// ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each),
		// the object name, then 16 bits of flags.
		if off > end || end-off < 40+hashSize+2 {
			return nil, errIndex
		}
		fo := off + 40 + hashSize
		flags := binary.BigEndian.Uint16(data[fo:])
		p := fo + 2
		ext := -1
		var extFlags uint16
		if flags&0x4000 != 0 {
			if version < 3 || end-p < 2 {
				return nil, errIndex
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
				return nil, errIndex
			}
			p += k
			z := bytes.IndexByte(data[p:end], 0)
			if z < 0 {
				return nil, errIndex
			}
			name = append(name[:len(name)-int(drop)], data[p:p+z]...)
			p += z + 1
		} else {
			z := bytes.IndexByte(data[p:end], 0)
			if z < 0 {
				return nil, errIndex
			}
			name = data[p : p+z]
			// Padded with 1 to 8 NULs to a multiple of 8 from the entry's
			// start.
			l := p + z - off
			p = off + (l+8)&^7
		}
		if p > end {
			return nil, errIndex
		}
		if flags&0x8000 != 0 || extFlags&0x4000 != 0 {
			if budget -= len(name); budget < 0 {
				return nil, errIndex
			}
			out = append(out, IndexFlag{Path: string(name), AssumeValid: flags&0x8000 != 0, SkipWorktree: extFlags&0x4000 != 0, flagsOff: fo, ext: ext})
		}
		off = p
	}
	return out, nil
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
	body := len(out) - hashSize
	if bytes.Count(out[body:], []byte{0}) == hashSize {
		return out, nil
	}
	var h hash.Hash = sha1.New()
	if hashSize == 32 {
		h = sha256.New()
	}
	h.Write(out[:body])
	copy(out[body:], h.Sum(nil))
	return out, nil
}
