// Package trace writes the phases of a run, each with its wall and CPU
// time, to the file AGENTBOX_TRACE names, the way git's GIT_TRACE2_PERF
// does: one line a phase, appended as the phase ends, so a run killed half
// way still leaves the phases it finished. Without AGENTBOX_TRACE nothing
// is measured and a phase costs one nil check.
//
// A line (fields separated by " | ", aligned for reading):
//
//	15:04:05.000000 | pid 4242 | run 3f2a9c | policy | wall 0.412 ms | cpu 0.398 ms | children 0.000 ms
//
// wall is the phase's elapsed time; cpu the time agentbox itself spent on
// a processor meanwhile (user and system, every thread); children the CPU
// of the processes agentbox waited for meanwhile (bubblewrap, the init and
// the command count when the box ends). The first phase, "start", runs
// from the moment the Go runtime started agentbox's packages to the first
// phase agentbox names; its cpu counts from the exec, so it includes the
// runtime's own start. The last line of a run, "total", spans from that
// start to the end of the run.
package trace

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Variable names the file the trace is appended to.
const Variable = "AGENTBOX_TRACE"

var (
	mu      sync.Mutex
	out     *os.File
	run     string
	began   = time.Now()
	enabled = os.Getenv(Variable) != ""
	opened  bool
	pid     = os.Getpid()
	first   = true
)

// Phase is one measured step of a run; nil when tracing is off.
type Phase struct {
	name       string
	wall       time.Time
	self, kids time.Duration
}

// On reports whether this process traces.
func On() bool { return enabled }

// Run names the run in the lines that follow (its run ID).
func Run(id string) {
	if !enabled {
		return
	}
	mu.Lock()
	run = id
	mu.Unlock()
}

// Begin starts the phase name. The first phase of a process also ends the
// implicit "start" phase there.
func Begin(name string) *Phase {
	if !enabled {
		return nil
	}
	self, kids := usage()
	now := time.Now()
	mu.Lock()
	if first {
		first = false
		write("start", now.Sub(began), self, 0)
	}
	mu.Unlock()
	return &Phase{name: name, wall: now, self: self, kids: kids}
}

// End ends the phase and writes its line.
func (p *Phase) End() {
	if p == nil {
		return
	}
	self, kids := usage()
	mu.Lock()
	write(p.name, time.Since(p.wall), self-p.self, kids-p.kids)
	mu.Unlock()
}

// Total writes the line that spans the whole process so far.
func Total() {
	if !enabled {
		return
	}
	self, kids := usage()
	mu.Lock()
	write("total", time.Since(began), self, kids)
	mu.Unlock()
}

// write appends one line; mu is held. A trace that cannot be written is
// dropped after one warning: it is a measurement, never part of the box.
func write(name string, wall, self, kids time.Duration) {
	if !opened {
		opened = true
		f, err := os.OpenFile(os.Getenv(Variable), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Fprintf(os.Stderr, "agentbox: warning: %s: %v (no trace is written)\n", Variable, err)
			enabled = false
			return
		}
		out = f
	}
	if out == nil {
		return
	}
	id := run
	if id == "" {
		id = "-"
	}
	line := fmt.Sprintf("%s | pid %-7d | run %-12s | %-10s | wall %9.3f ms | cpu %9.3f ms | children %9.3f ms\n",
		time.Now().Format("15:04:05.000000"), pid, id, name, ms(wall), ms(self), ms(kids))
	out.WriteString(line) //nolint:errcheck // a measurement: see above
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// Parse reads one trace line back: the phase's name and its wall, cpu and
// children milliseconds (scripts and tests read traces).
func Parse(line string) (name string, wall, cpu, kids float64, ok bool) {
	f := strings.Split(line, " | ")
	if len(f) != 7 {
		return "", 0, 0, 0, false
	}
	name = strings.TrimSpace(f[3])
	for i, v := range []*float64{&wall, &cpu, &kids} {
		word := [...]string{"wall", "cpu", "children"}[i]
		s := strings.TrimSpace(f[4+i])
		if _, err := fmt.Sscanf(s, word+" %f ms", v); err != nil {
			return "", 0, 0, 0, false
		}
	}
	return name, wall, cpu, kids, true
}
