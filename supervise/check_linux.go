package supervise

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
)

// checker is the after-run check of one run. It runs once every process of
// the run has ended (endAll, the box's cgroup emptied), so nothing the box
// started can change a file behind it; another box of the same user may
// still be running in the same tree, which is why every step works on
// descriptors (fsat_linux.go).
type checker struct {
	h        *plan.HostExec
	q        *quarantine
	ev       event.Emitter
	guards   map[string]plan.Guard
	known    map[string]bool // git folders before the run
	seen     map[[2]uint64]bool
	reported map[string]bool
	specs    []string        // project control paths, relative
	own      map[string]hold // this run's placeholders, by path
	failures []string        // what stopped the check from finishing
	current  string          // the path the check is reading, for a panic's report
	started  int64           // when the run began (Unix ns, runStart): what changed since is the box's
	shadow   map[string]bool
	before   map[string]indexState // the git indexes' marks before the run
	readOnly map[string]fileID     // the read-only paths in the roots before the run
	// held are the placeholders other live runs of the user stand at
	// missing guarded paths: another run's, not this box's doing.
	held map[string]hold
}

// beforeRun is what a run recorded before the box started, which its
// after-run check compares with.
type beforeRun struct {
	// Index is what the git indexes marked.
	Index map[string]indexState
	// ReadOnly is what stood at each path within the roots that the run
	// kept read-only (plan.HostExec.ReadOnly).
	ReadOnly map[string]fileID
}

// fileID is what identifies a file or folder: its device and inode, and
// when its inode last changed.
type fileID struct {
	Dev, Ino uint64
	Ctime    int64
}

// readOnlyIDs records what stands at each read-only path of h now: the
// policy's (h.ReadOnly) and the guards kept read-only (plan.KeepReadOnly).
func readOnlyIDs(h *plan.HostExec) map[string]fileID {
	out := map[string]fileID{}
	paths := append([]string(nil), h.ReadOnly...)
	for _, g := range h.Guards {
		if g.Keep == plan.KeepReadOnly {
			paths = append(paths, g.Path)
		}
	}
	for _, p := range paths {
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil {
			out[p] = fileID{Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim.Nano()}
		}
	}
	return out
}

// runStart is when a run begins, in the clock the kernel stamps files
// with: the coarse one, which lags the precise clock by up to a tick (4 ms
// at 250 Hz). A file the box writes in the run's first moments gets a
// change time older than a precise reading of the start, and would look
// older than the run (seen in CI). Every stamp made after this reading is
// at least this reading, down to the file system's granularity (since).
func runStart() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts) != nil {
		return time.Now().UnixNano() - 2_000_000_000 // a tick is far less
	}
	return ts.Nano()
}

// since reports whether change time ts may be from the run that began at
// started, whatever the file system's granularity. File systems truncate
// stamps: some keep whole seconds (ext3, ext4 made with 128-byte inodes)
// or two (FAT), some hundredths (exFAT). A stamp whose nanoseconds are a
// multiple of such a step is compared with the start truncated the same
// way, so a file written in the same second as the start counts as the
// run's. A precise stamp that happens to look round only widens what is
// looked at.
func since(ts unix.Timespec, started int64) bool {
	step := int64(1)
	switch {
	case ts.Nsec == 0:
		step = 2_000_000_000
	case ts.Nsec%10_000_000 == 0:
		step = 10_000_000
	case ts.Nsec%1_000 == 0:
		step = 1_000
	}
	return ts.Nano() >= started-started%step
}

// heldHere reports whether name in folder dfd, at full, is a placeholder
// another live run stands there, untouched.
func (c *checker) heldHere(dfd int, name, full string) bool {
	h, ok := c.held[full]
	return ok && untouchedHold(dfd, name, h, c.held)
}

// check runs the after-run check of a run whose plan's registry part is h,
// with recs the guards recorded before it. It reports each item it moves,
// rewrites or puts back once, as a quarantine event. An error is a check
// that could not finish (*CheckError): what the box planted may still be
// where a host program finds it.
func check(h *plan.HostExec, run string, started int64, recs []guardRecord, b *beforeRun, ev event.Emitter) (err error) {
	c := &checker{h: h, q: newQuarantine(h.State, run), ev: ev, started: started,
		guards: map[string]plan.Guard{}, known: map[string]bool{}, seen: map[[2]uint64]bool{}, reported: map[string]bool{}}
	if b != nil {
		c.before, c.readOnly = b.Index, b.ReadOnly
	}
	defer c.q.close()
	// A reader that panics on what the box wrote (a crafted file) ends in
	// a check that did not finish, never in an unchecked run: the record
	// stays, and no run starts before the check has been done.
	defer func() {
		if v := recover(); v != nil {
			at := c.current
			if at == "" {
				at = h.State
			}
			c.fail(at, "after-run check", fmt.Sprintf("the check stopped on what it read there (%v); move it away, or look at it, before you run a host program there", v))
			err = &CheckError{Run: run, Failures: c.failures, State: h.State}
		}
	}()
	for _, g := range h.Guards {
		c.guards[g.Path] = g
	}
	for _, d := range h.GitDirs {
		c.known[d] = true
	}
	c.specs = h.Controls
	// The box may have lowered this process's limits (prlimit(2) on a
	// process of the same user): take back what the hard limit allows.
	raiseFiles()
	// Under the placeholder lock, so no other run makes or takes away a
	// placeholder between the look at what the live runs hold and a
	// decision on what stands at a missing guarded path or control path
	// (placeholder_linux.go). Without the lock no run's placeholder is
	// known: what stands there is moved away, as the box's.
	if h.State != "" {
		if unlock, err := lockPlaceholders(h.State); err == nil {
			defer unlock()
			c.held = otherHolds(h.State, run)
		}
	}
	c.restore(recs)
	c.created()
	c.own = ownHolds(h.State, run)
	c.blocked(c.own)
	c.readOnlyGuards()
	c.watched()
	c.search()
	c.indexMarks()
	if checkHook != nil {
		checkHook(c)
	}
	if len(c.failures) > 0 {
		return &CheckError{Run: run, Failures: c.failures, State: h.State}
	}
	return nil
}

