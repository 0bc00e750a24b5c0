// Package cinit holds agentbox's init written in C (c/init.c): a
// freestanding static program, built reproducibly by c/build.sh for amd64
// and arm64 and embedded, that bubblewrap runs as the box's pid 1 and
// that the Landlock backend runs as the child which restricts itself
// before it execs the command (its __landlock mode). Both backends take it
// from here; neither imports the other.
//
// Where no C init is built for the architecture, Bytes is empty and
// agentbox's own Go init and Go Landlock child run instead, with the same
// arguments and behaviour.
package cinit

// Env names the variable that chooses the box's init: "go" starts
// agentbox's own init (agentbox __init) and Landlock child even where the
// C one would run. For comparing the two and for debugging; the default is
// the C init.
const Env = "AGENTBOX_INIT"

// Bytes is the C init for this architecture (empty where none is built).
func Bytes() []byte { return cInit }
