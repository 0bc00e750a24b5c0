package refusal

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/plan"
)

// layer is one mount seen as what it leaves at its path: the access, and
// the plan entry that made it.
type layer struct {
	path   string
	access plan.Access
	mount  int // index in plan.Mounts
}

// Judge judges attempts against one completed plan.
type Judge struct {
	p      *plan.Plan
	exists func(string) bool
	mu     sync.Mutex
	seen   map[string]*Refused // by fix, for Refusals
	order  []*Refused
	layers []layer
	ll     *landlock.Assessment
	// hostRun is the registry's search (SetHostRun): every fix the judge
	// gives is rechecked with it, so the run's summary, the audit log
	// (log --denials) and learn give one verdict.
	hostRun HostRun
	// hostDenies, when set, tells a write the host refuses the user too.
	hostDenies HostDenies
}

// HostDenies says whether the host's own permissions refuse the user a
// change at path p outside the box too (a folder of the system that is
// not the user's), and why; false when they allow it or cannot tell.
type HostDenies func(op fslog.Op, p string) (why string, denied bool)

// SetHostDenies makes the judge report a write the host itself refuses
// the user as the host's, not the box's (no policy change is advised for
// it). Call it before the judge is used.
func (j *Judge) SetHostDenies(h HostDenies) { j.hostDenies = h }

// SetHostRun makes the judge recheck each fix with the registry's search
// (Recheck) before it records or reports it. Call it before the judge is
// used.
func (j *Judge) SetHostRun(h HostRun) { j.hostRun = h }

// New returns the judge for p, completed for its backend. exists tells
// whether a folder exists on the host, for the advice (nil: every folder
// does).
func New(p *plan.Plan, exists func(string) bool) *Judge {
	j := &Judge{p: p, exists: exists}
	for i, m := range p.Mounts {
		switch m.Op {
		case plan.RemountRO:
			// bwrap's remount is not recursive: it makes the mount at
			// this very path read-only, not those bound below it.
			for k := len(j.layers) - 1; k >= 0; k-- {
				if j.layers[k].path == m.Path {
					if j.layers[k].access == plan.ReadWrite {
						j.layers[k].access = plan.ReadOnly
					}
					j.layers[k].mount = i
					break
				}
			}
		default:
			j.layers = append(j.layers, layer{path: m.Path, access: m.Access, mount: i})
		}
	}
	if p.Box.Backend == landlock.Backend {
		if a, err := landlock.AssessmentOf(p); err == nil {
			j.ll = &a
		}
	}
	return j
}

// Func returns the judge as the log takes it.
func (j *Judge) Func() fslog.Judge { return j.Judge }

// cover returns the layer that decides what p is in the box: the last one
// whose path holds it; ok is false when none does.
func (j *Judge) cover(p string) (layer, bool) {
	for k := len(j.layers) - 1; k >= 0; k-- {
		if plan.Within(p, j.layers[k].path) {
			return j.layers[k], true
		}
	}
	return layer{}, false
}

// mountPoint returns the layer mounted exactly at p, other than the root.
func (j *Judge) mountPoint(p string) (layer, bool) {
	for k := len(j.layers) - 1; k >= 0; k-- {
		if j.layers[k].path == p && p != "/" {
			return j.layers[k], true
		}
	}
	return layer{}, false
}

// verdict is a refusal before it becomes an event.
type verdict struct {
	op    fslog.Op
	path  string
	errno string
	layer layer
	// what says what the process met, when it is not an errno: a hidden
	// file reads as empty.
	what string
	// missing are the Landlock rights the call lacked.
	missing []string
	// folder says path is the folder the call was to change, with no
	// entry named (Landlock's audit records).
	folder bool
}

