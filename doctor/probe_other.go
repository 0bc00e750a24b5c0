//go:build !linux

package doctor

import (
	"os"
	"runtime"
)

// BwrapStatus is the answer of the fast bwrap probe.
type BwrapStatus struct {
	Works  bool   `json:"works"`
	Reason string `json:"reason,omitempty"`
	Path   string `json:"path,omitempty"`
	Cached bool   `json:"cached"`
}

const notLinux = "bubblewrap and Landlock are Linux features"

// Probe reports that neither Linux backend exists on this OS.
func Probe() Report {
	r := Report{OS: runtime.GOOS, UID: os.Getuid()}
	r.Bwrap.Error = notLinux
	r.Landlock.Error = notLinux
	r.Seccomp.Error = notLinux
	r.Cgroup.Layout = "none"
	r.Auto = Auto{Backend: "none", Reason: notLinux + ": use the windows or seatbelt backend on " + runtime.GOOS}
	return r
}

// BwrapWorks is false outside Linux.
func BwrapWorks() (bool, string) { return false, notLinux }

// CheckBwrap is BwrapWorks with the details.
func CheckBwrap() BwrapStatus { return BwrapStatus{Reason: notLinux} }

// Forget does nothing outside Linux.
func Forget() error { return nil }
