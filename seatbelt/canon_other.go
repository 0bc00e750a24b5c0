//go:build !darwin

package seatbelt

// canonFS is Canonical off macOS: a plan for a Mac made elsewhere
// (agentbox plan --target darwin) names the paths as a Mac would.
func canonFS(path string) string { return Canonical(path) }
