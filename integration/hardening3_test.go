//go:build linux

package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Attacks on what the box may leave behind or reach outside itself: a
// process that outlives the run (a zombie thread-group leader with a live
// thread, a double-forked daemon, a child factory), syscalls that act on
// processes outside the box, terminal ioctls whose effect outlasts the run,
// datagrams out of a box without network, another project's caches, the
// host's unix sockets, the metadata of files outside the writable roots,
// and the host's device nodes. Each asserts what the host sees afterwards.

// survivorModes are the states survivor.c puts itself in.
var survivorModes = []string{"zombie", "forker", "daemon"}

// gitRepo makes dir a git repository with one commit, with the host's git.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	for _, a := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"}} {
		c := exec.Command("git", a...)
		c.Dir = dir
		c.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
}

// hostCommit runs git commit on the host in dir, as the user would after
// the run: the hooks in .git/hooks run then.
func hostCommit(t *testing.T, dir string) {
	t.Helper()
	c := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "after")
	c.Dir = dir
	c.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
	out, err := c.CombinedOutput()
	t.Logf("host git commit: %v %s", err, out)
}

// A process of the box that outlives the run, in any of the states
// survivor.c knows, is ended before agentbox returns: two seconds after it
// armed, nothing writes the project, no hook lands in .git/hooks, host git
// runs nothing, and no process of it is left.
func TestRunLeavesNoSurvivor(t *testing.T) {
	for _, mode := range survivorModes {
		t.Run(mode, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, be []string) {
				w := newWorld(t)
				os.Chmod(w.base, 0o755)
				prog := buildC(t, w.base, "testdata/survivor.c")
				gitRepo(t, w.project)
				hook := filepath.Join(w.project, ".git", "hooks", "pre-commit")
				mark := filepath.Join(w.project, "SURVIVED")
				t.Cleanup(func() { killByPath(prog) })
				const delay = 3 * time.Second
				start := time.Now()
				r := w.runBounded(args([]string{"run"}, be, []string{"--", prog, mode, strconv.Itoa(int(delay.Milliseconds())), hook, mark})...)
				returned := time.Now()
				expectCode(t, r, 0)
				expectContains(t, "survivor", r.stdout, "armed")
				if n := liveProcs(prog); n > 0 {
					t.Errorf("%d processes of the run are alive after agentbox returned", n)
				}
				if returned.Sub(start) >= delay {
					t.Logf("agentbox took %v to return, longer than the survivor's delay: what it wrote then was written during the run", returned.Sub(start))
				}
				time.Sleep(time.Until(start.Add(delay + 1500*time.Millisecond)))
				if n := liveProcs(prog); n > 0 {
					t.Errorf("%d processes of the run are alive %v after agentbox returned", n, time.Since(returned).Round(time.Millisecond))
				}
				if fi, err := os.Stat(mark); err == nil && fi.ModTime().After(returned) {
					t.Errorf("a process of the run wrote %s %v after agentbox returned", mark, fi.ModTime().Sub(returned).Round(time.Millisecond))
				}
				if fi, err := os.Stat(hook); err == nil && fi.ModTime().After(returned) {
					t.Errorf("a process of the run wrote %s after agentbox returned", hook)
				}
				hostCommit(t, w.project)
				if exists(mark + ".hook") {
					t.Fatalf("host git ran a hook a process of the run planted")
				}
			})
		})
	}
}

