package supervise

import (
	"fmt"
	"strconv"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/plan"
)

// RlimitCommand is the hidden subcommand CMD is started through when the
// plan sets rlimits: `agentbox __rlimit NAME=VALUE... -- PATH ARGV0 ARGS...`
// sets each limit on itself and execs PATH. main dispatches it before
// building the CLI.
const RlimitCommand = "__rlimit"

// RlimitArgs renders the plan's rlimits as NAME=VALUE arguments.
func RlimitArgs(l plan.Limits) []string {
	var out []string
	for _, r := range l.Rlimits() {
		out = append(out, r.Name+"="+strconv.FormatUint(r.Value, 10))
	}
	return out
}

// CgroupMargin is how many tasks (threads) beyond limits.processes the
// box's cgroup allows for agentbox's own processes in the box: bwrap and
// agentbox's init (a Go program has several threads).
const CgroupMargin = 24

// AssessLimits decides how the plan's limits are enforced on a Linux
// machine whose cgroups are av, records the box's cgroup in p.Limits, and
// returns one rule per limit. A process limit for root without a cgroup is
// not enforced at all: the kernel never applies RLIMIT_NPROC to root.
func AssessLimits(p *plan.Plan, av cgroup.Availability) []plan.RuleStatus {
	l := &p.Limits
	l.Cgroup = plan.CgroupLimits{}
	var out []plan.RuleStatus
	add := func(name string, lv plan.Level, how string) {
		out = append(out, plan.RuleStatus{Rule: "limits", Path: name, Origin: "limits." + name, Level: lv, How: how})
	}
	if l.Processes > 0 {
		switch {
		case av.Pids.OK:
			l.Cgroup.Pids = l.Processes + CgroupMargin
			add("processes", plan.Enforced, fmt.Sprintf("the box's own cgroup (v%d, under %s): pids.max %d, of which %d are for agentbox's own tasks in the box",
				av.Pids.Version, av.Pids.Parent, l.Cgroup.Pids, CgroupMargin))
		case p.Identity.Root():
			add("processes", plan.NotEnforced, "no cgroup here ("+av.Pids.Reason+"), and the kernel never applies RLIMIT_NPROC to root")
		default:
			add("processes", plan.Weaker, "RLIMIT_NPROC on CMD: it counts every process of your user on the host, not only the box's (no cgroup here: "+av.Pids.Reason+")")
		}
	}
	if l.Memory > 0 {
		if av.Memory.OK {
			l.Cgroup.Memory = l.Memory
			add("memory", plan.Enforced, fmt.Sprintf("the box's own cgroup (v%d, under %s) holds the whole box to %d bytes; RLIMIT_AS on each process too", av.Memory.Version, av.Memory.Parent, l.Memory))
		} else {
			add("memory", plan.Weaker, "RLIMIT_AS on each process (address space, so every process of the box may use the whole limit; no cgroup here: "+av.Memory.Reason+")")
		}
	}
	for _, r := range []struct {
		name string
		v    uint64
	}{{"open_files", l.OpenFiles}, {"cpu_time", l.CPUTime}, {"file_size", l.FileSize}} {
		if r.v > 0 {
			add(r.name, plan.Enforced, "an rlimit on CMD, inherited by every process it starts (per process)")
		}
	}
	return out
}
