package hostexec

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
)

// The Go runtime's soft memory limit for agentbox's own process. A run
// in a small project never reaches it (its heap stays under 5 MiB and no
// collection runs at all); the search of a large project holds two trees
// of its folders at once (the index's and the new one), and with the
// runtime's default pacing (the next collection when the heap has
// doubled) a run in a tree of 65,000 folders peaked at 36.5 MiB of which
// 12 MiB were live. Under this limit the collector runs when the heap
// nears it instead (a few collections of a few milliseconds): the same
// run peaks at 27–29 MiB. A tree so large that its live heap would come
// near the limit lifts it (liftAt folders), so that the collector never
// runs back to back in a search that needs the memory.
const (
	softLimit = 20 << 20
	liftAt    = 100_000
)

var lifted sync.Once

// SetSoftLimit sets the soft memory limit for a process that may search,
// unless the user set GOMEMLIMIT (then theirs holds).
func SetSoftLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softLimit)
	}
}

// liftLimit takes the soft limit away once a search or an index holds
// liftAt folders.
func liftLimit() {
	lifted.Do(func() {
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(math.MaxInt64)
		}
	})
}
