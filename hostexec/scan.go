package hostexec

import (
	"fmt"
	"strconv"
)

// EntryType is what a folder entry is, from the listing alone.
type EntryType uint8

// The entry types a listing tells apart.
const (
	TypeOther EntryType = iota
	TypeFile
	TypeDir
	TypeSymlink
)

// Entry is one entry of a folder listing.
type Entry struct {
	Name string
	Type EntryType
}

// Visit is called for each folder a walk lists: rel is its path relative
// to the walk's root ("" for the root, slash-separated), entries what is in
// it. It returns whether the walk goes into the folders in it.
type Visit func(rel string, entries []Entry) (descend bool)

// LimitError is a walk that visited more entries than its bound: the
// search fails closed rather than leaving part of a tree unsearched.
type LimitError struct {
	Root  string
	Limit int
	At    string // the folder it was in
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s holds more than %d files and folders (stopped in %s): agentbox searches every writable root for git repositories and agent control files before and after each run, and will not run with part of it unsearched",
		e.Root, e.Limit, e.At)
}

// Hints says how to get past the bound.
func (e *LimitError) Hints() []string {
	return []string{
		"make fewer or smaller folders writable, or raise the bound: [filesystem] scan_limit = " + strconv.Itoa(e.Limit*2),
	}
}

// Stamp identifies a folder and its last change: an entry added, removed
// or renamed in it changes its ctime, which no process can set back.
type Stamp struct {
	Dev, Ino uint64
	Ctime    int64
}

// DefaultLimit is how many files and folders a search visits at most,
// over all writable roots, unless the policy says otherwise.
const DefaultLimit = 1_000_000