// After a kill -9 of agentbox, the next run ends what is left of the
// killed run before it does anything else, a zombie leader with a live
// thread included. Under Landlock (bwrap's PID namespace ends with
// agentbox): through the run's cgroup where agentbox could make one (as
// root here), else through the box's process group, which a process that
// started a new session has left (that case needs the cgroup: root only).
func TestKill9SurvivorEndedByNextRun(t *testing.T) {
	needLandlock(t)
	for _, mode := range []string{"zombie", "daemon"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "daemon" {
				rootOnly(t, "a process in a new session is found after a kill -9 of agentbox only through the run's cgroup, which an unprivileged user without a delegated cgroup v2 does not get")
			}
			w := newWorld(t)
			os.Chmod(w.base, 0o755)
			prog := buildC(t, w.base, "testdata/survivor.c")
			t.Cleanup(func() { killByPath(prog) })
			gitRepo(t, w.project)
			hook := filepath.Join(w.project, ".git", "hooks", "pre-commit")
			mark := filepath.Join(w.project, "SURVIVED")
			c := w.cmd("run", "--backend", "landlock", "--", "sh", "-c", prog+" "+mode+" 4000 "+hook+" "+mark+"; echo ready; sleep 60")
			out, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Process.Kill(); c.Wait() })
			br := bufio.NewReader(out)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("the box never got ready: %v", err)
				}
				if line == "ready\n" {
					break
				}
			}
			c.Process.Signal(syscall.SIGKILL)
			c.Wait()
			killed := time.Now()
			r := w.run("run", "--backend", "landlock", "--", "true")
			expectCode(t, r, 0)
			if n := liveProcs(prog); n > 0 {
				t.Errorf("%d processes of the killed run are alive after the next run", n)
			}
			time.Sleep(time.Until(killed.Add(5 * time.Second)))
			if exists(mark) {
				t.Errorf("a process of the killed run wrote %s", mark)
			}
			hostCommit(t, w.project)
			if exists(mark + ".hook") {
				t.Fatalf("host git ran a hook a process of the killed run planted")
			}
		})
	}
}

// runBounded is run for a command whose leftovers may hold its output
// open: agentbox's return is what counts, so the output is read until
// then and a little after, not until every holder has closed it.
func (w *world) runBounded(args ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := w.command(ctx, args...)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	c.WaitDelay = 2 * time.Second
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil && err != exec.ErrWaitDelay {
		w.t.Fatalf("running agentbox %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// liveProcs counts the processes one of whose threads has a command line
// holding path (countProcs misses a zombie leader whose thread lives on).
func liveProcs(path string) int {
	seen := map[string]bool{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/cmdline")
	for _, d := range dirs {
		if b, err := os.ReadFile(d); err == nil && strings.Contains(string(b), path) {
			seen[strings.Split(d, "/")[2]] = true
		}
	}
	return len(seen)
}

// killByPath kills every process one of whose threads has a command line
// holding path (a program only this test built), whatever its state (a
// zombie leader shows none, its live thread does): what a failing run
// left.
func killByPath(path string) {
	dirs, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.Contains(string(b), path) {
			pid, err := strconv.Atoi(strings.Split(d, "/")[2])
			if err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// A zombie thread-group leader whose second thread lives on cannot take
// the terminal after agentbox returned: it would print a fake password
// prompt and read the line the user types next.
func TestSurvivorCannotTakeTerminal(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		os.Chmod(w.base, 0o755)
		prog := buildC(t, w.base, "testdata/survivor.c")
		t.Cleanup(func() { killByPath(prog) })
		mark := filepath.Join(w.project, "STOLEN")
		tm := newTmux(t, w, "bash --norc --noprofile -i")
		tm.keys("PS1='host$ '", "Enter")
		tm.wait("host$")
		tm.keys(fmt.Sprintf("%s run %s -- %s tty 1500 %s/hook %s; echo AGENTBOX-EXIT=$?", bin, strings.Join(be, " "), prog, w.project, mark), "Enter")
		tm.wait("AGENTBOX-EXIT=0")
		time.Sleep(3 * time.Second)
		tm.keys("echo my-secret-typed-line", "Enter")
		time.Sleep(time.Second)
		s := tm.screen()
		if strings.Contains(s, "[sudo] password") {
			t.Errorf("a process of the run prompted on the terminal after agentbox returned:\n%s", s)
		}
		if data, err := os.ReadFile(mark); err == nil {
			t.Fatalf("a process of the run read %q from the terminal after agentbox returned", data)
		}
		tm.wait("my-secret-typed-line\nhost$")
	})
}

// procAttrs are what a process's scheduling and limits look like from the
// host.
type procAttrs struct {
	nofile, nice, policy, affinity, ioprio string
}

func readAttrs(t *testing.T, pid int) procAttrs {
	t.Helper()
	var a procAttrs
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(limits), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			a.nofile = strings.Join(strings.Fields(line)[3:5], " ")
		}
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
	a.nice, a.policy = f[16], f[38]
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if _, rest, ok := strings.Cut(string(status), "Cpus_allowed_list:\t"); ok {
		a.affinity, _, _ = strings.Cut(rest, "\n")
	}
	r, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, 1, uintptr(pid), 0)
	a.ioprio = fmt.Sprintf("%d/%d", r, errno)
	return a
}

// outcomes parses "NAME ok" / "NAME errno=N" lines.
func outcomes(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, res, ok := strings.Cut(line, " "); ok {
			m[name] = res
		}
	}
	return m
}

// A box cannot act on a process outside it by pid: not lower its limits
// (prlimit on agentbox itself set RLIMIT_NOFILE to 5 and broke its after-run
// check), renice it, change its I/O priority, scheduling or CPUs, move its
// memory, compare its descriptors, read its robust futex list, signal it
// or take its descriptors. Tried on a host process of the same user and on
// the box's parent (agentbox under Landlock, the box's init under bwrap).
func TestBoxCannotTouchOutsideProcesses(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		os.Chmod(w.base, 0o755)
		probe := buildC(t, w.base, "testdata/procprobe.c")
		host := exec.Command("sleep", "60")
		host.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := host.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { host.Process.Kill(); host.Wait() })
		before := readAttrs(t, host.Process.Pid)
		r := w.run(args([]string{"run"}, be, []string{"--", probe, strconv.Itoa(host.Process.Pid)})...)
		expectCode(t, r, 0)
		got := outcomes(r.stdout)
		if len(got) < 19 {
			t.Fatalf("the probe did not run every call: %s", r)
		}
		for name, res := range got {
			if res == "ok" {
				t.Errorf("%s on a host process (pid %d) succeeded in the box", name, host.Process.Pid)
			}
		}
		if got["setpriority-user"] != "errno=1" {
			t.Errorf("setpriority(PRIO_USER) is not refused (EPERM): %s", got["setpriority-user"])
		}
		if after := readAttrs(t, host.Process.Pid); after != before {
			t.Errorf("the host process changed: before %+v, after %+v", before, after)
		}
		// The box's parent: agentbox itself under Landlock, the init
		// (pid 1) under bwrap, which holds no limits.
		names := []string{"prlimit", "setpriority", "setpriority-pgrp", "ioprio_set", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"}
		r = w.run(args([]string{"run"}, be, []string{"--", probe, "ppid"}, names)...)
		expectCode(t, r, 0)
		got = outcomes(r.stdout)
		for _, name := range names {
			if got[name] != "errno=1" && got[name] != "errno=3" {
				t.Errorf("%s on the box's parent: want it refused, got %q", name, got[name])
			}
		}
	})
}

