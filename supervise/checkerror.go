package supervise

import (
	"strings"

	"github.com/agentbox/agentbox/event"
)

// CheckError is an after-run check that could not finish. Its pending
// record stays, and the next run does the check again before it starts.
type CheckError struct {
	Run      string
	Failures []string
	State    string
}

func (e *CheckError) Error() string {
	return "the after-run check of run " + e.Run + " could not finish, so what the box left may still be where a host program runs it: " +
		strings.Join(e.Failures, "; ")
}

// Hints says what to do.
func (e *CheckError) Hints() []string {
	return []string{"do not run git, an agent CLI or an editor in the writable roots before this is fixed; once the cause is gone, run agentbox again: it does the check first (its record is in " +
		event.Escape(e.State) + "/pending)"}
}
