package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/trace"
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
	// readOnly is what stood at the run's read-only paths before it.
	readOnly map[string]fileID
	// made are the folders Prepare made or checked, as they were then.
	made map[string]plan.Stamp
}

// startGuard does, before the box starts: the check of every earlier run
// whose agentbox was killed, this run's pending record, the folders agentbox
// owns (Prepare), the placeholders, and the record of the guards kept by
// restoring.
func startGuard(p *plan.Plan, ev event.Emitter) (gd *runGuard, err error) {
	// A reader that panics on what it found before the run (a file an
	// earlier box crafted) stops the run, never lets it start unchecked.
	defer func() {
		if v := recover(); v != nil {
			if gd != nil {
				gd.release()
			}
			gd, err = nil, fmt.Errorf("what agentbox records before the run stopped on what it read (%v); the run cannot start: look at the git indexes and control files in the writable roots (agentbox plan lists them)", v)
		}
	}()
	g := &runGuard{p: p, ev: ev, started0: runStart()}
	h := &p.HostExec
	ph := trace.Begin("prepare.lock")
	defer func() { ph.End() }() // on an early return
	if err := recoverPending(h.State, p.RunID, ev); err != nil {
		return nil, err
	}
	gd = g
	var pend *pending
	if h.State != "" {
		// No box starts without its run's record whole on disk
		// (saveRecord): a run killed without one would leave what it
		// planted unchecked. Its lock comes first, before anything of the
		// run exists. Inside another box, whose state folder is
		// read-only, the outer run's after-run check covers what this one
		// changes, killed or not.
		pend, err = lockPending(h.State, p.RunID)
		if err != nil && p.Depth > 1 && errors.Is(err, unix.EROFS) {
			pend, err = nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: this run's pending record cannot be written (%w), and without it a run whose agentbox is killed is never checked; free space on that file system or make the folder writable, then run again", event.Escape(filepath.Join(h.State, "pending", p.RunID+".json")), err)
		}
	}
	g.pend = pend
	ph.End()
	ph = trace.Begin("prepare.folders")
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
	g.made = g.pins.stamps()
	ph.End()
	ph = trace.Begin("prepare.placeholders")
	// The placeholders are made or joined and the guards recorded under
	// one hold of the placeholder lock: another run's placeholder made in
	// between would be recorded as the user's, and put back for good after
	// that run took it away.
	unlock := func() {}
	if pend != nil {
		if unlock, err = lockPlaceholders(h.State); err != nil {
			g.release()
			return nil, fmt.Errorf("the placeholder lock in %s: %w", h.State, err)
		}
	}
	var held map[string]hold
	g.holds, err = placeholdersLocked(p, pend)
	if err == nil && pend != nil {
		held = liveHolds(pend.dir, pend.run)
	}
	if err == nil {
		g.recs, err = record(h, liveRecords(pend), held)
	}
	unlock()
	if err != nil {
		g.release()
		return nil, err
	}
	ph.End()
	ph = trace.Begin("prepare.before")
	g.index = indexStates(h)
	g.readOnly = readOnlyIDs(h)
	return g, nil
}

// saveRecord writes the pending record: what the check needs, and the
// box's cgroups (to empty them after a kill). The box does not start
// when it cannot be written.
func (g *runGuard) saveRecord(cgroups []string) error {
	if err := g.pend.write(pendingRecord{Run: g.p.RunID, HostExec: g.hostExec(), Records: g.recs, Cgroups: cgroups, Started: g.started0, Index: g.index, ReadOnly: g.readOnly}); err != nil {
		return fmt.Errorf("%s: this run's pending record cannot be written (%w), and without it a run whose agentbox is killed is never checked; free space on that file system, then run again", event.Escape(g.pend.path), err)
	}
	return nil
}

// started records the box's first process (its process group).
func (g *runGuard) started(pid int) { g.pend.pgrp(pid) }

// prepared returns the folders Prepare made, by path, for the backend.
func (g *runGuard) prepared() map[string]*os.File { return g.pins.files }

// check is the after-run check; every process of the run has ended. When
// it cannot finish, the pending record stays for the next run.
func (g *runGuard) check() error {
	h := g.hostExec()
	err := check(&h, g.p.RunID, g.started0, g.recs, &beforeRun{Index: g.index, ReadOnly: g.readOnly}, g.ev)
	if err != nil && g.pend != nil {
		g.keep = true
	}
	return err
}

// hostExec is the plan's HostExec with the folders Prepare made (the plan
// itself is not changed).
func (g *runGuard) hostExec() plan.HostExec {
	h := g.p.HostExec
	h.Made = g.made
	return h
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
