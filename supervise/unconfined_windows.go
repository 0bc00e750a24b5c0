package supervise

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/agentbox/agentbox/plan"
)

// RunUnconfined is best-effort's way out when no backend can confine the
// command: one warning line, none of the truthful variables,
// AGENTBOX_DEGRADED set, and CMD run as a child whose status is returned.
func RunUnconfined(p *plan.Plan) (int, error) {
	fmt.Fprintf(os.Stderr, "agentbox: warning: running UNCONFINED (best-effort): %s\n", p.Box.Degraded)
	cmd := exec.Command(p.Command[0], p.Command[1:]...)
	cmd.Dir, cmd.Env = p.Cwd, p.BoxEnviron()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return ExecError(p.Command[0], err), nil
	}
	return 0, nil
}