// checkHook, when set (by a test), runs as the last step of every check.
var checkHook func(*checker)

// raiseFiles sets this process's limit on open files to its hard limit.
func raiseFiles() {
	var l unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		unix.Setrlimit(unix.RLIMIT_NOFILE, &l)
	}
}

// note reports something the check did, once per path and action.
func (c *checker) note(p, rule, action, detail string) {
	if c.reported[action+"\x00"+p] {
		return
	}
	c.reported[action+"\x00"+p] = true
	c.ev.Emit(event.Event{Kind: event.Quarantine, Path: p, Rule: "always: " + rule, Action: action,
		Reason: "a host program would run or obey it outside the box", Detail: detail})
}

// warn reports something the check could not do, which leaves nothing a
// host program would run (what the box made was moved away; only the
// original could not be put back).
func (c *checker) warn(p, rule, detail string) {
	c.note(p, rule, "failed", detail+"; do not run "+c.program(rule)+" there before you have looked")
}

// fail reports something the check could not do that may leave what the
// box planted where a host program finds it: the check has not finished
// (see checkError).
func (c *checker) fail(p, rule, detail string) {
	c.warn(p, rule, detail)
	c.failures = append(c.failures, event.Escape(p)+": "+detail)
}

// moveAway moves name of dfd (at parent) into quarantine and reports it.
func (c *checker) moveAway(dfd int, parent, name, rule, why string) bool {
	full := filepath.Join(parent, name)
	where, err := c.q.move(dfd, parent, name)
	switch {
	case errors.Is(err, unix.ENOENT):
		return false
	case err != nil:
		c.fail(full, rule, why+"; it could not be moved out of the way: "+err.Error())
		return false
	}
	c.note(full, rule, "moved", why+"; moved to "+event.Escape(where))
	return true
}

// blocked looks at each missing path a placeholder of this run stood at
// (plan.KeepBlocked). The read-only mount over a placeholder holds only
// while the placeholder stays where it is: a process in another mount
// namespace (a Landlock box of the same user, which may write in the
// project) can rename or remove it, and the kernel then detaches the
// mount in this box, which sees the project's own entry again and may
// make it. What stands there now that is neither a placeholder as it was
// made (this run's, own, or another live run's) nor older than the run
// with everything in it is the box's: it is moved away.
func (c *checker) blocked(own map[string]hold) {
	all := map[string]hold{}
	for k, v := range c.held {
		all[k] = v
	}
	for k, v := range own {
		all[k] = v
	}
	for _, g := range c.h.Guards {
		if g.Keep != plan.KeepBlocked || g.Kind != plan.KindMissing {
			continue
		}
		c.current = g.Path
		dfd, name, ok := c.reachParent(g.Path, g.Rule)
		if !ok {
			continue
		}
		st, err := lstatAt(dfd, name)
		h, mine := own[g.Path]
		budget := metaBudget
		switch {
		case errors.Is(err, unix.ENOENT):
		case err != nil:
			c.fail(g.Path, g.Rule, "could not be checked after the run: "+err.Error())
		case c.heldHere(dfd, name, g.Path):
			// Another live run's placeholder, as it made it.
		case mine && untouchedHold(dfd, name, h, all):
			// This run's placeholder, as it was made.
		case c.changedAt(dfd, name, st, 0, &budget):
			c.moveAway(dfd, filepath.Dir(g.Path), name, g.Rule, "stands where a placeholder kept it missing during the run, and was made or changed during the run (a process outside this box took the placeholder away, which lifts the box's read-only mount over it); "+c.program(g.Rule)+" would run or obey it")
		}
		unix.Close(dfd)
	}
}

