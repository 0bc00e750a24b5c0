//go:build linux

package integration

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/proctest"
	"golang.org/x/sys/unix"
)

// A root box's device nodes are its own, made for the run: what one box
// does to them (chmod, touch) is not what the next box finds.
func TestDevNodesFreshEachRun(t *testing.T) {
	rootOnly(t, "only a root box has device nodes of its own")
	w := newWorld(t)
	be := []string{"--backend", "bwrap"}
	r := w.sh(be, "stat -c %d:%i /dev/null; chmod 600 /dev/null /dev/tty; touch -d 2001-01-01 /dev/zero")
	expectCode(t, r, 0)
	r = w.sh(be, "stat -c '%a' /dev/null; stat -c %a /dev/tty; stat -c %Y /dev/zero")
	expectCode(t, r, 0)
	f := strings.Fields(r.stdout)
	if len(f) != 3 {
		t.Fatalf("want two modes and a time, got %q", r.stdout)
	}
	if f[0] != "666" || f[1] != "666" {
		t.Errorf("the second box's /dev/null and /dev/tty have modes %s and %s, want 666: the first box's chmod reached it", f[0], f[1])
	}
	if f[2] == "978307200" {
		t.Error("the second box's /dev/zero has the time the first box gave it")
	}
}

// Two boxes at once never share a node: the one that starts while another
// runs gets nodes of its own.
func TestDevNodesNotShared(t *testing.T) {
	rootOnly(t, "only a root box has device nodes of its own")
	w := newWorld(t)
	be := []string{"--backend", "bwrap"}
	a := w.cmd(append(append([]string{"run"}, be...), "--", "sh", "-c",
		"stat -c %d:%i /dev/null > a.ino; i=0; while [ ! -e b.ino ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done")...)
	a.Dir = w.project
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(w.project, "a.ino")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first box did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := w.sh(be, "stat -c %d:%i /dev/null > b.ino")
	expectCode(t, r, 0)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the first box: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the first box did not end")
	}
	ia, _ := os.ReadFile(filepath.Join(w.project, "a.ino"))
	ib, _ := os.ReadFile(filepath.Join(w.project, "b.ino"))
	if len(ia) == 0 || string(ia) == string(ib) {
		t.Errorf("the boxes' /dev/null: device:inode %q and %q, want two nodes", ia, ib)
	}
}

// A root box's own nodes are made in a tmpfs over /dev in a mount
// namespace of bwrap's own before bwrap starts (so that bwrap's --dev
// binds them): nothing of it may reach the host's mount table, where it
// would give every program of the machine the box's /dev.
func TestDevNodesNotBoundOnHost(t *testing.T) {
	rootOnly(t, "only a root box has device nodes of its own")
	w := newWorld(t)
	c, br, errb := w.startWaiting("bwrap", "stat -c %d:%i /dev/null")
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		switch f[4] {
		case "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/console":
			t.Errorf("the host's mount table has a device node mounted while the box runs: %s", line)
		case "/dev":
			if strings.Contains(line, " - tmpfs ") {
				t.Errorf("the host's mount table has a tmpfs over /dev while the box runs: %s", line)
			}
		}
	}
	write(t, filepath.Join(w.project, "go"), "")
	ino := strings.TrimSpace(readRest(t, br))
	if err := waitCmd(t, c); err != nil {
		t.Fatalf("agentbox: %v\n%s", err, errb)
	}
	var host unix.Stat_t
	if err := unix.Stat("/dev/null", &host); err != nil {
		t.Fatal(err)
	}
	if ino == "" || ino == fmt.Sprintf("%d:%d", host.Dev, host.Ino) {
		t.Errorf("the box's /dev/null is device:inode %q, the host's is %d:%d: want a node of the box's own", ino, host.Dev, host.Ino)
	}
}

