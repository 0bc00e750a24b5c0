package hostexec

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbox/agentbox/plan"
)

// WalkOptions says how to search one writable root.
type WalkOptions struct {
	// Names are the names to note in every folder, whatever their type
	// (plan.Tree.Names). The names git needs to tell a git folder
	// (gitNames) are always noted.
	Names []string
	// Skip are absolute paths the walk does not enter: what the box
	// cannot write (read-only and denied paths).
	Skip []string
	// Old is an earlier search of the same root: a folder whose
	// identity and change time are the same as then (and did not change
	// shortly before that search) holds the same entries, so it is not
	// listed again. Nil: every folder is listed.
	Old *plan.Tree
	// Links notes the symlinks in the folders the walk lists.
	Links bool
	// Shared notes the regular files with more than one link, in the
	// folders the walk lists, that the box could write (its user's own,
	// or writable by group or others): plan.Tree.Shared. Each regular
	// file of a listed folder is looked at once (one statx); a folder
	// taken from Old is not, unless it held such a file then
	// (plan.DirShared).
	Shared bool
	// Fix gives a folder of the user's own that lacks the owner's read
	// or search permission those permissions back, so that it can be
	// listed (the search after a run: the box may have taken them away to
	// hide what it planted). Without it such a folder is marked
	// plan.DirUnlisted.
	Fix bool
	// Workers is how many folders are listed at once (0: one per CPU,
	// at most 8).
	Workers int
	// MaxDirs bounds the folders the walk keeps in memory (0:
	// DefaultMaxDirs); more is a *LimitError.
	MaxDirs int
	// Kept are folders that could not be listed before and were kept
	// read-only since (absolute paths): unchanged, they are taken as they
	// were. Any other folder the old tree could not list is listed again
	// (with Fix, fixed).
	Kept []string
}

// gitNames are noted in every folder: a folder holding HEAD and either
// objects and refs or a commondir is one git takes for a git folder of its
// own; .git makes its folder a work tree.
var gitNames = []string{".git", "HEAD", "objects", "refs", "commondir"}

// DefaultMaxDirs is the most folders a search keeps in memory (about 60
// bytes each): a bound on memory, far above any project.
const DefaultMaxDirs = 8_000_000

// recent is how long before a search a folder's change makes it listed
// again by the next search, whatever its stamp says (ns): longer than the
// tick of the coarsest clock among the file systems whose stamps a search
// trusts (ext3, and ext4 made with 128-byte inodes, keep whole seconds),
// so that a change within the same tick as the search cannot leave the
// stamp it saw.
const recent = 2_000_000_000

// LimitError is a search that would keep more folders in memory than its
// bound.
type LimitError struct {
	Root  string
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s holds more than %d folders: agentbox keeps every folder of a writable root in memory while it searches it for what host programs run (about 60 bytes each), and will not run with part of it unsearched",
		e.Root, e.Limit)
}

// Hints says what to do.
func (e *LimitError) Hints() []string {
	return []string{"make a smaller folder writable (--writable DIR, or [filesystem] writable in the project's .agentbox.toml)"}
}

// WalkError is a folder the search could not look into for a reason
// other than permissions: it fails closed.
type WalkError struct {
	Op, Path string
	Err      error
}

func (e *WalkError) Error() string {
	return fmt.Sprintf("%s %s: %v: agentbox searches every writable root for what host programs run, and will not go on with part of it unsearched", e.Op, e.Path, e.Err)
}

func (e *WalkError) Unwrap() error { return e.Err }

