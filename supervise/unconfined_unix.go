//go:build !windows

package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/agentbox/agentbox/plan"
)

// RunUnconfined is best-effort's way out when no backend can confine the
// command: one warning line, none of the truthful variables,
// AGENTBOX_DEGRADED set, and CMD exec'd in agentbox's place so signals and
// exit status are its own. It returns only when CMD cannot be started.
func RunUnconfined(p *plan.Plan) (int, error) {
	fmt.Fprintf(os.Stderr, "agentbox: warning: running UNCONFINED (best-effort): %s\n", p.Box.Degraded)
	path, err := exec.LookPath(p.Command[0])
	if err != nil {
		return ExecError(p.Command[0], err), nil
	}
	if err := os.Chdir(p.Cwd); err != nil {
		return 0, fmt.Errorf("changing to %s: %w", p.Cwd, err)
	}
	err = syscall.Exec(path, p.Command, p.BoxEnviron())
	return ExecError(p.Command[0], err), nil
}
