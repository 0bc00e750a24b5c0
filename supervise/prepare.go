package supervise

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

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

// Hints says where agentbox's own folders can go instead when one cannot
// be created (a read-only or foreign home folder, as in some containers).
func (e *PrepareError) Hints() []string {
	if e.Op != "creating" || !(errors.Is(e.Err, fs.ErrPermission) || errors.Is(e.Err, syscall.EROFS)) ||
		!strings.Contains(e.Path, "agentbox") {
		// Only agentbox's own folders can move.
		return nil
	}
	return []string{"agentbox keeps its state and the box's temporary folders in folders of yours: set XDG_STATE_HOME (or XDG_RUNTIME_DIR, a folder only you can enter) to one you can write"}
}

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
