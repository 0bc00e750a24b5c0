package event

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// folder is the log folder on Windows, used by path: it must be a real
// folder (not a symbolic link or junction) and every file in it a regular
// file. The folder lies in agentbox's own state folder, which a box gets
// deny-write ACEs on when it lies in a writable root.
type folder struct {
	path string
}

// openFolder opens the log folder dir, creating it when create is set.
// owner is not checked on Windows (files have owner SIDs, not uids).
func openFolder(dir string, owner int, create bool) (*folder, error) {
	dir = filepath.Clean(dir)
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	info, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", dir, os.ErrNotExist)
		}
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	if !info.IsDir() || info.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return nil, fmt.Errorf("%s is not a folder (a link or a file): refused", dir)
	}
	return &folder{path: dir}, nil
}

func (d *folder) check(name string) (string, error) {
	path := filepath.Join(d.path, name)
	info, err := os.Lstat(path)
	if err == nil && !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file: refused", path)
	}
	return path, nil
}

// secure does nothing on Windows: the folder's ACL is the user's.
func (d *folder) secure(f *os.File) {}

// create opens the file name for appending, creating it.
func (d *folder) create(name string) (*os.File, error) {
	path, err := d.check(name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return f, nil
}

// open opens the file name for reading.
func (d *folder) open(name string) (*os.File, error) {
	path, err := d.check(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", path, os.ErrNotExist)
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return f, nil
}

// same reports whether name in the folder is still the file f.
func (d *folder) same(f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(filepath.Join(d.path, name))
	return err == nil && os.SameFile(a, b)
}

// rename renames from to to, never replacing an existing to.
func (d *folder) rename(from, to string) error {
	if _, err := os.Lstat(filepath.Join(d.path, to)); err == nil {
		return os.ErrExist
	}
	return os.Rename(filepath.Join(d.path, from), filepath.Join(d.path, to))
}

func (d *folder) remove(name string) error { return os.Remove(filepath.Join(d.path, name)) }

func (d *folder) names() ([]string, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out, nil
}

// Close does nothing: the folder is used by path.
func (d *folder) Close() error { return nil }
