package mount

import (
	"fmt"
)

// BoxError is a failure to set up the box itself (a mount bwrap refused, a
// folder agentbox could not prepare): agentbox's own failure, exit 125.
type BoxError struct {
	Op   string
	Path string
	Err  error
}

func (e *BoxError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
}

func (e *BoxError) Unwrap() error { return e.Err }
