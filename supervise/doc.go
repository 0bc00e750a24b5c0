// Package supervise is the host side of a run that every backend shares:
// creating the folders agentbox owns and the placeholders of missing
// guarded paths, pinning host paths by descriptor (Prepare, Pins,
// OpenPath: nothing is looked up by name twice), the files agentbox writes
// on the host (OpenHostFile), what a started box inherits (CloseOnExec) and
// keeping agentbox's processes out of the box's reach (NotDumpable), the
// box's cgroup (entered before the box's first process starts, left right
// after, so the supervisor never counts against the box's limits),
// forwarding signals, handing the terminal back, exit statuses (CMD's own,
// 128+N, 126/127 for a command that cannot be started), rlimits on CMD,
// ending every process of the run (agentbox is the box's subreaper), the
// after-run check of what host programs run or obey (package hostexec's
// registry, done on descriptors only, with a pending record so the next run
// does it after a kill -9), and the run's
// start and end events. Run is the one run path: it wraps a backend's Run.
//
// The parts that run inside the box before CMD (the rlimit exec, the exec
// errors) live here too, so that no backend imports another.
//
// What does not belong here: what a backend does to confine (its own
// package), choosing a backend (package backend), policy (package policy).
package supervise
