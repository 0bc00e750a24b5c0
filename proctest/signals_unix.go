//go:build !windows

package proctest

import (
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
)

var defaultOnce sync.Once

// DefaultSignals makes every process the test binary starts begin with
// the default disposition of SIGINT, SIGHUP, SIGQUIT and SIGTERM, even
// when the test binary was started with them ignored: nohup ignores
// SIGHUP, a non-interactive shell's & ignores SIGINT and SIGQUIT, and an
// ignored signal stays ignored across exec, so a test that interrupts
// what it started would wait for ever. Go installs a handler of its own
// for a signal Notify asks for, and exec resets a handled signal to its
// default; the test binary itself goes on ignoring them, as it was asked
// to. Call it from TestMain.
func DefaultSignals() {
	defaultOnce.Do(func() {
		var ignored []os.Signal
		for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM} {
			if signal.Ignored(s) {
				ignored = append(ignored, s)
			}
		}
		if len(ignored) == 0 {
			return
		}
		c := make(chan os.Signal, 16)
		signal.Notify(c, ignored...)
		go func() {
			for range c {
			}
		}()
	})
}

// detach puts c in a session of its own.
func detach(c *exec.Cmd) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Setsid = true
	c.SysProcAttr.Setpgid = false
}
