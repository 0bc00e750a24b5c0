//go:build !windows

package winsandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/agentbox/agentbox/backend"
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
func Uninstall(opts SetupOptions) error { return notWindows() }

// UserSID is "" off Windows: users there have numbers.
func UserSID() string { return "" }

// RunnerMain is the runner's entry point; Windows only.
func RunnerMain(args []string) int {
	fmt.Fprintln(os.Stderr, "agentbox: error:", notWindows())
	return 125
}

// reserveProxy takes no port off Windows: the spec names the first one.
func (w *Windows) reserveProxy(r PortRange) (int, error) { return 0, nil }

// machineFacts are none off Windows: the spec is built from the plan alone.
func machineFacts(p *plan.Plan) Options { return Options{} }

// notWindowsBackend is why the windows backend cannot confine anything on
// goos: it is made of Windows' own sandbox users, ACLs, firewall and
// restricted tokens. It names the backend, not `agentbox setup`, since it
// answers `--backend windows` (and is listed when auto finds no backend).
func notWindowsBackend(goos string) error {
	u := &backend.Unavailable{Reason: fmt.Sprintf("the windows backend runs on Windows only (this is %s)", goos)}
	if goos == "linux" {
		u.Fix = "on Linux agentbox confines with bubblewrap (--backend bwrap) or Landlock (--backend landlock)"
	}
	return u
}

// Available always fails off Windows.
func (w *Windows) Available() error { return notWindowsBackend(runtime.GOOS) }

// Run always fails off Windows.
func (w *Windows) Run(p *plan.Plan, c *backend.Context) (int, error) {
	return 125, notWindowsBackend(runtime.GOOS)
}

// SelfCheck cannot check anything off Windows.
func (w *Windows) SelfCheck() (string, bool) { return "nothing could be checked on this system", false }