// openPty opens a pseudo-terminal pair.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// The box cannot leave the user's terminal changed for whoever uses it
// next: not its line discipline (N_NULL: the terminal shows nothing
// afterwards), not exclusive mode (nobody can open it again), not
// stopped output. A real pseudo-terminal is the box's controlling
// terminal; afterwards the host reads its state and pushes a line through.
func TestTerminalKeptForTheUser(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		os.Chmod(w.base, 0o755)
		probe := buildC(t, w.base, "testdata/ttyprobe.c")
		master, slave := openPty(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := w.command(ctx, args([]string{"run"}, be, []string{"--", probe})...)
		var out strings.Builder
		c.Stdin, c.Stdout, c.Stderr = slave, &out, &out
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		go func() { // drain what the box writes to the terminal
			buf := make([]byte, 4096)
			for {
				if _, err := master.Read(buf); err != nil {
					return
				}
			}
		}()
		if err := c.Run(); err != nil {
			t.Fatalf("agentbox: %v\n%s", err, out.String())
		}
		got := outcomes(out.String())
		t.Logf("in the box: %v", got)
		for _, name := range []string{"tiocsetd", "tiocexcl", "tcxonc", "tioccons", "kdsetmode", "kdskbmode"} {
			if got[name] == "ok" {
				t.Errorf("%s succeeded on the terminal in the box", name)
			}
		}
		if got["tiocswinsz"] != "ok" {
			t.Errorf("TIOCSWINSZ is refused: %q", got["tiocswinsz"])
		}
		fd := int(slave.Fd())
		if d, err := unix.IoctlGetInt(fd, unix.TIOCGETD); err != nil || d != 0 {
			t.Errorf("the terminal's line discipline is %d after the run (%v), want 0 (N_TTY)", d, err)
		}
		if x, err := unix.IoctlGetInt(fd, unix.TIOCGEXCL); err != nil || x != 0 {
			t.Errorf("the terminal is in exclusive mode after the run (%d, %v)", x, err)
		}
		// Output flows: what is written to the terminal reaches its master.
		done := make(chan error, 1)
		go func() { _, err := slave.Write([]byte("after-the-run\n")); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("writing to the terminal after the run: %v", err)
			}
		case <-time.After(3 * time.Second):
			t.Errorf("output to the terminal is stopped after the run")
			unix.IoctlSetInt(fd, unix.TCXONC, unix.TCOON)
		}
		// The line discipline passes what the user types.
		if _, err := master.Write([]byte("typed\n")); err != nil {
			t.Fatal(err)
		}
		line := make(chan string, 1)
		go func() { l, _ := bufio.NewReader(slave).ReadString('\n'); line <- l }()
		select {
		case l := <-line:
			if l != "typed\n" {
				t.Errorf("the terminal delivered %q after the run", l)
			}
		case <-time.After(3 * time.Second):
			t.Errorf("a line typed on the terminal after the run never arrived")
			unix.IoctlSetPointerInt(fd, unix.TIOCSETD, 0)
		}
	})
}

