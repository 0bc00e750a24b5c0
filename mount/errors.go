package mount

import (
	"errors"
	"fmt"
)

// ErrUnavailable means bubblewrap cannot confine anything on this machine;
// the message says why and how to fix it.
var ErrUnavailable = errors.New("bubblewrap is not available")

// unavailable is an ErrUnavailable with the reason and the fix.
type unavailable struct{ reason, fix string }

func (u *unavailable) Error() string { return u.reason }
func (u *unavailable) Unwrap() error { return ErrUnavailable }

// Fix returns the hint that tells the user how to make bwrap work.
func (u *unavailable) Fix() string { return u.fix }

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
