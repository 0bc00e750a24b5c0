//go:build linux

package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExitStatus(t *testing.T) {
	w := newWorld(t)
	write(t, filepath.Join(w.project, "notexec.sh"), "#!/bin/sh\necho hi\n")
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"own status", []string{"sh", "-c", "exit 3"}, 3, ""},
		{"killed by signal", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15, ""},
		{"killed by SIGKILL", []string{"sh", "-c", "kill -KILL $$"}, 128 + 9, ""},
		{"not found", []string{"no-such-command-agentbox"}, 127, "command not found"},
		{"not executable", []string{"./notexec.sh"}, 126, "cannot execute"},
		{"hidden command is not found", []string{filepath.Join(w.base, "outside-hidden", "x")}, 127, "command not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := w.run(append([]string{"run", "--"}, tc.args...)...)
			expectCode(t, r, tc.code)
			if tc.msg != "" {
				expectContains(t, "stderr", r.stderr, tc.msg)
			}
		})
	}
}

func TestPipes(t *testing.T) {
	w := newWorld(t)
	r := w.runIn("hello from a pipe\n", "run", "--", "tr", "a-z", "A-Z")
	expectCode(t, r, 0)
	if r.stdout != "HELLO FROM A PIPE\n" {
		t.Fatalf("got %q", r.stdout)
	}
}

// startWaiting starts agentbox around script and waits for it to print
// "ready" on stdout.
func startWaiting(t *testing.T, w *world, script string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	c := w.cmd("run", "--", "sh", "-c", script)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	br := bufio.NewReader(out)
	if line := readLine(t, br); line != "ready\n" {
		t.Fatalf("waiting for ready: %q", line)
	}
	return c, br
}

// Signals sent to agentbox reach CMD, which can handle them.
func TestSignalsReachCommand(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGWINCH} {
		t.Run(sig.String(), func(t *testing.T) {
			w := newWorld(t)
			name := strings.TrimPrefix(fmt.Sprint(sigName(sig)), "SIG")
			c, br := startWaiting(t, w, `trap 'echo got `+name+`; exit 7' `+name+`; echo ready; while :; do sleep 0.05; done`)
			if err := c.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			line := readLine(t, br)
			if line != "got "+name+"\n" {
				t.Fatalf("CMD did not see %s: %q", name, line)
			}
			err := waitCmd(t, c)
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
				t.Fatalf("want exit 7 from the trap, got %v", err)
			}
		})
	}
}

func sigName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGINT: "INT", syscall.SIGTERM: "TERM", syscall.SIGHUP: "HUP", syscall.SIGQUIT: "QUIT", syscall.SIGWINCH: "WINCH"}[s]
}

// kill -9 of agentbox leaves no process of the box alive.
func TestKill9LeavesNothing(t *testing.T) {
	w := newWorld(t)
	tag := fmt.Sprintf("%d.%d", 1000+os.Getpid()%1000, time.Now().UnixNano()%100000)
	c, _ := startWaiting(t, w, `sleep `+tag+` & sh -c 'sleep `+tag+`' & echo ready; wait`)
	time.Sleep(100 * time.Millisecond)
	if n := countProcs("sleep\x00" + tag); n != 2 {
		t.Fatalf("want 2 sleeps running in the box, found %d", n)
	}
	c.Process.Signal(syscall.SIGKILL)
	c.Wait()
	deadline := time.Now().Add(3 * time.Second)
	for countProcs("sleep\x00"+tag) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("processes of the box survived kill -9 of agentbox")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := countProcs("bwrap"); n > 0 {
		// Other tests may run bwrap concurrently; only ours matter, and
		// bwrap's pid is gone with its children above.
		t.Logf("%d bwrap processes running (other tests)", n)
	}
}

// countProcs counts processes whose command line holds s.
func countProcs(s string) int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.Contains(string(b), s) {
			n++
		}
	}
	return n
}