// Judge decides whether the policy refuses a, and if it does returns the
// Denied event that records it.
func (j *Judge) Judge(a fslog.Attempt) (event.Event, bool) {
	if len(a.Targets) == 0 {
		return event.Event{}, false
	}
	var v verdict
	var ok bool
	switch {
	case a.Errno != "":
		v, ok = j.kernel(a)
	case j.ll != nil:
		v, ok = j.landlock(a)
	default:
		v, ok = j.bwrap(a)
	}
	if !ok {
		return event.Event{}, false
	}
	return j.event(v), true
}

// kernel attributes a refusal the kernel itself reported (Landlock's
// audit records) to the rule that covers its path.
func (j *Judge) kernel(a fslog.Attempt) (verdict, bool) {
	t := a.Targets[0]
	l, ok := j.cover(t.Real)
	if !ok || underProc(t.Real) {
		return verdict{}, false
	}
	return verdict{op: a.Op, path: t.Real, errno: a.Errno, layer: l, folder: t.Folder}, true
}

// underProc reports whether p is in /proc, whose rules are the kernel's
// and bwrap's own, not the policy's.
func underProc(p string) bool { return plan.Within(p, "/proc") }

func readOnly(l layer) bool { return l.access != plan.ReadWrite }

// bwrap predicts what the kernel answers under bubblewrap's mounts, in
// the order the kernel checks: a missing path or an existing name fails
// before a read-only mount is looked at, except for removals and renames,
// which look at the mount first.
func (j *Judge) bwrap(a fslog.Attempt) (verdict, bool) {
	t := a.Targets[0]
	if underProc(t.Real) {
		return verdict{}, false
	}
	refuse := func(op fslog.Op, p, errno string, l layer) (verdict, bool) {
		return verdict{op: op, path: p, errno: errno, layer: l}, true
	}
	switch a.Op {
	case fslog.Read:
		l, ok := j.cover(t.Real)
		if !ok || l.access != plan.Hidden {
			return verdict{}, false
		}
		v := verdict{op: fslog.Read, path: t.Real, layer: l}
		switch {
		case !t.Exists:
			v.errno = "ENOENT"
		case t.Dir:
			v.what = "an empty folder in its place"
		default:
			v.what = "an empty file in its place"
		}
		return v, true
	case fslog.Write, fslog.Truncate, fslog.Chmod, fslog.Chown, fslog.Utime, fslog.Xattr:
		if !t.Exists || (t.Dir && (a.Op == fslog.Write || a.Op == fslog.Truncate)) {
			return verdict{}, false // ENOENT or EISDIR: the call's own mistake
		}
		if l, ok := j.cover(t.Real); ok && readOnly(l) {
			return refuse(a.Op, t.Real, "EROFS", l)
		}
	case fslog.Create, fslog.Mkdir, fslog.Symlink, fslog.Link:
		if a.Op == fslog.Link {
			if len(a.Targets) < 2 || !t.Exists {
				return verdict{}, false
			}
			t = a.Targets[1]
		}
		if t.Exists {
			if a.Op == fslog.Create && a.Flags&oExcl == 0 {
				// open(O_CREAT) of an existing file opens it to write.
				return j.bwrap(fslog.Attempt{Op: fslog.Write, Targets: []fslog.Target{t}})
			}
			return verdict{}, false // EEXIST
		}
		if !t.Parent {
			return verdict{}, false // ENOENT
		}
		if l, ok := j.cover(path.Dir(t.Real)); ok && readOnly(l) {
			return refuse(a.Op, t.Real, "EROFS", l)
		}
	case fslog.Remove, fslog.Rmdir, fslog.Rename:
		for i, u := range a.Targets {
			if !u.Parent {
				return verdict{}, false // ENOENT
			}
			if l, ok := j.cover(path.Dir(u.Real)); ok && readOnly(l) {
				return refuse(a.Op, u.Real, "EROFS", l)
			}
			if !u.Exists {
				if i == 0 {
					return verdict{}, false // ENOENT
				}
				continue
			}
			// A mount point cannot be removed or renamed: what the plan
			// pins or binds at a path stays there.
			if l, ok := j.mountPoint(u.Real); ok {
				return refuse(a.Op, u.Real, "EBUSY", l)
			}
		}
	}
	return verdict{}, false
}