// readOnlyGuards looks at each guard kept read-only (plan.KeepReadOnly)
// that is no longer what stood there before the run (another inode, or
// the same one changed). The read-only mount over it holds only while the
// path stays where it is: a process in another mount namespace (a
// Landlock box of the same user) that renames it, or links it to a name
// the box may write, lets the box write what a host program obeys there.
// What changed during the run there is the box's: a git config keeps only
// the variables that run nothing (sanitize); anything else changed since
// the run began is moved away.
func (c *checker) readOnlyGuards() {
	for _, g := range c.h.Guards {
		if g.Keep != plan.KeepReadOnly {
			continue
		}
		was, ok := c.readOnly[g.Path]
		if !ok {
			continue // nothing stood there before the run, or no record
		}
		c.current = g.Path
		dfd, name, ok := c.reachParent(g.Path, g.Rule)
		if !ok {
			continue
		}
		st, err := lstatAt(dfd, name)
		switch {
		case errors.Is(err, unix.ENOENT):
		case err != nil:
			c.fail(g.Path, g.Rule, "could not be checked after the run: "+err.Error())
		case st.Dev == was.Dev && st.Ino == was.Ino && st.Ctim.Nano() == was.Ctime:
			// As it was before the run.
		case isReg(st) && name == "config" && g.Rule == "git config":
			gitDir := filepath.Dir(g.Path)
			c.sanitize(dfd, gitDir, name, g.Rule, func(v string) bool {
				if !filepath.IsAbs(v) {
					v = filepath.Join(gitDir, v)
				}
				return c.inRoots(filepath.Clean(v))
			})
		case isDir(st) && st.Dev == was.Dev && st.Ino == was.Ino:
			c.changedIn(dfd, name, g)
		default:
			budget := metaBudget
			if c.changedAt(dfd, name, st, 0, &budget) {
				c.moveAway(dfd, filepath.Dir(g.Path), name, g.Rule, readOnlyWhy(c.program(g.Rule)))
			} else if isDir(st) {
				c.changedIn(dfd, name, g)
			}
		}
		unix.Close(dfd)
	}
}

// readOnlyWhy is why what changed at a read-only guard is moved away.
func readOnlyWhy(program string) string {
	return "kept read-only for the run, yet made or changed during it (a process outside this box moved it or linked it, which lifts the box's read-only mount over it); " + program + " would run or obey it"
}

// changedIn moves away each entry of folder name in dfd (guard g) that
// changed since the run began.
func (c *checker) changedIn(dfd int, name string, g plan.Guard) {
	sub, err := unix.Openat(dfd, name, dirFlags, 0)
	if err != nil {
		c.fail(g.Path, g.Rule, "could not be checked after the run: "+err.Error())
		return
	}
	defer unix.Close(sub)
	names, err := listAt(sub)
	if err != nil {
		c.fail(g.Path, g.Rule, "could not be listed after the run: "+err.Error())
	}
	sort.Strings(names)
	for _, n := range names {
		est, err := lstatAt(sub, n)
		budget := metaBudget
		if err != nil || c.changedAt(sub, n, est, 0, &budget) {
			c.moveAway(sub, g.Path, n, g.Rule, readOnlyWhy(c.program(g.Rule)))
		}
	}
}

// created moves away what appeared where a guard found nothing before the
// run and no placeholder stood (plan.KeepChecked).
func (c *checker) created() {
	for _, g := range c.h.Guards {
		if g.Keep != plan.KeepChecked || g.Kind != plan.KindMissing {
			continue
		}
		c.current = g.Path
		dfd, name, ok := c.reachParent(g.Path, g.Rule)
		if !ok {
			continue
		}
		if c.heldHere(dfd, name, g.Path) {
			// Another live run's placeholder, as it made it.
		} else if _, err := lstatAt(dfd, name); err == nil {
			c.moveAway(dfd, filepath.Dir(g.Path), name, g.Rule, "did not exist before the run; "+c.program(g.Rule)+" would run or obey it")
		} else if !errors.Is(err, unix.ENOENT) {
			c.fail(g.Path, g.Rule, "could not be checked after the run: "+err.Error())
		}
		unix.Close(dfd)
	}
}

