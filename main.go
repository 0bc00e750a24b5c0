// Command agentbox confines AI coding-agent CLIs (and any other command) with
// the operating system's own mechanisms, from a layered TOML policy.
//
// main builds the CLI and maps errors to exit statuses; the work is done in
// policy (what is allowed), plan (the resolved contract) and the backends.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/seccomp"
	"github.com/agentbox/agentbox/winsandbox"
)

// Exit statuses of agentbox's own failures (SPEC "Commands").
const (
	exitFailure = 125 // agentbox itself failed: bad policy, no backend under require
)

func main() {
	// The init inside the box is on every run's path: dispatch it before
	// anything else is set up.
	if len(os.Args) > 1 && os.Args[1] == mount.InitCommand {
		os.Exit(mount.Init(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == mount.RlimitCommand {
		os.Exit(mount.RlimitExec(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == landlock.ChildCommand {
		os.Exit(landlock.ChildMain())
	}
	if len(os.Args) > 1 && os.Args[1] == winsandbox.RunnerArg {
		os.Exit(winsandbox.RunnerMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == mount.SeccompCommand {
		os.Exit(writeSeccomp(os.Args[2:]))
	}
	os.Exit(run(os.Args))
}

// run executes the CLI and turns its result into an exit status.
func run(args []string) int {
	err := newApp().Run(args)
	if err == nil {
		return 0
	}
	var ex *exitCode
	if errors.As(err, &ex) {
		return ex.code
	}
	printError(err)
	return exitFailure
}

// exitCode carries CMD's exit status (or an explicit agentbox status) out of
// a command action without printing anything.
type exitCode struct{ code int }

func (e *exitCode) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// hinted is an error with hint lines for the user.
type hinted struct {
	err   error
	hints []string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

func withHints(err error, hints ...string) error { return &hinted{err: err, hints: hints} }

// printError writes err in agentbox's voice: "agentbox: error: …" and one
// "agentbox: hint: …" line per hint.
func printError(err error) {
	fmt.Fprintf(os.Stderr, "agentbox: error: %v\n", err)
	var h *hinted
	if errors.As(err, &h) {
		for _, hint := range h.hints {
			fmt.Fprintf(os.Stderr, "agentbox: hint: %s\n", hint)
		}
	}
}

func warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "agentbox: warning: "+format+"\n", args...)
}

// writeSeccomp writes the seccomp program for the reopened groups to stdout.
func writeSeccomp(allow []string) int {
	f, err := seccomp.Build(allow)
	if err != nil {
		printError(err)
		return exitFailure
	}
	if _, err := os.Stdout.Write(f.Bytes()); err != nil {
		printError(err)
		return exitFailure
	}
	return 0
}
