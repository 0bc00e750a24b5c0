package winsandbox

import (
	"fmt"
	"strings"
	"sync"
)

// What the runner writes to its standard error (its own messages, and a
// panic's or a fatal error's report, which the Go runtime prints there
// and to debug.SetCrashOutput's file) travels over a third pipe, since
// the runner has no console. agentbox keeps the start of it and, when the
// runner breaks off (its pipe ends without an exit message), reports it
// with the error: before, a crash read as "runner: unexpected EOF" alone.

// maxSaid is how much of the runner's standard error agentbox keeps: the
// start, where a panic names itself and the goroutine that raised it.
const maxSaid = 16 << 10

// said keeps the first maxSaid bytes written to it and counts the rest.
type said struct {
	mu      sync.Mutex
	buf     []byte
	dropped int
}

func (s *said) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := min(len(p), maxSaid-len(s.buf))
	s.buf = append(s.buf, p[:keep]...)
	s.dropped += len(p) - keep
	return len(p), nil
}

// String is what was kept, with a note of what was not.
func (s *said) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := strings.TrimRight(strings.ReplaceAll(string(s.buf), "\r\n", "\n"), "\n")
	if s.dropped > 0 {
		out += fmt.Sprintf("\n[%d more bytes]", s.dropped)
	}
	return out
}

// withSaid adds what the runner wrote to its standard error to err, a
// failure of the runner.
func withSaid(err error, text string) error {
	if text == "" {
		return err
	}
	return fmt.Errorf("%w; the runner wrote:\n%s", err, indent(text))
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