// watched looks, in each folder a host program puts on PATH or loads
// code from at its start (plan.KeepPathDir, plan.KeepPthDir), at what the
// box added or changed there during the run, and moves away what a host
// program would run without being asked: a program under the name of a
// command on the user's PATH, a .pth file or a sitecustomize module.
func (c *checker) watched() {
	for _, g := range c.h.Guards {
		if g.Keep != plan.KeepPathDir && g.Keep != plan.KeepPthDir && g.Keep != plan.KeepAgentDir {
			continue
		}
		dfd, err := openDir(g.Path)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
				c.fail(g.Path, g.Rule, "could not be checked after the run: "+err.Error())
			}
			continue
		}
		names, err := listAt(dfd)
		if err != nil {
			c.fail(g.Path, g.Rule, "could not be listed after the run: "+err.Error())
		}
		sort.Strings(names)
		// A folder that is not the one the search before the run saw
		// there (made, or moved in, during the run) may hold entries
		// whose change times are older than the run: all of them are
		// looked at.
		same := c.sameFolder(g.Path, dfd)
		for _, n := range names {
			st, err := lstatAt(dfd, n)
			if err != nil || same && !since(st.Ctim, c.started) {
				continue // not changed during the run
			}
			switch g.Keep {
			case plan.KeepPathDir:
				exec := isLink(st) || isReg(st) && st.Mode&0o111 != 0
				if exec && c.shadows(n) {
					c.moveAway(dfd, g.Path, n, g.Rule, "a program the box added or changed in a folder on PATH in this folder's shell, under the name of a command on your PATH: typing "+event.Escape(n)+" there would run it")
				}
			case plan.KeepAgentDir:
				// An entry with a guard of its own (kept read-only, a
				// placeholder, recorded and put back) is that guard's.
				if _, own := c.h.GuardAt(filepath.Join(g.Path, n)); !own && !g.Allows(n) {
					c.moveAway(dfd, g.Path, n, g.Rule, "not one of the entries "+c.program(g.Rule)+" writes in its folder in its work, and the box added or changed it there; "+c.program(g.Rule)+" may obey it at its next start")
				}
			case plan.KeepPthDir:
				if strings.HasSuffix(n, ".pth") || n == "sitecustomize.py" || n == "usercustomize.py" || n == "sitecustomize" || n == "usercustomize" {
					c.moveAway(dfd, g.Path, n, g.Rule, "runs at every start of the interpreter the git hooks run")
				}
			}
		}
		unix.Close(dfd)
	}
}

// sameFolder reports whether folder p, open as dfd, is the folder the
// search before the run saw at p: same device and inode, listed by that
// search or taken from its index.
func (c *checker) sameFolder(p string, dfd int) bool {
	var st unix.Stat_t
	if unix.Fstat(dfd, &st) != nil {
		return false
	}
	for root, t := range c.h.Trees {
		rel, ok := relUnder(root, p)
		if !ok || t == nil {
			continue
		}
		i := t.Find(rel)
		if i < 0 {
			return false
		}
		d := t.Dirs[i]
		return d.Flags&(plan.DirUnlisted|plan.DirSkipped) == 0 && d.Ino == st.Ino && d.Dev == uint64(unix.Major(st.Dev))<<32|uint64(unix.Minor(st.Dev))
	}
	return false
}

// relUnder returns p relative to root, slash-separated ("" for root).
func relUnder(root, p string) (string, bool) {
	if p == root {
		return "", true
	}
	rest, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/")
	return filepath.ToSlash(rest), ok
}

// shadows reports whether name is a command in a folder of the user's
// PATH outside the writable roots.
func (c *checker) shadows(name string) bool {
	if c.shadow == nil {
		c.shadow = map[string]bool{}
		for _, d := range filepath.SplitList(os.Getenv("PATH")) {
			if !filepath.IsAbs(d) || c.inRoots(d) {
				continue
			}
			es, err := os.ReadDir(d)
			if err != nil {
				continue
			}
			for _, e := range es {
				c.shadow[e.Name()] = true
			}
		}
		// What every shell has, whatever PATH says.
		for _, n := range []string{"sh", "bash", "git", "ls", "cd", "make", "sudo", "ssh", "env", "cat", "cp", "mv", "rm"} {
			c.shadow[n] = true
		}
	}
	return c.shadow[name]
}

// found is what the search after the run noted.
type found struct {
	repos    []string            // work tree tops holding a .git
	bare     []string            // folders git takes for git folders
	controls map[string][]string // folder -> control names in it
	links    []string            // symlinks in folders that changed
}

// search walks every root for repositories and control files, at any
// depth, and neutralises what is new. It lists only the folders that
// changed since the search before the run (plan.HostExec.Trees); a folder
// of the user's own that the box made unreadable is made readable again
// and searched; anything else that stops the search makes the check fail.
func (c *checker) search() {
	// The names the search before the run noted, so that its tree
	// compares with this one.
	names := c.h.Noted
	seen := map[string]bool{}
	for _, s := range c.specs {
		first, _, _ := strings.Cut(s, "/")
		seen[first] = true
		if c.h.Noted == nil {
			names = append(names, first)
		}
	}
	f := found{controls: map[string][]string{}}
	// The bound on folders is one of memory here, never the policy's
	// smaller one: the box may have made the tree larger than the search
	// before the run allowed, and the check must still finish.
	bound := max(c.h.Limit, hostexec.DefaultMaxDirs)
	for _, root := range plan.Outermost(c.h.Roots) {
		o := hostexec.WalkOptions{Names: names, Skip: c.h.ReadOnly, Old: c.h.Trees[root], Links: len(c.h.Outside) > 0, Fix: true, MaxDirs: bound, Kept: c.keptUnlisted(), Shared: true}
		t, err := hostexec.Walk(root, o)
		if err != nil {
			c.fail(root, "git repositories and control files", "not searched to the end: "+err.Error())
			continue
		}
		c.unshare(t)
		for _, rel := range t.Fixed {
			c.note(path.Join(root, rel), plan.RuleUnlisted, "made readable",
				"the box had taken its owner's read or search permission away, which would hide what it planted there from the check (not from git); given back")
		}
		for _, rel := range t.Links {
			f.links = append(f.links, path.Join(root, rel))
		}
		for _, i := range t.Noted() {
			dir := t.Path(i)
			d := t.Dirs[i]
			if d.Flags&plan.DirGit != 0 {
				f.bare = append(f.bare, dir)
			}
			for _, n := range t.NotesOf(i) {
				switch {
				case n == ".git":
					f.repos = append(f.repos, dir)
				case seen[n]:
					f.controls[dir] = append(f.controls[dir], n)
				}
			}
		}
		// What changed out of git's sight, then what this search saw,
		// which the next run's search compares with.
		c.changes(root, t, c.h.Trees[root])
		c.clearSetid(root, t)
		c.saveIndex(t)
	}
	for _, l := range f.links {
		c.outsideLink(l)
	}
	sort.Strings(f.repos)
	sort.Strings(f.bare)
	for _, top := range f.repos {
		c.gitEntry(top)
	}
	for _, b := range f.bare {
		c.gitDirAt(b, "")
	}
	dirs := make([]string, 0, len(f.controls))
	for d := range f.controls {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		c.controls(d)
	}
}

