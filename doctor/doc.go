// Package doctor finds out what this machine can enforce: whether bubblewrap
// is installed and really starts a sandbox, whether user namespaces are
// allowed (sysctls and a real probe), whether AppArmor restricts them and how
// to fix it, the Landlock ABI, seccomp, cgroup v2, whether this is a
// container, and which backend `backend = "auto"` picks — with a fix for every
// problem found. It also holds the fast, cached bwrap probe that `agentbox run`
// asks on its hot path (BwrapWorks).
//
// What does not belong here: running anything confined (mount/, landlock/),
// printing errors or choosing exit statuses (main).
package doctor
