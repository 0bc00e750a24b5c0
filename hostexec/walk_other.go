//go:build !linux

package hostexec

import (
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/plan"
)

// Walk searches the tree at root through the operating system's own
// folder listing (WalkFS): off Linux there is no index and no stamps.
func Walk(root string, o WalkOptions) (*plan.Tree, error) {
	return WalkFS(hostFS{}, root, o)
}

// ReadIndex reads no index off Linux: every search lists every folder.
func ReadIndex(state, root string) *plan.Tree { return nil }

// hostFS is the file system of the host, for WalkFS.
type hostFS struct{}

func (hostFS) Lstat(n string) (os.FileInfo, error)     { return os.Lstat(n) }
func (hostFS) Stat(n string) (os.FileInfo, error)      { return os.Stat(n) }
func (hostFS) ReadFile(n string) ([]byte, error)       { return os.ReadFile(n) }
func (hostFS) Readlink(n string) (string, error)       { return os.Readlink(n) }
func (hostFS) EvalSymlinks(n string) (string, error)   { return filepath.EvalSymlinks(n) }
func (hostFS) ReadDir(n string) ([]os.DirEntry, error) { return os.ReadDir(n) }
