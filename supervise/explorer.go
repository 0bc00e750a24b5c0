package supervise

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Files Windows Explorer and the shell read on their own and follow to the
// path they name: desktop.ini (a folder's icon and name), Internet
// shortcuts (*.url), shell links (*.lnk), libraries (*.library-ms) and
// search connectors (*.searchConnector-ms). Pointed at \\server\share,
// opening the folder holding one makes Windows sign in to that server
// with the user's NTLM credentials, which the server can crack or relay.
// The Windows after-run check moves away every such file in the writable
// roots that the box created or changed: the registry's model is exact
// paths, these are names at any depth.

// explorerName reports whether Explorer reads a file so named. Windows
// drops trailing dots and spaces from a name, and compares names
// case-insensitively.
func explorerName(name string) bool {
	n := strings.ToLower(strings.TrimRight(name, ". "))
	if n == "desktop.ini" {
		return true
	}
	for _, ext := range []string{".url", ".lnk", ".library-ms", ".searchconnector-ms"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

// explorerRecord is what the walk before the run found: each such file's
// identity (explorerID) by its comparison key, and whether the walk got
// to the end. A record that did not covers nothing: every such file found
// after the run is moved away.
type explorerRecord struct {
	Files    map[string]string `json:"files,omitempty"`
	Complete bool              `json:"complete"`
}

// explorerKey is the comparison form of a path (NTFS compares names
// case-insensitively).
func explorerKey(p string) string { return strings.ToLower(filepath.Clean(p)) }

// explorerID is the identity of what is at p, by content: a regular
// file's SHA-256, a link's target, "folder" for a folder; "" when it
// cannot be read (which matches no record).
func explorerID(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return ""
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0 || fi.Mode()&fs.ModeIrregular != 0:
		t, err := os.Readlink(p)
		if err != nil {
			return ""
		}
		return "link " + t
	case fi.IsDir():
		return "folder"
	case !fi.Mode().IsRegular():
		return ""
	}
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return "file " + hex.EncodeToString(h.Sum(nil))
}

// explorerVerdict decides a file Explorer follows found at p after the run,
// whose identity is now: kept only when the record from before the run
// has it, complete or not, with the same identity; else it is moved away
// with the reason.
func explorerVerdict(before explorerRecord, p, now string) (move bool, why string) {
	was, ok := before.Files[explorerKey(p)]
	switch {
	case ok && now != "" && was == now:
		return false, ""
	case ok:
		return true, "changed during the run"
	case !before.Complete:
		return true, "not known from before the run (the roots could not be searched to the end before it)"
	default:
		return true, "created during the run"
	}
}

// explorerWalk finds every file Explorer follows in roots, at any depth,
// without following links, and calls found for each. A folder that cannot
// be listed stops the walk with an error.
func explorerWalk(roots []string, found func(p string)) error {
	for _, root := range plan.Outermost(roots) {
		var walk func(dir string, depth int) error
		walk = func(dir string, depth int) error {
			if depth > 4096 {
				return fmt.Errorf("%s is more than 4096 folders deep", dir)
			}
			list, err := os.ReadDir(dir)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return fmt.Errorf("listing %s: %w", dir, err)
			}
			for _, e := range list {
				p := filepath.Join(dir, e.Name())
				if explorerName(e.Name()) {
					found(p)
				}
				if e.Type().IsDir() {
					if err := walk(p, depth+1); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err := walk(root, 0); err != nil {
			return err
		}
	}
	return nil
}

// recordExplorer records, before the run, every file Explorer follows in
// roots. An error leaves the record incomplete, never empty-and-complete.
func recordExplorer(roots []string) (explorerRecord, error) {
	rec := explorerRecord{Files: map[string]string{}}
	err := explorerWalk(roots, func(p string) { rec.Files[explorerKey(p)] = explorerID(p) })
	rec.Complete = err == nil
	return rec, err
}

// explorerFound is one file the check after the run moves away.
type explorerFound struct {
	Path, Why string
}

// findExplorer lists, after the run, every file Explorer follows in roots
// that the box created or changed (by before), and whether the search
// got to the end.
func findExplorer(roots []string, before explorerRecord) ([]explorerFound, error) {
	var out []explorerFound
	err := explorerWalk(roots, func(p string) {
		if move, why := explorerVerdict(before, p, explorerID(p)); move {
			out = append(out, explorerFound{Path: p, Why: why})
		}
	})
	return out, err
}
