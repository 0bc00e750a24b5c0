package landlock

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// PathRule is one landlock_add_rule call: Rights on the file hierarchy at
// Path. Dir is false for any other kind of file, whose rule may only carry
// file rights.
type PathRule struct {
	Path   string `json:"path"`
	Rights Rights `json:"rights"`
	Dir    bool   `json:"dir"`
}

// Carving: Landlock cannot subtract, so a grant with exceptions is applied
// to the children of its path one by one, leaving out the excepted ones and
// descending into the ones that hold an exception. Which child is which is
// decided by identity, not by name: the excepted paths and the folders
// holding them are opened first, and each child is opened (without
// following it) and compared with them. Another box may rename and swap
// entries of a writable project while this one starts; whatever it does, a
// rule is attached to the very file that was opened and checked, never to
// what a name leads to a moment later, and an excepted file never gets the
// grant's rights, under any name.
//
// Symbolic links met while carving are skipped: a rule is attached to what
// the path resolves to, so granting a link would grant its target, which may
// be a deny path or another project. The link still resolves, and its
// target keeps the rights of where it really lives. A folder the user cannot
// list is skipped as a whole: its owner's permissions keep the user out of
// it anyway.
//
// The carving is done when the sandbox starts: an entry created later in a
// carved folder by someone else gets no rights.

// fileTree is what carving walks: the real filesystem through descriptors
// (Apply), or an fs.FS (Expand, for `plan` and tests).
type fileTree interface {
	// open opens an absolute path without following a link anywhere
	// along it; fs.ErrNotExist when it is missing.
	open(p string) (node, error)
	// names lists a folder's entries.
	names(n node) ([]string, error)
	// child opens one entry of a folder without following it.
	child(n node, name string) (node, error)
	close(n node)
}

// node is an opened file of a tree.
type node struct {
	path string // for rules and messages
	id   fileID
	dir  bool
	link bool
	fd   int // the descriptor (descriptor trees only)
}

// fileID identifies a file: device and inode on a real filesystem.
type fileID struct {
	dev, ino uint64
	path     string // the identity of a file in an fs.FS
}

// Expand carves the grants into path rules, reading folders from fsys, a
// file system rooted at "/". It is the carving Apply does, on a tree that
// no one changes meanwhile, so `plan` and tests can show it.
func Expand(grants []Grant, fsys fs.FS) ([]PathRule, error) {
	var out []PathRule
	err := carve(grants, fsTree{fsys}, func(n node, r Rights) error {
		add(&out, n.path, r, n.dir)
		return nil
	})
	return out, err
}

// carve calls grant for every file that gets rights, with the rights.
func carve(grants []Grant, t fileTree, grant func(n node, r Rights) error) error {
	for _, g := range grants {
		if err := carveGrant(g, t, grant); err != nil {
			return err
		}
	}
	return nil
}

func carveGrant(g Grant, t fileTree, grant func(n node, r Rights) error) error {
	root, err := t.open(g.Path)
	if err != nil {
		if g.Optional && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, errLink)) {
			// A device node that is missing, or a link (to /dev/pts/ptmx):
			// its target has rights of its own.
			return nil
		}
		return fmt.Errorf("granting %s on %s: %w", g.Rights, g.Path, err)
	}
	defer t.close(root)
	if len(g.Except) == 0 {
		return grantNode(root, g.Rights, grant)
	}
	holders, excepted, err := identify(g, t)
	if err != nil {
		return err
	}
	return walk(t, root, g, holders, excepted, grant)
}

func grantNode(n node, r Rights, grant func(node, Rights) error) error {
	if !n.dir {
		r &= fileRights
	}
	if r == 0 {
		return nil
	}
	return grant(n, r)
}

// identify opens g's excepted paths and every folder from g.Path down to
// each, and returns their identities. A missing one has nothing to protect
// (its existing parents still hold it); a link in the way is an error, as
// it was not there when the plan was made.
func identify(g Grant, t fileTree) (holders, excepted map[fileID]bool, err error) {
	holders, excepted = map[fileID]bool{}, map[fileID]bool{}
	seen := map[string]*fileID{} // nil: missing
	id := func(p string) (*fileID, error) {
		if v, ok := seen[p]; ok {
			return v, nil
		}
		n, err := t.open(p)
		if errors.Is(err, fs.ErrNotExist) {
			seen[p] = nil
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		t.close(n)
		seen[p] = &n.id
		return &n.id, nil
	}
	for _, e := range g.Except {
		for d := g.Path; ; d = nextToward(d, e) {
			v, err := id(d)
			if err != nil {
				return nil, nil, fmt.Errorf("carving %s around %s: %w", g.Path, e, err)
			}
			if v == nil {
				break
			}
			if d == e {
				excepted[*v] = true
				break
			}
			holders[*v] = true
		}
	}
	return holders, excepted, nil
}

// nextToward is the child of dir on the way to p, which lies below dir.
func nextToward(dir, p string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
	first, _, _ := strings.Cut(rest, "/")
	return path.Join(dir, first)
}

// walk grants g's rights to the children of dir (a holder), skipping the
// excepted ones and descending into the holders.
func walk(t fileTree, dir node, g Grant, holders, excepted map[fileID]bool, grant func(node, Rights) error) error {
	names, err := t.names(dir)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("carving %s around %s: %w", dir.path, list(g.Except), err)
	}
	for _, name := range names {
		c, err := t.child(dir, name)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			continue // gone since it was listed, or not ours to open
		}
		if err != nil {
			return fmt.Errorf("carving %s around %s: %w", dir.path, list(g.Except), err)
		}
		switch {
		case c.link, excepted[c.id]:
		case c.dir && holders[c.id]:
			err = walk(t, c, g, holders, excepted, grant)
		default:
			err = grantNode(c, g.Rights, grant)
		}
		t.close(c)
		if err != nil {
			return err
		}
	}
	return nil
}

func add(out *[]PathRule, p string, r Rights, dir bool) {
	if !dir {
		r &= fileRights
	}
	if r != 0 {
		*out = append(*out, PathRule{Path: p, Rights: r, Dir: dir})
	}
}

// errLink is a symbolic link met where carving follows none.
var errLink = errors.New("a symbolic link is in the way")

// fsTree is a fileTree over an fs.FS rooted at "/"; a file's identity is its
// path.
type fsTree struct{ fsys fs.FS }

func (t fsTree) open(p string) (node, error) {
	fi, err := fs.Lstat(t.fsys, rel(p))
	if err != nil {
		return node{}, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return node{}, errLink
	}
	return node{path: p, id: fileID{path: p}, dir: fi.IsDir()}, nil
}

func (t fsTree) names(n node) ([]string, error) {
	entries, err := fs.ReadDir(t.fsys, rel(n.path))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Name()
	}
	return out, nil
}

func (t fsTree) child(n node, name string) (node, error) {
	p := path.Join(n.path, name)
	fi, err := fs.Lstat(t.fsys, rel(p))
	if err != nil {
		return node{}, err
	}
	return node{path: p, id: fileID{path: p}, dir: fi.IsDir(), link: fi.Mode()&fs.ModeSymlink != 0}, nil
}

func (fsTree) close(node) {}

// rel turns an absolute path into an io/fs name relative to "/".
func rel(p string) string {
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}
