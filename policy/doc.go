// Package policy reads agentbox's TOML policy files, layers them with the
// environment and the command-line flags, keeps the trust store for project
// policies, and resolves the result into a plan.Plan.
//
// Resolution takes its world (home, working directory, user, environment and a
// filesystem to look things up in) as an Env value, so resolution for any user
// and machine is testable on one host. Nothing here mounts, creates or runs
// anything: folders that must exist are listed in the plan for the backend.
package policy
