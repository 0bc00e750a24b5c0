//go:build !linux

package mount

import (
	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/plan"
)

var errNotLinux = &backend.Unavailable{Reason: "bubblewrap is a Linux program"}

// BwrapStatus is the answer of the bwrap probe; there is none off Linux.
type BwrapStatus struct {
	Works  bool   `json:"works"`
	Reason string `json:"reason,omitempty"`
	Path   string `json:"path,omitempty"`
	Cached bool   `json:"cached"`
}

// LookBwrap always fails off Linux.
func LookBwrap() (string, error) { return "", errNotLinux }

// CodeStale is the code of the error Run returns when bwrap no longer
// works (Linux only).
const CodeStale = "bwrap-stale"

// CheckBwrap always says no off Linux.
func CheckBwrap(path string) BwrapStatus { return BwrapStatus{Reason: errNotLinux.Reason} }

// Reprobe always says no off Linux.
func Reprobe(path string) BwrapStatus { return CheckBwrap(path) }

// Forget does nothing off Linux.
func Forget() error { return nil }

// Available always fails off Linux.
func (b *Bwrap) Available() error { return errNotLinux }

// Run always fails off Linux.
func (b *Bwrap) Run(p *plan.Plan, c *backend.Context) (int, error) { return 0, errNotLinux }

// SelfCheck cannot check anything off Linux.
func (b *Bwrap) SelfCheck() (string, bool) { return errNotLinux.Reason, false }

// Init always fails off Linux.
func Init(args []string) int { return 125 }

// landlockABI is 0: Landlock is Linux's.
func landlockABI() int { return 0 }
