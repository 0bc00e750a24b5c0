package fslog

import (
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/event"
)

// A panic in a goroutine of the supervisor would end agentbox in the
// middle of the run: the box killed with it, the after-run check left to
// the next run. The log's goroutines (the notification listener's, the
// connect judge's, the preloaded log's reader) recover instead: what the
// goroutine served then fails closed (a listener closed answers ENOSYS to
// every call it took; a connect being judged is refused), the run goes on
// to its end and its check, and agentbox fails the run with what broke.

// failure is the first panic of a run's log, once recovered.
type failure struct {
	mu  sync.Mutex
	err error
}

// recovered records a panic (r, from recover) of the goroutine that served
// what: the first becomes the run's error, and each is a warning on ev.
func (f *failure) recovered(ev event.Emitter, what string, r any) {
	stack := string(debug.Stack())
	if i := strings.Index(stack, "panic("); i >= 0 {
		stack = stack[i:]
	}
	err := fmt.Errorf("agentbox's %s failed (panic: %v); what it served was refused from then on", what, r)
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
	if ev != nil {
		ev.Emit(event.Event{Kind: event.Warning, Detail: err.Error() + "; please report this with the trace: " + stack})
	}
}

func (f *failure) get() error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
