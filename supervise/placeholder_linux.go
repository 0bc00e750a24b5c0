package supervise

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
)

// Placeholders stand, for the time of a run, where a guarded path does not
// exist (plan.KeepBlocked): an empty folder or file that the box sees
// read-only, so it cannot create the path. Runs of one user share them:
// two boxes in one project, or two Claude Code sessions with one
// ~/.claude, use the same placeholder, and only the last run out removes
// it. (Removing a folder another box has a mount on would take that mount
// away inside that box.) <state>/placeholders.lock serialises the
// decisions; each run lists the placeholders it relies on in
// <state>/pending/<run>.holds.

// hold is a placeholder a run relies on: the record the search reads too,
// to plan other runs' placeholders as missing (hostexec.Held).
type hold = hostexec.Held

// lockPlaceholders takes the placeholder lock; the returned function
// releases it.
func lockPlaceholders(state string) (func(), error) {
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	sfd, err := openDir(state)
	if err != nil {
		return nil, err
	}
	defer unix.Close(sfd)
	if err := ownedDir(sfd); err != nil {
		return nil, fmt.Errorf("%s: %w", state, err)
	}
	fd, err := unix.Openat(sfd, "placeholders.lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return func() { unix.Flock(fd, unix.LOCK_UN); unix.Close(fd) }, nil
}

// liveHolds returns the placeholders the live runs other than self rely
// on, by path.
func liveHolds(dfd int, self string) map[string]hold {
	out := map[string]hold{}
	names, _ := listAt(dfd)
	for _, n := range names {
		run, ok := strings.CutSuffix(n, ".holds")
		if !ok || run == self || !alive(dfd, run) {
			continue
		}
		data, _, err := readAt(dfd, n, 1<<20)
		if err != nil {
			continue
		}
		var hs []hold
		if json.Unmarshal(data, &hs) == nil {
			for _, h := range hs {
				out[h.Path] = h
			}
		}
	}
	return out
}

// untouchedHold reports whether name in folder dfd is placeholder h as it
// was made: the same file or folder (device and inode), a folder holding
// nothing but other live runs' placeholders as made (held), a file still
// holding what it was made with. Such a thing holds
// nothing a host program could run or obey.
func untouchedHold(dfd int, name string, h hold, held map[string]hold) bool {
	return untouchedAt(dfd, name, h, held, 0)
}

// untouchedAt is untouchedHold at depth: a folder may hold placeholders of
// other live runs (held), each as made, and nothing else.
func untouchedAt(dfd int, name string, h hold, held map[string]hold, depth int) bool {
	if depth > 8 {
		return false
	}
	st, err := lstatAt(dfd, name)
	if err != nil || st.Dev != h.Dev || st.Ino != h.Ino {
		return false
	}
	switch h.Kind {
	case "dir":
		if !isDir(st) {
			return false
		}
		sub, err := unix.Openat(dfd, name, dirFlags, 0)
		if err != nil {
			return false
		}
		defer unix.Close(sub)
		names, err := listAt(sub)
		if err != nil {
			return false
		}
		for _, n := range names {
			in, ok := held[filepath.Join(h.Path, n)]
			if !ok || !untouchedAt(sub, n, in, held, depth+1) {
				return false
			}
		}
		return true
	default:
		if !isReg(st) || st.Size != int64(len(h.Content)) {
			return false
		}
		data, _, err := readAt(dfd, name, 4096)
		return err == nil && string(data) == h.Content
	}
}

// sameHold reports whether what is at p now is placeholder h (device and
// inode).
func sameHold(p string, h hold) bool {
	dfd, name, err := openParent(p)
	if err != nil {
		return false
	}
	defer unix.Close(dfd)
	st, err := lstatAt(dfd, name)
	return err == nil && st.Dev == h.Dev && st.Ino == h.Ino
}

// otherHolds returns the placeholders live runs other than run rely on,
// by path, from state's pending folder.
func otherHolds(state, run string) map[string]hold {
	if state == "" {
		return nil
	}
	dfd, err := openDir(filepath.Join(state, "pending"))
	if err != nil {
		return nil
	}
	defer unix.Close(dfd)
	return liveHolds(dfd, run)
}

// ownHolds returns the placeholders run stands at (made or joined), by
// path, from state's pending folder; nil when they cannot be read, and
// then what stands at a placeholder's path is judged by its change time.
func ownHolds(state, run string) map[string]hold {
	if state == "" {
		return nil
	}
	dfd, err := openDir(filepath.Join(state, "pending"))
	if err != nil {
		return nil
	}
	defer unix.Close(dfd)
	data, _, err := readAt(dfd, run+".holds", 1<<20)
	if err != nil {
		return nil
	}
	var hs []hold
	if json.Unmarshal(data, &hs) != nil {
		return nil
	}
	out := map[string]hold{}
	for _, h := range hs {
		out[h.Path] = h
	}
	return out
}

// placeholders makes the plan's placeholders that are missing, and joins
// those other live runs made, recording them in pend's holds file before
// the lock is released. A path that exists and is no run's placeholder is
// the user's own by now: it is left alone (the read-only mount covers it).
func placeholders(p *plan.Plan, pend *pending) ([]hold, error) {
	if pend != nil {
		unlock, err := lockPlaceholders(p.HostExec.State)
		if err != nil {
			return nil, fmt.Errorf("the placeholder lock in %s: %w", p.HostExec.State, err)
		}
		defer unlock()
	}
	return placeholdersLocked(p, pend)
}

// placeholdersLocked is placeholders with the placeholder lock taken (when
// pend is not nil).
func placeholdersLocked(p *plan.Plan, pend *pending) ([]hold, error) {
	var want []plan.Prepare
	for _, d := range p.Prepare {
		if d.Placeholder != "" {
			want = append(want, d)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	var live map[string]hold
	if pend != nil {
		live = liveHolds(pend.dir, pend.run)
	}
	var hs []hold
	joined := map[string]bool{}
	for _, d := range want {
		// A placeholder inside another run's (this run planned that one
		// as the user's folder) holds the outer one too: released in
		// reverse order, the inner one goes first, then the outer, and
		// the last run out leaves neither.
		for a := filepath.Dir(d.Path); a != filepath.Dir(a); a = filepath.Dir(a) {
			if lh, ok := live[a]; ok && !joined[a] && sameHold(a, lh) {
				joined[a] = true
				hs = append(hs, lh)
			}
		}
		h, err := placeholder(d, live)
		if err != nil {
			releaseList(hs, nil)
			return nil, &PrepareError{Op: "making a placeholder at", Path: d.Path, Err: err}
		}
		if h != nil {
			hs = append(hs, *h)
		}
	}
	if pend != nil {
		data, _ := json.Marshal(hs)
		if err := writeSmall(pend.dir, pend.run+".holds", data); err != nil {
			releaseList(hs, nil)
			return nil, fmt.Errorf("%s: this run's record of its placeholders cannot be written (%w), and without it a run whose agentbox is killed leaves them behind; free space on that file system or make the folder writable, then run again", event.Escape(filepath.Join(filepath.Dir(pend.path), pend.run+".holds")), err)
		}
	}
	return hs, nil
}

func placeholder(d plan.Prepare, live map[string]hold) (*hold, error) {
	dfd, name, err := openParent(d.Path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	if st, err := lstatAt(dfd, name); err == nil {
		if h, ok := live[d.Path]; ok && h.Dev == st.Dev && h.Ino == st.Ino {
			return &h, nil
		}
		return nil, nil
	}
	h := &hold{Path: d.Path, Kind: d.Placeholder, Content: d.Content}
	switch d.Placeholder {
	case "dir":
		if err := unix.Mkdirat(dfd, name, 0o755); err != nil {
			return nil, err
		}
	default:
		fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = unix.Write(fd, []byte(d.Content))
		unix.Close(fd)
		if err != nil {
			unix.Unlinkat(dfd, name, 0)
			return nil, err
		}
	}
	st, err := lstatAt(dfd, name)
	if err != nil {
		return nil, err
	}
	h.Dev, h.Ino = st.Dev, st.Ino
	return h, nil
}

// releasePlaceholders removes this run's placeholders that no other live
// run relies on.
func releasePlaceholders(hs []hold, state string, pend *pending) {
	if len(hs) == 0 {
		return
	}
	var live map[string]hold
	if pend != nil {
		unlock, err := lockPlaceholders(state)
		if err != nil {
			return // left in place; the next run of this user removes them
		}
		defer unlock()
		live = liveHolds(pend.dir, pend.run)
		unix.Unlinkat(pend.dir, pend.run+".holds", 0)
	}
	releaseList(hs, live)
}

// releaseHolds releases the placeholders of a run whose agentbox died.
func releaseHolds(state string, dfd int, run string) {
	data, _, err := readAt(dfd, run+".holds", 1<<20)
	if err != nil {
		return
	}
	var hs []hold
	if json.Unmarshal(data, &hs) != nil {
		return
	}
	unlock, err := lockPlaceholders(state)
	if err != nil {
		return
	}
	defer unlock()
	releaseList(hs, liveHolds(dfd, run))
}

// releaseList removes each placeholder of hs that no run in live relies on
// and that is still an untouched placeholder: the same folder or file,
// empty, or holding what it was made with. Anything else is the user's now.
func releaseList(hs []hold, live map[string]hold) {
	for i := len(hs) - 1; i >= 0; i-- {
		h := hs[i]
		if _, used := live[h.Path]; used {
			continue
		}
		dfd, name, err := openParent(h.Path)
		if err != nil {
			continue
		}
		st, err := lstatAt(dfd, name)
		if err == nil && st.Dev == h.Dev && st.Ino == h.Ino {
			switch h.Kind {
			case "dir":
				unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR) // fails unless empty
			default:
				if data, _, err := readAt(dfd, name, 4096); err == nil && string(data) == h.Content {
					unix.Unlinkat(dfd, name, 0)
				}
			}
		}
		unix.Close(dfd)
	}
}
