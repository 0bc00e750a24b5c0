// Package backend is the one interface every sandbox backend implements
// (bubblewrap, Landlock, Windows) and the one place that chooses between
// them. A backend says whether it can run here, completes a resolved plan
// with what it will do (Box: how it enforces each rule, what it renders),
// describes that for `agentbox plan`, runs the frozen plan, and checks from
// inside a box what a process can verify for itself.
//
// Adding a backend is one package that implements Backend plus one line in
// the list the CLI passes to Select.
//
// What does not belong here: anything a backend does (its own package), the
// host-side supervision every backend shares (package supervise), policy
// (package policy).
package backend

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/plan"
)

// Backend confines a command as a plan says.
type Backend interface {
	// Name is the backend's name in policies, on the command line and in
	// AGENTBOX_BACKEND.
	Name() string
	// Available reports whether the backend can confine commands on this
	// machine: nil, or an error saying why not. An error with a Fix method
	// names the fix.
	Available() error
	// Complete fills in p.Box for this backend: how each rule is
	// enforced, what CMD is told, and the backend's own rendering. It runs
	// during resolution, before the plan is frozen, and may add to the
	// plan what the backend needs (a per-run folder to create); it starts
	// nothing. A plan completed twice is completed the same way.
	Complete(p *plan.Plan) error
	// Describe writes what `agentbox plan` shows for this backend after
	// the common table, one line each; a table's rows carry plan.Fit's
	// marks (plan.Cell, plan.Why) and its names go through plan.Escape.
	Describe(p *plan.Plan, w io.Writer)
	// Run runs the completed, frozen plan's command confined and returns
	// its exit status. It never changes p. An error is agentbox's own
	// failure (exit 125) unless it is a *StatusError.
	Run(p *plan.Plan, c *Context) (int, error)
	// SelfCheck tells, from inside a box of this backend, what the calling
	// process can verify for itself, and whether that is consistent with
	// being confined.
	SelfCheck() (string, bool)
}

// Context is what a run needs besides the plan.
type Context struct {
	// Self is the agentbox executable (the init inside the box, the
	// Landlock child, the Windows runner are agentbox itself).
	Self string
	// NetLog is the file the allowlist proxy logs every connection to, or "".
	NetLog string
	// Events receives what happens during the run.
	Events event.Emitter
	// Stdin, Stdout and Stderr are the caller's streams.
	Stdin, Stdout, Stderr *os.File
	// Started is called by the backend right after it started the first
	// process of the box (every later process of the box descends from
	// it), with its pid (0 when it could not be started). The supervisor
	// uses it to leave the box's cgroup and to record the box's process
	// group.
	Started func(pid int)
	// Prepared holds the folders of the plan's Prepare list that the
	// supervisor made and checked, opened by descriptor (on Linux; nil
	// elsewhere). A backend hands the box these descriptors rather than
	// looking the paths up again, so what was checked is what the box
	// gets. The supervisor closes them after Run.
	Prepared map[string]*os.File
	// Judge decides which filesystem calls the policy refuses, for the
	// filesystem log (plan.Log.Filesystem); nil for no log.
	Judge fslog.Judge
	// FSLog is the box's end of the filesystem log's socket, which the
	// backend passes to the box's first process when the plan records
	// filesystem refusals (the supervisor sets it).
	FSLog *os.File
	// PreloadPipe is the write end of the preloaded log's pipe (Landlock),
	// which the box's first process puts at plan.PreloadFD, without
	// close-on-exec, for every program of the box; nil when there is none.
	PreloadPipe *os.File
	// CgroupFD is the run's own cgroup (a descriptor of its folder), into
	// which a backend that is Tracked clones the box's first process
	// (CLONE_INTO_CGROUP); 0 when there is none.
	CgroupFD int
}