// keptUnlisted are the folders the search before the run could not list
// that were kept read-only for the run.
func (c *checker) keptUnlisted() []string {
	var out []string
	for _, g := range c.h.Guards {
		if g.Rule == plan.RuleUnlisted && g.Keep == plan.KeepReadOnly {
			out = append(out, g.Path)
		}
	}
	return out
}

// saveIndex keeps what the search saw of a root for the next run's search
// (hostexec.IndexFile), in agentbox's state folder.
func (c *checker) saveIndex(t *plan.Tree) {
	if c.h.State == "" {
		return
	}
	data := hostexec.EncodeIndex(t)
	file := hostexec.IndexFile(c.h.State, t.Root)
	if os.MkdirAll(c.h.State, 0o700) != nil {
		return
	}
	sfd, err := openDir(c.h.State)
	if err != nil {
		return
	}
	defer unix.Close(sfd)
	if ownedDir(sfd) != nil {
		return
	}
	dfd, err := subdir(sfd, filepath.Base(filepath.Dir(file)))
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	// Not written again when it would say the same as the file there (one
	// of agentbox's own): no folder changed since the search that wrote
	// it, which then stays the later searches' reference.
	// Nor when it differs only in the change times of the folders this
	// run's placeholders stand in, or are: their removal after the check
	// moves those again, so a later search lists them again whatever the
	// file says.
	if old, st, err := readAt(dfd, filepath.Base(file), int64(len(data))+16); err == nil &&
		st.Uid == uint32(os.Geteuid()) && st.Mode&0o077 == 0 && st.Nlink == 1 &&
		(hostexec.SameIndex(old, t) || hostexec.SameIndexMoving(old, t, c.placeholderMoved)) {
		return
	}
	writeSmall(dfd, filepath.Base(file), data)
}

// placeholderMoved says whether the folder p holds one of this run's
// placeholders (moved: its change time moves again when they are removed
// after the check) or is one (replaced: made anew every run).
func (c *checker) placeholderMoved(p string) (moved, replaced bool) {
	for hp := range c.own {
		if hp == p {
			replaced = true
		}
		if filepath.Dir(hp) == p {
			moved = true
		}
	}
	return moved, replaced
}

// outsideLink moves away the symlink at p if it leads into a folder the
// box writes outside the roots (its /tmp): a host program following it
// would meet what the box left there, which no search covers.
func (c *checker) outsideLink(p string) {
	if c.guarded(p) {
		return
	}
	c.current = p
	dfd, name, ok := c.reachParent(p, "symlink")
	if !ok {
		return
	}
	defer unix.Close(dfd)
	t, err := readlinkAt(dfd, name)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			c.fail(p, "symlink", "could not be read after the run: "+err.Error())
		}
		return
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(p), t)
	}
	t = filepath.Clean(t)
	for _, o := range c.h.Outside {
		if plan.Within(t, o) {
			c.moveAway(dfd, filepath.Dir(p), name, "symlink", "leads into "+event.Escape(o)+", which the box writes and no check covers")
			return
		}
	}
}

// reachParent opens the folder holding p (in a root) and returns it with
// p's name. A part of the way that the box turned into a symlink or a
// non-folder is moved away in p's place (unless it is a guard from before
// the run); a missing part means nothing is there; any other error is a
// check that did not finish. ok is false when there is nothing more to
// look at.
func (c *checker) reachParent(p, rule string) (int, string, bool) {
	dfd, name, err := openParent(p)
	if err == nil {
		return dfd, name, true
	}
	if errors.Is(err, unix.ENOENT) {
		return -1, "", false
	}
	root := ""
	for _, r := range c.h.Roots {
		if plan.Within(p, r) && p != r && len(r) > len(root) {
			root = r
		}
	}
	if root == "" {
		c.fail(p, rule, "could not be checked after the run: "+err.Error())
		return -1, "", false
	}
	rfd, err := openDir(root)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			c.fail(p, rule, "could not be checked after the run: "+err.Error())
		}
		return -1, "", false
	}
	defer unix.Close(rfd)
	rel, _ := relUnder(root, p)
	fd, parent, part, stop, err := lookup(rfd, root, rel)
	switch {
	case err != nil:
		c.fail(p, rule, "could not be checked after the run: "+err.Error())
		return -1, "", false
	case fd < 0:
		return -1, "", false
	case stop:
		full := filepath.Join(parent, part)
		if !c.guarded(full) && !c.keptBefore(full, rule) {
			c.moveAway(fd, parent, part, rule, "stands on the way to "+event.Escape(p)+" (a symlink or not a folder, made during the run): a host program would follow it to what the box chose")
		}
		unix.Close(fd)
		return -1, "", false
	}
	return fd, part, true
}

