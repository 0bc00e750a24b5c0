package proctest

import (
	"os/exec"
)

// DefaultSignals does nothing on Windows, whose processes inherit no
// ignored signals.
func DefaultSignals() {}

func detach(c *exec.Cmd) {}

// killSession kills the process itself (Windows has no sessions of this
// kind; a job object would hold the tree).
func killSession(pid int) {
	if p, err := findProcess(pid); err == nil {
		p.Kill()
	}
}
