package landlock

import (
	"slices"

	"github.com/agentbox/agentbox/plan"
)

// RightsAt returns the rights the assessment's grants give on the path p
// (a resolved, absolute path), as Expand carves them: each grant that
// covers p gives its rights, unless p lies in one of its exceptions or on
// the way down to one (the carved folders get nothing from that grant).
// Pure: the log uses it to tell which calls the kernel refuses.
func (a Assessment) RightsAt(p string) Rights {
	var r Rights
	for _, g := range a.Grants {
		if !plan.Within(p, g.Path) {
			continue
		}
		carved := false
		for _, e := range g.Except {
			if plan.Within(p, e) || plan.Within(e, p) {
				carved = true
				break
			}
		}
		if !carved {
			r |= g.Rights
		}
	}
	return r
}

// Missing returns, of the rights named (by their kernel names, such as
// "make_reg"), those the rule set handles and does not give on p: an
// access that needs them is refused there. Rights the rule set does not
// handle (newer than its ABI) are never missing.
func (a Assessment) Missing(p string, names ...string) []string {
	have := a.RightsAt(p)
	var out []string
	for _, n := range names {
		i := slices.Index(rightNames, n)
		if i < 0 {
			continue
		}
		bit := Rights(1) << i
		if a.HandledFS&bit != 0 && have&bit == 0 {
			out = append(out, n)
		}
	}
	return out
}
