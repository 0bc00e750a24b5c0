package supervise

import (
	"fmt"
	"io/fs"
	"syscall"

	"github.com/agentbox/agentbox/plan"
)

// owned checks that the folder fi (at path) belongs to the plan's user.
func owned(path string, fi fs.FileInfo, id plan.Identity) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != id.UID {
		return fmt.Errorf("it belongs to uid %d, not to you (uid %d)", st.Uid, id.UID)
	}
	return nil
}
