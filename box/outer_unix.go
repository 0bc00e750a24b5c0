//go:build !windows

package box

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
)

// runInOuter runs CMD in the box agentbox itself runs in, which confines
// it, after one line saying so: exec'd in agentbox's place, so signals and
// exit status are CMD's own. It returns only when CMD cannot be started.
func runInOuter(p *plan.Plan) (int, error) {
	fmt.Fprintf(os.Stderr, "agentbox: running %s in the outer box (%s) without a box of its own: %s\n", p.Command[0], p.Box.Outer, p.Box.Degraded)
	path, err := exec.LookPath(p.Command[0])
	if err != nil {
		return supervise.ExecError(p.Command[0], err), nil
	}
	if err := os.Chdir(p.Cwd); err != nil {
		return 0, fmt.Errorf("changing to %s: %w", p.Cwd, err)
	}
	err = syscall.Exec(path, p.Command, p.BoxEnviron())
	return supervise.ExecError(p.Command[0], err), nil
}
