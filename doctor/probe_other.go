//go:build !linux

package doctor

import (
	"os"
	"runtime"

	"github.com/agentbox/agentbox/backend"
)

const notLinux = "bubblewrap and Landlock are Linux features"

// Probe reports that neither Linux backend exists on this OS, and what
// auto picks among all.
func Probe(all []backend.Backend) Report {
	r := Report{Schema: Schema, OS: runtime.GOOS, UID: os.Getuid()}
	r.Bwrap.Error = notLinux
	r.Landlock.Error = notLinux
	r.Seccomp.Error = notLinux
	r.Cgroup.Layout = "none"
	r.Auto = auto(all)
	r.Problems = append(r.Problems, platformProblems()...)
	return r
}

// FallbackCause is CauseMissing: there is no bwrap off Linux.
func FallbackCause(bwrapPath, bwrapError string) Cause { return CauseMissing }
