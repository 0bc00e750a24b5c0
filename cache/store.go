package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Entry is one tool's folder in a workspace's private caches, as found on
// disk.
type Entry struct {
	Workspace string    `json:"workspace"`
	Tool      string    `json:"tool"`
	Path      string    `json:"path"`
	Bytes     int64     `json:"bytes"`
	Files     int       `json:"files"`
	Modified  time.Time `json:"modified"`
}

// toolOf names the tool a private cache folder belongs to, "" when none.
func toolOf(folder string) string {
	for _, t := range tools {
		for _, d := range t.Dirs {
			if d.Name == folder {
				return t.Name
			}
		}
	}
	return ""
}

// List returns the folders of every workspace's private caches under root
// (Root of agentbox's state folder), by workspace and then in registry
// order, with their sizes. Symbolic links are not followed: what a box
// left in its cache is only measured, never opened through a link.
func List(root string) ([]Entry, error) {
	workspaces, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, ws := range workspaces {
		if !ws.IsDir() {
			continue
		}
		dirs, err := os.ReadDir(filepath.Join(root, ws.Name()))
		if err != nil {
			return nil, err
		}
		var entries []Entry
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			e := Entry{Workspace: ws.Name(), Tool: toolOf(d.Name()), Path: filepath.Join(root, ws.Name(), d.Name())}
			if e.Tool == "" {
				e.Tool = d.Name()
			}
			measure(&e)
			entries = append(entries, e)
		}
		sort.SliceStable(entries, func(i, j int) bool { return order(entries[i].Tool) < order(entries[j].Tool) })
		out = append(out, entries...)
	}
	return out, nil
}

func order(tool string) int {
	for i, t := range tools {
		if t.Name == tool {
			return i
		}
	}
	return len(tools)
}

func measure(e *Entry) {
	filepath.WalkDir(e.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if info.ModTime().After(e.Modified) {
			e.Modified = info.ModTime()
		}
		if d.Type().IsRegular() {
			e.Bytes += info.Size()
			e.Files++
		}
		return nil
	})
}

// Clear removes the folders of tools (every tool when empty) from the
// private caches in dir, one workspace's folder. It works inside dir
// through an os.Root: a link a box left in its cache is removed, never
// followed, so nothing outside dir can be changed or removed. Folders the
// tools made read-only (go's module cache) are made writable first, inside
// dir alone.
func Clear(dir string, tools []string) error {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	names, err := folders(root, tools)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := writable(root, name); err != nil {
			return fmt.Errorf("clearing %s: %w", filepath.Join(dir, name), err)
		}
		if err := root.RemoveAll(name); err != nil {
			return fmt.Errorf("clearing %s: %w", filepath.Join(dir, name), err)
		}
	}
	return nil
}

// folders are the entries of root that belong to tools (all when empty).
func folders(root *os.Root, tools []string) ([]string, error) {
	f, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if len(tools) == 0 || contains(tools, toolOf(e.Name())) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// writable gives the owner write and search permission on every folder at
// or below name that lacks it; links are left alone.
func writable(root *os.Root, name string) error {
	info, err := root.Lstat(name)
	if err != nil || !info.IsDir() {
		return nil
	}
	return fs.WalkDir(root.FS(), name, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if perm := info.Mode().Perm(); perm&0o700 != 0o700 {
			return root.Chmod(p, perm|0o700)
		}
		return nil
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
