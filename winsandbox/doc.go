// Package winsandbox is agentbox's Windows backend.
//
// It has two halves. The pure half, compiled and tested on every OS, turns a
// plan.Plan into a Spec: the sandbox group and users setup creates, the
// access control entries (ACEs) put on each path, the per-root capability
// SIDs, the Windows Firewall rules for the offline user, which user runs the
// command, and the spawn request sent to the runner (command line quoted by
// the rules of CommandLineToArgvW, working directory, environment block). It
// also holds the runner protocol (length-prefixed JSON messages) and the
// runner's state machine.
//
// The Windows half (files ending in _windows.go) applies a Spec: `agentbox
// setup` creates the users and firewall rules, Run applies the ACEs, starts
// the runner (agentbox itself, in runner mode) as the sandbox user with
// CreateProcessWithLogonW and talks to it over two named pipes, and the
// runner starts the command with a restricted token inside a job object.
// Win32 calls that golang.org/x/sys/windows lacks are declared once, in
// syscalls_windows.go. On other systems the entry points return an error
// that says what agentbox uses there instead.
//
// This package never reads policy files; it only renders and applies a plan.
//
// The design follows SPEC "Windows" and the account in
// ../shared/seeds/002_*.txt of how Codex's Windows sandbox works: two local
// sandbox users (offline, online) so the firewall can tell them apart, file
// ACLs for writable, read-only and denied paths, a write-restricted token
// whose restricting SIDs are per-root capability SIDs, and a command runner
// that lives on the sandbox user's side of the boundary.
package winsandbox
