//go:build !darwin

package seatbelt

import (
	"runtime"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
)

func notMac() error {
	return &backend.Unavailable{Code: "seatbelt-unavailable", Reason: "seatbelt is macOS's sandbox; this is " + runtime.GOOS,
		Fix: "agentbox plan --target darwin --profile shows the profile a Mac would get"}
}

// Available is an error off macOS.
func (s *Seatbelt) Available() error { return notMac() }

// Run always fails off macOS.
func (s *Seatbelt) Run(p *plan.Plan, c *backend.Context) (int, error) {
	return supervise.ExitFailure, notMac()
}

// SelfCheck cannot check anything off macOS.
func (s *Seatbelt) SelfCheck() (string, bool) {
	return "nothing could be checked on this system", false
}
