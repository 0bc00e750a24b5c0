package box

import (
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
)

// Outer is the box the calling process already runs in.
type Outer struct {
	// Backend is the outer box's backend; "" when there is no outer box.
	Backend string
	// Vars are the outer box's truthful variables, NAME=value, as it set
	// them.
	Vars []string
}

// OuterBox returns the box the calling process runs in, if any. The
// variables alone prove nothing (they can be inherited or forged), so the
// backend they name must confirm it from what this process can see for
// itself (Backend.SelfCheck): a command is only ever left to an outer box
// that is really there.
func OuterBox(env policy.Env, all []backend.Backend) Outer {
	if env.Getenv(plan.VarActive) != "1" {
		return Outer{}
	}
	name := env.Getenv(plan.VarBackend)
	b, ok := backend.Find(all, name)
	if !ok {
		return Outer{}
	}
	if _, confined := b.SelfCheck(); !confined {
		return Outer{}
	}
	o := Outer{Backend: name}
	for _, v := range plan.TruthfulVars {
		if val, ok := lookup(env.Environ, v); ok && v != plan.VarDegraded {
			o.Vars = append(o.Vars, v+"="+val)
		}
	}
	return o
}

// inOuter makes p a run in the outer box: no backend of this agentbox
// confines the command, the outer box does. The command keeps what a
// confined run changes for it (a provider's own sandbox stays off: it
// could not start inside the outer box either) and the outer box's
// truthful variables, which stay true; the depth is the outer box's.
func inOuter(p *plan.Plan, outer Outer, why string) {
	p.Box = plan.Box{Outer: outer.Backend, Degraded: why, Passed: p.Box.Passed}
	p.Log.Filesystem, p.Log.Reads = "", false
	if p.Provider.Confined != nil {
		p.Command = append([]string(nil), p.Provider.Confined...)
	}
	confinedEnv(p)
	if p.Depth > 1 {
		p.Depth--
	}
	p.Environ = append(p.Environ, outer.Vars...)
	if _, ok := lookup(p.Environ, plan.VarDepth); !ok {
		p.Environ = append(p.Environ, plan.VarDepth+"="+strconv.Itoa(p.Depth))
	}
}

func lookup(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if len(environ[i]) > len(name) && environ[i][len(name)] == '=' && environ[i][:len(name)] == name {
			return environ[i][len(name)+1:], true
		}
	}
	return "", false
}

// notInside is a backend that cannot make a box inside the outer box, with
// the reason.
type notInside struct {
	backend.Backend
	why string
}

func (n notInside) Available() error { return &backend.Unavailable{Reason: n.why} }

// innerBackends are the backends that can make a box inside outer. A
// Landlock box cannot hold a second Landlock box: Landlock rights reach
// everything below a folder, so the inner one grants a folder holding a
// path it keeps out by granting each entry of the folder instead, and the
// outer box has left such folders (/ among them) unlistable.
func innerBackends(all []backend.Backend, outer Outer) []backend.Backend {
	if outer.Backend != "landlock" {
		return all
	}
	out := make([]backend.Backend, len(all))
	for i, b := range all {
		out[i] = b
		if b.Name() == "landlock" {
			out[i] = notInside{b, "inside a Landlock box a second Landlock box cannot be built (the folders the outer box carved cannot be listed)"}
		}
	}
	return out
}

// confinedEnv gives the command the provider's variables for a confined
// run (its own folder, IS_SANDBOX=1), replacing inherited copies: only
// when a box really confines it is the CLI told so.
func confinedEnv(p *plan.Plan) {
	if len(p.Provider.ConfinedEnv) == 0 {
		return
	}
	set := map[string]bool{}
	for _, kv := range p.Provider.ConfinedEnv {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	var out []string
	for _, kv := range p.Environ {
		if name, _, _ := strings.Cut(kv, "="); !set[name] {
			out = append(out, kv)
		}
	}
	p.Environ = append(out, p.Provider.ConfinedEnv...)
}
