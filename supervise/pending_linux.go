package supervise

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// A run's pending record lives in <state>/pending/ from before the box
// starts until its after-run check is done: <run>.json (what the check
// needs: the registry part of the plan and the guards recorded before the
// run), <run>.holds (the placeholders it uses) and <run>.lock, which holds
// the box's process group once the box has started, in decimal (earlier
// versions wrote it to <run>.pgrp, which is still read). The supervisor
// holds an exclusive flock(2) on <run>.lock for as long as it lives, so a
// record whose lock can be taken belongs to a run whose agentbox was
// killed (kill -9): the next run ends what is left of that run and does
// its check first.
//
// <run>.json is only ever whole: each version is written to a new file,
// synced, renamed over the last and the folder synced, and a run whose
// record cannot be written does not start. A record that exists but cannot
// be read stops every later run until the user has looked (it is never
// skipped, nor removed).

// pendingRecord is what <run>.json holds.
type pendingRecord struct {
	Run      string        `json:"run"`
	HostExec plan.HostExec `json:"host_exec"`
	Records  []guardRecord `json:"records,omitempty"`
	Cgroups  []string      `json:"cgroups,omitempty"`
	// Started is when the run began (Unix ns).
	Started int64 `json:"started,omitempty"`
	// Index is what the git indexes marked before the run.
	Index map[string]indexState `json:"index,omitempty"`
	// ReadOnly is what stood at the run's read-only paths before it.
	ReadOnly map[string]fileID `json:"read_only,omitempty"`
}

// pending is this run's record, locked.
type pending struct {
	dir  int // <state>/pending
	fd   int // <run>.lock, locked
	run  string
	path string
}

// pendingDir opens (making it) <state>/pending.
func pendingDir(state string) (int, error) {
	if state == "" {
		return -1, errors.New("no state folder")
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return -1, err
	}
	sfd, err := openDir(state)
	if err != nil {
		return -1, err
	}
	defer unix.Close(sfd)
	if err := ownedDir(sfd); err != nil {
		return -1, fmt.Errorf("%s: %w", state, err)
	}
	return subdir(sfd, "pending")
}

