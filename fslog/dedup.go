package fslog

import (
	"sync"

	"github.com/agentbox/agentbox/event"
)

// maxSeen bounds the refusals remembered to record each once: past it,
// refusals are passed on as they come, and the audit log's cap per run
// bounds what is stored.
const maxSeen = 4096

// dedup remembers which refusals a run has recorded.
type dedup struct {
	mu   sync.Mutex
	seen map[string]bool
}

func newDedup() *dedup { return &dedup{seen: map[string]bool{}} }

// first reports whether e is the first refusal of its kind (operation,
// path, errno and rule) in the run.
func (d *dedup) first(e event.Event) bool {
	key := e.Op + "\x00" + e.Path + "\x00" + e.Errno + "\x00" + e.Rule
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen[key] {
		return false
	}
	if len(d.seen) < maxSeen {
		d.seen[key] = true
	}
	return true
}
