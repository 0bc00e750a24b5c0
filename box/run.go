package box

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/provider"
	"github.com/agentbox/agentbox/refusal"
	"github.com/agentbox/agentbox/supervise"
	"github.com/agentbox/agentbox/trace"
)

// Run resolves the request and runs its command confined, on the one run
// path (supervise.Run), and returns the command's exit status. Under
// best-effort with no backend that can confine it, the command runs
// unconfined after one warning line.
func Run(req Request) (int, error) {
	// First, the after-run check of any earlier run whose agentbox was
	// killed, before this run looks at what that run left.
	defer trace.Total()
	if env, err := World(); err == nil {
		ph := trace.Begin("recover")
		rec := event.NewStream("", &event.Summary{W: os.Stderr})
		err := supervise.Recover(policy.StateDir(env), rec)
		rec.Close()
		ph.End()
		if err != nil {
			return 0, err
		}
	}
	all := Backends()
	p, b, err := Resolve(req, all)
	if err != nil {
		return 0, err
	}
	trace.Run(p.RunID)
	ph := trace.Begin("setup")
	if b == nil && p.Box.Outer != "" {
		syncState(p)
		return runInOuter(p)
	}
	if b == nil {
		logUnconfined(p, os.Stderr)
		return supervise.RunUnconfined(p)
	}
	if s := p.Provider.State; s != nil {
		// The CLI's folder must exist for its copy of the state: the
		// plan's folders up to it are made now (the backend makes the
		// others, and checks these again).
		q := *p
		q.Prepare = nil
		for _, d := range p.Prepare {
			if !d.Fresh && plan.Within(filepath.Dir(s.Box), d.Path) {
				q.Prepare = append(q.Prepare, d)
			}
		}
		if err := supervise.Prepare(&q); err != nil {
			return 0, err
		}
		syncState(p)
	}
	backendNotice(os.Stderr, p, b.Name(), bwrapFallback(p, all), fallbackCause)
	if req.Verify {
		if err := verifyFirst(p, b); err != nil {
			return 0, err
		}
	}
	self, err := SelfPath()
	if err != nil {
		return 0, err
	}
	j := judge(p)
	events := event.NewStream(p.RunID, &event.Summary{W: os.Stderr, NetLog: req.NetLog},
		&refusal.Summary{W: os.Stderr, NetLog: req.NetLog, Plan: p, Judge: j, HostRun: hostRun(p, summaryLimit)})
	if log := auditLog(p, os.Stderr); log != nil {
		events.Add(log)
	}
	ph.End()
	defer func() {
		ph := trace.Begin("log")
		events.Close()
		ph.End()
	}()
	return supervise.Run(b, p, backend.Context{Self: self, NetLog: req.NetLog, Events: events, Judge: judgeFunc(j),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
}

// bwrapFallback is why bwrap, when it is missing or broken, did not get a
// run that auto gave to Landlock instead, with the fix; nil when the run is
// not such a fallback (bwrap chosen, a backend forced, or bwrap passed over
// only because it cannot enforce one of the plan's rules).
func bwrapFallback(p *plan.Plan, all []backend.Backend) *backend.Unavailable {
	if p.Box.Backend != landlock.Backend || len(p.Box.Passed) == 0 {
		return nil
	}
	bw, ok := backend.Find(all, mount.Backend)
	if !ok {
		return nil
	}
	var u *backend.Unavailable
	if errors.As(bw.Available(), &u) {
		return u
	}
	return nil
}

// countWeaker counts the backend's weaker rules, limits aside: how a limit
// is enforced depends on the machine, not on the backend, and plan shows it.
func countWeaker(p *plan.Plan) int {
	n := 0
	for _, r := range p.Box.Weaker() {
		if r.Rule != "limits" {
			n++
		}
	}
	return n
}

// SelfPath is the agentbox executable, run again as the init in the box,
// the Landlock child or the Windows runner.
func SelfPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the agentbox executable: %w", err)
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	return self, nil
}

// syncState brings the host's configuration of the agent CLI into the
// box's copy (provider.Sync) before the run. A failure costs the CLI the
// user's state, not the run: one warning line says so.
func syncState(p *plan.Plan) {
	s := p.Provider.State
	if s == nil {
		return
	}
	if _, err := os.Stat(filepath.Dir(s.Box)); err != nil {
		return
	}
	if _, err := provider.Sync(provider.StateSync{Host: s.Host, Box: s.Box, Base: s.Base}); err != nil {
		fmt.Fprintf(os.Stderr, "agentbox: warning: %s starts without your settings from %s: %v\n", p.Provider.Name, s.Host, err)
	}
}

// verifyFirst checks every rule of p from inside a box of b (run
// --verify); a rule not in force is an error, with the report on stderr.
func verifyFirst(p *plan.Plan, b backend.Backend) error {
	r, err := verifyBox(p, b)
	if err != nil {
		return err
	}
	if failed := r.Failed(); len(failed) > 0 {
		r.WriteText(os.Stderr, Width(os.Stderr, false))
		return hint(fmt.Errorf("%s: %d rules of the plan are not in force; CMD was not started", b.Name(), len(failed)),
			"agentbox verify with the same flags shows the report again")
	}
	return nil
}