// existingPendingDir opens <state>/pending if it exists, making nothing.
func existingPendingDir(state string) (int, error) {
	fd, err := openDir(state + "/pending")
	if err != nil {
		return -1, err
	}
	if err := ownedDir(fd); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// newPending locks this run's record and writes its first version (r).
func newPending(state, run string, r pendingRecord) (*pending, error) {
	p, err := lockPending(state, run)
	if err != nil {
		return nil, err
	}
	if err := p.write(r); err != nil {
		unix.Unlinkat(p.dir, run+".lock", 0)
		unix.Close(p.fd)
		unix.Close(p.dir)
		return nil, err
	}
	return p, nil
}

// lockPending makes and locks this run's record's lock, with no record
// yet: a run writes its record (saveRecord) once it knows what its check
// needs, before its box starts. Until then a kill leaves a lock without a
// record, which the next run's recovery takes for a run that never
// started its box: it releases the run's placeholders (<run>.holds) and
// removes the lock, with no check to do, since no box ran. (The record
// used to be written, synced, a first time before the placeholders were
// made, for a check no box could have made needed.)
func lockPending(state, run string) (*pending, error) {
	dfd, err := pendingDir(state)
	if err != nil {
		return nil, err
	}
	// The lock appears under its name already locked: made under a
	// hidden name (which no run looks at), locked, then renamed into
	// place. Made under its own name, another run's recovery could find
	// it unlocked in between, take this run for one killed before its
	// first record, and delete its lock: this run would then look dead
	// to every other run for all its time (its placeholders released,
	// its check done by another run while it runs).
	tmp := randomName(".agentbox-lock-")
	fd, err := unix.Openat(dfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		unix.Close(dfd)
		return nil, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		unix.Unlinkat(dfd, tmp, 0)
		unix.Close(dfd)
		return nil, err
	}
	if err := unix.Renameat2(dfd, tmp, dfd, run+".lock", unix.RENAME_NOREPLACE); err != nil {
		unix.Close(fd)
		unix.Unlinkat(dfd, tmp, 0)
		unix.Close(dfd)
		return nil, err
	}
	return &pending{dir: dfd, fd: fd, run: run, path: filepath.Join(state, "pending", run+".json")}, nil
}

// write replaces the record with r, whole: a new file, synced, renamed
// over the last version, and the folder synced. The record on disk is
// always a complete one.
func (p *pending) write(r pendingRecord) error {
	if p == nil {
		return nil
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeDurable(p.dir, p.run+".json", data)
}

// writeDurable replaces name in dfd with data so that a crash at any point
// leaves either the old content or the new, whole, on disk.
func writeDurable(dfd int, name string, data []byte) error {
	tmp := randomName(".agentbox-new-")
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	for b := data; len(b) > 0 && err == nil; {
		var n int
		if n, err = unix.Write(fd, b); err == nil {
			b = b[n:]
		}
	}
	if err == nil {
		err = unix.Fsync(fd)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return err
	}
	return unix.Fsync(dfd)
}

// pgrp records the box's process group, in the lock file this run holds
// (a file of its own cost a new inode every run): no other run reads it
// while the lock is held, so it is never read half written.
func (p *pending) pgrp(pid int) {
	if p == nil || pid <= 0 {
		return
	}
	if unix.Ftruncate(p.fd, 0) == nil {
		unix.Pwrite(p.fd, []byte(strconv.Itoa(pid)), 0)
	}
}

// recordedPgrp is the box's process group a killed run recorded: in its
// lock, open as fd (held), or in <run>.pgrp (earlier versions); 0 when
// none is recorded.
func recordedPgrp(dfd, fd int, run string) int {
	data, _, err := readAt(dfd, run+".pgrp", 64)
	if err != nil {
		buf := make([]byte, 64)
		n, rerr := unix.Pread(fd, buf, 0)
		if rerr != nil || n <= 0 {
			return 0
		}
		data = buf[:n]
	}
	pg, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pg <= 0 {
		return 0
	}
	return pg
}

// done removes the record: the check is over.
func (p *pending) done() {
	if p == nil {
		return
	}
	for _, ext := range []string{".holds", ".json", ".lock"} {
		unix.Unlinkat(p.dir, p.run+ext, 0)
	}
	unix.Close(p.fd)
	unix.Close(p.dir)
}

// leave closes the record and leaves it for the next run, which does the
// check again before it starts (the check could not finish), and
// releases what of the run's placeholders could not be released now.
func (p *pending) leave() {
	if p == nil {
		return
	}
	unix.Close(p.fd)
	unix.Close(p.dir)
}

// writeSmall replaces file name in dfd with data, through a new file
// renamed over it.
func writeSmall(dfd int, name string, data []byte) error {
	tmp, err := writeNew(dfd, data, 0o600)
	if err != nil {
		return err
	}
	if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return err
	}
	return nil
}

// alive reports whether run's agentbox still holds its record's lock.
func alive(dfd int, run string) bool {
	fd, err := unix.Openat(dfd, run+".lock", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	unix.Flock(fd, unix.LOCK_UN)
	return false
}

// liveRecords returns the guards the live runs of this user other than
// self recorded, by path (the earliest record of each path wins).
func liveRecords(p *pending) map[string]guardRecord {
	out := map[string]guardRecord{}
	if p == nil {
		return out
	}
	names, _ := listAt(p.dir)
	sort.Strings(names)
	for _, n := range names {
		run, ok := strings.CutSuffix(n, ".json")
		if !ok || run == p.run || !alive(p.dir, run) {
			continue
		}
		data, _, err := readAt(p.dir, n, 256<<20)
		if err != nil {
			continue
		}
		var rec pendingRecord
		if json.Unmarshal(data, &rec) != nil {
			continue
		}
		for _, gr := range rec.Records {
			if _, have := out[gr.Path]; !have {
				out[gr.Path] = gr
			}
		}
	}
	return out
}

// Recover does the after-run check of every earlier run of this user whose
// agentbox was killed before it could (kill -9), or whose check could not
// finish: it ends what is left of the run, checks, and releases the run's
// placeholders. A run calls it before it looks at the writable roots, and
// Run calls it again. An error is a check that still cannot finish: the
// run must not start (its record stays).
func Recover(state string, ev event.Emitter) error { return recoverPending(state, "", ev) }

// recoverPending is Recover, leaving the run self alone.
func recoverPending(state, self string, ev event.Emitter) error {
	if state == "" {
		return nil
	}
	dfd, err := existingPendingDir(state)
	if err != nil {
		return nil
	}
	defer unix.Close(dfd)
	var failed error
	names, err := listAt(dfd)
	if err != nil {
		return fmt.Errorf("%s: the records of earlier runs cannot be listed (%w): their after-run checks cannot be done; make the folder readable, then run again", filepath.Join(state, "pending"), err)
	}
	sort.Strings(names)
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, n := range names {
		if strings.HasPrefix(n, ".agentbox-lock-") {
			// A lock a run died making (newPending): unlocked and a
			// minute old, it is no run's (a run between making it and
			// locking it is a moment old).
			if fd, err := unix.Openat(dfd, n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				var st unix.Stat_t
				if unix.Fstat(fd, &st) == nil && time.Since(time.Unix(st.Mtim.Unix())) > time.Minute &&
					unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
					unix.Unlinkat(dfd, n, 0)
				}
				unix.Close(fd)
			}
			continue
		}
		run, ok := strings.CutSuffix(n, ".lock")
		if !ok || run == self || strings.HasPrefix(n, ".") || have[run+".json"] {
			continue
		}
		// A lock without a record: a run killed before its first record
		// was on disk, which never started its box.
		if fd, err := unix.Openat(dfd, n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
				releaseHolds(state, dfd, run)
				for _, ext := range []string{".pgrp", ".holds", ".lock"} {
					unix.Unlinkat(dfd, run+ext, 0)
				}
			}
			unix.Close(fd)
		}
	}
	for _, n := range names {
		run, ok := strings.CutSuffix(n, ".json")
		if !ok || run == self || strings.HasPrefix(n, ".") {
			continue
		}
		// A lock is taken on a read-only descriptor (flock needs no
		// more): inside another box, whose state folder is read-only, the
		// outer run's lock is found held. Only a record without its lock
		// gets one made.
		fd, err := unix.Openat(dfd, run+".lock", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			fd, err = unix.Openat(dfd, run+".lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		}
		if err != nil {
			if failed == nil {
				failed = fmt.Errorf("%s: the lock of an earlier run's record cannot be taken (%v): its after-run check cannot be done; make %s writable, then run again", filepath.Join(state, "pending", run+".lock"), err, filepath.Join(state, "pending"))
			}
			continue
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			unix.Close(fd) // its agentbox is alive
			continue
		}
		if finishedMeanwhile(dfd, fd, run) {
			continue
		}
		ev.Emit(event.Event{Kind: event.Warning, Detail: "run " + run + " ended without a finished after-run check (agentbox was killed, or the check could not finish): doing it now"})
		if pg := recordedPgrp(dfd, fd, run); pg > 0 {
			killGroup(pg)
		}
		var rec pendingRecord
		data, _, rerr := readAt(dfd, n, 256<<20)
		if rerr == nil {
			rerr = json.Unmarshal(data, &rec)
		}
		if rerr == nil && rec.Run != run {
			rerr = errors.New("it names run " + strconv.Quote(rec.Run))
		}
		if rerr != nil {
			// What the run could have left is unknown: no run starts,
			// and the record stays for the user to look at.
			unix.Close(fd)
			if failed == nil {
				failed = fmt.Errorf("%s: the record of run %s, which ended without its after-run check, cannot be read (%v), so agentbox cannot check what that run left where host programs find it (git hooks and config, control files); no run starts until you have looked at the folders it could write (git status, git config --list --show-origin in each repository) and removed this file", event.Escape(filepath.Join(state, "pending", n)), run, rerr)
			}
			continue
		}
		for _, cg := range rec.Cgroups {
			killCgroup(cg)
		}
		if err := check(&rec.HostExec, run, rec.Started, rec.Records, &beforeRun{Index: rec.Index, ReadOnly: rec.ReadOnly}, ev); err != nil {
			// Still not finished: the record stays, and no run starts.
			releaseHolds(state, dfd, run)
			unix.Close(fd)
			if failed == nil {
				failed = err
			}
			continue
		}
		releaseHolds(state, dfd, run)
		for _, ext := range []string{".pgrp", ".holds", ".json", ".lock"} {
			unix.Unlinkat(dfd, run+ext, 0)
		}
		unix.Close(fd)
	}
	return failed
}

// killCgroup kills every process left in the cgroup folder dir and removes
// it.
func killCgroup(dir string) {
	if !strings.HasPrefix(dir, "/sys/fs/cgroup/") || strings.Contains(dir, "..") {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err == nil {
		// cgroup v2: cgroup.kill, and each process by pid (the kernel's
		// cgroup.kill skips a zombie leader whose threads live on).
		cgroup.Kill(dir)
	} else {
		for i := 0; i < 50; i++ {
			data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil || len(strings.TrimSpace(string(data))) == 0 {
				break
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
					unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
	}
	for i := 0; i < 100; i++ {
		if err := unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
			return
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 10_000_000}, nil)
	}
}

// finishedMeanwhile reports whether run finished between the listing and
// the taking of its lock: a run removes its record, then its lock, so a
// record gone once the lock is held is a run that ended with its check
// done (the lock this opening made anew, if it did, goes too). It closes
// fd when it reports true.
func finishedMeanwhile(dfd, fd int, run string) bool {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, run+".json", &st, unix.AT_SYMLINK_NOFOLLOW); !errors.Is(err, unix.ENOENT) {
		return false
	}
	var held, named unix.Stat_t
	if unix.Fstat(fd, &held) == nil && unix.Fstatat(dfd, run+".lock", &named, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		held.Ino == named.Ino && held.Dev == named.Dev {
		unix.Unlinkat(dfd, run+".lock", 0)
	}
	unix.Close(fd)
	return true
}
