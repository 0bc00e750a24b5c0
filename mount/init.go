package mount

// InitCommand is the hidden agentbox subcommand that runs as pid 1 inside
// the box. main dispatches it before building the CLI, so it starts fast.
const InitCommand = "__init"
