// Package plan is the contract between policy resolution and the backends.
//
// A Plan is pure data: the ordered mounts (each with an absolute, cleaned
// path, its access and the rule that asked for it), the working directory,
// the command, network, environment, limits, provider and everything that is
// degraded. Policy resolution builds a Plan; backends (bubblewrap, Landlock,
// Windows) only render and apply one. Nothing in this package does I/O, runs
// processes or calls the operating system, so every OS's plan is testable on
// any machine.
package plan
