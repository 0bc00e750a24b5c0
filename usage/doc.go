// Package usage is the command line's own text, made from the command
// definitions so that it can never disagree with them: the help screens,
// the errors for a mistyped command or flag (with "did you mean"), the
// shell completion scripts (bash, zsh, fish) and the man page.
//
// It reads the urfave/cli app package main builds into a small model
// (Model: commands, their flags, the values each flag takes) and renders
// that model; it starts nothing and reads no files. The completion scripts
// are printed by `agentbox completion SHELL`; the man page is written at
// build time (go generate in package main), never by the agentbox binary,
// so its generator costs nothing on the run path.
//
// What does not belong here: the commands themselves and what they do
// (package main wires each to package box), the product's behaviour.
package usage
