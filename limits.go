package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/plan"
)

// cgroupMargin is how many tasks (threads) beyond limits.processes the
// box's cgroup allows for agentbox itself, bwrap and agentbox's init, which
// are inside it too.
const cgroupMargin = 24

// enterCgroup puts this run in a cgroup of its own when the plan limits
// processes or memory and the machine lets agentbox create one (root, or a
// delegated cgroup v2). The kernel never applies RLIMIT_NPROC to root, so
// for root a process limit needs the cgroup: under require, no cgroup is an
// error. When the cgroup limits processes, the rlimit is dropped, since
// RLIMIT_NPROC counts every process of the user on the host.
func enterCgroup(p *plan.Plan) (*cgroup.Group, error) {
	l := p.Limits
	if l.Processes == 0 && l.Memory == 0 {
		return nil, nil
	}
	av := cgroup.Probe()
	want := cgroup.Limits{}
	if l.Processes > 0 && av.Pids.OK {
		want.Pids = l.Processes + cgroupMargin
	}
	if l.Memory > 0 && av.Memory.OK {
		want.Memory = l.Memory
	}
	if l.Processes > 0 && !av.Pids.OK && p.Identity.Root() {
		err := withHints(fmt.Errorf("limits.processes cannot be enforced for root without a cgroup: %s", av.Pids.Reason),
			"the kernel exempts root from RLIMIT_NPROC; run agentbox where it can create a pids cgroup, or drop limits.processes")
		if p.Enforce == plan.Require {
			return nil, err
		}
		warnf("%v", err)
	}
	if want == (cgroup.Limits{}) {
		return nil, nil
	}
	g, err := cgroup.Enter("agentbox-"+strconv.Itoa(os.Getpid()), want)
	if err != nil {
		if p.Enforce == plan.Require && p.Identity.Root() && want.Pids > 0 {
			return nil, fmt.Errorf("creating the box's cgroup: %w", err)
		}
		return nil, nil // the rlimits still apply
	}
	if want.Pids > 0 {
		p.Limits.Processes = 0
	}
	return g, nil
}
