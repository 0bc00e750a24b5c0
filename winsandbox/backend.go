package winsandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Backend is the name this backend reports in AGENTBOX_BACKEND.
const Backend = "windows"

// Windows is the Windows backend: sandbox users, ACLs, firewall rules and a
// restricted token (see the package documentation).
type Windows struct {
	// Facts are the machine facts the spec needs (the proxy ports from
	// setup, the folders the runner and command live in, a file lookup);
	// Complete calls it, so tests give fixed answers. machineFacts when nil.
	Facts func(p *plan.Plan) Options
	// proxy is the listener Complete reserved for an allowlist run's
	// proxy, on one of setup's proxy ports (nil elsewhere than Windows):
	// the port is in the plan (HTTP_PROXY), so it is taken before the plan
	// is frozen, and Run serves on it.
	proxy io.Closer
}

// New returns the Windows backend.
func New() *Windows { return &Windows{} }

// Name is "windows".
func (w *Windows) Name() string { return Backend }

// Complete builds the Windows spec for p and fills p.Box from it: how each
// rule is enforced, the writable roots, the tmp folder, what the backend
// adds to the environment, and the spec itself as the detail. A private
// tmp becomes a fresh folder of this run (Windows has no tmpfs): its path
// is fixed here, from the run's ID, and the run creates it and removes it
// afterwards. A command that cannot be found or started does not make the
// backend unusable: the spec records it (Refuse) and the run ends with 127
// or 126, as a shell would.
func (w *Windows) Complete(p *plan.Plan) error {
	facts := w.Facts
	if facts == nil {
		facts = machineFacts
	}
	opts := facts(p)
	if p.Network.Mode == plan.NetAllowlist && opts.ProxyPort == 0 {
		ports, err := proxyRange(opts.ProxyPorts)
		if err != nil {
			return err
		}
		if opts.ProxyPort, err = w.reserveProxy(ports); err != nil {
			return err
		}
	}
	if p.Tmp.Mode == plan.TmpPrivate && p.Tmp.HostDir == "" {
		if p.RunID == "" || opts.TempDir == "" || opts.User == "" {
			return errors.New("tmp mode private: no run ID or temporary folder to make this run's tmp folder in")
		}
		base := winJoin(opts.TempDir, "agentbox-"+opts.User)
		p.Tmp.HostDir = winJoin(base, "run-"+p.RunID)
		origin := plan.Origin{Key: "tmp.mode private (windows: a fresh folder per run)"}
		p.Prepare = appendPrepare(p.Prepare, plan.Prepare{Path: base, Mode: 0o700, Origin: origin})
		p.Prepare = appendPrepare(p.Prepare, plan.Prepare{Path: p.Tmp.HostDir, Mode: 0o700, Origin: origin, Fresh: true})
	}
	s, err := Build(p, opts)
	if err != nil {
		return err
	}
	keepAfterRun(p, s)
	if s.Home != nil {
		// The box's home and its %APPDATA% and %LOCALAPPDATA%, made
		// before the run like the caches folder holding them.
		for _, d := range s.Home.Make {
			p.Prepare = appendPrepare(p.Prepare, plan.Prepare{Path: d, Mode: 0o700, Origin: plan.Origin{Key: "caches.appdata (windows: the box's own home folder)"}})
		}
	}
	box := boxOf(p, s)
	if box.Detail, err = json.Marshal(s); err != nil {
		return err
	}
	p.Box = box
	return nil
}

// keepAfterRun says how the Windows run keeps the guards the registry
// could not keep with ACEs (plan.KeepNone: what does not exist carries no
// ACE, and what lies in a folder a package manager replaces must stay
// changeable): supervise's Windows after-run check moves away what the
// box made where nothing was (checked), and puts back what was recorded
// before the run (restored). A new list, not changed entries: backend
// selection undoes a candidate's Complete by restoring the plan's fields.
func keepAfterRun(p *plan.Plan, s *Spec) {
	guards := slices.Clone(p.HostExec.Guards)
	for i, g := range guards {
		if g.Keep != plan.KeepNone {
			continue
		}
		if g.Kind == plan.KindMissing {
			guards[i].Keep = plan.KeepChecked
			switch keptDuringRun(s, g) {
			case "placeholder":
				guards[i].Note = "does not exist: an empty folder the box cannot write stands in for it during the run (removed after it when still empty), and what appears here anyway is moved away after the run"
			case "deny-create":
				guards[i].Note = "does not exist: nothing can be added to its folder during the run (a deny-create ACE), and what appears here anyway is moved away after the run"
			default:
				guards[i].Note = "does not exist: what the box makes here is moved away after the run (on Windows nothing stands in for it during the run)"
			}
		} else {
			guards[i].Keep = plan.KeepRestored
			guards[i].Note = "the box may change it: recorded before the run, and put back after it"
		}
	}
	p.HostExec.Guards = gitPlaceholderGuards(guards, s.GitPlaceholders)
}

func appendPrepare(list []plan.Prepare, d plan.Prepare) []plan.Prepare {
	for _, have := range list {
		if winKey(have.Path) == winKey(d.Path) {
			return list
		}
	}
	return append(list, d)
}

// Describe prints the spec: users, capability SIDs, ACEs, firewall rules
// and the spawn request.
func (w *Windows) Describe(p *plan.Plan, out io.Writer) {
	s, err := SpecOf(p)
	if err != nil {
		fmt.Fprintf(out, "windows:   %v\n", err)
		return
	}
	fmt.Fprintln(out, "windows, rule by rule:")
	for _, r := range p.Box.Rules {
		what := r.Rule
		if r.Path != "" {
			what += " " + r.Path
		}
		fmt.Fprintf(out, "  %s: %s: %s\n", plan.Escape(what), r.Level, plan.Escape(r.How))
	}
	fmt.Fprintln(out, "windows spec (users, ACEs, firewall rules, WFP filters, the command):")
	for _, line := range strings.Split(strings.TrimRight(s.Render(), "\n"), "\n") {
		fmt.Fprintln(out, "  "+plan.Escape(line))
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
