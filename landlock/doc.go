// Package landlock is agentbox's backend for hosts where bubblewrap cannot
// run (user namespaces restricted by AppArmor or forbidden in a container, or
// no bwrap at all). It confines CMD with the Landlock LSM, which needs neither
// namespaces nor an external binary.
//
// Landlock only grants: a ruleset lists the file hierarchies a process may
// use and everything else is refused. It cannot carve a denied hole into an
// allowed tree, cannot remap /tmp, has no PID namespace and, before ABI 10,
// does not cover UDP. [Assess] therefore turns a plan into a grant list that
// leaves deny paths and hidden workspaces out (a grant whose tree holds such a
// path is replaced by grants on its other children, recursively, when it is
// applied) and classifies every mount and rule of the plan as enforced,
// enforced but weaker (saying how), or not enforced (saying why), so that
// `agentbox plan` tells the truth. Assess and [Expand] are pure and compile on
// every OS; [Apply] and [ABI] talk to the Linux kernel and are stubs
// elsewhere. Apply carves over descriptors: every rule is added on a file
// opened without following links, and carved folders' children are told
// apart by device and inode, so a path swapped while the box starts never
// gets a rule.
//
// What does not belong here: reading policies (policy/), building the plan
// (plan/), the bubblewrap backend and the supervisor that starts the child
// which calls Apply (mount/).
package landlock
