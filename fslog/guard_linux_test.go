//go:build linux && (amd64 || arm64)

package fslog

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

type collectSafe struct {
	mu  sync.Mutex
	evs []event.Event
}

func (c *collectSafe) Emit(e event.Event) { c.mu.Lock(); c.evs = append(c.evs, e); c.mu.Unlock() }

// A panic while the supervisor judges what the box sent does not end
// agentbox: the goroutine recovers, says so, and the run's log reports the
// failure (Err), which fails the run after its check (supervise).
func TestPanicFailsTheRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fslog")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{}
	p.Box.Backend = "landlock"
	p.Log.Filesystem = Preload
	p.Log.Preload = dir
	ev := &collectSafe{}
	judge := func(Attempt) (event.Event, bool) { panic("a bug in the judge") }
	l := Start(p, judge, ev, nil)
	if l == nil || l.PreloadPipe() == nil {
		t.Fatal("the preloaded log did not start")
	}
	w := l.PreloadPipe()
	if _, err := w.Write(frame(7, rec(3, 0, 30, 0, "open", "", "/usr/a", "", "", "sh"))); err != nil {
		t.Fatal(err)
	}
	l.Started(0)
	l.Stop()
	err := l.Err()
	if err == nil || !strings.Contains(err.Error(), "a bug in the judge") {
		t.Fatalf("Err() = %v, want the panic", err)
	}
	warned := false
	for _, e := range ev.evs {
		warned = warned || e.Kind == event.Warning && strings.Contains(e.Detail, "reader of the preloaded filesystem log failed")
	}
	if !warned {
		t.Errorf("no warning says what failed: %+v", ev.evs)
	}
	var none *Log
	if none.Err() != nil {
		t.Error("a nil Log has an error")
	}
}
