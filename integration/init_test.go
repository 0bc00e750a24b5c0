//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/plan"
)

// The box's pid 1 under bwrap is agentbox's C init (package cinit) unless
// AGENTBOX_INIT=go asks for agentbox's own Go init.
// Both must behave the same: every property below runs against each.
var inits = []struct {
	name string
	env  string // AGENTBOX_INIT
}{{"c", ""}, {"go", "go"}}

// initWorld is a world whose runs use the given init.
func initWorld(t *testing.T, env string) *world {
	w := newWorld(t)
	if env != "" {
		w.env = append(w.env, "AGENTBOX_INIT="+env)
	}
	return w
}

// initThreads is the number of threads of the box's pid 1: 1 for the C
// init, several for a Go program.
const initThreads = `sed -n 's/^Threads:[[:space:]]*//p' /proc/1/status`

// Which init runs: the C one by default (one thread), the Go one when
// asked.
func TestInitKind(t *testing.T) {
	for _, in := range inits {
		t.Run(in.name, func(t *testing.T) {
			w := initWorld(t, in.env)
			r := w.sh(nil, initThreads)
			expectCode(t, r, 0)
			n := strings.TrimSpace(r.stdout)
			if (in.name == "c") != (n == "1") {
				t.Fatalf("init %s: pid 1 has %s threads", in.name, n)
			}
		})
	}
	// The C init arms the complete mode's filesystem log too.
	w := newWorld(t)
	p := policyFile(t, w, "[log]\nfilesystem = \"complete\"\n")
	r := w.sh([]string{"--policy", p}, initThreads)
	expectCode(t, r, 0)
	if n := strings.TrimSpace(r.stdout); n != "1" {
		t.Fatalf("with the filesystem log on, pid 1 has %s threads: want the C init", n)
	}
}

// Exit statuses and messages are the same with both inits.
func TestInitExitStatus(t *testing.T) {
	for _, in := range inits {
		t.Run(in.name, func(t *testing.T) {
			w := initWorld(t, in.env)
			write(t, filepath.Join(w.project, "notexec.sh"), "#!/bin/sh\necho hi\n")
			write(t, filepath.Join(w.project, "noint.sh"), "#!/no/such/interpreter\n")
			os.Chmod(filepath.Join(w.project, "noint.sh"), 0o755)
			mkdir(t, filepath.Join(w.project, "adir"))
			for _, c := range []struct {
				argv []string
				code int
				err  string
			}{
				{[]string{"sh", "-c", "exit 3"}, 3, ""},
				{[]string{"sh", "-c", "kill -TERM $$"}, 143, ""},
				{[]string{"sh", "-c", "kill -KILL $$"}, 137, ""},
				{[]string{"no-such-command-xyz"}, 127, "agentbox: error: no-such-command-xyz: command not found"},
				{[]string{"./notexec.sh"}, 126, "agentbox: error: ./notexec.sh: cannot execute: permission denied"},
				{[]string{"./noint.sh"}, 126, "agentbox: error: ./noint.sh: cannot execute: its interpreter (#! line) or loader is missing"},
				{[]string{"./adir"}, 126, "agentbox: error: ./adir: cannot execute: is a directory"},
			} {
				r := w.run(append([]string{"run", "--"}, c.argv...)...)
				if r.code != c.code {
					t.Errorf("%v: want exit %d, got %s", c.argv, c.code, r)
				}
				if c.err != "" && !strings.Contains(r.stderr, c.err) {
					t.Errorf("%v: want %q on stderr, got %q", c.argv, c.err, r.stderr)
				}
			}
		})
	}
}

// All seven signals agentbox forwards reach CMD, with either init.
func TestInitForwardsEverySignal(t *testing.T) {
	sigs := map[syscall.Signal]string{syscall.SIGINT: "INT", syscall.SIGTERM: "TERM", syscall.SIGHUP: "HUP",
		syscall.SIGQUIT: "QUIT", syscall.SIGWINCH: "WINCH", syscall.SIGUSR1: "USR1", syscall.SIGUSR2: "USR2"}
	for _, in := range inits {
		for sig, name := range sigs {
			t.Run(in.name+"/"+name, func(t *testing.T) {
				w := initWorld(t, in.env)
				c, br := startWaiting(t, w, `trap 'echo got `+name+`; exit 7' `+name+`; echo ready; while :; do sleep 0.05; done`)
				if err := c.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				if line := readLine(t, br); line != "got "+name+"\n" {
					t.Fatalf("CMD did not see %s: %q", name, line)
				}
				if err := waitCmd(t, c); exitCode(err) != 7 {
					t.Fatalf("want exit 7 from the trap, got %v", err)
				}
			})
		}
	}
}

