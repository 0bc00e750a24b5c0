package box

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	"github.com/agentbox/agentbox/wrap"
)

// Run resolves the request and runs its command confined, on the one run
// path (supervise.Run), and returns the command's exit status. Under
// best-effort with no backend that can confine it, the command runs
// unconfined after one warning line.
//
// When bwrap, which its cached probe said works, cannot make the box at all
// (the command never started), and auto chose it, the run is resolved
// again with a fresh probe, once: another backend (Landlock) confines it
// when the policy allows, and the notice says so.
func Run(req Request) (int, error) {
	defer trace.Total()
	code, err, stale := run(req)
	var u *backend.Unavailable
	if stale && errors.As(err, &u) {
		fmt.Fprintln(os.Stderr, "agentbox: notice: bubblewrap no longer works here (its message is above): choosing again")
		code, err, _ = run(req)
	}
	return code, err
}

// run is one attempt of Run; stale reports that it failed because bwrap no
// longer works here, before the command started, and that auto chose bwrap.
func run(req Request) (int, error, bool) {
	// What agentbox says on stderr fits the terminal (100 columns when
	// stderr is not one); the box's own output is not touched.
	stderr := wrap.NewWriter(os.Stderr, wrap.Width(os.Stderr, false))
	defer stderr.Flush()
	// First, the after-run check of any earlier run whose agentbox was
	// killed, before this run looks at what that run left (on Windows,
	// after removing that run's own git placeholders).
	removeLeftovers(stderr)
	if env, err := World(); err == nil {
		ph := trace.Begin("recover")
		rec := event.NewStream("", &event.Summary{W: stderr})
		err := supervise.Recover(policy.StateDir(env), rec)
		rec.Close()
		ph.End()
		if err != nil {
			return 0, err, false
		}
	}
	all := Backends()
	p, b, err := Resolve(req, all)
	if err != nil {
		return 0, err, false
	}
	trace.Run(p.RunID)
	ph := trace.Begin("setup")
	if b == nil && p.Box.Outer != "" {
		syncState(p)
		code, err := runInOuter(p)
		return code, err, false
	}
	if b == nil {
		logUnconfined(p, os.Stderr)
		code, err := supervise.RunUnconfined(p)
		return code, err, false
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
			return 0, err, false
		}
		syncState(p)
	}
	skipWarnings(stderr, p)
	backendNotice(stderr, p, b.Name(), bwrapFallback(p, all), fallbackCause)
	if req.Verify {
		if err := verifyFirst(p, b); err != nil {
			return 0, err, false
		}
	}
	self, err := SelfPath()
	if err != nil {
		return 0, err, false
	}
	j := judge(p)
	hr := hostRun(p, summaryLimit)
	if j != nil {
		// One verdict: the fix the audit log records is the one the
		// summary prints.
		j.SetHostRun(hr)
		j.SetHostDenies(hostDenies(p))
	}
	events := event.NewStream(p.RunID, &event.Summary{W: stderr, NetLog: req.NetLog},
		&refusal.Summary{W: stderr, NetLog: req.NetLog, Plan: p, Judge: j, HostRun: hr})
	if log := auditLog(p, os.Stderr); log != nil {
		events.Add(log)
	}
	ph.End()
	defer func() {
		ph := trace.Begin("log")
		events.Close()
		ph.End()
	}()
	code, err := supervise.Run(b, p, backend.Context{Self: self, NetLog: req.NetLog, Events: events, Judge: judgeFunc(j),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	var u *backend.Unavailable
	stale := err != nil && errors.As(err, &u) && u.Code == mount.CodeStale &&
		b.Name() == mount.Backend && (p.Backend == "auto" || p.Backend == "")
	return code, err, stale
}

// skipWarnings prints one line for each part of the policy the run does
// not apply and the user must hear of (a writable folder that does not
// exist, with the mkdir that makes it).
func skipWarnings(w io.Writer, p *plan.Plan) {
	for _, s := range p.Skipped {
		if s.Warn {
			path := ShellQuote(s.Path)
			if t := tilde(p.Identity.Home, s.Path); strings.HasPrefix(t, "~/") {
				path = "~/" + ShellQuote(strings.TrimPrefix(t, "~/"))
			}
			fmt.Fprintf(w, "agentbox: warning: %s does not exist, so it is not writable (mkdir -p %s)\n", path, path)
		}
	}
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
