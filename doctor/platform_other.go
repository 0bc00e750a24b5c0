//go:build !linux && !windows

package doctor

// platformProblems: nothing of the machine is checked here besides what
// Probe reports.
func platformProblems() []Problem { return nil }
