package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The audit log is a folder of JSON Lines files: Current is appended to,
// and when it grows past LogOptions.MaxSize it is renamed to a rotated
// name (RotatedPrefix, the UTC time of the rotation, ".jsonl"), which
// sorts in the order the files were rotated. The oldest rotated files
// beyond LogOptions.Keep are removed.
const (
	// Current is the file new events are appended to.
	Current = "events.jsonl"
	// RotatedPrefix starts the name of every rotated file.
	RotatedPrefix = "events-"
)

// Defaults of LogOptions.
const (
	// DefaultMaxSize is the size past which the current file is rotated.
	DefaultMaxSize = 4 << 20
	// DefaultKeep is how many rotated files are kept: with the current
	// file, the log never holds much more than 5 × DefaultMaxSize.
	DefaultKeep = 4
	// DefaultCap is how many events of one run are recorded besides its
	// start and end. A box decides how many connections it opens and how
	// many files it leaves behind; past the cap it only adds to the counts
	// of the one Dropped event.
	DefaultCap = 1000
)

// maxText and maxCommand bound what one event stores: a host name, path
// or message is clipped at maxText bytes, the command at maxCommand bytes
// in all, so one line stays small and one write puts it whole.
const (
	maxText    = 1024
	maxCommand = 4096
)

// LogOptions tune the audit log; a zero field takes its default.
type LogOptions struct {
	MaxSize int64
	Keep    int
	Cap     int
	// Warn is called once, with the reason, the first time an event
	// cannot be recorded; the log records nothing more after a write
	// failed.
	Warn func(error)
}

// Log is the audit log sink: every event of a run as one JSON object per
// line, appended to the log folder's current file. It runs in the
// supervisor, on the host, never in the box.
//
// Concurrent runs share the folder safely: each event is one write(2) to a
// file opened with O_APPEND, so lines never interleave. Rotation needs no
// lock (a lock on a file or folder that a boxed process can open, even
// read-only, would be a lock the box can hold): a rotation is one rename
// that never replaces a file, so two runs rotating at once rename the file
// once, and a run that finds its file rotated by another reopens the
// current one.
//
// What is stored is never an environment value or file contents: names,
// paths, hosts, statuses and counts. Every string is escaped (Escape) and
// clipped before it is stored, so no terminal or log reader (jq -r
// included) can be made to act on text the box chose.
type Log struct {
	mu      sync.Mutex
	dir     *folder
	opts    LogOptions
	f       *os.File
	n       int            // events recorded besides start and end
	dropped map[string]int // events left out, by kind
	run     string         // the run of the events, for the Dropped event
	broken  bool           // a write failed: record nothing more
	closed  bool
}

// OpenLog opens the audit log in the folder dir for writing, creating it
// (0700) and its parent as needed. The folder and the current file are
// opened without following symbolic links, and refused unless they are a
// folder and a regular file that belong to the user (the file with no
// other hard link); group and other permissions are taken away from
// both (new ones are made 0700 and 0600).
func OpenLog(dir string, opts LogOptions) (*Log, error) {
	return openLog(dir, opts, os.Geteuid())
}

func openLog(dir string, opts LogOptions, owner int) (*Log, error) {
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.Cap <= 0 {
		opts.Cap = DefaultCap
	}
	fd, err := openFolder(dir, owner, true)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: fd, opts: opts, dropped: map[string]int{}}
	if l.f, err = fd.create(Current); err != nil {
		fd.Close()
		return nil, err
	}
	return l, nil
}

// Emit records e. Past the cap, events other than the run's start and end
// are counted instead; the counts are recorded as one Dropped event right
// before the run's end (or when the log is closed).
func (l *Log) Emit(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken || l.closed {
		return
	}
	if e.Run != "" {
		l.run = e.Run
	}
	if e.Kind != RunStart && e.Kind != RunEnd {
		if l.n >= l.opts.Cap {
			l.dropped[dropKey(e)]++
			return
		}
		l.n++
	}
	if e.Kind == RunEnd {
		l.flushDropped(e.Time)
	}
	l.write(e)
}

// Close records the Dropped event if the run's end never came, and closes
// the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if !l.broken {
		l.flushDropped(time.Now())
	}
	l.closed = true
	var err error
	if l.f != nil {
		// Landlock does not cover chmod: a box under it can open the
		// log to other users, which this undoes once the run is over.
		l.dir.secure(l.f)
		err = l.f.Close()
	}
	l.dir.Close()
	return err
}