// hostAddr is a non-loopback IPv4 address of this machine, or "".
func hostAddr() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// With network "none" (and "allowlist", whose only way out is the proxy)
// no datagram leaves the box: a UDP listener on the host's own non-loopback
// address receives nothing, whichever call sent it. Where a backend cannot
// keep UDP in, the run must be refused under enforce = "require".
func TestNoNetworkSendsNoUDP(t *testing.T) {
	addr := hostAddr()
	need(t, addr != "", "this machine has no non-loopback IPv4 address to send to")
	for _, mode := range [][]string{{"--network", "none"}, {"--network", "allowlist", "--allow", "example.test"}} {
		t.Run(mode[1], func(t *testing.T) {
			eachBackend(t, func(t *testing.T, be []string) {
				w := newWorld(t)
				os.Chmod(w.base, 0o755)
				probe := buildC(t, w.base, "testdata/udpsend.c")
				l, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(addr)})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				port := l.LocalAddr().(*net.UDPAddr).Port
				r := w.run(args([]string{"run", "--require"}, be, mode, []string{"--", probe, addr, strconv.Itoa(port)})...)
				if r.code == 125 {
					t.Logf("refused under require: %s", r.stderr)
					return
				}
				expectCode(t, r, 0)
				t.Logf("in the box: %v", outcomes(r.stdout))
				l.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
				buf := make([]byte, 256)
				if n, from, err := l.ReadFromUDP(buf); err == nil {
					t.Fatalf("a datagram left the box: %q from %v", buf[:n], from)
				}
			})
		})
	}
}

// A run without --workspace cannot list or read another project's private
// caches.
func TestOtherCachesHidden(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		caches := filepath.Join(w.home, ".local", "state", "agentbox", "caches")
		write(t, filepath.Join(caches, "other-12345678", "npm", "secret"), "OTHER-PROJECT-SECRET\n")
		os.Chmod(filepath.Join(w.home, ".local", "state", "agentbox"), 0o700)
		r := w.sh(be, "ls "+caches+"; cat "+filepath.Join(caches, "other-12345678", "npm", "secret"))
		expectNotContains(t, "box output", r.stdout, "OTHER-PROJECT-SECRET")
		expectNotContains(t, "box output", r.stdout, "other-12345678")
	})
}

// unixServer serves a greeting on a unix socket at path (or an abstract
// one, "@name") until the test ends.
func unixServer(t *testing.T, path string) {
	t.Helper()
	addr := path
	if strings.HasPrefix(path, "@") {
		addr = "\x00" + path[1:]
	}
	l, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello-from-the-host\n"))
			c.Close()
		}
	}()
}

// startDaemon starts a server program for the test's lifetime, in its own
// process group, and waits until path exists.
func startDaemon(t *testing.T, path string, env []string, name string, argv ...string) {
	t.Helper()
	c := exec.Command(name, argv...)
	c.Env = env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-c.Process.Pid, syscall.SIGKILL); c.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for !exists(path) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never made %s", name, path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// By default the box reaches no host service behind a unix socket, in any
