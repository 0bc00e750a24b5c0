//go:build !windows

package winsandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/agentbox/agentbox/plan"
)

// ErrNotWindows is returned by every Windows entry point on other systems.
var ErrNotWindows = errors.New("agentbox setup is only for Windows; on Linux agentbox uses bubblewrap or Landlock")

func notWindows() error {
	if runtime.GOOS == "linux" {
		return ErrNotWindows
	}
	return fmt.Errorf("%w (this is %s)", ErrNotWindows, runtime.GOOS)
}

// Setup creates the sandbox users and firewall rules; Windows only.
func Setup(opts SetupOptions) error { return notWindows() }

// Check verifies what Setup made; Windows only.
func Check(w io.Writer) error { return notWindows() }

// Uninstall removes what Setup made; Windows only.
func Uninstall() error { return notWindows() }

// Run runs the plan's command in the Windows sandbox; Windows only.
func Run(p *plan.Plan, stdio Stdio) (int, error) { return 125, notWindows() }

// RunnerMain is the runner's entry point; Windows only.
func RunnerMain(args []string) int {
	fmt.Fprintln(os.Stderr, "agentbox: error:", notWindows())
	return 125
}
