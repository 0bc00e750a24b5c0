//go:build !windows

package box

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/refusal"
)

// hostDenies tells the judge a write the host's own permissions refuse
// this user outside the box too (a system folder that is not theirs, a
// read-only file system): the box is not why it failed, and no policy
// change is proposed for it. It asks the kernel (access(2), as the user
// agentbox runs as) about the file for a write to an existing file, else
// about the nearest folder that exists above it; anything it cannot tell
// is left to the box's advice.
func hostDenies(p *plan.Plan) refusal.HostDenies {
	return func(op fslog.Op, path string) (string, bool) {
		target := path
		switch op {
		case fslog.Write, fslog.Truncate:
			// The file itself, when it is there.
		case fslog.Create, fslog.Mkdir, fslog.Symlink, fslog.Link, fslog.Remove, fslog.Rmdir, fslog.Rename:
			// The folder the entry is made in or removed from.
			target = filepath.Dir(path)
		default:
			return "", false // mode, owner, times: not a question of writing
		}
		if _, err := os.Lstat(target); err != nil {
			target = filepath.Dir(target)
			for {
				if _, err := os.Lstat(target); err == nil {
					break
				}
				parent := filepath.Dir(target)
				if parent == target {
					return "", false
				}
				target = parent
			}
		}
		err := unix.Access(target, unix.W_OK)
		switch {
		case errors.Is(err, unix.EROFS):
			return tilde(p.Identity.Home, target) + " is on a read-only file system", true
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			return tilde(p.Identity.Home, target) + " is not writable by you (uid " + strconv.Itoa(p.Identity.UID) + ") outside the box either", true
		}
		return "", false
	}
}
