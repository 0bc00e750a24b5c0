// Package cgroup puts one agentbox run into a cgroup of its own with a pids
// and a memory limit, so that a fork bomb or a memory hog in the box meets a
// limit that holds for the whole box and for root too. Rlimits alone do not:
// the kernel exempts root from RLIMIT_NPROC, and RLIMIT_AS counts one process,
// not the box.
//
// Enter creates the cgroup under the caller's own cgroup (one per cgroup v1
// hierarchy, or one in the unified cgroup v2 hierarchy), writes the limits
// and moves the calling process into it, so that everything it starts
// afterwards (bwrap and the whole box) is inside. Release moves the caller
// back out once the box is started; Close moves it back and removes what
// Enter created. Probe tells, without writing anything, which controllers
// can be used here and why not otherwise, for `agentbox plan` and doctor.
//
// Where the cgroup goes (cgroup v2). The kernel's "no internal processes"
// rule (Documentation/admin-guide/cgroup-v2.rst) forbids enabling pids or
// memory in the subtree_control of a non-root cgroup that has processes in
// it. Enter therefore first moves the caller into the new child and only
// then enables the controllers in the parent: when the caller was the only
// process there (a `systemd-run --user --scope -p Delegate=yes agentbox …`
// scope, or a container's init cgroup holding only agentbox), the parent is
// now empty and the write succeeds; in the root cgroup it always does. When
// other processes share the caller's cgroup (a terminal's scope holding the
// shell), Enter puts the run's cgroup beside the caller's cgroup instead,
// under its parent, which already has the controllers enabled for its
// children; that run is then limited by the parent's limits and its own, but
// not by the limits of the caller's cgroup. Enter never moves processes other
// than the caller.
//
// What does not belong here: rlimits (the init in mount/), deciding the
// numbers (policy/), printing (main).
package cgroup
