package supervise

import (
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

// Cleanup removes the folders Prepare made fresh for this run. They lie in
// agentbox's own folder for temporary files, which only the user can enter
// and no box can change.
func Cleanup(p *plan.Plan) {
	for i := len(p.Prepare) - 1; i >= 0; i-- {
		if d := p.Prepare[i]; d.Fresh {
			os.RemoveAll(d.Path)
		}
	}
}
