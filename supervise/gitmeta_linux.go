package supervise

import (
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/hostexec"
)

// gitMeta applies the repository rule to the git folder open at gfd (at
// path p): the box may change what git writes in ordinary work
// (hostexec.GitMayWrite); a state folder of an operation in progress
// (rebase-merge, rebase-apply, sequencer) the run made or changed stays
// only when continuing it runs nothing (hostexec.GitStateSafe); anything
// else the run made or changed there is moved away. What the run did not
// touch stays as the user left it.
func (c *checker) gitMeta(gfd int, p string) {
	names, err := listAt(gfd)
	if err != nil {
		c.fail(p, "git folder", "could not be listed after the run: "+err.Error())
		return
	}
	sort.Strings(names)
	for _, n := range names {
		// What the check itself left in place when its quarantine
		// folder could not be used (quarantine.moveAs): a name git
		// never reads.
		if hostexec.GitMayWrite(n) || strings.HasPrefix(n, ".agentbox-quarantine-") {
			continue
		}
		st, err := lstatAt(gfd, n)
		if err != nil {
			continue
		}
		budget := metaBudget
		changed := c.changedAt(gfd, n, st, 0, &budget)
		state := slices.Contains(hostexec.GitStates, n)
		if budget < 0 && !state {
			// Too large to tell whether the run changed it: it is kept,
			// since moving the user's own data away on a guess loses it,
			// and named. git reads no name it does not know.
			c.warn(filepath.Join(p, n), "git folder", "not something git writes in ordinary work, and too large ("+strconv.Itoa(metaBudget)+" entries or more) for the check to tell whether the run changed it; kept")
			continue
		}
		if !changed {
			continue
		}
		if state && isDir(st) {
			files, why := c.stateFiles(gfd, n)
			if why == "" {
				ok, w := hostexec.GitStateSafe(n, files)
				if ok {
					continue
				}
				why = w
			}
			c.moveAway(gfd, p, n, "git "+n, "an operation in progress the box left behind, which the next git "+continueCmd(n)+" would carry on: "+why)
			continue
		}
		c.moveAway(gfd, p, n, "git folder", "made or changed by the box in the repository's git folder, where the box may write only what git writes in ordinary work (objects, refs, logs, the index, HEAD and the *_HEAD and message files)")
	}
}

// metaBudget is how many entries of one unknown entry of a git folder the
// check looks at to tell whether the run changed it.
const metaBudget = 100000

// continueCmd is the command that carries on the operation kept in state.
func continueCmd(state string) string {
	switch state {
	case "rebase-apply":
		return "am --continue or rebase --continue"
	case "sequencer":
		return "cherry-pick --continue or revert --continue"
	}
	return "rebase --continue"
}

// changedAt reports whether entry name of dfd (with stat st) or anything
// in it changed since the run began (its change time, which no process
// can set back). Where it cannot look it says yes: a folder it cannot see
// through counts as changed. Past budget entries it stops (budget < 0).
func (c *checker) changedAt(dfd int, name string, st unix.Stat_t, depth int, budget *int) bool {
	*budget--
	if *budget < 0 {
		return true
	}
	if since(st.Ctim, c.started) || depth > 32 {
		return true
	}
	if !isDir(st) {
		return false
	}
	sub, err := unix.Openat(dfd, name, dirFlags, 0)
	if err != nil {
		return true
	}
	defer unix.Close(sub)
	names, err := listAt(sub)
	if err != nil {
		return true
	}
	for _, n := range names {
		est, err := lstatAt(sub, n)
		if err != nil || c.changedAt(sub, n, est, depth+1, budget) {
			return true
		}
	}
	return false
}

// stateFiles reads the files of state folder name of gfd; why is set when
// it holds anything but regular files, or more than git keeps there.
func (c *checker) stateFiles(gfd int, name string) (map[string][]byte, string) {
	sub, err := unix.Openat(gfd, name, dirFlags, 0)
	if err != nil {
		return nil, "cannot be opened: " + err.Error()
	}
	defer unix.Close(sub)
	names, err := listAt(sub)
	if err != nil {
		return nil, "cannot be listed: " + err.Error()
	}
	if len(names) > 100000 {
		return nil, "holds more files than git keeps there"
	}
	files := map[string][]byte{}
	for _, n := range names {
		st, err := lstatAt(sub, n)
		if err != nil || !isReg(st) {
			return nil, "holds " + filepath.Join(name, n) + ", which is not a file"
		}
		// Only the files hostexec.GitStateSafe reads are read (a todo
		// list has one line per commit); the others count by name.
		if !hostexec.GitStateRead(n) {
			files[n] = nil
			continue
		}
		data, _, err := readAt(sub, n, 64<<20)
		if err != nil {
			return nil, filepath.Join(name, n) + " cannot be read: " + err.Error()
		}
		files[n] = data
	}
	return files, ""
}
