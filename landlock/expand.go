package landlock

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// PathRule is one landlock_add_rule call: Rights on the file hierarchy at
// Path. Dir is false for any other kind of file, whose rule may only carry
// file rights.
type PathRule struct {
	Path   string `json:"path"`
	Rights Rights `json:"rights"`
	Dir    bool   `json:"dir"`
}

// Expand carves the grants into path rules, reading folders from fsys, a
// file system rooted at "/" (os.DirFS("/") when applying). A grant without
// exceptions is one rule. A grant with exceptions becomes one rule per child
// of its path, skipping the excepted children and descending into the
// children that hold an exception, so nothing at or below an excepted path
// gets the grant's rights.
//
// Symbolic links met while carving are skipped: a rule is attached to what
// the path resolves to, so granting a link would grant its target, which may
// be a deny path. The link still resolves, and its target keeps the rights
// of where it really lives. A folder the user cannot list is skipped as a
// whole: its owner's permissions keep the user out of it anyway.
//
// The carving is done when the sandbox starts: an entry created later in a
// carved folder by someone else gets no rights.
func Expand(grants []Grant, fsys fs.FS) ([]PathRule, error) {
	var out []PathRule
	for _, g := range grants {
		if err := expand(fsys, g, g.Path, &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func expand(fsys fs.FS, g Grant, dir string, out *[]PathRule) error {
	if !holdsException(g.Except, dir) {
		info, err := fs.Stat(fsys, rel(dir))
		if err != nil {
			if g.Optional && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("granting %s on %s: %w", g.Rights, dir, err)
		}
		add(out, dir, g.Rights, info.IsDir())
		return nil
	}
	entries, err := fs.ReadDir(fsys, rel(dir))
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("carving %s around %s: %w", dir, list(g.Except), err)
	}
	for _, e := range entries {
		child := path.Join(dir, e.Name())
		switch {
		case isExcepted(g.Except, child), e.Type()&fs.ModeSymlink != 0:
			continue
		case e.IsDir():
			if err := expand(fsys, g, child, out); err != nil {
				return err
			}
		default:
			add(out, child, g.Rights, false)
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

// holdsException reports whether an excepted path is dir or lies below it.
func holdsException(except []string, dir string) bool {
	for _, e := range except {
		if plan.Within(e, dir) {
			return true
		}
	}
	return false
}

func isExcepted(except []string, p string) bool {
	for _, e := range except {
		if plan.Within(p, e) {
			return true
		}
	}
	return false
}

// rel turns an absolute path into an io/fs name relative to "/".
func rel(p string) string {
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}
