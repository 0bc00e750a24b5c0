// Package winsandbox is agentbox's Windows backend.
//
// It has two halves. The pure half, compiled and tested on every OS, turns a
// plan.Plan into a Spec: the sandbox group and users setup creates, the
// access control entries (ACEs) put on each path (allow for writable roots,
// deny-write for read-only paths, deny-all for hidden ones, deny-DELETE
// without inheritance for pinned folders), the per-root capability SIDs,
// the firewall rules and WFP filters for the offline user, which user runs
// the command, and the spawn request sent to the runner (command line
// quoted by the rules of CommandLineToArgvW, working directory, the plan's
// resolved environment plus what Windows needs). It also holds the runner
// protocol (length-prefixed JSON messages), the runner's state machine, and
// the ACE record's logic, which works on DACLs as bytes.
//
// The Windows half (files ending in _windows.go) applies a Spec: `agentbox
// setup` (relaunched elevated, reporting back over a pipe) creates the
// users, profiles, firewall rules and WFP filters; Run prepares the plan's
// folders, writes the ACEs that are missing (grants last for the run,
// denials stay for the project's next run), starts the allowlist proxy when the plan has one, starts the
// runner (agentbox itself, in runner mode) as the sandbox user with
// CreateProcessWithLogonW and talks to it over two named pipes that check
// each other's process, and the runner starts the command with a
// write-restricted token inside a job object. Win32 calls that
// golang.org/x/sys/windows lacks are declared once, in syscalls_windows.go.
// On other systems the entry points return an error that says what agentbox
// uses there instead.
//
// The design is that of Codex's Windows sandbox, which runs in production:
// two local sandbox users (offline, online) so the firewall can tell them
// apart, file ACLs for writable, read-only and denied paths, a
// write-restricted token whose restricting SIDs are per-root capability
// SIDs, and a command runner that lives on the sandbox user's side of the
// boundary.
//
// This package never reads policy files; it only renders and applies a plan.
package winsandbox
