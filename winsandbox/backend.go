package winsandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Backend is the name this backend reports in AGENTBOX_BACKEND.
const Backend = "windows"

// Windows is the Windows backend: sandbox users, ACLs, firewall rules and a
// restricted token (see the package documentation).
type Windows struct {
	// Facts are the machine facts the spec needs (the proxy port from
	// setup, the folders the runner and command live in, a file lookup);
	// Complete calls it, so tests give fixed answers. machineFacts when nil.
	Facts func(p *plan.Plan) Options
}

// New returns the Windows backend.
func New() *Windows { return &Windows{} }

// Name is "windows".
func (w *Windows) Name() string { return Backend }

// Complete builds the Windows spec for p and fills p.Box from it.
func (w *Windows) Complete(p *plan.Plan) error {
	facts := w.Facts
	if facts == nil {
		facts = machineFacts
	}
	opts := facts(p)
	opts.Environ = p.Environ
	s, err := Build(p, opts)
	if err != nil {
		return err
	}
	box := plan.Box{Backend: Backend, Passed: p.Box.Passed}
	for _, c := range s.Capabilities {
		box.Writable = append(box.Writable, c.Root)
	}
	for _, m := range p.Mounts {
		lv, how := plan.Enforced, ""
		switch {
		case m.Stage == plan.StageRoot && m.Op != plan.ROBind:
			lv, how = plan.Weaker, "no Windows equivalent of "+string(m.Op)+": the host's devices and processes are what the sandbox users may see"
		case m.Access == plan.Hidden:
			lv, how = plan.Weaker, "deny ACE for the sandbox group: the name stays visible in its folder, the content is refused"
		case m.Access == plan.ReadOnly:
			how = "deny-write ACE for the sandbox group"
		case m.Access == plan.ReadWrite:
			how = "allow ACE (modify) for the sandbox group and the root's capability SID"
		}
		box.Rules = append(box.Rules, plan.RuleStatus{Rule: m.Stage.String(), Path: m.Path, Origin: m.Origin.String(), Level: lv, How: how})
	}
	for _, n := range s.Notes {
		box.Rules = append(box.Rules, plan.RuleStatus{Rule: "windows", Level: plan.Weaker, How: n})
	}
	if box.Detail, err = json.Marshal(s); err != nil {
		return err
	}
	p.Box = box
	return nil
}

// Describe prints the spec: users, capability SIDs, ACEs, firewall rules
// and the spawn request.
func (w *Windows) Describe(p *plan.Plan, out io.Writer) {
	s, err := SpecOf(p)
	if err != nil {
		fmt.Fprintf(out, "windows:   %v\n", err)
		return
	}
	fmt.Fprintln(out, "windows:")
	for _, line := range strings.Split(strings.TrimRight(s.Render(), "\n"), "\n") {
		fmt.Fprintln(out, "  "+line)
	}
}

// SpecOf reads the Windows spec of a completed plan.
func SpecOf(p *plan.Plan) (*Spec, error) {
	if p.Box.Backend != Backend {
		return nil, fmt.Errorf("the plan is not for windows (backend %q)", p.Box.Backend)
	}
	var s Spec
	err := json.Unmarshal(p.Box.Detail, &s)
	return &s, err
}
