package supervise

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
)

// ExitFailure is agentbox's own failure: a bad policy, no backend under
// require, a box that could not be set up.
const ExitFailure = 125

// The statuses of a command that cannot be started, as shells use them.
const (
	ExitCannotExecute = 126
	ExitNotFound      = 127
)

// ExecError reports on stderr a command that cannot be started, and
// returns its status: 127 when it is not found, 126 when it cannot be
// executed. It runs inside the box (the init, the Landlock child), where
// nothing else can report it.
func ExecError(name string, err error) int {
	var ee *exec.Error
	if errors.As(err, &ee) && errors.Is(ee.Err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "agentbox: error: %s: command not found\n", name)
		return ExitNotFound
	}
	fmt.Fprintf(os.Stderr, "agentbox: error: %s: cannot execute: %v\n", name, unwrapPath(err))
	return ExitCannotExecute
}

// NoInterpreter reports a command whose file exists but whose interpreter
// (#! line) or loader is missing: execve says ENOENT for it.
func NoInterpreter(name string) int {
	fmt.Fprintf(os.Stderr, "agentbox: error: %s: cannot execute: its interpreter (#! line) or loader is missing\n", name)
	return ExitCannotExecute
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}
