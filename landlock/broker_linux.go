package landlock

import (
	"os"

	"github.com/agentbox/agentbox/broker"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
)

// Broker starts the broker of p's run (backend.Brokered): the box's
// metadata calls, which Landlock has no right for, are decided against the
// files its rule set grants write rights on, by device and inode, found
// the way the rule set is built (on descriptors, the prepared folders
// first). Device nodes and /dev/shm, writable for their content, are left
// out: their mode and times are the host's.
//
// Inside a bubblewrap box of agentbox there is none: that box's filter lets
// no process in it take a notification listener (it would see the box's
// connects before agentbox), so the box's metadata calls are refused
// (ENOSYS), as the plan says.
func (l *Landlock) Broker(p *plan.Plan, prepared map[string]*os.File) (fslog.Broker, func(), error) {
	if insideBwrap(p) {
		return nil, func() {}, nil
	}
	a, err := l.assessmentOf(p)
	if err != nil {
		return nil, nil, err
	}
	var grants []Grant
	for _, g := range a.Grants {
		if g.Rights&writeRights != 0 && !g.Optional {
			grants = append(grants, g)
		}
	}
	var ids []broker.FileID
	err = carve(grants, fdTree{pins: supervise.PinsOf(prepared)}, func(n node, r Rights) error {
		if r&writeRights != 0 {
			ids = append(ids, broker.FileID{Dev: n.id.dev, Ino: n.id.ino})
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	b, err := broker.New(ids)
	if err != nil {
		return nil, nil, err
	}
	return b, b.Close, nil
}

// insideBwrap reports whether agentbox runs inside a bubblewrap box of its
// own (a nested run), whose filter refuses a notification listener.
func insideBwrap(p *plan.Plan) bool {
	return p.Depth > 1 && os.Getenv(plan.VarBackend) == "bwrap"
}
