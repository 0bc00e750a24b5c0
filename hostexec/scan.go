package hostexec

import (
	"fmt"
	"strconv"

	"github.com/agentbox/agentbox/plan"
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

// Visit is called for each folder a search lists: rel is its path relative
// to the search's root ("" for the root, slash-separated), entries what is
// in it (its folders, and the other entries whose names the search wants).
// It may set an entry's Type to TypeOther to keep the search out of that
// folder, and returns whether the search goes into the folders in it.
type Visit func(rel string, entries []Entry) (descend bool)

// Search is how to walk a tree: every folder below a root, symlinks never
// followed, with a bound on cost.
type Search struct {
	// Limit is the most entries the walk lists; more is a *LimitError.
	Limit int
	// Names are the names of files (and symlinks) the visit needs to see;
	// other files are counted but left out of its entries (no string is
	// made for them). Folders are always in.
	Names map[string]bool
	Visit Visit
	// Links puts every symlink in the entries too.
	Links bool
	// Record, when not nil, gets each folder the walk lists: its Stamp
	// (taken before it is listed), the folders the walk went into and the
	// entries it wanted — what a later search can take as the folder's
	// entries while its stamp stays the same. Only the Linux walk fills it.
	Record *plan.Index
	// Index, when not nil, is what an earlier search of the same tree saw:
	// a folder with the same identity and ctime as then (and not changed
	// shortly before that search) has the same entries, so it is not
	// listed again; its folders and noted entries come from the index.
	// Only the Linux walk uses it.
	Index *plan.Index
}

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

// maxDepth bounds how deep a walk goes: each level holds a descriptor
// open. Deeper is an error, as more entries than the limit is.
const maxDepth = 512

// recent is how long before a search a folder's change makes it listed
// again by the next search, whatever its stamp says.
const recent = 500_000_000 // ns
