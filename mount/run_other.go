//go:build !linux

package mount

import (
	"github.com/agentbox/agentbox/plan"
)

var errNotLinux = &unavailable{reason: "bubblewrap is only available on Linux", fix: "on Windows agentbox uses its Windows backend: run agentbox setup once"}

// LookBwrap always fails off Linux.
func LookBwrap() (string, error) { return "", errNotLinux }

// Run always fails off Linux.
func Run(p *plan.Plan, o Options) (int, error) { return 0, errNotLinux }

// Init always fails off Linux.
func Init(args []string) int { return 125 }

// Foreground is false off Linux.
func Foreground() bool { return false }

// Probe always fails off Linux.
func Probe(bwrap string) error { return errNotLinux }

// RlimitExec always fails off Linux.
func RlimitExec(args []string) int { return 125 }

// ApplyLimits always fails off Linux.
func ApplyLimits(l plan.Limits) error { return errNotLinux }

// RestoreForeground does nothing off Linux.
func RestoreForeground() {}
