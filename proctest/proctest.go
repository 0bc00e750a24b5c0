package proctest

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// waitDelay bounds how long Wait waits for a command's output after it
// ended: a process it left behind may hold the pipe.
const waitDelay = 5 * time.Second

// Own makes c, not started yet, the test's: it will run in a session of
// its own (unix), its context's end (exec.CommandContext) kills that whole
// session, its Wait gives up on the output waitDelay after it ended, and
// at the test's cleanup every process of the session is killed, whatever
// process group it moved to.
func Own(t testing.TB, c *exec.Cmd) {
	detach(c)
	if c.Cancel != nil { // made by exec.CommandContext
		c.Cancel = func() error {
			killSession(c.Process.Pid)
			return nil
		}
	}
	c.WaitDelay = waitDelay
	t.Cleanup(func() {
		if c.Process != nil {
			killSession(c.Process.Pid)
		}
	})
}

// Start starts c so that nothing of it outlives the test: in a session of
// its own (unix), every process of which is killed at the test's cleanup,
// whatever process group it moved to. Waiting for c (Wait) stays the
// test's: a process killed and never waited for is a zombie until the
// test binary ends, holding nothing.
func Start(t testing.TB, c *exec.Cmd) {
	t.Helper()
	Own(t, c)
	if err := c.Start(); err != nil {
		t.Fatalf("starting %s: %v", strings.Join(c.Args, " "), err)
	}
}

// Wait waits for c at most d. After d it kills c's session and fails the
// test; otherwise it returns c's exit error, as exec.Cmd.Wait does.
func Wait(t testing.TB, c *exec.Cmd, d time.Duration) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- c.Wait() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(d):
		killSession(c.Process.Pid)
		<-errc
		t.Fatalf("%s did not end within %v (killed)", strings.Join(c.Args, " "), d)
	}
	return nil
}

// Run starts c (Start) and waits for it at most d (Wait).
func Run(t testing.TB, c *exec.Cmd, d time.Duration) error {
	t.Helper()
	Start(t, c)
	return Wait(t, c, d)
}

// ErrTimeout is what Line reports when no line came in time.
var ErrTimeout = errors.New("no line within the deadline")

// Line reads one line (with its newline) from r within d; after d it
// fails the test. A reader that ends first returns what it had.
func Line(t testing.TB, r *bufio.Reader, d time.Duration) string {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := r.ReadString('\n')
		got <- result{line, err}
	}()
	select {
	case res := <-got:
		return res.line
	case <-time.After(d):
		t.Fatalf("%v: %v", ErrTimeout, d)
	}
	return ""
}
