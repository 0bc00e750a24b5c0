package supervise

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// The Windows side of the registry of what host programs run or obey
// (package hostexec): an after-run check, and a pending record so that
// the next run does it when agentbox was killed.
//
// Windows keeps by ACLs what Linux keeps by mounts: what exists and is
// kept read-only gets a deny-write ACE for the sandbox users (package
// winsandbox). What does not exist cannot carry an ACE; the backend puts
// placeholders where they fit (missing control folders, a git folder's
// missing commondir and config.worktree) for the run, and removes them
// before this check. Everything the registry keeps that the box may
// create or change is
// neutralised after the run, with every process of the run ended (the
// backend ends its job first): what appeared where a guard found nothing
// (a .claude\settings.json, a .vscode, a .git\commondir), the guards in
// folders a package manager replaces wholesale (recorded before the run
// and put back), and, anywhere in the writable roots, new repositories,
// new commondir or config.worktree files in any git folder, new control
// files, and links (symbolic links and junctions) that lead into what the
// box writes outside the roots. The plan says so for each guard
// (winsandbox.Complete marks them "checked" or "restored").

// runGuard is one run's side of the registry: its pending record and what
// it recorded before the run.
type runGuard struct {
	p       *plan.Plan
	ev      event.Emitter
	pending string // <state>\pending\<run>.json, "" when it could not be written
	recs    []guardRecord
	// explorer is the files Explorer follows (explorer.go) found in the
	// writable roots before the run.
	explorer explorerRecord
	done     bool
}

// pendingRecord is what a run's pending record holds: the process that
// runs the check (a record whose process is gone belongs to a run whose
// agentbox was killed), and what the check needs.
type pendingRecord struct {
	Run      string        `json:"run"`
	PID      uint32        `json:"pid"`
	Started  int64         `json:"started"`
	HostExec plan.HostExec `json:"host_exec"`
	Records  []guardRecord `json:"records,omitempty"`
	// Explorer is the record of the files Explorer follows from before
	// the run; a record without one (incomplete) keeps none of them.
	Explorer explorerRecord `json:"explorer"`
}

// startGuard does, before the box starts: the check of every earlier run
// whose agentbox was killed, the folders agentbox owns (Prepare), and the
// record of the guards kept by restoring.
func startGuard(p *plan.Plan, ev event.Emitter) (*runGuard, error) {
	g := &runGuard{p: p, ev: ev}
	if err := recoverPending(p.HostExec.State, p.RunID, ev); err != nil {
		return nil, err
	}
	if err := Prepare(p); err != nil {
		return nil, err
	}
	recs, err := record(&p.HostExec)
	if err != nil {
		return nil, err
	}
	g.recs = recs
	if len(p.HostExec.Roots) > 0 {
		var err error
		if g.explorer, err = recordExplorer(p.HostExec.Roots); err != nil {
			ev.Emit(event.Event{Kind: event.Warning, Detail: "the writable roots could not be searched to the end for files Explorer follows (" + err.Error() + "): after the run every such file there but the unchanged ones found is moved away"})
		}
	}
	return g, nil
}

// saveRecord writes the pending record.
func (g *runGuard) saveRecord(cgroups []string) error {
	h := &g.p.HostExec
	if h.State == "" || len(h.Roots) == 0 {
		return nil
	}
	dir := filepath.Join(h.State, "pending")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		g.ev.Emit(event.Event{Kind: event.Warning, Detail: "no pending record in " + event.Escape(dir) + " (" + err.Error() + "): if agentbox is killed, the next run cannot do this run's after-run check"})
		return nil
	}
	pid, started := self()
	data, err := json.Marshal(pendingRecord{Run: g.p.RunID, PID: pid, Started: started, HostExec: *h, Records: g.recs, Explorer: g.explorer})
	if err == nil {
		path := filepath.Join(dir, safeRun(g.p.RunID)+".json")
		if err = os.WriteFile(path, data, 0o600); err == nil {
			g.pending = path
			return nil
		}
	}
	g.ev.Emit(event.Event{Kind: event.Warning, Detail: "writing the pending record: " + err.Error()})
	return nil
}

func (g *runGuard) started(pid int) {}

// prepared is nil: the folders are not pinned by descriptor here.
func (g *runGuard) prepared() map[string]*os.File { return nil }

// check is the after-run check; every process of the run has ended. When
// it cannot finish, the pending record stays for the next run.
func (g *runGuard) check() error {
	if err := check(&g.p.HostExec, g.p.RunID, g.recs, g.explorer, g.ev); err != nil {
		g.done = true // keeps the record
		return err
	}
	g.release()
	return nil
}

// release removes the pending record once the check is done (or when the
// run did not start).
func (g *runGuard) release() {
	if g.done {
		return
	}
	g.done = true
	if g.pending != "" {
		os.Remove(g.pending)
	}
}

// Recover does the after-run check of every run whose agentbox was killed
// before it could, or whose check could not finish (its pending record is
// left, and its process is gone). An error is a check that still cannot
// finish: the run must not start.
func Recover(state string, ev event.Emitter) error { return recoverPending(state, "", ev) }

func recoverPending(state, self string, ev event.Emitter) error {
	if state == "" {
		return nil
	}
	dir := filepath.Join(state, "pending")
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var failed error
	for _, n := range names {
		run, ok := strings.CutSuffix(n.Name(), ".json")
		if !ok || run == safeRun(self) {
			continue
		}
		path := filepath.Join(dir, n.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var rec pendingRecord
		if json.Unmarshal(data, &rec) != nil {
			ev.Emit(event.Event{Kind: event.Warning, Detail: "unreadable pending record " + event.Escape(path) + ": left as it is"})
			continue
		}
		if alive(rec.PID, rec.Started) {
			continue
		}
		ev.Emit(event.Event{Kind: event.Warning, Detail: fmt.Sprintf("run %s ended without a finished after-run check (agentbox was killed, or the check could not finish): doing it now", rec.Run)})
		if KeptByLiveRuns != nil {
			KeptByLiveRuns(&rec.HostExec)
		}
		if err := check(&rec.HostExec, rec.Run, rec.Records, rec.Explorer, ev); err != nil {
			if failed == nil {
				failed = err
			}
			continue
		}
		os.Remove(path)
	}
	return failed
}

// KeptByLiveRuns, when set (package box sets it to winsandbox's
// MarkLivePlaceholders), marks among the guards of a killed run's plan the
// places where a live run of this user holds its placeholder, still the
// very one made, before the killed run's check: without it that check,
// done by a later run, took the placeholder for something the killed
// run's box planted and moved it away from the live run that relies on it.
var KeptByLiveRuns func(h *plan.HostExec)

// safeRun is a run ID as a file name.
func safeRun(run string) string {
	if run == "" {
		return "run"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, run)
}

// self is this process's ID and creation time.
func self() (uint32, int64) {
	var c, e, k, u windows.Filetime
	windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u)
	return windows.GetCurrentProcessId(), c.Nanoseconds()
}

// alive reports whether process pid, created at started, still runs (a
// reused process ID has another creation time).
func alive(pid uint32, started int64) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var c, e, k, u windows.Filetime
	if windows.GetProcessTimes(h, &c, &e, &k, &u) != nil {
		return false
	}
	var code uint32
	windows.GetExitCodeProcess(h, &code)
	return c.Nanoseconds() == started && code == 259 // STILL_ACTIVE
}

func subreaper()    {}
func endAll() []int { return nil }
