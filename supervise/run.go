package supervise

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/trace"
)

// discard is an emitter that drops everything.
type discard struct{}

func (discard) Emit(event.Event) {}

// Run is the one run path: it runs the completed, frozen plan p with
// backend b. Around b.Run it emits the run's start and end, first does the
// after-run check of any earlier run whose agentbox was killed, creates the
// folders and placeholders the plan needs, records what it keeps by
// restoring, makes the box's own cgroup when the plan has one (the
// supervisor is inside only until the box's first process has started),
// and after the box: ends every process of the run, reports the limits the
// box hit, and does the after-run check (package hostexec's registry) with
// nothing of the run left running.
func Run(b backend.Backend, p *plan.Plan, c backend.Context) (int, error) {
	if c.Events == nil {
		c.Events = discard{}
	}
	start := time.Now()
	// The digest is for the audit log; without one nothing records it,
	// and computing it (the whole plan as JSON) costs more than the rest
	// of the run's start.
	ph := trace.Begin("audit")
	digest := ""
	if p.Log.Enabled {
		digest = p.Digest()
	}
	c.Emit(event.Event{Kind: event.RunStart, Backend: b.Name(), Digest: digest, Command: p.Command,
		Cwd: p.Cwd, Project: Project(p), Workspace: p.Workspace.ID, Network: p.Network.Mode})
	ph.End()
	status, err := run(b, p, c)
	end := event.Event{Kind: event.RunEnd, DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	switch {
	case err == nil:
		end.Status = event.Int(status)
	default:
		code := ExitFailure
		var se *backend.StatusError
		if errors.As(err, &se) {
			code = se.Status
		}
		end.Status, end.Reason = event.Int(code), err.Error()
	}
	c.Emit(end)
	return status, err
}

func run(b backend.Backend, p *plan.Plan, c backend.Context) (int, error) {
	// Before anything of this run exists: the check of a run whose
	// agentbox was killed, then this run's record, its folders and
	// placeholders, and what it keeps by restoring.
	ph := trace.Begin("prepare")
	defer func() { ph.End() }() // on an early return
	fg := Foreground()
	g, err := startGuard(p, c.Events)
	if err != nil {
		return 0, err
	}
	defer func() {
		// The run's placeholders, pending record and fresh folders go
		// last, after the check; their cost is a phase of its own.
		rel := trace.Begin("release")
		g.release()
		Cleanup(p)
		rel.End()
	}()
	var grp *cgroup.Group
	if l := p.Limits.Cgroup; l.Pids > 0 || l.Memory > 0 {
		grp, err = cgroup.Enter("agentbox-"+p.RunID, cgroup.Limits{Pids: l.Pids, Memory: l.Memory})
		if err != nil {
			return 0, fmt.Errorf("creating the box's cgroup (the plan limits the box there): %w", err)
		}
		defer grp.Close()
	}
	// A box without a PID namespace of its own gets a cgroup of its own
	// where the machine allows one (root, a delegated cgroup v2), so that
	// every process of the run can be killed at once at its end, and by
	// a later run after a kill -9 of agentbox. Elsewhere endAll finds
	// them as agentbox's descendants.
	var track *cgroup.Tracker
	if t, ok := b.(backend.Tracked); ok && t.TrackedByCgroup() && !grp.HasV2() {
		if track, err = cgroup.Track("agentbox-" + p.RunID + ".box"); err == nil {
			defer track.Close()
			c.CgroupFD = track.FD()
		}
	}
	dirs := grp.Dirs()
	if track != nil {
		dirs = append(dirs, track.Dir())
	}
	rec := trace.Begin("prepare.record")
	err = g.saveRecord(dirs)
	rec.End()
	if err != nil {
		return 0, err
	}
	c.Prepared = g.prepared()
	left := false
	// The filesystem log: it records what the box is refused until every
	// process of the run has ended, and its last records come before the
	// run's end.
	lg := trace.Begin("prepare.log")
	defer func() { lg.End() }() // on an early return
	var br fslog.Broker
	if bb, ok := b.(backend.Brokered); ok {
		var stop func()
		if br, stop, err = bb.Broker(p, c.Prepared); err != nil {
			return 0, fmt.Errorf("starting the broker of the box's metadata calls: %w", err)
		}
		defer stop()
	}
	fl := fslog.Start(p, c.Judge, c.Events, br)
	defer fl.Stop()
	c.FSLog = fl.Box()
	c.PreloadPipe = fl.PreloadPipe()
	c.Started = func(pid int) {
		if grp != nil && !left {
			left = true
			grp.Release()
		}
		g.started(pid)
		fl.Started(pid)
	}
	// Orphans of the box come to agentbox, so none can outlive the run.
	subreaper()
	lg.End()
	lg = nil
	ph.End()
	ph = trace.Begin("box")
	status, err := b.Run(p, &c)
	ph.End()
	ph = trace.Begin("end")
	c.Started(0)
	if grp != nil {
		for _, h := range grp.Hits() {
			c.Emit(event.Event{Kind: event.Limit, Limit: h.Limit, Detail: h.Detail})
		}
	}
	// Every process of the run ends before the check: nothing it started
	// may change a file after it, or take the terminal after agentbox has
	// returned. Through the run's cgroup first, where there is one, then
	// one by one, until agentbox has no child left.
	if track != nil {
		if err := track.Kill(); err != nil {
			c.Emit(event.Event{Kind: event.Warning, Detail: "ending the run's processes through its cgroup: " + err.Error()})
		}
	}
	if err := grp.Kill(); err != nil {
		c.Emit(event.Event{Kind: event.Warning, Detail: "ending the run's processes through its cgroup: " + err.Error()})
	}
	if left := endAll(); len(left) > 0 {
		c.Emit(event.Event{Kind: event.Warning, Detail: fmt.Sprintf("%d processes of the run could not be ended: %v", len(left), left)})
	}
	fl.Stop()
	if fg {
		// A process of the box may have taken the terminal after CMD
		// ended and before it was killed: take it back.
		RestoreForeground()
	}
	if grp != nil {
		grp.Close()
	}
	ph.End()
	ph = trace.Begin("check")
	cerr := g.check()
	ph.End()
	ph = nil // the release, deferred above, is a phase of its own
	if cerr != nil {
		if err == nil {
			err = fmt.Errorf("the command exited with status %d, but %w", status, cerr)
		}
		return 0, err
	}
	if ferr := fl.Err(); ferr != nil && err == nil {
		// Checked, and failed: what the log served was refused from the
		// failure on (see package fslog).
		return 0, fmt.Errorf("the command exited with status %d, but %w", status, ferr)
	}
	return status, err
}

// Project is the folder a run is about: its first writable root (by
// default the git top-level of the working directory), else the
// workspace's folder, else the working directory.
func Project(p *plan.Plan) string {
	for _, m := range p.Mounts {
		if m.Stage == plan.StageWritable && m.Op == plan.Bind {
			return m.Path
		}
	}
	if p.Workspace.Dir != "" {
		return p.Workspace.Dir
	}
	return p.Cwd
}
