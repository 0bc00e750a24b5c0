//go:build !linux

package landlock

import (
	"errors"

	"github.com/agentbox/agentbox/plan"
)

// errNotLinux says what to use instead of Landlock on this OS.
var errNotLinux = errors.New("landlock is a Linux feature: use the windows or seatbelt backend on this system")

// ABI returns 0 and an error: there is no Landlock outside Linux.
func ABI() (int, error) { return 0, errNotLinux }

// Apply fails: there is no Landlock outside Linux.
func Apply(a Assessment) error { return errNotLinux }

// Exec fails: there is no Landlock outside Linux.
func Exec(a Assessment, argv, env []string) error { return errNotLinux }

// ChildCommand is the hidden subcommand of the Landlock child.
const ChildCommand = "__landlock"

// Backend is the name this backend reports.
const Backend = "landlock"

// Check fails: there is no Landlock outside Linux.
func Check(p *plan.Plan) (Assessment, error) { return Assessment{}, errNotLinux }

// Run fails: there is no Landlock outside Linux.
func Run(p *plan.Plan, self string) (int, error) { return 0, errNotLinux }

// ChildMain fails: there is no Landlock outside Linux.
func ChildMain() int { return 125 }
