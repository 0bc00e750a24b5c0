package supervise

import (
	"errors"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/plan"
)

// PrepareError is a folder agentbox could not create or would not use.
type PrepareError struct {
	Op   string
	Path string
	Err  error
}

func (e *PrepareError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err) }
func (e *PrepareError) Unwrap() error { return e.Err }

// Prepare creates the folders agentbox owns (plan.Prepare), refusing any
// that exists as a symlink, is not a folder, or belongs to another user.
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

// Cleanup removes the folders Prepare made fresh for this run.
func Cleanup(p *plan.Plan) {
	for i := len(p.Prepare) - 1; i >= 0; i-- {
		if d := p.Prepare[i]; d.Fresh {
			os.RemoveAll(d.Path)
		}
	}
}
