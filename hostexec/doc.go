// Package hostexec is the one registry of what host programs run or obey
// automatically — git (hooks wherever core.hooksPath leads, the config of
// every repository and worktree, commondir and gitdir redirections,
// submodules, new repositories), the agent CLIs agentbox knows (settings,
// hooks and the scripts they name, commands, agents, skills, rules, MCP
// servers, user-level instructions), editors (VS Code tasks and settings,
// JetBrains run configurations, dev containers) and the home folder's
// autostart files (shell startup files and what they source, ssh, systemd
// user units, Python's user site, ~/bin, editor rc files) — and the
// resolver that finds, for a plan's writable roots, every such path within
// the box's reach and says how it is kept safe (plan.Guard).
//
// The registry is data (registry.go, and the providers' own lists in
// package provider); the resolver searches the writable roots at any depth,
// with a bound on cost that fails closed rather than a depth an agent could
// step around. What it cannot keep from being written (new repositories,
// .git entries, worktree admin files, control files deep in a tree) the
// after-run check neutralises; the rules for that (which git config keys
// are safe, which files of a git folder git obeys) live here too, so the
// check in package supervise holds no registry of its own.
//
// What does not belong here: mounts and their order (policy), how a backend
// enforces a guard (its own package), the descriptor-based after-run check
// itself (supervise).
package hostexec