// oExcl is O_EXCL, the same on amd64 and arm64 (asm-generic/fcntl.h).
const oExcl = 0o200

// landlock predicts what the kernel answers under the run's Landlock
// rule set: the path is looked up first (a missing path or an existing
// name fails on its own), then the rights are checked; Landlock has no
// right for a file's metadata.
func (j *Judge) landlock(a fslog.Attempt) (verdict, bool) {
	t := a.Targets[0]
	if underProc(t.Real) {
		return verdict{}, false
	}
	check := func(op fslog.Op, obj, at string, names ...string) (verdict, bool) {
		if miss := j.ll.Missing(at, names...); len(miss) > 0 {
			l, _ := j.cover(at)
			return verdict{op: op, path: obj, errno: "EACCES", layer: l, missing: miss}, true
		}
		return verdict{}, false
	}
	switch a.Op {
	case fslog.Read:
		if !t.Exists {
			return verdict{}, false
		}
		if t.Dir {
			return check(fslog.Read, t.Real, t.Real, "read_dir")
		}
		return check(fslog.Read, t.Real, t.Real, "read_file")
	case fslog.Write:
		if !t.Exists || t.Dir {
			return verdict{}, false
		}
		names := []string{"write_file"}
		if a.Flags&oTrunc != 0 {
			names = append(names, "truncate")
		}
		return check(fslog.Write, t.Real, t.Real, names...)
	case fslog.Truncate:
		if !t.Exists || t.Dir {
			return verdict{}, false
		}
		return check(fslog.Truncate, t.Real, t.Real, "truncate")
	case fslog.Chmod, fslog.Chown, fslog.Utime, fslog.Xattr:
		// Landlock has no right for these: agentbox's broker performs
		// them where the box may write the file, and refuses them
		// elsewhere (EACCES).
		if !t.Exists || t.Dir {
			return verdict{}, false
		}
		return check(a.Op, t.Real, t.Real, "write_file")
	case fslog.Create, fslog.Mkdir, fslog.Symlink, fslog.Link:
		right := map[fslog.Op]string{fslog.Create: "make_reg", fslog.Mkdir: "make_dir", fslog.Symlink: "make_sym", fslog.Link: "make_reg"}[a.Op]
		if a.Op == fslog.Link {
			if len(a.Targets) < 2 || !t.Exists {
				return verdict{}, false
			}
			t = a.Targets[1]
		}
		if t.Exists {
			if a.Op == fslog.Create && a.Flags&oExcl == 0 {
				return j.landlock(fslog.Attempt{Op: fslog.Write, Flags: a.Flags, Targets: []fslog.Target{t}})
			}
			return verdict{}, false
		}
		if !t.Parent {
			return verdict{}, false
		}
		return check(a.Op, t.Real, path.Dir(t.Real), right)
	case fslog.Remove, fslog.Rmdir, fslog.Rename:
		if !t.Exists {
			return verdict{}, false
		}
		right := "remove_file"
		if t.Dir || a.Op == fslog.Rmdir {
			right = "remove_dir"
		}
		if v, ok := check(a.Op, t.Real, path.Dir(t.Real), right); ok {
			return v, true
		}
		if a.Op == fslog.Rename && len(a.Targets) == 2 {
			d := a.Targets[1]
			if !d.Parent {
				return verdict{}, false
			}
			make := "make_reg"
			if t.Dir {
				make = "make_dir"
			}
			return check(a.Op, d.Real, path.Dir(d.Real), make)
		}
	}
	return verdict{}, false
}

// oTrunc is O_TRUNC, the same on amd64 and arm64.
const oTrunc = 0o1000