// guarded reports whether p, or a folder above it, is a guard from before
// the run: then it is not new (and is kept by its guard).
func (c *checker) guarded(p string) bool {
	for q := p; ; q = filepath.Dir(q) {
		if _, ok := c.guards[q]; ok {
			return true
		}
		if q == "/" || q == "." {
			return false
		}
	}
}

// controls moves away the control files in folder dir that were not
// there before the run. Each registry path is resolved one part at a time,
// as the host program would follow it: a part the box turned into a
// symlink or a non-folder stands in the control file's place and is moved
// away itself; only a missing part (ENOENT) means nothing is there.
func (c *checker) controls(dir string) {
	c.current = dir
	dfd, err := openDir(dir)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			c.fail(dir, "control files", "could not be checked after the run: "+err.Error())
		}
		return
	}
	defer unix.Close(dfd)
	for _, s := range c.specs {
		p := filepath.Join(dir, filepath.FromSlash(s))
		rule := "control file " + s
		if c.guarded(p) || c.keptBefore(p, rule) {
			continue
		}
		// Most control files are missing: one lstat of the first part
		// says so, where the lookup opens a folder first.
		if first, _, _ := strings.Cut(s, "/"); lstatMissing(dfd, first) {
			continue
		}
		fd, parent, name, stop, err := lookup(dfd, dir, s)
		switch {
		case err != nil:
			c.fail(p, rule, "could not be checked after the run: "+err.Error())
			continue
		case fd < 0:
			continue
		}
		full := filepath.Join(parent, name)
		c.current = full
		switch {
		case stop:
			if !c.guarded(full) && !c.keptBefore(full, rule) {
				c.moveAway(fd, parent, name, rule, "stands where the folder of "+s+" must be (a symlink or not a folder, made during the run): a host program would follow it to what the box chose")
			}
		default:
			st, err := lstatAt(fd, name)
			switch {
			case errors.Is(err, unix.ENOENT):
			case err != nil:
				c.fail(full, rule, "could not be checked after the run: "+err.Error())
			case c.heldHere(fd, name, full):
				// Another live run's placeholder, as it made it.
			case isReg(st):
				// A version pin that names a version runs nothing.
				if data, _, err := readAt(fd, name, 64<<10); err == nil && hostexec.IsHarmless(s, data) {
					break
				}
				fallthrough
			default:
				c.moveAway(fd, parent, name, rule, "was created by the box; a host program started there would run or obey it")
			}
		}
		unix.Close(fd)
	}
}

// lstatMissing reports whether name in the folder dfd is missing (ENOENT,
// nothing else).
func lstatMissing(dfd int, name string) bool {
	_, err := lstatAt(dfd, name)
	return errors.Is(err, unix.ENOENT)
}

// lookup resolves rel (slash-separated) below the folder dfd (at path
// dir) one part at a time, following no symlink, and returns the folder
// holding its last part (a new descriptor; -1 when a part on the way is
// missing: nothing is there) and that part's name. A part on the way that
// is a symlink or not a folder is returned instead, with stop set: it
// stands in the control file's place. Any other error is returned: the
// lookup did not finish.
func lookup(dfd int, dir, rel string) (fd int, parent, name string, stop bool, err error) {
	parts := strings.Split(rel, "/")
	fd, err = unix.Openat(dfd, ".", dirFlags, 0)
	if err != nil {
		return -1, "", "", false, err
	}
	parent = dir
	for _, part := range parts[:len(parts)-1] {
		st, err := lstatAt(fd, part)
		switch {
		case errors.Is(err, unix.ENOENT):
			unix.Close(fd)
			return -1, "", "", false, nil
		case err != nil:
			unix.Close(fd)
			return -1, "", "", false, err
		case !isDir(st):
			return fd, parent, part, true, nil
		}
		next, err := unix.Openat(fd, part, dirFlags, 0)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				// Swapped since the lstat: still in the way.
				return fd, parent, part, true, nil
			}
			unix.Close(fd)
			if errors.Is(err, unix.ENOENT) {
				return -1, "", "", false, nil
			}
			return -1, "", "", false, err
		}
		unix.Close(fd)
		fd = next
		parent = filepath.Join(parent, part)
	}
	return fd, parent, parts[len(parts)-1], false, nil
}

