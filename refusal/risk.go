package refusal

import (
	"strings"

	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/provider"
)

// HostExecuted reports whether making p writable would let the box change
// something a host program runs or obeys later (git hooks and config,
// agent CLI control files, shell startup files, editor task files,
// programs on PATH, system folders), and why. Everything agentbox calls
// risky for that reason goes through this one function.
func HostExecuted(pl *plan.Plan, p string) (bool, string) {
	// What the plan already protects wherever it lies in p.
	for _, m := range pl.Mounts {
		if strings.HasPrefix(m.Origin.Key, "always: ") && m.Op != plan.Pin && plan.Within(m.Path, p) {
			return true, tilde(pl, p) + " holds " + tilde(pl, m.Path) + " (" + strings.TrimPrefix(m.Origin.Key, "always: ") + "), which a host program runs or obeys"
		}
	}
	for _, g := range pl.HostExec.Guards {
		if plan.Within(g.Path, p) {
			return true, tilde(pl, p) + " holds " + tilde(pl, g.Path) + " (" + g.Rule + "), which a host program runs or obeys"
		}
	}
	// The one registry of what host programs run or obey (package
	// hostexec), whether or not this run found it.
	if risky, why := hostexec.Risky(pl.Identity.Home, provider.Builtin(), p); risky {
		return true, tildeText(pl, why)
	}
	return false, ""
}