// event turns a verdict into the Denied event: the rule with its origin,
// how the backend enforces it, and the smallest change that allows it.
func (j *Judge) event(v verdict) event.Event {
	m := j.p.Mounts[v.layer.mount]
	e := event.Event{Kind: event.Denied, Op: string(v.op), Path: v.path, Errno: v.errno,
		Rule: m.Stage.String() + " " + m.Path + " (" + m.Origin.String() + ")"}
	var why []string
	if v.layer.mount < len(j.p.Box.Rules) {
		if r := j.p.Box.Rules[v.layer.mount]; r.Path == m.Path && r.How != "" {
			how := r.How
			if r.Level != plan.Enforced {
				how = string(r.Level) + ": " + how
			}
			why = append(why, how)
		}
	}
	if len(why) == 0 && v.what != "" {
		why = append(why, v.what)
	}
	if len(v.missing) > 0 {
		why = append(why, fmt.Sprintf("landlock: no %s right on %s", strings.Join(v.missing, ", "), dirOf(v)))
	}
	if v.folder {
		// The kernel named the folder, not the entry.
		e.Op += " in"
	}
	e.Reason = strings.Join(why, "; ")
	p := v.path
	if v.folder {
		p = path.Join(v.path, "*")
	}
	var fix Fix
	if why, denied := j.hostRefuses(v.op, v.path); denied {
		fix = Fix{Host: true, Why: why}
	} else {
		fix = Recheck(j.p, Advise(j.p, v.op, p, m, j.exists), j.hostRun)
	}
	e.Detail = fix.String()
	j.remember(fix, e)
	return e
}

// hostRefuses says whether the host refuses the user op on p outside the
// box too: only writes, and only what the policy does not hide (a hidden
// path's refusal is the box's).
func (j *Judge) hostRefuses(op fslog.Op, p string) (string, bool) {
	if j.hostDenies == nil || op == fslog.Read {
		return "", false
	}
	return j.hostDenies(op, p)
}

// Refused is the refusals one fix would allow: the fix, how many, and the
// first, as the summary names it.
type Refused struct {
	Fix   Fix
	Count int
	// First is the first refusal: "create ~/.npm/_cacache/x, EROFS".
	First string
	// Rule is the rule that refused it, with its origin.
	Rule string
}

// maxRemembered bounds the fixes a judge remembers.
const maxRemembered = 256

func (j *Judge) remember(fix Fix, e event.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	key := fix.String()
	if r := j.seen[key]; r != nil {
		r.Count++
		return
	}
	if len(j.order) >= maxRemembered {
		return
	}
	if j.seen == nil {
		j.seen = map[string]*Refused{}
	}
	r := &Refused{Fix: fix, Count: 1, First: e.Op + " " + tilde(j.p, e.Path) + ", " + e.Errno, Rule: e.Rule}
	if e.Errno == "" {
		r.First = e.Op + " " + tilde(j.p, e.Path)
	}
	j.seen[key] = r
	j.order = append(j.order, r)
}

// Fix returns the fix whose text (Fix.String, an event's Detail) is
// detail, among those the judge gave.
func (j *Judge) Fix(detail string) (Fix, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r := j.seen[detail]; r != nil {
		return r.Fix, true
	}
	return Fix{}, false
}

// Refusals returns what the judge refused, by fix, in the order first
// seen.
func (j *Judge) Refusals() []Refused {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Refused, len(j.order))
	for i, r := range j.order {
		out[i] = *r
	}
	return out
}

func dirOf(v verdict) string {
	if v.folder {
		return v.path
	}
	switch v.op {
	case fslog.Create, fslog.Mkdir, fslog.Symlink, fslog.Link, fslog.Remove, fslog.Rmdir, fslog.Rename:
		return path.Dir(v.path)
	}
	return v.path
}

// Access returns what the path p is in the box by the plan's mounts
// (read-write, read-only or hidden), and false when no mount covers it.
func (j *Judge) Access(p string) (plan.Access, bool) {
	l, ok := j.cover(p)
	return l.access, ok
}