// network mode, under either backend: a stand-in docker.sock (where
// DOCKER_HOST says), a socket in /run (as root) and in the user's runtime
// folder, and an abstract socket. A socket inside a writable root works
// under bubblewrap; socketpair works everywhere.
func TestHostUnixSocketsUnreachable(t *testing.T) {
	for _, mode := range [][]string{{"--network", "open"}, {"--network", "none"}, {"--network", "allowlist", "--allow", "example.test"}} {
		t.Run(mode[1], func(t *testing.T) {
			eachBackend(t, func(t *testing.T, be []string) {
				w := newWorld(t)
				os.Chmod(w.base, 0o755)
				probe := buildC(t, w.base, "testdata/unixconnect.c")
				runtime := filepath.Join(w.base, "runtime")
				os.Mkdir(runtime, 0o700)
				w.env = append(w.env, "XDG_RUNTIME_DIR="+runtime)
				docker := filepath.Join(w.base, "services", "docker.sock")
				w.env = append(w.env, "DOCKER_HOST=unix://"+docker)
				targets := map[string]string{
					"runtime":  filepath.Join(runtime, "service.sock"),
					"docker":   docker,
					"project":  filepath.Join(w.project, "inside.sock"),
					"abstract": fmt.Sprintf("@agentbox-test-%d-%d", os.Getpid(), time.Now().UnixNano()),
				}
				if isRoot() {
					dir, err := os.MkdirTemp("/run", "agentbox-test-")
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { os.RemoveAll(dir) })
					targets["run"] = filepath.Join(dir, "docker.sock")
				}
				mkdir(t, filepath.Join(w.base, "services"))
				for _, p := range targets {
					unixServer(t, p)
				}
				for name, p := range targets {
					r := w.run(args([]string{"run"}, be, mode, []string{"--", probe, p})...)
					expectContains(t, name, r.stdout, "socketpair ok")
					reached := strings.Contains(r.stdout, "answer: hello-from-the-host")
					switch {
					case name == "project" && be[1] == "bwrap":
						if !reached {
							t.Errorf("a socket inside the writable root is unreachable under bwrap: %s", r)
						}
					case reached:
						t.Errorf("the box reached the host's %s socket %s: %s", name, p, r.stdout)
					}
				}
			})
		})
	}
}

// A real ssh-agent and a real session bus (dbus-daemon) on the host: the
// box cannot use either by default, and ssh-add -l works once a policy
// names $SSH_AUTH_SOCK in network.unix_sockets.
func TestAgentsBehindUnixSockets(t *testing.T) {
	_, errA := exec.LookPath("ssh-agent")
	_, errD := exec.LookPath("dbus-daemon")
	need(t, errA == nil && errD == nil, "ssh-agent or dbus-daemon is not installed (apt-get install openssh-client dbus)")
	for _, mode := range [][]string{{"--network", "open"}, {"--network", "none"}, {"--network", "allowlist", "--allow", "example.test"}} {
		t.Run(mode[1], func(t *testing.T) {
			eachBackend(t, func(t *testing.T, be []string) {
				w := newWorld(t)
				agent := filepath.Join(w.base, "agent", "ssh.sock")
				mkdir(t, filepath.Dir(agent))
				startDaemon(t, agent, w.env, "ssh-agent", "-D", "-a", agent)
				bus := filepath.Join(w.base, "dbus", "bus")
				mkdir(t, filepath.Dir(bus))
				startDaemon(t, bus, w.env, "dbus-daemon", "--session", "--nofork", "--nopidfile", "--address=unix:path="+bus)
				w.env = append(w.env, "SSH_AUTH_SOCK="+agent, "DBUS_SESSION_BUS_ADDRESS=unix:path="+bus)
				// On the host both answer.
				host := exec.Command("ssh-add", "-l")
				host.Env = w.env
				if out, _ := host.CombinedOutput(); !strings.Contains(string(out), "no identities") {
					t.Fatalf("ssh-add -l on the host: %s", out)
				}
				dbus := "dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.ListNames"
				r := w.sh(args(be, mode), "ssh-add -l; echo ssh-add=$?; "+dbus+"; echo dbus-send=$?")
				expectContains(t, "ssh-add in the box", r.stdout, "ssh-add=2")
				expectNotContains(t, "ssh-add in the box", r.stdout+r.stderr, "no identities")
				expectNotContains(t, "dbus-send in the box", r.stdout, "dbus-send=0")
				expectNotContains(t, "dbus-send in the box", r.stdout, "org.freedesktop.DBus")
				// Named in the policy, the agent answers; the bus still does not.
				pol := policyFile(t, w, "[network]\nunix_sockets = [\"$SSH_AUTH_SOCK\"]\n")
				r = w.sh(args(be, mode, []string{"--policy", pol}), "ssh-add -l; echo ssh-add=$?; "+dbus+"; echo dbus-send=$?")
				if r.code == 125 {
					t.Logf("refused: %s", r.stderr)
					if be[1] != "landlock" {
						t.Fatalf("a named socket is refused under bwrap: %s", r)
					}
					return
				}
				expectContains(t, "ssh-add in the box with the socket named", r.stdout+r.stderr, "no identities")
				expectNotContains(t, "dbus-send in the box", r.stdout, "dbus-send=0")
			})
		})
	}
}