// keptBefore reports whether p lies in (or is) a path the run kept
// read-only that is still what stood there before the run: the box could
// not have made or changed it. When the check cannot tell (nothing was
// recorded before the run, or the path cannot be looked at now), p is
// kept, and the report says so.
func (c *checker) keptBefore(p, rule string) bool {
	for _, r := range c.h.ReadOnly {
		if !plan.Within(p, r) {
			continue
		}
		was, ok := c.readOnly[r]
		var st unix.Stat_t
		err := unix.Lstat(r, &st)
		switch {
		case ok && err == nil && st.Dev == was.Dev && st.Ino == was.Ino:
			return true
		case ok && errors.Is(err, unix.ENOENT):
			// Gone since: what stands at p now is not the user's.
			return false
		case ok && err == nil:
			return false // replaced during the run: the box's
		}
		// In doubt: keep it, and say so.
		what := "agentbox has no record of what stood at " + event.Escape(r) + " before the run"
		if err != nil {
			what = event.Escape(r) + " cannot be looked at (" + err.Error() + ")"
		}
		c.note(p, rule, "kept", "in a path kept read-only for the run, so left where it is; "+what+": if the box could have made it, look at it before you run "+c.program(rule)+" there")
		return true
	}
	return false
}

// inRoots reports whether p lies in a root of the search.
func (c *checker) inRoots(p string) bool {
	for _, r := range c.h.Roots {
		if plan.Within(p, r) {
			return true
		}
	}
	return false
}

// gitEntry looks at the .git entry of work tree top.
func (c *checker) gitEntry(top string) {
	tfd, err := openDir(top)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			c.fail(top, "git folder", "could not be checked after the run: "+err.Error())
		}
		return
	}
	defer unix.Close(tfd)
	entry := filepath.Join(top, ".git")
	st, err := lstatAt(tfd, ".git")
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			c.fail(entry, "git folder", "could not be checked after the run: "+err.Error())
		}
		return
	}
	_, isGuard := c.guards[entry]
	switch {
	case isLink(st):
		if !isGuard {
			c.moveAway(tfd, top, ".git", "git folder", "a new .git symlink would point host git at a folder the box chose")
		}
	case isDir(st):
		c.gitDirAt(entry, top)
	case isReg(st):
		data, _, err := readAt(tfd, ".git", 4096)
		t := ""
		if err == nil {
			t = hostexec.ReadGitFile(data)
		}
		if t != "" && !filepath.IsAbs(t) {
			t = filepath.Join(top, t)
		}
		t = filepath.Clean(t)
		if isGuard {
			if t != "." && c.inRoots(t) {
				c.gitDirAt(t, top)
			}
			return
		}
		if t == "." || !c.inRoots(t) {
			c.moveAway(tfd, top, ".git", "git file", "a new .git file would point host git at a folder outside the writable roots")
			return
		}
		c.gitDirAt(t, top)
	}
}

// gitDirAt checks the git folder at p (work tree top, "" when bare).
func (c *checker) gitDirAt(p, top string) {
	gfd, err := openDir(p)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			c.fail(p, "git folder", "could not be checked after the run: "+err.Error())
		}
		return
	}
	defer unix.Close(gfd)
	c.gitDir(gfd, p, top, 0)
}

// gitDir neutralises what host git would run from the git folder open at
// gfd (at path p): in a folder new since the run began, its config (only
// safe keys kept), config.worktree, hooks and commondir; in any folder, a
// commondir or config.worktree that appeared, a linked worktree's
// commondir that points anywhere but its repository, and the same in its
// worktrees' and submodules' folders.
func (c *checker) gitDir(gfd int, p, top string, depth int) {
	var st unix.Stat_t
	if unix.Fstat(gfd, &st) != nil || depth > 16 {
		return
	}
	id := [2]uint64{st.Dev, st.Ino}
	if c.seen[id] {
		return
	}
	c.seen[id] = true
	isNew := !c.known[p]
	admin := filepath.Base(filepath.Dir(p)) == "worktrees"
	inTree := func(v string) bool {
		if !filepath.IsAbs(v) {
			v = filepath.Join(p, v)
		}
		return c.inRoots(filepath.Clean(v))
	}
	// commondir: in a linked worktree's folder it must lead back to the
	// repository holding it; anywhere else it must not appear.
	if _, err := lstatAt(gfd, "commondir"); err == nil {
		cd := filepath.Join(p, "commondir")
		switch {
		case admin:
			data, _, err := readAt(gfd, "commondir", 4096)
			v := strings.TrimSpace(string(data))
			want := filepath.Dir(filepath.Dir(p))
			if err != nil || v == "" || filepath.Clean(filepath.Join(p, v)) != want && filepath.Clean(v) != want {
				c.replace(gfd, p, "commondir", []byte("../..\n"), 0o644, "git worktree commondir",
					"pointed this worktree's git at a folder the box chose; put back to ../..")
			}
		case isNew || !c.isGuard(cd):
			c.moveAway(gfd, p, "commondir", "git commondir", "points host git at another folder's config and hooks")
		}
	}
	// Git reads no config from a linked worktree's own folder, but a folder
	// that only looks like one (a bare repository the box named
	// worktrees/x) is read like any other: a new one's config is made safe
	// whatever its name.
	if isNew {
		c.sanitize(gfd, p, "config", "git config", inTree)
	}
	if _, err := lstatAt(gfd, "config.worktree"); err == nil {
		if cw := filepath.Join(p, "config.worktree"); isNew || !c.isGuard(cw) {
			c.sanitize(gfd, p, "config.worktree", "git config.worktree", inTree)
		}
	}
	if isNew {
		c.newHooks(gfd, p)
	}
	c.gitMeta(gfd, p)
	if admin {
		return
	}
	if wfd, err := unix.Openat(gfd, "worktrees", dirFlags, 0); err == nil {
		names, _ := listAt(wfd)
		for _, n := range names {
			if afd, err := unix.Openat(wfd, n, dirFlags, 0); err == nil {
				c.gitDir(afd, filepath.Join(p, "worktrees", n), "", depth+1)
				unix.Close(afd)
			}
		}
		unix.Close(wfd)
	}
	if mfd, err := unix.Openat(gfd, "modules", dirFlags, 0); err == nil {
		c.modules(mfd, filepath.Join(p, "modules"), depth+1)
		unix.Close(mfd)
	}
}

