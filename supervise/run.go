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
)

// discard is an emitter that drops everything.
type discard struct{}

func (discard) Emit(event.Event) {}

// Run is the one run path: it runs the completed, frozen plan p with
// backend b. Around b.Run it emits the run's start and end, makes the box's
// own cgroup when the plan has one (the supervisor is inside only until
// the box's first process has started), watches the git folders the box
// could use to make host git run its code and neutralises what it left
// there, and reports the limits the box hit.
func Run(b backend.Backend, p *plan.Plan, c backend.Context) (int, error) {
	if c.Events == nil {
		c.Events = discard{}
	}
	start := time.Now()
	c.Emit(event.Event{Kind: event.RunStart, Backend: b.Name(), Digest: p.Digest(), Command: p.Command,
		Cwd: p.Cwd, Project: Project(p), Workspace: p.Workspace.ID, Network: p.Network.Mode})
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
	var grp *cgroup.Group
	if l := p.Limits.Cgroup; l.Pids > 0 || l.Memory > 0 {
		g, err := cgroup.Enter("agentbox-"+p.RunID, cgroup.Limits{Pids: l.Pids, Memory: l.Memory})
		if err != nil {
			return 0, fmt.Errorf("creating the box's cgroup (the plan limits the box there): %w", err)
		}
		grp = g
		defer grp.Close()
	}
	left := false
	leave := func() {
		if grp != nil && !left {
			left = true
			grp.Release()
		}
	}
	// The filesystem log: it records what the box is refused until the
	// box has ended, and its last records come before the run's end.
	fl := fslog.Start(p, c.Judge, c.Events)
	defer fl.Stop()
	c.FSLog = fl.Box()
	c.Started = func() {
		leave()
		fl.Started()
	}
	watch := gitWatch(p)
	defer Cleanup(p)
	status, err := b.Run(p, &c)
	leave()
	fl.Stop()
	if grp != nil {
		for _, h := range grp.Hits() {
			c.Emit(event.Event{Kind: event.Limit, Limit: h.Limit, Detail: h.Detail})
		}
	}
	gitAudit(watch, c.Events)
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