// noteTable returns the names a walk notes, in a fixed order: gitNames
// first, then the others sorted.
func noteTable(names []string) []string {
	out := slices.Clone(gitNames)
	rest := slices.Clone(names)
	slices.Sort(rest)
	for _, n := range slices.Compact(rest) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// sameNames reports whether an old tree noted the same names, so its
// notes mean the same.
func sameNames(old *plan.Tree, names []string) bool {
	return old != nil && slices.Equal(old.Names, names)
}

// isGitDir reports whether notes (a folder's noted names) make the folder
// one git takes for a git folder.
func isGitDir(has func(string) bool) bool {
	return has("HEAD") && (has("objects") && has("refs") || has("commondir"))
}

// WalkFS searches root through fsys (ReadDir per folder): for a world
// given by a test, and off Linux. It takes nothing from an old tree (it
// has no stamps) and fixes nothing; a folder it cannot read is marked
// plan.DirUnlisted.
func WalkFS(fsys FS, root string, o WalkOptions) (*plan.Tree, error) {
	names := noteTable(o.Names)
	idx := map[string]uint16{}
	for i, n := range names {
		idx[n] = uint16(i)
	}
	skip := map[string]bool{}
	for _, s := range o.Skip {
		skip[filepath.Clean(s)] = true
	}
	max := o.MaxDirs
	if max <= 0 {
		max = DefaultMaxDirs
	}
	t := &plan.Tree{Root: root, Names: names}
	var visit func(abs, name string, parent int32) error
	visit = func(abs, name string, parent int32) error {
		if len(t.Dirs) >= max {
			return &LimitError{Root: root, Limit: max}
		}
		i := int32(len(t.Dirs))
		if skip[abs] && parent >= 0 {
			// Kept in the tree, marked, not gone into.
			t.Dirs = append(t.Dirs, plan.TreeDir{Parent: parent, End: i + 1, NameOff: uint32(len(t.Text)), NameLen: uint8(len(name)), Flags: plan.DirSkipped})
			t.Text = append(t.Text, name...)
			return nil
		}
		d := plan.TreeDir{Parent: parent, NameOff: uint32(len(t.Text)), NameLen: uint8(len(name)), Flags: plan.DirListed}
		t.Text = append(t.Text, name...)
		list, err := fsys.ReadDir(abs)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if !errors.Is(err, fs.ErrPermission) {
				return &WalkError{Op: "listing", Path: abs, Err: err}
			}
			d.Flags |= plan.DirUnlisted
			d.End = i + 1
			t.Dirs = append(t.Dirs, d)
			return nil
		}
		var subs []string
		d.NoteOff = uint32(len(t.Notes))
		has := map[string]bool{}
		for _, e := range list {
			d.Count++
			if n, ok := idx[e.Name()]; ok {
				t.Notes = append(t.Notes, n)
				d.NoteLen++
				has[e.Name()] = true
			}
			if e.IsDir() {
				subs = append(subs, e.Name())
			}
			if o.Links && e.Type()&fs.ModeSymlink != 0 {
				rel, _ := filepath.Rel(root, filepath.Join(abs, e.Name()))
				t.Links = append(t.Links, filepath.ToSlash(rel))
			}
		}
		if isGitDir(func(n string) bool { return has[n] }) {
			d.Flags |= plan.DirGit
		}
		t.Entries += int64(d.Count)
		t.Dirs = append(t.Dirs, d)
		slices.Sort(subs)
		for _, s := range subs {
			if err := visit(filepath.Join(abs, s), s, i); err != nil {
				return err
			}
		}
		t.Dirs[i].End = int32(len(t.Dirs))
		return nil
	}
	t.Taken = 0 // no stamps: never taken as an old tree
	if err := visit(root, "", -1); err != nil {
		return nil, err
	}
	if len(t.Dirs) == 0 {
		return &plan.Tree{Root: root, Names: names}, nil
	}
	return t, nil
}

// emptyTree is the tree of a root that does not exist (or is gone).
func emptyTree(root string, names []string) *plan.Tree {
	return &plan.Tree{Root: root, Names: names, Taken: time.Now().UnixNano()}
}

// relTo returns p relative to root, slash-separated, or false when p is
// not in root.
func relTo(root, p string) (string, bool) {
	if p == root {
		return "", true
	}
	if !strings.HasPrefix(p, root+"/") {
		return "", false
	}
	return filepath.ToSlash(p[len(root)+1:]), true
}

// joinRel joins slash-separated relative paths.
func joinRel(a, b string) string {
	if a == "" {
		return b
	}
	return path.Join(a, b)
}