func (c *checker) isGuard(p string) bool {
	_, ok := c.guards[p]
	return ok
}

// modules checks the submodules' git folders (those holding a config)
// under the folder dfd (at p).
func (c *checker) modules(dfd int, p string, depth int) {
	if depth > 16 {
		return
	}
	names, _ := listAt(dfd)
	for _, n := range names {
		sub, err := unix.Openat(dfd, n, dirFlags, 0)
		if err != nil {
			continue
		}
		sp := filepath.Join(p, n)
		if _, err := lstatAt(sub, "config"); err == nil {
			c.gitDir(sub, sp, "", depth+1)
		} else {
			c.modules(sub, sp, depth+1)
		}
		unix.Close(sub)
	}
}

// newHooks moves away every hook of a new git folder: anything in hooks/
// but git's own *.sample files, or hooks/ itself when it is a symlink.
func (c *checker) newHooks(gfd int, p string) {
	st, err := lstatAt(gfd, "hooks")
	if err != nil {
		return
	}
	if !isDir(st) {
		c.moveAway(gfd, p, "hooks", "git hooks", "a repository made during the run: host git would run what this leads to")
		return
	}
	hfd, err := unix.Openat(gfd, "hooks", dirFlags, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return
		}
		c.moveAway(gfd, p, "hooks", "git hooks", "a repository made during the run whose hooks folder cannot be looked into ("+err.Error()+")")
		return
	}
	defer unix.Close(hfd)
	names, err := listAt(hfd)
	if err != nil {
		c.fail(filepath.Join(p, "hooks"), "git hooks", "could not be listed after the run: "+err.Error())
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasSuffix(n, ".sample") {
			if st, err := lstatAt(hfd, n); err == nil && isReg(st) {
				continue
			}
		}
		c.moveAway(hfd, filepath.Join(p, "hooks"), n, "git hooks", "a hook in a repository made during the run: host git would run it")
	}
}

// sanitize rewrites the git config name in gfd keeping only the variables
// that run nothing (hostexec.Safe); the original goes to quarantine. A
// config that is a symlink, too large or not a file is moved away whole.
func (c *checker) sanitize(gfd int, p, name, rule string, inTree func(string) bool) {
	data, st, err := readAt(gfd, name, 1<<20)
	switch {
	case errors.Is(err, unix.ENOENT):
		return
	case err != nil:
		c.moveAway(gfd, p, name, rule, "a git config made during the run that agentbox cannot read ("+err.Error()+")")
		return
	}
	out, dropped, changed := hostexec.Sanitize(data, inTree)
	if !changed {
		return
	}
	what := "rewritten by agentbox in a form git reads the same"
	if len(dropped) > 0 {
		what = "removed " + strings.Join(dropped, ", ") + " (they can make host git run programs)"
	}
	c.replace(gfd, p, name, out, st.Mode&0o666, rule, "a git config made during the run: "+what)
}

// replace puts data at name in gfd in one atomic exchange and moves what
// was there to quarantine.
func (c *checker) replace(gfd int, p, name string, data []byte, mode uint32, rule, why string) {
	full := filepath.Join(p, name)
	if mode == 0 {
		mode = 0o644
	}
	tmp, err := writeNew(gfd, data, mode)
	if err != nil {
		c.moveAway(gfd, p, name, rule, why+"; a clean one could not be written ("+err.Error()+"), so the file was moved away whole")
		return
	}
	if err := unix.Renameat2(gfd, tmp, gfd, name, unix.RENAME_EXCHANGE); err != nil {
		unix.Unlinkat(gfd, tmp, 0)
		c.moveAway(gfd, p, name, rule, why+"; moved away whole ("+err.Error()+")")
		return
	}
	where, err := c.q.moveAs(gfd, p, tmp, name)
	if err != nil {
		where = filepath.Join(p, tmp)
	}
	c.note(full, rule, "rewritten", why+"; the box's version is in "+event.Escape(where))
}
