// Command agentbox confines AI coding-agent CLIs (and any other command) with
// the operating system's own mechanisms, from a layered TOML policy.
//
// main is the command line only: it parses flags, makes one call into
// package box (or another domain package) per command, and is the one place
// that prints agentbox's error voice and chooses the exit status.
package main

// The man page and the installed completion scripts are made from the
// command definitions by a test, never by the agentbox binary (see
// docs_test.go); `make docs` runs the same.
//go:generate go test -run ^TestDocs$ -update .

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/box"
	"github.com/agentbox/agentbox/cache"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/seccomp"
	"github.com/agentbox/agentbox/supervise"
	"github.com/agentbox/agentbox/verify"
	"github.com/agentbox/agentbox/winsandbox"
	"github.com/agentbox/agentbox/wrap"
)

func main() {
	// The processes agentbox starts of itself are on every run's path:
	// dispatch them before anything else is set up.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case mount.InitCommand:
			os.Exit(mount.Init(os.Args[2:]))
		case supervise.RlimitCommand:
			os.Exit(supervise.RlimitExec(os.Args[2:]))
		case landlock.ChildCommand:
			os.Exit(landlock.ChildMain())
		case winsandbox.RunnerArg:
			os.Exit(winsandbox.RunnerMain(os.Args[2:]))
		case mount.SeccompCommand:
			os.Exit(writeSeccomp(os.Args[2:]))
		case fslog.PreloadCommand:
			os.Exit(writePreload(os.Args[2:]))
		case verify.ProbeCommand:
			os.Exit(verify.Main())
		case cache.GoProgCommand:
			os.Exit(cache.GoProgMain(os.Args[2:]))
		}
	}
	hostexec.SetSoftLimit()
	os.Exit(run(os.Args))
}

// run executes the CLI and turns its result into an exit status. A run
// command line the CLI would take as it is goes straight to box.Run
// (parseRun): it is on every launch's path.
func run(args []string) int {
	var err error
	if req, ok := fastRun(args); ok {
		var code int
		if code, err = box.Run(req); err == nil {
			return code
		}
	} else {
		err = newApp().Run(args)
	}
	if err == nil {
		return 0
	}
	var ex *exitCode
	if errors.As(err, &ex) {
		return ex.code
	}
	printError(err)
	var se *backend.StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return supervise.ExitFailure
}

// fastRun is parseRun for a command line that starts with run.
func fastRun(args []string) (box.Request, bool) {
	if len(args) < 2 || args[1] != "run" {
		return box.Request{}, false
	}
	return parseRun(args[2:])
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

func (h *hinted) Error() string   { return h.err.Error() }
func (h *hinted) Unwrap() error   { return h.err }
func (h *hinted) Hints() []string { return h.hints }

func withHints(err error, hints ...string) error { return &hinted{err: err, hints: hints} }

// usageError is a mistake on the command line: msg, then the hints.
func usageError(msg string, hints ...string) error { return withHints(errors.New(msg), hints...) }

// printError writes err in agentbox's voice: "agentbox: error: …" and one
// "agentbox: hint: …" line per hint any error in its chain carries.
// Errors name files, folders and policy values that may come from a
// repository, so every line is escaped for the terminal (policy.Escape).
func printError(err error) {
	// Fitted to the terminal (100 columns when stderr is not one).
	w := wrap.NewWriter(os.Stderr, wrap.Width(os.Stderr, false))
	defer w.Flush()
	fmt.Fprintf(w, "agentbox: error: %s\n", policy.Escape(err.Error()))
	var h interface{ Hints() []string }
	if errors.As(err, &h) {
		for _, hint := range h.Hints() {
			if hint != "" {
				fmt.Fprintf(w, "agentbox: hint: %s\n", policy.Escape(hint))
			}
		}
	}
}

// writeSeccomp writes the seccomp program for the reopened (and extra)
// groups to stdout.
// writePreload is `agentbox __fslog-preload DIR`: the preloaded log's
// libraries written into DIR (see box's plan --argv).
func writePreload(args []string) int {
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		printError(errors.New("usage: agentbox " + fslog.PreloadCommand + " DIR (absolute)"))
		return supervise.ExitFailure
	}
	if err := fslog.WritePreload(args[0]); err != nil {
		printError(err)
		return supervise.ExitFailure
	}
	return 0
}

func writeSeccomp(args []string) int {
	f, err := seccomp.BuildArgs(args)
	if err != nil {
		printError(err)
		return supervise.ExitFailure
	}
	if _, err := os.Stdout.Write(f.Bytes()); err != nil {
		printError(err)
		return supervise.ExitFailure
	}
	return 0
}
