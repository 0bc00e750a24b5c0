package mount

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A root box's own device nodes (see Render) are made in agentbox's state
// folder, <state>/dev/<run>, and bound over bwrap's. Making six nodes and
// a folder, and removing them again, is most of what a root run's
// supervisor spends while its box is built (each new inode costs the file
// system a search for a free one), so a run hands its folder to the next
// root run of the same user when it ends: it moves to <state>/dev/pool.
// A run takes a folder from there by renaming it to its own name (one run
// wins each folder) and uses it only after checking every node it holds
// is exactly what a fresh one would be: a character device of the host's
// node's number, owned by agentbox's user and group, with no other link,
// no ACL (which a root box could give its node, as owner) and the host
// node's mode and the current time set again. Anything else, and the
// folder is removed and new nodes made: what a box changed on its nodes
// never reaches the next box.

// devPool is the folder of <state>/dev that holds the folders kept for
// later runs, and devPoolMax the most it keeps.
const (
	devPool    = "pool"
	devPoolMax = 8
)

// devNodeDir is a run's own device nodes, made by makeDevNodes.
type devNodeDir struct {
	dir     string
	console bool
	once    sync.Once
}

// makeDevNodes makes dir (0700, with what is missing above it) holding a
// node for each of devNodes with the device and mode of the host's one
// (taken from the pool when one there passes the checks), and, with
// console, one for the terminal on stdout. The folder's filesystem must
// allow device nodes (nodev would leave the box without /dev/null).
// Folders left by a run killed before it handed its own on are removed
// first.
func makeDevNodes(dir string, console bool) (*devNodeDir, error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, err
	}
	sweepDevDirs(parent)
	host := map[string]unix.Stat_t{}
	for _, n := range devNodes {
		st, err := charDevice("/dev/" + n)
		if err != nil {
			return nil, err
		}
		host[n] = st
	}
	d := &devNodeDir{dir: dir}
	if !claimDevDir(parent, dir, host) {
		if err := unix.Mkdir(dir, 0o700); err != nil {
			return nil, err
		}
		for _, n := range devNodes {
			if err := mknodLike(filepath.Join(dir, n), host[n]); err != nil {
				d.remove()
				return nil, err
			}
		}
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		d.remove()
		return nil, err
	}
	if fs.Flags&unix.ST_NODEV != 0 {
		d.remove()
		return nil, errors.New("its filesystem is mounted nodev, so no device can be opened through a node there; set XDG_STATE_HOME to a folder on one that is not")
	}
	if console {
		tty, err := os.Readlink("/proc/self/fd/1")
		if err != nil {
			d.remove()
			return nil, err
		}
		st, err := charDevice(tty)
		if err != nil {
			d.remove()
			return nil, err
		}
		d.console = true
		if err := mknodLike(filepath.Join(dir, "console"), st); err != nil {
			d.remove()
			return nil, err
		}
	}
	return d, nil
}

// charDevice stats path, which must be a character device.
func charDevice(path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return st, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return st, fmt.Errorf("%s is not a character device", path)
	}
	return st, nil
}

// mknodLike makes at path a node of the device and mode of host's.
func mknodLike(path string, host unix.Stat_t) error {
	// The umask must not take the bits the host's node has.
	old := unix.Umask(0)
	err := unix.Mknod(path, unix.S_IFCHR|host.Mode&0o777, int(host.Rdev))
	unix.Umask(old)
	if err != nil {
		return &os.PathError{Op: "mknod", Path: path, Err: err}
	}
	return nil
}

// claimDevDir takes a folder from parent's pool as dir and makes its nodes
// what fresh ones would be (resetDevNodes); false when there is none that
// passes (a folder that does not is removed).
func claimDevDir(parent, dir string, host map[string]unix.Stat_t) bool {
	pool := filepath.Join(parent, devPool)
	entries, err := os.ReadDir(pool)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if unix.Rename(filepath.Join(pool, e.Name()), dir) != nil {
			continue // another run took it
		}
		// Its age counts from now (sweepDevDirs).
		if err := resetDevNodes(dir, host); err == nil && unix.UtimesNano(dir, nil) == nil {
			return true
		}
		os.RemoveAll(dir)
	}
	return false
}

// resetDevNodes checks that dir holds exactly a node for each of host's
// names, each a character device of the host's node's number, owned by
// this process's user and group and with no other link, and gives each the
// host node's mode, no ACL and the current times.
func resetDevNodes(dir string, host map[string]unix.Stat_t) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	sort.Strings(names)
	want := make([]string, 0, len(host))
	for n := range host {
		want = append(want, n)
	}
	sort.Strings(want)
	if fmt.Sprint(names) != fmt.Sprint(want) {
		return fmt.Errorf("%s holds %v, not %v", dir, names, want)
	}
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	for _, n := range want {
		p := filepath.Join(dir, n)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != host[n].Rdev || st.Uid != uid || st.Gid != gid || st.Nlink != 1 {
			return fmt.Errorf("%s is not the node agentbox made", p)
		}
		// A box owned its nodes: it may have given one an ACL.
		if err := unix.Lremovexattr(p, "system.posix_acl_access"); err != nil && err != unix.ENODATA && err != unix.EOPNOTSUPP {
			return err
		}
		if err := unix.Fchmodat(unix.AT_FDCWD, p, host[n].Mode&0o777, 0); err != nil {
			return err
		}
		now := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, now, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	return nil
}

// release hands the folder to the pool once the run has ended (its box's
// processes with it), or removes it when the pool is full or the move
// fails. Once.
func (d *devNodeDir) release() {
	d.once.Do(func() {
		if d.console {
			if err := unix.Unlink(filepath.Join(d.dir, "console")); err != nil {
				os.RemoveAll(d.dir)
				return
			}
		}
		pool := filepath.Join(filepath.Dir(d.dir), devPool)
		if err := unix.Mkdir(pool, 0o700); err != nil && err != unix.EEXIST {
			os.RemoveAll(d.dir)
			return
		}
		if entries, err := os.ReadDir(pool); err != nil || len(entries) >= devPoolMax ||
			unix.Rename(d.dir, filepath.Join(pool, filepath.Base(d.dir))) != nil {
			os.RemoveAll(d.dir)
		}
	})
}

// remove removes the nodes and their folder, once.
func (d *devNodeDir) remove() {
	d.once.Do(func() { os.RemoveAll(d.dir) })
}

// sweepDevDirs removes the device-node folders in parent left by runs
// killed before they handed theirs on: older than a minute (a box is set
// up in milliseconds, and a box that runs longer keeps its nodes, which
// are bound in it, not reached through the folder; its run then finds its
// folder gone and hands nothing on).
func sweepDevDirs(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name() == devPool {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
			os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}