// Brokered is implemented by a backend that leaves some calls of the box to
// the supervisor to decide (Landlock: the metadata calls it has no right
// for). Broker starts the broker for p's run, given the folders the
// supervisor prepared; the supervisor hands it the box's notification
// listener (fslog.Start) and stops it with stop after the run. A broker
// that cannot start fails the run: the calls it decides would fail in the
// box.
type Brokered interface {
	Broker(p *plan.Plan, prepared map[string]*os.File) (b fslog.Broker, stop func(), err error)
}

// Tracked is implemented by a backend whose box has no PID namespace of its
// own (Landlock): nothing in the kernel ends the box's processes with the
// run. The supervisor then makes the run a cgroup of its own where the
// machine allows it (root, or a delegated cgroup v2) and passes it in
// Context.CgroupFD; at the run's end, and in a later run after agentbox
// was killed, every process in it is killed at once, whatever state it is
// in and wherever it moved in the process tree.
type Tracked interface {
	// TrackedByCgroup reports whether the backend clones the box's first
	// process into Context.CgroupFD.
	TrackedByCgroup() bool
}

// Emit sends e to c.Events, if any.
func (c *Context) Emit(e event.Event) {
	if c != nil && c.Events != nil {
		c.Events.Emit(e)
	}
}

// StatusError is a failure that has an exit status of its own: 126 when
// CMD cannot be executed, 127 when it is not found.
type StatusError struct {
	Status int
	Err    error
}

func (e *StatusError) Error() string { return e.Err.Error() }
func (e *StatusError) Unwrap() error { return e.Err }

// Unavailable is why a backend cannot run here, and the fix.
type Unavailable struct {
	// Code names the reason in AGENTBOX_DEGRADED ("bwrap-missing"); the
	// backend's name and "-unavailable" when empty.
	Code   string
	Reason string
	Fix    string
}

func (u *Unavailable) Error() string { return u.Reason }

// Hints returns the fix, for the CLI's hint lines.
func (u *Unavailable) Hints() []string {
	if u.Fix == "" {
		return nil
	}
	return []string{u.Fix}
}

// hinted is an error with hint lines.
type hinted struct {
	err   error
	hints []string
}

func (h *hinted) Error() string   { return h.err.Error() }
func (h *hinted) Unwrap() error   { return h.err }
func (h *hinted) Hints() []string { return h.hints }

// withHints adds hint lines to err, keeping the ones it already has.
func withHints(err error, hints ...string) error {
	var all []string
	var h interface{ Hints() []string }
	if errors.As(err, &h) {
		all = append(all, h.Hints()...)
	}
	for _, s := range hints {
		if s != "" {
			all = append(all, s)
		}
	}
	return &hinted{err: err, hints: all}
}

// Find returns the backend called name.
func Find(all []Backend, name string) (Backend, bool) {
	for _, b := range all {
		if b.Name() == name {
			return b, true
		}
	}
	return nil, false
}

// Names returns the names of all, in order.
func Names(all []Backend) []string {
	var out []string
	for _, b := range all {
		out = append(out, b.Name())
	}
	return out
}

// Choice is the backend that will confine the command, or why none does.
type Choice struct {
	// Backend confines the command; nil when it runs unconfined.
	Backend Backend
	// Degraded is why the command runs unconfined (best-effort only).
	Degraded string
	// Passed are the backends auto passed over, with the reason for each.
	Passed []string
}

// Prep makes of p what a confined run with b gets before b completes it
// (the caller's own changes for a confined run). Like Complete, it may
// only set fields of p, never write into what p's slices and maps already
// hold, so that Select can undo it.
type Prep func(p *plan.Plan, b Backend)

