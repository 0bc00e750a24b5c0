//go:build !linux

package hostexec

import (
	"os"
	"path"
	"path/filepath"
)

// Walk lists every folder below root, not following symlinks and not
// crossing into folders visit turns down, and calls visit for each. This
// portable version reads folders by path (os.ReadDir); see the Linux one.
// stamps is not called here.
func Walk(root string, limit int, visit Visit, stamps func(rel string, s Stamp)) (int, error) {
	n := 0
	var dir func(rel string) error
	dir = func(rel string) error {
		list, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil
		}
		var entries []Entry
		for _, e := range list {
			n++
			if n > limit {
				return &LimitError{Root: root, Limit: limit, At: filepath.Join(root, filepath.FromSlash(rel))}
			}
			t := TypeOther
			switch m := e.Type(); {
			case m&os.ModeSymlink != 0:
				t = TypeSymlink
			case m.IsDir():
				t = TypeDir
			case m.IsRegular():
				t = TypeFile
			}
			entries = append(entries, Entry{Name: e.Name(), Type: t})
		}
		if !visit(rel, entries) {
			return nil
		}
		for _, e := range entries {
			if e.Type == TypeDir {
				if err := dir(path.Join(rel, e.Name)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return n, dir("")
}
