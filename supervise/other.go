//go:build !linux

package supervise

import (
	"errors"

	"github.com/agentbox/agentbox/plan"
)

var errNotLinux = errors.New("this part of agentbox runs on Linux only")

// RlimitExec fails: rlimits are set this way on Linux only.
func RlimitExec(args []string) int { return ExitFailure }

// ApplyLimits fails: rlimits are set this way on Linux only.
func ApplyLimits(l plan.Limits) error { return errNotLinux }

// Foreground is false: the terminal hand-over is a Linux feature here.
func Foreground() bool { return false }

// RestoreForeground does nothing here.
func RestoreForeground() {}
