// Package mount is the Linux bubblewrap backend. It renders a plan.Plan into
// bwrap's argument list (pure, compiled on every OS so it is tested
// everywhere), and on Linux it prepares agentbox's own folders, starts bwrap,
// supervises it (signals in, exit status out) and runs agentbox's small init
// as the first process inside the box.
//
// Every host path bwrap binds is handed to it as a descriptor opened
// without following links (--bind-fd), the options travel through a memory
// file (--args), and the init checks every mount before CMD starts (Check):
// a path another box swaps while this one starts never gets mounted.
//
// It never reads policy files; everything it does is in the plan.
package mount