// fileState is everything about a file that metadata calls change.
type fileState struct {
	mode, uid, gid uint32
	mtime, ctime   unix.Timespec
	xattrs         string
	flags          int
}

func stateOf(t *testing.T, p string) fileState {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	s := fileState{mode: st.Mode, uid: st.Uid, gid: st.Gid, mtime: st.Mtim, ctime: st.Ctim}
	buf := make([]byte, 4096)
	if n, err := unix.Listxattr(p, buf); err == nil {
		s.xattrs = string(buf[:n])
	}
	if f, err := os.Open(p); err == nil {
		s.flags, _ = unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		f.Close()
	}
	return s
}

// The mode, owner, times, extended attributes and flags of a file outside
// the writable roots do not change, whichever call the box makes (as root:
// a root-owned file; as a user: one of the user's own). Inside the roots
// they do, but no call sets a setuid or setgid bit.
func TestMetadataOutsideRootsUnchanged(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		os.Chmod(w.base, 0o755)
		probe := buildC(t, w.base, "testdata/metaprobe.c")
		outside := filepath.Join(w.base, "outside", "file")
		write(t, outside, "outside\n")
		unix.Setxattr(outside, "user.agentbox-old", []byte("x"), 0)
		// What works on the host, unconfined: only those calls can show
		// anything in the box.
		control := filepath.Join(w.base, "control")
		write(t, control, "control\n")
		unix.Setxattr(control, "user.agentbox-old", []byte("x"), 0)
		out, err := exec.Command(probe, control).Output()
		if err != nil {
			t.Fatal(err)
		}
		works := outcomes(string(out))
		time.Sleep(20 * time.Millisecond) // a later ctime is visible
		before := stateOf(t, outside)
		r := w.run(args([]string{"run"}, be, []string{"--", probe, outside})...)
		expectCode(t, r, 0)
		got := outcomes(r.stdout)
		for name, res := range got {
			if res == "ok" && works[name] == "ok" {
				t.Errorf("%s on a file outside the writable roots succeeded in the box", name)
			}
		}
		if after := stateOf(t, outside); after != before {
			t.Errorf("the file outside the writable roots changed:\nbefore %+v\nafter  %+v", before, after)
		}
		inside := filepath.Join(w.project, "file")
		write(t, inside, "inside\n")
		r = w.run(args([]string{"run"}, be, []string{"--", probe, inside, "chmod", "fchmod", "utimensat", "futimens", "setuid", "setgid", "fchmod-setuid"})...)
		expectCode(t, r, 0)
		got = outcomes(r.stdout)
		for _, name := range []string{"chmod", "fchmod", "utimensat", "futimens"} {
			if got[name] != "ok" && works[name] == "ok" {
				t.Errorf("%s on a file in the writable root is refused: %s", name, got[name])
			}
		}
		for _, name := range []string{"setuid", "setgid", "fchmod-setuid"} {
			if got[name] == "ok" {
				t.Errorf("%s: a setuid or setgid bit was set in the box", name)
			}
		}
		var st unix.Stat_t
		unix.Stat(inside, &st)
		if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			t.Errorf("%s has mode %o after the run", inside, st.Mode)
		}
	})
}

