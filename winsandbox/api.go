package winsandbox

import "io"

// SetupOptions are the choices of `agentbox setup`.
type SetupOptions struct {
	// ProxyPort is the first of the ProxyPorts loopback ports the offline
	// user may reach; 0 means DefaultProxyPort.
	ProxyPort int
	// NoElevate makes Setup fail with a hint instead of relaunching itself
	// elevated (the runas verb) when it is not elevated.
	NoElevate bool
	// Relaunch is set in the elevated relaunch only (ElevatedArg's value,
	// "PID:PIPE"): the process that waits for it and the pipe it reads the
	// log and the passwords from. A relaunch never relaunches again.
	Relaunch string
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

// ElevatedArg is the hidden flag of `agentbox setup` that marks the
// elevated relaunch; its value is SetupOptions.Relaunch.
const ElevatedArg = "--elevated-relaunch"
