package supervise

import (
	"errors"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// ruleSetid names, in the check's reports, the setuid and setgid bits it
// takes off.
const ruleSetid = "setuid or setgid bit"

// clearSetid takes the setuid and setgid bits off every regular file that
// changed during the run (its status changed time is the run's) in the
// folders of root that the search after the run listed: those new or
// changed since the search before it, which are all the folders in which
// the run made, renamed or linked a file. The box's filter refuses these
// bits in every call whose mode it can read, and refuses openat2, whose
// mode it cannot; this is the second lock: a file with the bit that
// outlasts the run is a privilege anyone who runs it gets on the host (as
// root, a later `cp` onto it keeps the bit).
//
// Each file is opened without following a link and changed through that
// descriptor (/proc/self/fd), so a name swapped meanwhile by another box
// changes nothing else. A file with more than one name is moved away
// instead: another of its names may be a host program's. Folders keep
// their setgid bit: on a folder it only picks the group of what is made
// in it.
func (c *checker) clearSetid(root string, t *plan.Tree) {
	rfd, err := openDir(root)
	if err != nil {
		c.setidFail(root, "not searched for setuid and setgid files: "+err.Error())
		return
	}
	defer unix.Close(rfd)
	for i := 0; i < t.Len(); i++ {
		if t.Dirs[i].Flags&plan.DirListed == 0 {
			continue
		}
		rel := t.Rel(i)
		dir := path.Join(root, rel)
		// By descriptor, one folder at a time from the root: a deep tree's
		// paths may be longer than the kernel takes whole (PATH_MAX).
		dfd, err := openBelow(rfd, rel)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			continue // gone since the search (or a link now): nothing of the run is left in it
		}
		if err != nil {
			c.setidFail(dir, "not searched for setuid and setgid files: "+err.Error())
			continue
		}
		names, err := listAt(dfd)
		if err != nil {
			c.setidFail(dir, "not searched for setuid and setgid files: "+err.Error())
		}
		for _, n := range names {
			st, err := lstatAt(dfd, n)
			if err != nil || !isReg(st) || st.Mode&(unix.S_ISUID|unix.S_ISGID) == 0 || !since(st.Ctim, c.started) {
				continue
			}
			c.dropSetid(dfd, dir, n, st)
		}
		unix.Close(dfd)
	}
}

// dropSetid takes the setuid and setgid bits off file name of folder dfd,
// if it is still the file st.
func (c *checker) dropSetid(dfd int, dir, name string, st unix.Stat_t) {
	full := path.Join(dir, name)
	fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return
	}
	if err != nil {
		c.setidFail(full, "its setuid or setgid bit could not be taken off: "+err.Error())
		return
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino || !isReg(now) {
		return // gone or replaced: what stands there now is looked at by its own folder's entry
	}
	if now.Nlink > 1 {
		// Another name of the same file may lie outside the writable
		// roots (a program of the host's): its mode is not the box's to
		// change. This name goes instead.
		why := "a file with more than one name, with a setuid or setgid bit"
		where, err := c.q.move(dfd, dir, name)
		switch {
		case errors.Is(err, unix.ENOENT):
		case err != nil:
			c.setidFail(full, why+"; it could not be moved out of the way: "+err.Error())
		default:
			c.note(full, ruleSetid, "moved", why+"; moved to "+event.Escape(where))
		}
		return
	}
	mode := now.Mode & 0o7777 &^ (unix.S_ISUID | unix.S_ISGID)
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode); err != nil {
		c.setidFail(full, "its setuid or setgid bit could not be taken off: "+err.Error())
		return
	}
	c.note(full, ruleSetid, "cleared", "the box gave it a setuid or setgid bit, a privilege for whoever runs it; taken off")
}

// setidFail reports a folder or file the check could not clear: the check
// has not finished (see CheckError).
func (c *checker) setidFail(p, detail string) {
	c.note(p, ruleSetid, "failed", detail+"; do not run what is there before you have looked")
	c.failures = append(c.failures, event.Escape(p)+": "+detail)
}

// openBelow opens the folder rel (slash-separated, "" for dfd itself)
// below the folder dfd, one name at a time, following no link.
func openBelow(dfd int, rel string) (int, error) {
	cur, err := unix.Openat(dfd, ".", dirFlags, 0)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(rel, "/") {
		if name == "" {
			continue
		}
		next, err := unix.Openat(cur, name, dirFlags, 0)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}
