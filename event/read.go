package event

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxLine is the longest line the reader takes; the writer never stores
// one nearly as long (one event is clipped to a few KiB).
const maxLine = 1 << 20

// Run is one run as the audit log recorded it.
type Run struct {
	ID string
	// Start and End are the run's start and end, nil when not recorded
	// (rotated away, still running, or agentbox was killed).
	Start, End *Event
	// Events are every event of the run, in the order stored; Lines are
	// the same events as stored.
	Events []Event
	Lines  [][]byte
	// Denied counts the network and filesystem denials, Quarantined the
	// items the after-run checks neutralised, Limits the limits hit, and
	// Dropped the events left out at the cap (already in the other counts
	// by their kind).
	Denied, Quarantined, Limits, Dropped int
}

// Denials returns the run's recorded denials, network and filesystem.
func (r *Run) Denials() []Event {
	var out []Event
	for _, e := range r.Events {
		if isDenial(e) {
			out = append(out, e)
		}
	}
	return out
}

func isDenial(e Event) bool {
	return e.Kind == Denied || (e.Kind == Net && e.Allowed != nil && !*e.Allowed)
}

func (r *Run) add(e Event, line []byte) {
	r.Events = append(r.Events, e)
	r.Lines = append(r.Lines, line)
	switch {
	case e.Kind == RunStart:
		r.Start = &e
	case e.Kind == RunEnd:
		r.End = &e
	case isDenial(e):
		r.Denied++
	case e.Kind == Quarantine:
		r.Quarantined++
	case e.Kind == Limit:
		r.Limits++
	case e.Kind == Dropped:
		for k, n := range e.Counts {
			r.Dropped += n
			switch k {
			case "net-denied", string(Denied):
				r.Denied += n
			case string(Quarantine):
				r.Quarantined += n
			case string(Limit):
				r.Limits += n
			}
		}
	}
}

// Contents is what ReadLog found: the runs, in the order of their first
// event, and what it could not read.
type Contents struct {
	Runs []*Run
	// Skipped says, one line each, which files or lines could not be read.
	Skipped []string
}

// ReadLog reads the audit log folder dir: the rotated files, oldest first,
// then the current one. The folder and the files are opened as the writer
// opens them (no symbolic links; only the user's own regular files). A
// folder that does not exist is an empty log.
func ReadLog(dir string) (*Contents, error) {
	d, err := openFolder(dir, os.Geteuid(), false)
	if errors.Is(err, os.ErrNotExist) {
		return &Contents{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.names()
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	c := &Contents{}
	byID := map[string]*Run{}
	for _, name := range append(RotatedNames(names), Current) {
		f, err := d.open(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			c.Skipped = append(c.Skipped, err.Error())
			continue
		}
		bad := 0
		err = eachLine(f, func(line []byte) {
			e, ok := parse(line)
			if !ok {
				bad++
				return
			}
			r := byID[e.Run]
			if r == nil {
				r = &Run{ID: e.Run}
				byID[e.Run] = r
				c.Runs = append(c.Runs, r)
			}
			r.add(e, line)
		})
		f.Close()
		if err != nil {
			c.Skipped = append(c.Skipped, fmt.Sprintf("reading %s: %v", name, err))
		}
		switch {
		case bad == 1:
			c.Skipped = append(c.Skipped, name+": 1 line that is not an event")
		case bad > 1:
			c.Skipped = append(c.Skipped, fmt.Sprintf("%s: %d lines that are not events", name, bad))
		}
	}
	return c, nil
}

// parse reads one stored line; a line that is not an event of a run is
// not ok.
func parse(line []byte) (Event, bool) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil || e.Run == "" || e.Kind == "" {
		return Event{}, false
	}
	// Stored text is escaped already; escaping what a hand-edited line
	// holds keeps the reader as safe as the writer.
	return Stored(e), true
}

// eachLine calls fn with every complete line of r, without its newline.
// Longer lines than maxLine are skipped whole, and so is a last line
// without a newline (an event still being written).
func eachLine(r io.Reader, fn func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > maxLine {
				long, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
		switch line := bytes.TrimSuffix(buf, []byte("\n")); {
		case long:
			fn(nil) // not an event: counted as such
		case len(line) > 0:
			fn(append([]byte(nil), line...))
		}
		long, buf = false, buf[:0]
	}
}

// Filter selects runs.
type Filter struct {
	// Run is a run ID, or a prefix of one that only one run has.
	Run string
	// Project keeps runs whose project is this folder or lies below it.
	Project string
	// Workspace keeps runs in this workspace.
	Workspace string
	// Denials keeps runs with at least one denial.
	Denials bool
	// Last keeps the last this many runs of what is left; 0 keeps all.
	Last int
}

// Select returns the runs f keeps, in order. A Run that matches no run, or
// more than one, is an error.
func (f Filter) Select(runs []*Run) ([]*Run, error) {
	if f.Run != "" {
		var hit []*Run
		for _, r := range runs {
			if r.ID == f.Run {
				return []*Run{r}, nil
			}
			if strings.HasPrefix(r.ID, f.Run) {
				hit = append(hit, r)
			}
		}
		switch len(hit) {
		case 0:
			return nil, fmt.Errorf("no run %s in the audit log", Escape(f.Run))
		case 1:
			return hit, nil
		}
		return nil, fmt.Errorf("%d runs start with %s: give more of the ID", len(hit), Escape(f.Run))
	}
	var out []*Run
	for _, r := range runs {
		if f.Keep(r) {
			out = append(out, r)
		}
	}
	if f.Last > 0 && len(out) > f.Last {
		out = out[len(out)-f.Last:]
	}
	return out, nil
}

// Keep reports whether the run passes the project, workspace and denial
// filters.
func (f Filter) Keep(r *Run) bool {
	if f.Project != "" && (r.Start == nil || !within(r.Start.Project, Escape(f.Project))) {
		return false
	}
	if f.Workspace != "" && (r.Start == nil || r.Start.Workspace != Escape(f.Workspace)) {
		return false
	}
	return !f.Denials || r.Denied > 0
}

// within reports whether path is dir or lies below it.
func within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	dir = strings.TrimRight(dir, `/\`)
	return path == dir || strings.HasPrefix(path, dir+"/") || strings.HasPrefix(path, dir+`\`)
}