// A root run builds its box in mount namespaces below the host's: its own
// (where the box's device nodes are made) and bwrap's. Where the host's
// mounts propagate (a shared /, what systemd makes), nothing agentbox
// mounts or unmounts there may reach the host (the host's /dev stays as
// it was), and nothing the host mounts while the box runs may reach the
// box: under a read-only path it would be a writable folder the policy
// never granted (a USB stick mounted under /media, an sshfs in the home
// folder). The host here is a mount namespace whose / is shared.
func TestRootBoxMountPropagation(t *testing.T) {
	rootOnly(t, "only a root run makes a mount namespace of its own for bwrap")
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) is not installed")
	w := newWorld(t)
	m := filepath.Join(w.base, "hostmnt")
	out := filepath.Join(w.base, "out")
	mkdir(t, m)
	mkdir(t, out)
	box := fmt.Sprintf(`echo > ready; i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
grep -c agentbox-hostmnt /proc/self/mountinfo > seen
echo x 2>/dev/null > %s/boxwrote
true`, m)
	host := fmt.Sprintf(`grep -E ' /dev( |/)' /proc/self/mountinfo > %[2]s/before
"$@" & p=$!
i=0; while [ ! -e ready ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
grep -E ' /dev( |/)' /proc/self/mountinfo > %[2]s/during
mount -t tmpfs agentbox-hostmnt %[1]s
touch go
wait $p; echo $? > %[2]s/rc
ls -A %[1]s > %[2]s/listing
umount %[1]s`, m, out)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "shared", "--", "sh", "-c", host, "sh",
		bin, "run", "--backend", "bwrap", "--", "sh", "-c", box)
	c.Dir, c.Env = w.project, w.env
	var errb strings.Builder
	c.Stdout, c.Stderr = &errb, &errb
	if err := proctest.Run(t, c, 2*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("%v\n%s", err, errb.String())
		}
		return string(b)
	}
	if rc := strings.TrimSpace(read("rc")); rc != "0" {
		t.Fatalf("agentbox exited %s\n%s", rc, errb.String())
	}
	if before, during := read("before"), read("during"); before != during || !strings.Contains(before, " /dev ") {
		t.Errorf("the host's /dev while a root box runs:\n%s\nwant it as before:\n%s", during, before)
	}
	if seen, _ := os.ReadFile(filepath.Join(w.project, "seen")); strings.TrimSpace(string(seen)) != "0" {
		t.Errorf("the box saw the host's mount made while it ran (%q lines of its mount table)", strings.TrimSpace(string(seen)))
	}
	if l := read("listing"); strings.Contains(l, "boxwrote") {
		t.Errorf("the box wrote into a host mount made while it ran, under a read-only path: %q", l)
	}
}