func (l *Log) flushDropped(t time.Time) {
	if len(l.dropped) == 0 {
		return
	}
	total := 0
	for _, n := range l.dropped {
		total += n
	}
	l.write(Event{Time: t, Run: l.run, Kind: Dropped, Counts: l.dropped,
		Detail: fmt.Sprintf("%d events of this run were not recorded: the log keeps at most %d events of one run besides its start and end", total, l.opts.Cap)})
	l.dropped = map[string]int{}
}

// dropKey is the kind an event is counted under when it is dropped.
func dropKey(e Event) string {
	if e.Kind == Net && e.Allowed != nil {
		if *e.Allowed {
			return "net-allowed"
		}
		return "net-denied"
	}
	return string(e.Kind)
}

// write appends e as one line: one write(2), to the current file.
func (l *Log) write(e Event) {
	line, err := json.Marshal(Stored(e))
	if err != nil {
		l.fail(err)
		return
	}
	line = append(line, '\n')
	if !l.dir.same(l.f, Current) {
		// Another run rotated the file: append to the new one.
		if err := l.reopen(); err != nil {
			l.fail(err)
			return
		}
	}
	if _, err := l.f.Write(line); err != nil {
		l.fail(fmt.Errorf("writing %s: %w", Current, err))
		return
	}
	if info, err := l.f.Stat(); err == nil && info.Size() > l.opts.MaxSize {
		l.rotate()
	}
}

func (l *Log) reopen() error {
	f, err := l.dir.create(Current)
	if err != nil {
		return err
	}
	l.f.Close()
	l.f = f
	return nil
}

// rotate renames the current file to a rotated name, unless another run
// did so already, opens a new current file and removes the oldest rotated
// files beyond Keep. A failure leaves the log as it is, to be rotated at a
// later write.
func (l *Log) rotate() {
	if l.dir.same(l.f, Current) {
		t := time.Now().UTC()
		for try := 0; ; try++ {
			err := l.dir.rename(Current, RotatedName(t))
			if err == nil || !errors.Is(err, os.ErrExist) || try == 10 {
				break
			}
			t = t.Add(time.Nanosecond)
		}
	}
	if err := l.reopen(); err != nil {
		l.fail(err)
		return
	}
	names, err := l.dir.names()
	if err != nil {
		return
	}
	rotated := RotatedNames(names)
	for len(rotated) > l.opts.Keep {
		l.dir.remove(rotated[0])
		rotated = rotated[1:]
	}
}

// fail stops the log for the rest of the run after telling Warn once.
func (l *Log) fail(err error) {
	l.broken = true
	if l.opts.Warn != nil {
		l.opts.Warn(err)
	}
}

// RotatedName is the name a file rotated at t gets: its UTC time with
// nanoseconds, so names sort in the order of rotation.
func RotatedName(t time.Time) string {
	return RotatedPrefix + t.UTC().Format("20060102T150405.000000000Z") + ".jsonl"
}

// RotatedNames returns the names of rotated files among names, oldest
// first.
func RotatedNames(names []string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, RotatedPrefix) && strings.HasSuffix(n, ".jsonl") && len(n) == len(RotatedName(time.Time{})) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Stored is e as the audit log stores it: every string escaped (Escape) and
// clipped, the command clipped as a whole.
func Stored(e Event) Event {
	for _, s := range []*string{&e.Run, (*string)(&e.Kind), &e.Backend, &e.Digest, &e.Cwd, &e.Project, &e.Workspace,
		&e.Network, &e.Proto, &e.Target, &e.Path, &e.Op, &e.Errno, &e.Process, &e.Action, &e.Limit, &e.Rule,
		&e.Reason, &e.Detail} {
		*s = clip(Escape(*s), maxText)
	}
	if e.Command != nil {
		cmd, left := make([]string, 0, len(e.Command)), maxCommand
		for i, a := range e.Command {
			a = clip(Escape(a), maxText)
			if len(a) > left {
				cmd = append(cmd, fmt.Sprintf("…(%d more arguments)", len(e.Command)-i))
				break
			}
			left -= len(a)
			cmd = append(cmd, a)
		}
		e.Command = cmd
	}
	if e.Counts != nil {
		counts := make(map[string]int, len(e.Counts))
		for k, n := range e.Counts {
			counts[clip(Escape(k), maxText)] = n
		}
		e.Counts = counts
	}
	return e
}

// clip cuts s to at most n bytes on a character boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
