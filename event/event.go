// Package event is the stream of what happens during a run: the run's start
// (with the plan's digest and backend), each network decision, each item the
// after-run checks neutralise, each limit the box hits, and the run's end
// (status and duration). Every backend, the proxy, the limits code and the
// after-run checks emit typed events into one Stream; sinks turn them into
// the short summary a run prints on stderr and into the audit log.
//
// Events never hold environment values or file contents: names, paths,
// hosts, statuses and counts only.
//
// What does not belong here: deciding anything (the events report what
// other packages decided), and printing agentbox's error voice (main).
package event

import (
	"sync"
	"time"
)

// Kind is what an event reports.
type Kind string

// The kinds of events.
const (
	// RunStart: a box is about to start (Backend, Digest, Command, Cwd,
	// Project, Workspace, Network).
	RunStart Kind = "run-start"
	// RunEnd: the run is over (Status, DurationMS).
	RunEnd Kind = "run-end"
	// Net: the proxy allowed or denied a connection (Allowed, Proto,
	// Target, Reason; Unreachable when an allowed host was not reached).
	Net Kind = "net"
	// Quarantine: an after-run check neutralised something the box left
	// that a host program would run (Path, Action, Detail, Rule).
	Quarantine Kind = "quarantine"
	// Limit: the box hit one of its limits (Limit, Detail).
	Limit Kind = "limit"
	// Denied: the box was refused a filesystem operation by a rule (Path,
	// Op, Errno, Rule, Process).
	Denied Kind = "denied"
	// Warning: something the user should know about the run (Detail).
	Warning Kind = "warning"
	// Unseen: something the box changed that git status does not show
	// (Path, Action, Detail): a tree projects leave out of git, a new
	// program, a mark in a git index that hid a change (cleared).
	Unseen Kind = "unseen"
	// Dropped: the audit log stopped recording the run's events at its
	// cap; Counts says how many of each kind were left out (Detail names
	// the cap).
	Dropped Kind = "dropped"
)

// Event is one thing that happened in a run. Fields that do not apply to a
// kind are left empty.
type Event struct {
	Time time.Time `json:"time"`
	Run  string    `json:"run"`
	Kind Kind      `json:"kind"`

	// RunStart
	Backend   string   `json:"backend,omitempty"`
	Digest    string   `json:"digest,omitempty"`
	Command   []string `json:"command,omitempty"`
	Cwd       string   `json:"cwd,omitempty"`
	Project   string   `json:"project,omitempty"`
	Workspace string   `json:"workspace,omitempty"`
	Network   string   `json:"network,omitempty"`

	// RunEnd
	Status     *int    `json:"status,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`

	// Net
	Allowed *bool  `json:"allowed,omitempty"`
	Proto   string `json:"proto,omitempty"`
	Target  string `json:"target,omitempty"`
	// Unreachable: why an allowed host could not be reached (the box got
	// a 502).
	Unreachable string `json:"unreachable,omitempty"`

	// Quarantine, Denied, Limit, Warning
	Path    string `json:"path,omitempty"`
	Op      string `json:"op,omitempty"`
	Errno   string `json:"errno,omitempty"`
	Process string `json:"process,omitempty"`
	Action  string `json:"action,omitempty"`
	Limit   string `json:"limit,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Detail  string `json:"detail,omitempty"`

	// Dropped: events left out, by kind ("net-denied" and "net-allowed"
	// for network decisions).
	Counts map[string]int `json:"counts,omitempty"`
}

// Emitter takes events.
type Emitter interface {
	Emit(Event)
}

// Sink is where a Stream delivers events; Close flushes and releases it.
type Sink interface {
	Emitter
	Close() error
}

// Stream stamps events with the run's ID and the time and hands them to
// every sink, one event at a time. Its zero value discards everything; a
// nil *Stream too.
type Stream struct {
	mu    sync.Mutex
	run   string
	sinks []Sink
}

// NewStream returns a stream for the run with ID run.
func NewStream(run string, sinks ...Sink) *Stream {
	return &Stream{run: run, sinks: sinks}
}

// Add adds a sink.
func (s *Stream) Add(k Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sinks = append(s.sinks, k)
}

// Emit delivers e to every sink. It is safe for concurrent use.
func (s *Stream) Emit(e Event) {
	if s == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Run == "" {
		e.Run = s.run
	}
	for _, k := range s.sinks {
		k.Emit(e)
	}
}

// Close closes every sink; events emitted after Close are dropped.
func (s *Stream) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, k := range s.sinks {
		if err := k.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.sinks = nil
	return first
}

// Bool returns a pointer to b, for Event.Allowed.
func Bool(b bool) *bool { return &b }

// Int returns a pointer to n, for Event.Status.
func Int(n int) *int { return &n }
