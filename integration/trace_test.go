//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/trace"
)

// tracedPhases runs /bin/true under the backend be with a trace, and
// returns the names of its phases that start with prefix, in order, and
// the trace; every line must parse.
func tracedPhases(t *testing.T, be []string, prefix string) ([]string, []byte) {
	t.Helper()
	w := newWorld(t)
	file := filepath.Join(w.base, "trace")
	w.env = append(w.env, trace.Variable+"="+file)
	r := w.run(append(append([]string{"run"}, be...), "--", "/bin/true")...)
	expectCode(t, r, 0)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, _, _, _, ok := trace.Parse(line)
		if !ok {
			t.Fatalf("a trace line that does not parse: %q", line)
		}
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	return names, b
}

// TestTraceBoxParts: the trace splits the box phase into its parts, in
// order, each a well-formed line: under bubblewrap box.start, box.built and
// box.command; under Landlock box.start and box.command.
func TestTraceBoxParts(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		names, b := tracedPhases(t, be, "box")
		want := []string{"box.start", "box.built", "box.command", "box"}
		if be[1] == "landlock" {
			want = []string{"box.start", "box.command", "box"}
		}
		if strings.Join(names, " ") != strings.Join(want, " ") {
			t.Fatalf("box phases %q, want %q; trace:\n%s", names, want, b)
		}
	})
}

// TestTracePrepareParts: the trace splits the prepare phase into its parts,
// in order, each a well-formed line, under both backends.
func TestTracePrepareParts(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		names, b := tracedPhases(t, be, "prepare")
		want := []string{"prepare.lock", "prepare.folders", "prepare.placeholders", "prepare.before", "prepare.record", "prepare.log", "prepare"}
		if strings.Join(names, " ") != strings.Join(want, " ") {
			t.Fatalf("prepare phases %q, want %q; trace:\n%s", names, want, b)
		}
	})
}

// TestTraceRunEnd: after the box, the trace accounts for every part of the
// run's end in order, the release of its placeholders and record included
// (that time showed in no phase before, only in total).
func TestTraceRunEnd(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		names, b := tracedPhases(t, be, "")
		i := len(names)
		for j, n := range names {
			if n == "box" {
				i = j + 1
			}
		}
		want := []string{"end", "check", "release", "log", "total"}
		if got := names[min(i, len(names)):]; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("phases after the box %q, want %q; trace:\n%s", got, want, b)
		}
	})
}

// TestTraceAudit: between setup and prepare the trace names the run's
// first line in the audit log (the plan's digest), which was in no phase.
func TestTraceAudit(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		names, b := tracedPhases(t, be, "")
		var top []string
		for _, n := range names {
			if !strings.Contains(n, ".") {
				top = append(top, n)
			}
		}
		if got := strings.Join(top, " "); !strings.Contains(got, "setup audit prepare box") {
			t.Fatalf("phases %q, want setup, audit, prepare, box in a row; trace:\n%s", top, b)
		}
	})
}
