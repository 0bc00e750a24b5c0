package box

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/supervise"
)

// LogRequest is the command line of `agentbox log`.
type LogRequest struct {
	// JSON prints the events as stored, one object per line.
	JSON bool
	// Follow prints new events as they are recorded, until interrupted.
	Follow bool
	// Denials keeps the runs with denials and lists them.
	Denials bool
	// Project, Workspace and Run select runs (see event.Filter).
	Project, Workspace, Run string
	// Last is how many runs to show, the most recent; 0 for all.
	Last int
	// Args are the command's arguments: it takes none.
	Args []string
}

// Log shows the audit log: the recent runs, one line each; with Run, that
// run's events; with Follow, new events as they come.
func Log(req LogRequest, w io.Writer) error {
	if len(req.Args) > 0 {
		return hint(fmt.Errorf("log takes no arguments, got %q", req.Args[0]), "select runs with --run ID, --project DIR, --workspace ID or --denials")
	}
	if req.Last < 0 {
		return fmt.Errorf("log: -n %d: want a number of runs, 0 for all", req.Last)
	}
	env, err := World()
	if err != nil {
		return err
	}
	f := event.Filter{Run: req.Run, Workspace: req.Workspace, Denials: req.Denials, Last: req.Last}
	if req.Run != "" {
		f.Last = 0
	}
	if req.Project != "" {
		if f.Project, err = projectDir(req.Project, env.Cwd); err != nil {
			return err
		}
	}
	dir := policy.LogDir(env)
	if req.Follow {
		return follow(dir, f, req.JSON, w)
	}
	c, err := event.ReadLog(dir)
	if err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	for _, s := range c.Skipped {
		fmt.Fprintf(os.Stderr, "agentbox: warning: audit log: %s\n", event.Escape(s))
	}
	runs, err := f.Select(c.Runs)
	if err != nil {
		return err
	}
	switch {
	case req.JSON:
		for _, r := range runs {
			for _, line := range r.Lines {
				if _, err := fmt.Fprintf(w, "%s\n", line); err != nil {
					return err
				}
			}
		}
	case len(runs) == 0 && (f.Project != "" || f.Workspace != "" || f.Denials):
		fmt.Fprintf(w, "no runs recorded in %s match\n", dir)
	case len(runs) == 0:
		fmt.Fprintf(w, "no runs recorded in %s\n", dir)
	case req.Run != "":
		for _, e := range runs[0].Events {
			event.WriteEvent(w, e, time.Local)
		}
	default:
		event.WriteRuns(w, runs, req.Denials, time.Local)
	}
	return nil
}

// projectDir makes --project absolute, with its links resolved when it
// exists, as the project of a run is stored.
func projectDir(dir, cwd string) (string, error) {
	if dir == "" {
		return "", errors.New("log: --project needs a folder")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(cwd, dir)
	}
	dir = filepath.Clean(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir, nil
}

// follow prints the events recorded from now on that f keeps, until
// SIGINT or SIGTERM. Events of a run pass the project and workspace
// filters when its start did.
func follow(dir string, f event.Filter, asJSON bool, w io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	kept := map[string]bool{}
	return event.Follow(ctx, dir, func(e event.Event, line []byte) {
		if e.Kind == event.RunStart {
			r := &event.Run{ID: e.Run, Start: &e}
			kept[e.Run] = event.Filter{Project: f.Project, Workspace: f.Workspace}.Keep(r)
		}
		switch {
		case !strings.HasPrefix(e.Run, f.Run):
			return
		case (f.Project != "" || f.Workspace != "") && !kept[e.Run]:
			return
		case f.Denials && e.Kind != event.Denied && (e.Kind != event.Net || e.Allowed == nil || *e.Allowed):
			return
		}
		if asJSON {
			fmt.Fprintf(w, "%s\n", line)
		} else {
			event.WriteEvent(w, e, time.Local)
		}
	})
}

// auditLog opens the audit log for a run of p, or returns nil: when the
// policy turns it off, or when it cannot be opened, which one warning line
// says (the run goes on, unrecorded). A later write failure is one
// warning line as well, and the run's other events are not recorded.
func auditLog(p *plan.Plan, stderr io.Writer) event.Sink {
	if !p.Log.Enabled {
		return nil
	}
	l, err := event.OpenLog(p.Log.Dir, event.LogOptions{Warn: func(err error) {
		fmt.Fprintf(stderr, "agentbox: warning: audit log: %v; the rest of this run is not recorded\n", err)
	}})
	if err != nil {
		if p.Depth > 1 && errors.Is(err, syscall.EROFS) {
			// Inside another box, whose state folder is read-only: the
			// outer run is recorded, and its log records what this
			// one is refused; a warning on every nested run says
			// nothing new.
			return nil
		}
		fmt.Fprintf(stderr, "agentbox: warning: audit log: %v; this run is not recorded\n", err)
		return nil
	}
	return l
}

// logUnconfined records that p runs unconfined: its start only, as the
// command is exec'd in agentbox's place and nothing is left to see it end.
func logUnconfined(p *plan.Plan, stderr io.Writer) {
	sink := auditLog(p, stderr)
	if sink == nil {
		return
	}
	s := event.NewStream(p.RunID, sink)
	s.Emit(event.Event{Kind: event.RunStart, Digest: p.Digest(), Command: p.Command, Cwd: p.Cwd,
		Project: supervise.Project(p), Workspace: p.Workspace.ID, Network: p.Network.Mode,
		Reason: "running unconfined (best-effort): " + p.Box.Degraded})
	s.Close()
}
