package box

import (
	"errors"

	"github.com/agentbox/agentbox/plan"
)

// runInOuter is not used on Windows: a Windows box has no agentbox of its
// own inside it to start another.
func runInOuter(p *plan.Plan) (int, error) {
	return 0, errors.New("running in an outer box is not supported on Windows")
}
