package mount

// InitCommand is the hidden agentbox subcommand that runs as pid 1 inside
// the box. main dispatches it before building the CLI, so it starts fast.
const InitCommand = "__init"

// SeccompCommand is the hidden subcommand that writes the seccomp program
// for the given reopened groups to stdout, so `agentbox plan --argv` can
// print a command line that runs as is.
const SeccompCommand = "__seccomp"