// Select picks the backend for p from all, in order: the one the plan asks
// for, or under "auto" the first that is available here and enforces every
// rule of the plan. When none can, it is an error under enforce =
// "require" and a degraded (unconfined) choice under "best-effort", with
// the reason.
//
// Select completes the chosen backend on p itself, once: for each
// candidate it calls prep (when not nil), sets p.Box.Passed to the
// backends passed over so far and calls Complete; a candidate that cannot
// confine p is undone by restoring a shallow copy of p taken before, which
// is enough because neither prep nor Complete writes into what p's slices
// and maps hold (package box tests every backend for it). So p is complete
// for Choice.Backend when one is chosen, and as it was when none is.
// Completing every candidate on a deep copy, then the chosen one again,
// cost more than the rest of the choice.
func Select(p *plan.Plan, all []Backend, prep Prep) (Choice, error) {
	if p.Provider.Name != "" && !p.Provider.Supported {
		err := withHints(fmt.Errorf("provider %s has not been verified to work inside the sandbox", p.Provider.Name),
			"if you know the paths it writes, declare them in a policy:",
			fmt.Sprintf("  [providers.%s]", p.Provider.Name),
			fmt.Sprintf("  writable = [\"~/.%s\"]", p.Provider.Name),
			"  sandbox = true",
			"or run it unconfined with --best-effort, or treat it as a plain command with --provider none")
		return degrade(p, "provider-unsupported:"+p.Provider.Name, nil, err)
	}
	if p.Backend != "auto" && p.Backend != "" {
		b, ok := Find(all, p.Backend)
		if !ok {
			return degrade(p, p.Backend+"-unknown", nil, withHints(
				fmt.Errorf("backend %q: no such backend (known: auto, %s)", p.Backend, strings.Join(Names(all), ", "))))
		}
		if err := usable(b, p, nil, prep); err != nil {
			code := b.Name() + "-unavailable"
			var u *Unavailable
			if errors.As(err, &u) && u.Code != "" {
				code = u.Code
			}
			return degrade(p, code, nil, withHints(err, "run `agentbox doctor` to see what this machine can enforce"))
		}
		return Choice{Backend: b}, nil
	}
	var passed []string
	var errs []error
	for _, b := range all {
		err := usable(b, p, passed, prep)
		if err == nil {
			return Choice{Backend: b, Passed: passed}, nil
		}
		passed = append(passed, b.Name()+": "+firstLine(err))
		errs = append(errs, err)
	}
	var hints []string
	for _, e := range errs {
		var h interface{ Hints() []string }
		if errors.As(e, &h) {
			hints = append(hints, h.Hints()...)
		}
	}
	hints = append(hints, "run `agentbox doctor` for what this machine can enforce and how to fix it")
	return degrade(p, "no-backend", passed, withHints(
		fmt.Errorf("no backend can confine this command here: %s", strings.Join(passed, "; ")), hints...))
}

// usable completes p for b and returns nil, or reports why b cannot
// confine p here and leaves p as it was.
func usable(b Backend, p *plan.Plan, passed []string, prep Prep) error {
	if err := b.Available(); err != nil {
		return err
	}
	saved := *p
	if prep != nil {
		prep(p, b)
	}
	p.Box.Passed = passed
	if err := b.Complete(p); err != nil {
		*p = saved
		return err
	}
	if ne := p.Box.NotEnforced(); len(ne) > 0 {
		*p = saved
		var lines []string
		for _, r := range ne {
			s := r.Rule
			if r.Path != "" {
				s += " " + r.Path
			}
			lines = append(lines, s+": "+r.How)
		}
		return fmt.Errorf("%s cannot enforce: %s", b.Name(), strings.Join(lines, "; "))
	}
	return nil
}

// degrade returns err under require, and an unconfined choice with the
// reason under best-effort.
func degrade(p *plan.Plan, reason string, passed []string, err error) (Choice, error) {
	if p.Enforce == plan.BestEffort {
		return Choice{Degraded: reason + ": " + firstLine(err), Passed: passed}, nil
	}
	return Choice{Passed: passed}, err
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// FirstAvailable is what auto picks before a plan is known (agentbox
// doctor): the first backend available here, and why each one before it
// was passed over. nil when none is.
func FirstAvailable(all []Backend) (Backend, []string) {
	var passed []string
	for _, b := range all {
		err := b.Available()
		if err == nil {
			return b, passed
		}
		passed = append(passed, b.Name()+": "+firstLine(err))
	}
	return nil, passed
}
