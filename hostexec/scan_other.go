//go:build !linux

package hostexec

import (
	"os"
	"path"
	"path/filepath"
)

// Walk searches the tree at root (see Search). This portable version reads
// folders by path (os.ReadDir) and uses no index or stamps.
func (s *Search) Walk(root string) (int, error) {
	n := 0
	var dir func(rel string, depth int) error
	dir = func(rel string, depth int) error {
		at := filepath.Join(root, filepath.FromSlash(rel))
		if depth > maxDepth {
			return &LimitError{Root: root, Limit: s.Limit, At: at}
		}
		list, err := os.ReadDir(at)
		if err != nil {
			return nil
		}
		var entries []Entry
		for _, e := range list {
			n++
			if n > s.Limit {
				return &LimitError{Root: root, Limit: s.Limit, At: at}
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
			if t != TypeDir && !s.Names[e.Name()] && !(s.Links && t == TypeSymlink) {
				continue
			}
			entries = append(entries, Entry{Name: e.Name(), Type: t})
		}
		if !s.Visit(rel, entries) {
			return nil
		}
		for _, e := range entries {
			if e.Type == TypeDir {
				if err := dir(path.Join(rel, e.Name), depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return n, dir("", 0)
}