// A Landlock box inside a bubblewrap box: the outer box's filter lets no
// process in it take a notification listener (it would see the box's
// connects before agentbox does), so the inner agentbox cannot decide its
// box's metadata calls and every one is refused, in its writable root and
// outside, and its plan says so.
func TestNestedLandlockMetadata(t *testing.T) {
	needLandlock(t)
	w := newWorld(t)
	write(t, filepath.Join(w.project, "inside"), "x\n")
	outside := filepath.Join(w.base, "outside")
	write(t, outside, "x\n")
	os.Chmod(w.base, 0o755)
	before := stateOf(t, outside)
	r := w.sh([]string{"--backend", "bwrap"}, bin+` run --backend landlock -- sh -c 'chmod 600 inside && echo inside-ok || echo inside-refused; chmod 600 `+outside+` || echo outside-refused'; `+
		bin+` plan --backend landlock -- true | grep 'metadata'`)
	expectContains(t, "nested box", r.stdout, "inside-refused")
	expectContains(t, "nested box", r.stdout, "outside-refused")
	expectContains(t, "nested plan", r.stdout, "every such call is refused (ENOSYS)")
	var st unix.Stat_t
	unix.Stat(filepath.Join(w.project, "inside"), &st)
	if st.Mode&0o777 == 0o600 {
		t.Errorf("inside has mode %o: the inner box's chmod was not refused", st.Mode&0o777)
	}
	if after := stateOf(t, outside); after != before {
		t.Errorf("the file outside changed: %+v -> %+v", before, after)
	}
}

// Run as root, the box cannot change the host's device nodes that bwrap
// binds into its /dev (or that Landlock lets it open): chmod 600 /dev/full
// and touch in the box leave the host's nodes as they were.
func TestDeviceNodesUnchanged(t *testing.T) {
	rootOnly(t, "only root owns the device nodes")
	nodes := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
	eachBackend(t, func(t *testing.T, be []string) {
		saved := map[string]unix.Stat_t{}
		for _, n := range nodes {
			var st unix.Stat_t
			if err := unix.Stat(n, &st); err != nil {
				t.Fatal(err)
			}
			saved[n] = st
		}
		t.Cleanup(func() {
			// Put back what a failing run changed: the machine's other users
			// need these.
			for n, st := range saved {
				var now unix.Stat_t
				if unix.Stat(n, &now) == nil && (now.Mode != st.Mode || now.Mtim != st.Mtim) {
					unix.Chmod(n, st.Mode&0o7777)
					unix.UtimesNano(n, []unix.Timespec{st.Atim, st.Mtim})
				}
			}
		})
		w := newWorld(t)
		r := w.sh(be, "chmod 600 /dev/full; chmod 666 /dev/tty; touch -d 2001-01-01 /dev/null /dev/zero /dev/full /dev/random /dev/urandom; true")
		expectCode(t, r, 0)
		for _, n := range nodes {
			var st unix.Stat_t
			unix.Stat(n, &st)
			if st.Mode != saved[n].Mode || st.Mtim != saved[n].Mtim || st.Ctim != saved[n].Ctim {
				t.Errorf("the host's %s changed: mode %o mtime %v ctime %v, before %o %v %v", n, st.Mode, st.Mtim, st.Ctim,
					saved[n].Mode, saved[n].Mtim, saved[n].Ctim)
			}
		}
		// With a terminal on stdout bwrap binds it at /dev/console: the
		// user's terminal's node stays as it was too.
		_, slave := openPty(t)
		var before unix.Stat_t
		unix.Fstat(int(slave.Fd()), &before)
		time.Sleep(20 * time.Millisecond)
		c := w.cmd(args([]string{"run"}, be, []string{"--", "sh", "-c", "chmod 600 /dev/console $(tty </dev/stdout 2>/dev/null); touch -d 2001-01-01 /dev/console; true"})...)
		c.Stdout, c.Stderr = slave, slave
		if err := c.Run(); err != nil {
			t.Fatalf("agentbox: %v", err)
		}
		var after unix.Stat_t
		unix.Fstat(int(slave.Fd()), &after)
		if after.Mode != before.Mode || after.Mtim != before.Mtim || after.Ctim != before.Ctim {
			t.Errorf("the terminal on stdout changed: mode %o mtime %v ctime %v, before %o %v %v", after.Mode, after.Mtim, after.Ctim,
				before.Mode, before.Mtim, before.Ctim)
		}
	})
}
