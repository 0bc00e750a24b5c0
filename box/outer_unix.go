//go:build !windows

package box

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
	"github.com/agentbox/agentbox/wrap"
)

// runInOuter runs CMD in the box agentbox itself runs in, which confines
// it, after one line saying so: exec'd in agentbox's place, so signals and
// exit status are CMD's own. It returns only when CMD cannot be started.
func runInOuter(p *plan.Plan) (int, error) {
	// One line: why no box can be made here is agentbox plan's to say.
	w := wrap.NewWriter(os.Stderr, wrap.Width(os.Stderr, false))
	fmt.Fprintf(w, "agentbox: running %s in the outer box (%s) without a box of its own (agentbox plan says why)\n", filepath.Base(p.Command[0]), p.Box.Outer)
	w.Flush()
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
