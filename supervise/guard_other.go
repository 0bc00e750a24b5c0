//go:build !linux && !windows

package supervise

import (
	"os"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// runGuard does nothing here: the after-run check, the placeholders and
// the pending records are Linux only; plan marks what they would keep as
// not covered (plan.KeepNone).
type runGuard struct{}

func startGuard(p *plan.Plan, ev event.Emitter) (*runGuard, error) {
	return &runGuard{}, Prepare(p)
}

func (g *runGuard) saveRecord(cgroups []string) error { return nil }
func (g *runGuard) started(pid int)                   {}
func (g *runGuard) check() error                      { return nil }
func (g *runGuard) release()                          {}

// prepared is nil: the folders are not pinned by descriptor here.
func (g *runGuard) prepared() map[string]*os.File { return nil }

// Recover does nothing here: see the Linux version.
func Recover(state string, ev event.Emitter) error { return nil }

func subreaper()    {}
func endAll() []int { return nil }
