// Package verify checks, from inside a box, that every rule the plan shows
// is really in force: each writable root can be written, the rest of the
// host cannot, each hidden path is hidden or unreadable, each always
// read-only path stays read-only, the network is as the plan says, the
// seccomp groups are refused, the limits and the environment are as
// listed. It probes with ordinary calls (an exclusive create in a folder,
// an open for appending that writes nothing, a read, a connect), never
// changes what it finds, and removes the one file a create may leave.
//
// The checks are derived, purely, from the frozen plan and a few facts the
// supervisor gathers on the host (Build): a rule that Landlock enforces
// weaker is checked for exactly what the plan says it still does. The
// probe process is agentbox itself, started in the box as the command
// (ProbeCommand); it reads the plan and the host facts on its stdin and
// writes one result per check on its stdout.
//
// A result is verified (the box did what the rule says), failed (it did
// not: the rule is not in force), consistent (refused as the rule says,
// but the kernel would refuse that call here without the rule too, so
// the probe proves nothing), or not probed (with why).
//
// What does not belong here: starting the box (package box, through the one
// run path), the rules themselves (policy, the backends).
package verify
