//go:build !linux && !windows

package supervise

import (
	"io/fs"

	"github.com/agentbox/agentbox/plan"
)

// owned cannot check ownership on this system.
func owned(path string, fi fs.FileInfo, id plan.Identity) error { return nil }
