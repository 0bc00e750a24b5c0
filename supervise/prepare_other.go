//go:build !linux

package supervise

import (
	"errors"
	"os"

	"github.com/agentbox/agentbox/plan"
)

// Prepare creates the folders agentbox owns (plan.Prepare), refusing any
// that exists as a symlink, is not a folder, or belongs to another user.
// (On Linux they are also pinned by descriptor: see PreparePinned.)
func Prepare(p *plan.Plan) error {
	for _, d := range p.Prepare {
		if d.Placeholder != "" {
			continue // made by placeholders, with the other runs' in mind
		}
		fi, err := os.Lstat(d.Path)
		if errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(d.Path, os.FileMode(d.Mode)); err != nil {
				return &PrepareError{Op: "creating", Path: d.Path, Err: err}
			}
			continue
		}
		if err != nil {
			return &PrepareError{Op: "checking", Path: d.Path, Err: err}
		}
		if d.Fresh {
			return &PrepareError{Op: "refusing", Path: d.Path, Err: errors.New("it exists already, and this run's own folder must be new")}
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return &PrepareError{Op: "refusing", Path: d.Path, Err: errors.New("it is a symlink; agentbox only uses folders it owns")}
		}
		if !fi.IsDir() {
			return &PrepareError{Op: "refusing", Path: d.Path, Err: errors.New("it is not a folder")}
		}
		if err := owned(d.Path, fi, p.Identity); err != nil {
			return &PrepareError{Op: "refusing", Path: d.Path, Err: err}
		}
	}
	return nil
}
