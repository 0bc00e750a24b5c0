package supervise

import (
	"os"
	"time"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// runGuard is one run's side of the registry of what host programs run or
// obey (package hostexec): its pending record, its placeholders, what it
// recorded before the run, and the after-run check.
type runGuard struct {
	p     *plan.Plan
	ev    event.Emitter
	pend  *pending
	holds []hold
	recs  []guardRecord
	pins  *Pins
	done  bool
	// keep leaves the pending record for the next run: the after-run
	// check could not finish.
	keep bool
	// started0 is when the run began (Unix ns), before anything of it
	// existed: what changed since in a watched folder is the box's.
	started0 int64
	// index is what the git indexes marked before the run.
	index map[string]indexState
}

// startGuard does, before the box starts: the check of every earlier run
// whose agentbox was killed, this run's pending record, the folders agentbox
// owns (Prepare), the placeholders, and the record of the guards kept by
// restoring.
func startGuard(p *plan.Plan, ev event.Emitter) (*runGuard, error) {
	g := &runGuard{p: p, ev: ev, started0: time.Now().UnixNano()}
	h := &p.HostExec
	if err := recoverPending(h.State, p.RunID, ev); err != nil {
		return nil, err
	}
	pend, err := newPending(h.State, p.RunID)
	if err != nil {
		// The run still gets its after-run check; only a check after
		// agentbox is killed is lost.
		ev.Emit(event.Event{Kind: event.Warning, Detail: "no pending record in " + event.Escape(h.State) + " (" + err.Error() + "): if agentbox is killed, the next run cannot do this run's after-run check"})
		pend = nil
	}
	g.pend = pend
	// Before the box can write anything: no file it may write has
	// another name (links_linux.go).
	n, err := unshareTrees(h)
	if err != nil {
		g.release()
		return nil, err
	}
	reportShared(ev, n)
	if g.pins, err = PreparePinned(p); err != nil {
		g.release()
		return nil, err
	}
	if g.holds, err = placeholders(p, pend); err != nil {
		g.release()
		return nil, err
	}
	if g.recs, err = record(h, liveRecords(pend)); err != nil {
		g.release()
		return nil, err
	}
	g.index = indexStates(h)
	return g, nil
}

// saveRecord writes the pending record: what the check needs, and the
// box's cgroups (to empty them after a kill).
func (g *runGuard) saveRecord(cgroups []string) {
	if err := g.pend.write(pendingRecord{Run: g.p.RunID, HostExec: g.p.HostExec, Records: g.recs, Cgroups: cgroups, Started: g.started0, Index: g.index}); err != nil {
		g.ev.Emit(event.Event{Kind: event.Warning, Detail: "writing the pending record: " + err.Error()})
	}
}

// started records the box's first process (its process group).
func (g *runGuard) started(pid int) { g.pend.pgrp(pid) }

// prepared returns the folders Prepare made, by path, for the backend.
func (g *runGuard) prepared() map[string]*os.File { return g.pins.files }

// check is the after-run check; every process of the run has ended. When
// it cannot finish, the pending record stays for the next run.
func (g *runGuard) check() error {
	err := check(&g.p.HostExec, g.p.RunID, g.started0, g.recs, g.index, g.ev)
	if err != nil && g.pend != nil {
		g.keep = true
	}
	return err
}

// release removes the placeholders no other run relies on and the pending
// record.
func (g *runGuard) release() {
	if g.done {
		return
	}
	g.done = true
	g.pins.Close()
	releasePlaceholders(g.holds, g.p.HostExec.State, g.pend)
	if g.keep {
		g.pend.leave()
		return
	}
	g.pend.done()
}