// A signal sent while the box is still starting is not lost: it ends the
// run long before CMD (a 30 s sleep) would.
func TestInitEarlySignal(t *testing.T) {
	for _, in := range inits {
		t.Run(in.name, func(t *testing.T) {
			w := initWorld(t, in.env)
			for i := 0; i < 60; i++ {
				c := w.cmd("run", "--", "sleep", "30")
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				// From right after the start to well into the box's setup.
				time.Sleep(time.Duration(i) * time.Millisecond)
				c.Process.Signal(syscall.SIGTERM)
				done := make(chan error, 1)
				go func() { done <- c.Wait() }()
				select {
				case err := <-done:
					if code := exitCode(err); code == 0 {
						t.Fatalf("round %d: a TERM during start ended the run with exit 0", i)
					}
				case <-time.After(15 * time.Second):
					c.Process.Kill()
					<-done
					t.Fatalf("round %d: a TERM sent %d ms after the start was lost: the run went on", i, i)
				}
			}
		})
	}
}

// The limits are CMD's, never the init's; nothing inherited reaches CMD;
// orphans are reaped.
func TestInitLimitsDescriptorsReaping(t *testing.T) {
	for _, in := range inits {
		t.Run(in.name, func(t *testing.T) {
			w := initWorld(t, in.env)
			p := policyFile(t, w, "[limits]\nopen_files = 77\ncpu_time = \"50s\"\n")
			r := w.sh([]string{"--policy", p}, `ulimit -n; ulimit -t; grep -E '^Max (open files|cpu time)' /proc/1/limits`)
			expectCode(t, r, 0)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) != 4 || lines[0] != "77" || lines[1] != "50" {
				t.Fatalf("CMD's limits: want 77 open files and 50 s, got %q", r.stdout)
			}
			for _, l := range lines[2:] {
				if f := strings.Fields(l); strings.Contains(l, " 77 ") || strings.Contains(l, " 50 ") || len(f) < 5 {
					t.Fatalf("the init holds CMD's limits: %q", l)
				}
			}

			// A descriptor agentbox inherits reaches neither CMD nor pid 1.
			secret := filepath.Join(w.base, "secret")
			write(t, secret, "host secret")
			f, err := os.Open(secret)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			c := w.cmd("run", "--", "sh", "-c", `ls /proc/self/fd | tr '\n' ' '; echo; cat /proc/1/fd/3 2>&1; ls /proc/1/fd 2>&1 | head -3`)
			c.ExtraFiles = []*os.File{f}
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if strings.Contains(string(out), "host secret") {
				t.Fatalf("the inherited descriptor reached the box:\n%s", out)
			}
			// The preloaded log's pipe, at 1021, is the box's (write end).
			fds := strings.Fields(strings.SplitN(string(out), "\n", 2)[0])
			fds = slices.DeleteFunc(fds, func(fd string) bool { return fd == strconv.Itoa(plan.PreloadFD) })
			if len(fds) > 4 {
				t.Fatalf("CMD holds descriptors beyond 0, 1, 2, the log's pipe (and ls's own): %v", fds)
			}

			// Orphans of CMD are reaped by the init: no zombie remains.
			r = w.sh(nil, `for i in 1 2 3 4 5; do (sleep 0.05 &) ; done; sleep 0.6; grep -l '^State:[[:space:]]*Z' /proc/[0-9]*/status | wc -l`)
			expectCode(t, r, 0)
			if n := strings.TrimSpace(r.stdout); n != "0" {
				t.Fatalf("%s zombies left in the box", n)
			}
		})
	}
}

