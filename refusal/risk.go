package refusal

import (
	"path"
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

// HostRun says whether making the folder dir writable would let the box
// change something a host program runs or obeys, by the registry of those
// (package hostexec, which searches the folder as a run with it writable
// would), and why. It reads the disk, so it is given to this package by
// its caller.
type HostRun func(dir string) (risky bool, why string)

// Recheck returns f as the registry classifies it: a change that makes a
// folder writable, which the advice called safe, is risky when hostRun
// finds anything in that folder that a host program runs or obeys. The
// advice looks at names only, and the refusal it comes from may have been
// made up by the box; nothing is called safe before the registry agrees.
func Recheck(pl *plan.Plan, f Fix, hostRun HostRun) Fix {
	if f.Risky || f.Key != "filesystem.writable" || hostRun == nil {
		return f
	}
	if risky, why := hostRun(untilde(pl, f.Value)); risky {
		f.Risky, f.Why = true, why
	}
	return f
}

// untilde is tilde undone.
func untilde(pl *plan.Plan, v string) string {
	if v == "~" {
		return pl.Identity.Home
	}
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		return path.Join(pl.Identity.Home, rest)
	}
	return v
}
