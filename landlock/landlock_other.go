//go:build !linux

package landlock

import (
	"errors"
	"os"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/plan"
)

// errNotLinux says there is no Landlock here.
var errNotLinux = errors.New("landlock is a Linux feature")

// ABI returns 0 and an error: there is no Landlock outside Linux.
func ABI() (int, error) { return 0, errNotLinux }

// Apply fails: there is no Landlock outside Linux.
func Apply(a Assessment) error { return errNotLinux }

// Run fails: there is no Landlock outside Linux.
func (l *Landlock) Run(p *plan.Plan, c *backend.Context) (int, error) { return 0, errNotLinux }

// SelfCheck cannot check anything outside Linux.
func (l *Landlock) SelfCheck() (string, bool) { return errNotLinux.Error(), false }

// ChildMain fails: there is no Landlock outside Linux.
func ChildMain() int { return 125 }

// Broker starts nothing: there is no Landlock outside Linux.
func (l *Landlock) Broker(p *plan.Plan, prepared map[string]*os.File) (fslog.Broker, func(), error) {
	return nil, nil, errNotLinux
}