// kill -9 of agentbox takes the box down with either init.
func TestInitKill9(t *testing.T) {
	for _, in := range inits {
		t.Run(in.name, func(t *testing.T) {
			w := initWorld(t, in.env)
			tag := fmt.Sprintf("%d.%d", 2000+os.Getpid()%1000, time.Now().UnixNano()%100000)
			c, _ := startWaiting(t, w, `sleep `+tag+` & echo ready; wait`)
			time.Sleep(100 * time.Millisecond)
			if n := countProcs("sleep\x00" + tag); n != 1 {
				t.Fatalf("want 1 sleep in the box, found %d", n)
			}
			c.Process.Signal(syscall.SIGKILL)
			c.Wait()
			deadline := time.Now().Add(3 * time.Second)
			for countProcs("sleep\x00"+tag) > 0 {
				if time.Now().After(deadline) {
					t.Fatal("a process of the box survived kill -9 of agentbox")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// Where the kernel will not execute a memory file (vm.memfd_noexec = 2,
// set here in a PID namespace of the test's own, where it applies), the
// box starts the Go init instead, and the command runs as ever.
func TestInitFallsBackWhenMemfdCannotRun(t *testing.T) {
	rootOnly(t, "setting vm.memfd_noexec needs root")
	if _, err := os.Stat("/proc/sys/vm/memfd_noexec"); err != nil {
		if os.Getenv("AGENTBOX_MUST_WORK") != "" {
			t.Fatalf("this kernel has no vm.memfd_noexec (Linux 6.3+): %v", err)
		}
		t.Skipf("this kernel has no vm.memfd_noexec: %v", err)
	}
	w := newWorld(t)
	c := exec.Command("unshare", "--pid", "--fork", "--mount", "--mount-proc", "sh", "-c",
		`echo 2 > /proc/sys/vm/memfd_noexec && "$0" run -- sh -c "`+initThreads+`; exit 5"`, bin)
	c.Dir, c.Env = w.cwd, w.env
	out, err := c.CombinedOutput()
	if exitCode(err) != 5 {
		t.Fatalf("want the command's exit 5 with memfd_noexec=2, got %v:\n%s", err, out)
	}
	if n := strings.TrimSpace(string(out)); n == "1" || n == "" {
		t.Fatalf("pid 1 has %q threads under memfd_noexec=2: want the Go init", n)
	}
}

// Under Landlock the child that restricts itself and becomes CMD is
// agentbox's C helper (the C init's __landlock mode, given a rule set the
// supervisor built) unless the log is on or AGENTBOX_INIT=go asks for
// agentbox's Go child: both confine the same way.
func TestLandlockChildBothKinds(t *testing.T) {
	for _, in := range inits {
		t.Run(in.name, func(t *testing.T) {
			w := initWorld(t, in.env)
			p := policyFile(t, w, "[limits]\nopen_files = 77\n")
			r := w.sh([]string{"--backend", "landlock", "--policy", p}, `
echo hi > in-project && echo project=written
echo x > /usr/agentbox-probe 2>/dev/null || echo usr=refused
echo x > `+w.home+`/outside 2>/dev/null || echo home=refused
grep -E '^(NoNewPrivs|Seccomp|CapEff):' /proc/self/status | tr -s '\t' ' '
ulimit -n
ls /proc/self/fd | tr '\n' ' '; echo
exit 4`)
			if r.code != 4 {
				t.Fatalf("want exit 4, got %s", r)
			}
			// Besides the standard three and ls's own: the preloaded
			// log's pipe (at 1021, above the limit of 77: set before it).
			for _, want := range []string{"project=written", "usr=refused", "home=refused", "NoNewPrivs: 1", "Seccomp: 2", "CapEff: 0000000000000000", "\n77\n", "\n0 1 1021 2 3 \n"} {
				expectContains(t, "landlock box", r.stdout, want)
			}
			for _, c := range []struct {
				argv []string
				code int
				err  string
			}{
				{[]string{"no-such-command-xyz"}, 127, "no-such-command-xyz: command not found"},
				{[]string{"sh", "-c", "kill -TERM $$"}, 143, ""},
			} {
				r := w.run(append([]string{"run", "--backend", "landlock", "--"}, c.argv...)...)
				if r.code != c.code || !strings.Contains(r.stderr, c.err) {
					t.Errorf("%v: want exit %d and %q, got %s", c.argv, c.code, c.err, r)
				}
			}
		})
	}
}

// Many localhost port forwards (up to 255, two listeners each) start with
// either init.
func TestInitManyForwards(t *testing.T) {
	for _, in := range inits {
		t.Run(in.name, func(t *testing.T) {
			w := initWorld(t, in.env)
			args := []string{"run", "--network", "allowlist"}
			for p := 4001; p <= 4040; p++ {
				args = append(args, "--allow", fmt.Sprintf("localhost:%d", p))
			}
			r := w.run(append(args, "--", "sh", "-c", "echo started")...)
			expectCode(t, r, 0)
			expectContains(t, "40 forwards", r.stdout, "started")
		})
	}
}

// Both Landlock children look CMD up as the inits do: a program found
// only through a relative PATH entry is not run.
func TestLandlockLookupBothKinds(t *testing.T) {
	for _, in := range inits {
		t.Run(in.name, func(t *testing.T) {
			w := initWorld(t, in.env)
			write(t, filepath.Join(w.project, "myscript"), "#!/bin/sh\necho ran\n")
			os.Chmod(filepath.Join(w.project, "myscript"), 0o755)
			w.env = append(w.env, "PATH=:/usr/bin:/bin")
			r := w.run("run", "--backend", "landlock", "--", "myscript")
			if r.code != 126 || !strings.Contains(r.stderr, "myscript: cannot execute: cannot run executable found relative to current directory") {
				t.Fatalf("want 126 and the relative-PATH refusal, got %s", r)
			}
		})
	}
}
