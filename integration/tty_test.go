//go:build linux

package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// tmux drives a real terminal: an interactive shell in the box gets line
// editing, Ctrl-C, job control and window resizes, and TIOCSTI cannot type
// into the user's terminal.
type tmux struct {
	t       *testing.T
	socket  string
	session string
}

func newTmux(t *testing.T, w *world, command string) *tmux {
	t.Helper()
	_, err := exec.LookPath("tmux")
	need(t, err == nil, "tmux is not installed (apt-get install tmux)")
	tm := &tmux{t: t, socket: w.base + "/tmux.sock", session: "ab"}
	args := []string{"-S", tm.socket, "new-session", "-d", "-s", tm.session, "-x", "100", "-y", "30", command}
	c := exec.Command("tmux", args...)
	c.Dir, c.Env = w.cwd, append(w.env, "TERM=xterm")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", tm.socket, "kill-server").Run() })
	return tm
}

func (tm *tmux) keys(keys ...string) {
	tm.t.Helper()
	args := append([]string{"-S", tm.socket, "send-keys", "-t", tm.session}, keys...)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		tm.t.Fatalf("send-keys: %v %s", err, out)
	}
}

func (tm *tmux) screen() string {
	out, _ := exec.Command("tmux", "-S", tm.socket, "capture-pane", "-p", "-t", tm.session).Output()
	return string(out)
}

// wait waits until the screen holds want.
func (tm *tmux) wait(want string) string {
	tm.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := tm.screen()
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("screen never showed %q:\n%s", want, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestInteractiveShell(t *testing.T) {
	w := newWorld(t)
	tm := newTmux(t, w, bin+" run -- bash --norc --noprofile -i; echo AGENTBOX-EXIT=$?; sleep 30")
	tm.keys("PS1='box$ '", "Enter")
	tm.wait("box$")

	// Line editing: type, move left, insert.
	tm.keys("echo wrld", "Left", "Left", "Left", "o", "Enter")
	tm.wait("world")

	// Ctrl-C interrupts the foreground job, and the shell survives.
	tm.keys("sleep 100; echo not-interrupted", "Enter")
	time.Sleep(300 * time.Millisecond)
	tm.keys("C-c")
	tm.keys("echo after-ctrl-c", "Enter")
	s := tm.wait("after-ctrl-c\n")
	if strings.Contains(s, "not-interrupted") && !strings.Contains(s, "echo not-interrupted") {
		t.Fatalf("Ctrl-C did not interrupt sleep:\n%s", s)
	}

	// Job control: stop a job with Ctrl-Z, list it, kill it.
	tm.keys("sleep 200", "Enter")
	time.Sleep(300 * time.Millisecond)
	tm.keys("C-z")
	tm.wait("Stopped")
	tm.keys("jobs; kill %1; echo job-control-ok", "Enter")
	tm.wait("job-control-ok\n")
	if strings.Contains(tm.screen(), "no job control") {
		t.Fatalf("bash says it has no job control:\n%s", tm.screen())
	}

	// Window resize reaches the shell.
	tm.keys("trap 'echo WINCH-SEEN' WINCH", "Enter")
	exec.Command("tmux", "-S", tm.socket, "resize-window", "-t", tm.session, "-x", "120", "-y", "40").Run()
	tm.keys("tput cols", "Enter")
	tm.wait("120")

	// TIOCSTI cannot push keystrokes into the terminal.
	tm.keys(`/usr/bin/python3 -c 'import fcntl,termios; fcntl.ioctl(0, termios.TIOCSTI, b"X")' 2>&1 | tail -1`, "Enter")
	tm.wait("Operation not permitted")

	tm.keys("exit 5", "Enter")
	tm.wait("AGENTBOX-EXIT=5")
}

// A Ctrl-C typed while a plain command (not a shell) runs in the box reaches
// that command, which can clean up before it exits; with both backends.
func TestCtrlCReachesPlainCommand(t *testing.T) {
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			script := `trap 'echo cleaned-up; exit 9' INT; echo started; while :; do sleep 0.05; done`
			tm := newTmux(t, w, bin+" run --backend "+backend+" -- sh -c \""+script+"\" 2>/dev/null; echo AGENTBOX-EXIT=$?; sleep 30")
			tm.wait("started")
			tm.keys("C-c")
			s := tm.wait("AGENTBOX-EXIT=")
			if !strings.Contains(s, "cleaned-up") || !strings.Contains(s, "AGENTBOX-EXIT=9") {
				t.Fatalf("want the trap to run and exit 9:\n%s", s)
			}
		})
	}
}

// A process the box leaves behind cannot take the terminal after agentbox
// has returned: it would print a fake password prompt and read the line
// the user types next into the shell. Every process of the run is ended
// before agentbox returns, and the terminal's foreground is taken back.
func TestLeftBehindCannotTakeTerminal(t *testing.T) {
	_, err := exec.LookPath("python3")
	need(t, err == nil, "python3 is not installed")
	attack := `import os, signal, time
for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGTTOU, signal.SIGTTIN):
    signal.signal(s, signal.SIG_IGN)
if os.fork():
    os._exit(0)
os.setpgid(0, 0)
time.sleep(1.5)
fd = os.open("/dev/tty", os.O_RDWR)
os.tcsetpgrp(fd, os.getpgrp())
os.write(fd, b"[sudo] password for you: ")
line = os.read(fd, 100)
open("STOLEN", "wb").write(line)
`
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			write(t, w.project+"/attack.py", attack)
			tm := newTmux(t, w, "bash --norc --noprofile -i")
			tm.keys("PS1='host$ '", "Enter")
			tm.wait("host$")
			tm.keys(bin+" run --backend "+backend+" -- python3 attack.py; echo AGENTBOX-EXIT=$?", "Enter")
			tm.wait("AGENTBOX-EXIT=0")
			time.Sleep(3 * time.Second)
			tm.keys("echo typed-by-the-user", "Enter")
			time.Sleep(time.Second)
			s := tm.screen()
			if strings.Contains(s, "[sudo] password") {
				t.Errorf("a process of the run prompted on the terminal after agentbox returned:\n%s", s)
			}
			if data, err := os.ReadFile(w.project + "/STOLEN"); err == nil {
				t.Fatalf("a process of the run read %q from the terminal after agentbox returned", data)
			}
			tm.wait("typed-by-the-user\nhost$")
		})
	}
}
