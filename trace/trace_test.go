package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPhases writes a run's phases to a file and reads them back: each
// phase a line in the order the phases ended, the implicit start first
// and the total last, every time a number Parse reads.
func TestPhases(t *testing.T) {
	file := filepath.Join(t.TempDir(), "trace")
	reset(t, file)
	Run("r1")
	a := Begin("policy")
	a.End()
	b := Begin("box")
	c := Begin("box.inner")
	c.End()
	b.End()
	Total()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		name, wall, cpu, kids, ok := Parse(line)
		if !ok {
			t.Fatalf("Parse(%q) failed", line)
		}
		if wall < 0 || cpu < 0 || kids < 0 {
			t.Errorf("%q: negative time", line)
		}
		if !strings.Contains(line, "| run r1") {
			t.Errorf("%q does not name the run", line)
		}
		names = append(names, name)
	}
	want := []string{"start", "policy", "box.inner", "box", "total"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
}

// TestOff: without the variable a phase is nil and ending it does nothing.
func TestOff(t *testing.T) {
	reset(t, "")
	if p := Begin("policy"); p != nil {
		t.Fatalf("Begin with tracing off = %+v, want nil", p)
	}
	var p *Phase
	p.End()
	Total()
}

// TestUnwritable: a trace that cannot be opened turns tracing off after
// one warning, and the run goes on.
func TestUnwritable(t *testing.T) {
	reset(t, filepath.Join(t.TempDir(), "missing", "trace"))
	Begin("policy").End()
	if enabled {
		t.Fatal("tracing still on after the file could not be opened")
	}
}

func reset(t *testing.T, file string) {
	t.Helper()
	t.Setenv(Variable, file)
	mu.Lock()
	defer mu.Unlock()
	if out != nil {
		out.Close()
	}
	out, opened, first, run, enabled = nil, false, true, "", file != ""
}

func TestParseRejects(t *testing.T) {
	for _, line := range []string{"", "a | b", "10:00:00.000000 | pid 1 | run - | x | wall x ms | cpu 1 ms | children 1 ms"} {
		if _, _, _, _, ok := Parse(line); ok {
			t.Errorf("Parse(%q) accepted it", line)
		}
	}
}