// A root box's /dev/console is a node of the box's own of the terminal on
// agentbox's stdout: that very terminal, found from the descriptor, never
// whatever its name (/dev/pts/N) is in agentbox's mount namespace, where
// it can be another terminal or another device (a terminal handed in from
// another namespace; here another device mounted over the name).
func TestRootConsoleIsStdoutsTerminal(t *testing.T) {
	rootOnly(t, "only a root box has a /dev/console of its own")
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) is not installed")
	w := newWorld(t)
	master, slave := openPty(t)
	go io.Copy(io.Discard, master)
	var st unix.Stat_t
	if err := unix.Fstat(int(slave.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount --bind /dev/full "$0" && exec "$@"`, slave.Name(),
		bin, "run", "--backend", "bwrap", "--", "sh", "-c", "stat -c %t:%T /dev/console > console.dev")
	c.Dir, c.Env = w.project, w.env
	var errb strings.Builder
	c.Stdin, c.Stdout, c.Stderr = nil, slave, &errb
	if err := proctest.Run(t, c, time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	got, err := os.ReadFile(filepath.Join(w.project, "console.dev"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%x:%x", unix.Major(st.Rdev), unix.Minor(st.Rdev)); strings.TrimSpace(string(got)) != want {
		t.Errorf("the box's /dev/console is device %s, want the terminal on stdout, %s", strings.TrimSpace(string(got)), want)
	}
}

// A root run whose process may not make a mount namespace (a seccomp
// filter refusing unshare, as some container runtimes' profiles have,
// while bwrap still starts: it uses clone) cannot make the box's own
// device nodes. Never a box with the host's nodes then: the probe finds
// bwrap unusable here, so --backend bwrap refuses with why and the fix,
// and auto confines with Landlock.
func TestRootNoMountNamespace(t *testing.T) {
	rootOnly(t, "only a root run makes a mount namespace of its own for bwrap")
	w := newWorld(t)
	nounshare := buildC(t, w.base, "testdata/nounshare.c")
	run := func(args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, nounshare, append([]string{bin}, args...)...)
		c.Dir, c.Env = w.project, w.env
		var out, errb strings.Builder
		c.Stdout, c.Stderr = &out, &errb
		proctest.Own(t, c)
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{out.String(), errb.String(), code}
	}
	r := run("run", "--backend", "bwrap", "--", "true")
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "mount namespace")
	expectContains(t, "stderr", r.stderr, "--backend landlock")
	needLandlock(t)
	r = run("run", "--", "sh", "-c", "echo boxed")
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "boxed")
	expectContains(t, "stderr", r.stderr, "using Landlock")
}

// A root box's /dev/console, its own node of the terminal on stdout, has
// the terminal's owner, group and mode: a root box gets no access to it
// that the terminal's own node would not give (root redirecting a run's
// output to another user's terminal gives the box no way to read what is
// typed there).
func TestRootConsoleOwnedAsTerminal(t *testing.T) {
	rootOnly(t, "only a root box has a /dev/console of its own")
	w := newWorld(t)
	master, slave := openPty(t)
	go io.Copy(io.Discard, master)
	if err := os.Chown(slave.Name(), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(slave.Name(), 0o620); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(slave.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := w.command(ctx, "run", "--backend", "bwrap", "--", "sh", "-c", "stat -c '%u:%g %a %t:%T' /dev/console > console.st")
	var errb strings.Builder
	c.Stdin, c.Stdout, c.Stderr = nil, slave, &errb
	if err := proctest.Run(t, c, time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	got, err := os.ReadFile(filepath.Join(w.project, "console.st"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d:%d %o %x:%x", st.Uid, st.Gid, st.Mode&0o7777, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	if strings.TrimSpace(string(got)) != want {
		t.Errorf("the box's /dev/console: %s, want the terminal's owner, group, mode and device: %s", strings.TrimSpace(string(got)), want)
	}
}

// A root run killed (SIGKILL) at any moment of its start, while it makes
// the mount namespace of the box's device nodes or while bwrap builds the
// box, leaves nothing mounted on the host, whose / here is shared, and no
// process of the box behind.
func TestRootRunKilledLeavesNoMount(t *testing.T) {
	rootOnly(t, "only a root run makes a mount namespace of its own for bwrap")
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) is not installed")
	w := newWorld(t)
	out := filepath.Join(w.base, "out")
	mkdir(t, out)
	marker := "agentbox-killed-" + filepath.Base(w.base)
	host := fmt.Sprintf(`cat /proc/self/mountinfo > %[1]s/before
for d in 0 0.002 0.005 0.01 0.02 0.04 0.08 0.15 0.3; do
	"$@" & p=$!
	sleep $d; kill -9 $p; wait $p
done
sleep 0.5
cat /proc/self/mountinfo > %[1]s/after`, out)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "shared", "--", "sh", "-c", host, "sh",
		bin, "run", "--backend", "bwrap", "--", "sh", "-c", "exec sleep 60 "+marker)
	c.Dir, c.Env = w.project, w.env
	var errb strings.Builder
	c.Stdout, c.Stderr = &errb, &errb
	if err := proctest.Run(t, c, 2*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	before, err := os.ReadFile(filepath.Join(out, "before"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(filepath.Join(out, "after"))
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("the host's mount table after root runs killed while starting:\n%s\nwant it as before:\n%s", after, before)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), marker) && !strings.Contains(string(b), "agentbox") {
			t.Errorf("a process of a killed run's box is still running: %s %q", p, b)
		}
	}
}

// A grant under /dev works in a root bwrap box as in any other: bwrap
// finds a bind's source by its path in the mount namespace it starts in,
// where (as root) a tmpfs of the box's own device nodes covers the host's
// /dev, so the granted path must be there too, the host's very folder.
func TestDevGrantUnderDev(t *testing.T) {
	st, err := os.Stat("/dev/shm")
	need(t, err == nil && st.IsDir() && st.Mode()&0o002 != 0, "no world-writable /dev/shm here")
	w := newWorld(t)
	name := "agentbox-devgrant-" + filepath.Base(w.base)
	t.Cleanup(func() { os.Remove(filepath.Join("/dev/shm", name)) })
	r := w.sh([]string{"--backend", "bwrap", "--writable", "/dev/shm"}, "echo boxed > /dev/shm/"+name)
	expectCode(t, r, 0)
	if b, err := os.ReadFile(filepath.Join("/dev/shm", name)); err != nil || string(b) != "boxed\n" {
		t.Errorf("the host's /dev/shm/%s after the box wrote it there: %q, %v", name, b, err)
	}
	// plan --argv's command line builds the same box (its init then
	// refuses to start the command without agentbox's log socket).
	a := w.run("plan", "--argv", "--backend", "bwrap", "--writable", "/dev/shm", "--", "true")
	expectCode(t, a, 0)
	c := exec.Command("bash", "-c", a.stdout)
	c.Dir, c.Env = w.cwd, w.env
	proctest.Own(t, c)
	out, _ := c.CombinedOutput()
	if !strings.Contains(string(out), "the log's socket (fd 10) is not there") {
		t.Errorf("running plan --argv's command line: want the box built and the init's refusal, got:\n%s\nargv: %s", out, a.stdout)
	}
}
