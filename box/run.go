package box

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/refusal"
	"github.com/agentbox/agentbox/supervise"
)

// Run resolves the request and runs its command confined, on the one run
// path (supervise.Run), and returns the command's exit status. Under
// best-effort with no backend that can confine it, the command runs
// unconfined after one warning line.
func Run(req Request) (int, error) {
	p, b, err := Resolve(req, Backends())
	if err != nil {
		return 0, err
	}
	if b == nil {
		logUnconfined(p, os.Stderr)
		return supervise.RunUnconfined(p)
	}
	if n := countWeaker(p); n > 0 {
		fmt.Fprintf(os.Stderr, "agentbox: warning: %s: %d rules are enforced weaker than the policy asks (agentbox plan shows how)\n", b.Name(), n)
	}
	if req.Verify {
		if err := verifyFirst(p, b); err != nil {
			return 0, err
		}
	}
	self, err := SelfPath()
	if err != nil {
		return 0, err
	}
	events := event.NewStream(p.RunID, &event.Summary{W: os.Stderr, NetLog: req.NetLog},
		&refusal.Summary{W: os.Stderr, NetLog: req.NetLog, Plan: p})
	if log := auditLog(p, os.Stderr); log != nil {
		events.Add(log)
	}
	defer events.Close()
	return supervise.Run(b, p, backend.Context{Self: self, NetLog: req.NetLog, Events: events, Judge: judge(p),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
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

// verifyFirst checks every rule of p from inside a box of b (run
// --verify); a rule not in force is an error, with the report on stderr.
func verifyFirst(p *plan.Plan, b backend.Backend) error {
	r, err := verifyBox(p, b)
	if err != nil {
		return err
	}
	if failed := r.Failed(); len(failed) > 0 {
		r.WriteText(os.Stderr)
		return hint(fmt.Errorf("%s: %d rules of the plan are not in force; CMD was not started", b.Name(), len(failed)),
			"agentbox verify with the same flags shows the report again")
	}
	return nil
}
