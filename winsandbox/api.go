package winsandbox

import "io"

// SetupOptions are the choices of `agentbox setup`.
type SetupOptions struct {
	// ProxyPort is the loopback port the offline user may reach; 0 means
	// DefaultProxyPort.
	ProxyPort int
	// NoElevate makes Setup fail with a hint instead of relaunching itself
	// elevated (the runas verb) when it is not elevated.
	NoElevate bool
	// Args are agentbox's own arguments for the elevated relaunch (for
	// example ["setup"]); a relaunch adds a marker so it never relaunches
	// again.
	Args []string
	// Log receives one line per step; nil discards.
	Log io.Writer
}

// Stdio is the caller's standard streams.
type Stdio struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// RunnerArg is the first argument that puts agentbox in runner mode; main
// passes the rest of the arguments to RunnerMain.
const RunnerArg = "__agentbox-runner"

// ElevatedArg marks a setup that was relaunched elevated, so it never
// relaunches again.
const ElevatedArg = "--elevated-relaunch"
