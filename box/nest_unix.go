//go:build !windows

package box

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// unpreparable returns why a folder the plan creates cannot be created
// here, or "": inside an outer box, a folder in a part the outer box keeps
// read-only (the agent CLI's own folder in a fresh home) cannot be made.
func unpreparable(p *plan.Plan) string {
	made := map[string]bool{}
	for _, d := range p.Prepare {
		if _, err := os.Lstat(d.Path); err == nil {
			continue
		}
		parent := filepath.Dir(d.Path)
		if !made[parent] && unix.Access(parent, unix.W_OK) != nil {
			return d.Path + " cannot be created in the outer box (" + parent + " is not writable there)"
		}
		made[d.Path] = true
	}
	return ""
}
