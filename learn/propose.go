package learn

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/refusal"
)

// Proposal is what learn proposes for a run's refusals.
type Proposal struct {
	// Adds are the policy additions, with their comments.
	Adds []Addition
	// Create are folders to make: a writable folder must exist.
	Create []string
	// Left are the refusals no safe change allows, with why.
	Left []refusal.Refused
}

// Propose chooses the additions for the refusals of a run of p (as
// refusal.Judge and the network's denials gave them), the most frequent
// first. command is the command line, for the comments; hostRun is the
// registry's search of what host programs run or obey (refusal.Recheck),
// which every writable folder proposed must pass.
func Propose(p *plan.Plan, refused []refusal.Refused, command string, hostRun refusal.HostRun) Proposal {
	rs := append([]refusal.Refused(nil), refused...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Count > rs[j].Count })
	var out Proposal
	seen := map[string]bool{}
	for _, r := range rs {
		r.Fix = refusal.Recheck(p, r.Fix, hostRun)
		f := r.Fix
		if ok, why := safe(p, f); !ok {
			if why != "" {
				r.Fix.Risky, r.Fix.Why = true, why
			}
			out.Left = append(out.Left, r)
			continue
		}
		key := f.Key + "\x00" + f.Value
		if seen[key] {
			continue
		}
		seen[key] = true
		times := "once"
		if r.Count > 1 {
			times = fmt.Sprintf("%d times", r.Count)
		}
		// A comment is one line: what the box chose (a command with
		// newlines, a path) is escaped.
		comment := []string{
			fmt.Sprintf("agentbox learn: `%s` was refused %s, first %s", clip(event.Escape(command), 100), times, event.Escape(r.First)),
			"(" + event.Escape(r.Rule) + "); " + event.Escape(f.Why),
		}
		if f.Create != "" {
			comment = append(comment, "agentbox learn made the folder, which did not exist: a writable folder must")
			out.Create = append(out.Create, expandHome(p, f.Value))
		}
		out.Adds = append(out.Adds, Addition{Key: f.Key, Value: f.Value, List: f.Key != "sandbox.backend", Comment: comment})
	}
	return out
}

// safe reports whether a fix may be proposed: it must be a change a
// policy can make, marked safe, and (checked again here, whatever the
// advice said) open nothing a host program runs or obeys, nothing always
// protected, and only what the network mode allows adding to.
func safe(p *plan.Plan, f refusal.Fix) (bool, string) {
	switch {
	case f.Key == "" || f.Risky:
		return false, ""
	case f.Key == "filesystem.writable":
		path := expandHome(p, f.Value)
		if !filepath.IsAbs(path) {
			return false, "not an absolute path"
		}
		if risky, why := refusal.HostExecuted(p, path); risky {
			return false, why
		}
		if k, why := refusal.KernelInterface(p, path); k {
			return false, why
		}
		return true, ""
	case f.Key == "network.allow":
		if p.Network.Mode != plan.NetAllowlist {
			return false, "the network mode is " + p.Network.Mode + ", not allowlist"
		}
		return !strings.ContainsAny(f.Value, "*"), ""
	case f.Key == "sandbox.backend":
		return f.Value == "bwrap", ""
	}
	return false, "learn does not change " + f.Key
}

func expandHome(p *plan.Plan, v string) string {
	if v == "~" {
		return p.Identity.Home
	}
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		return filepath.Join(p.Identity.Home, rest)
	}
	return v
}

// clip cuts s to n characters, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
