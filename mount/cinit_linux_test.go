package mount

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/cinit"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/proctest"
	"github.com/agentbox/agentbox/supervise"
)

// The C init run directly, outside a box, for each architecture it is
// built for: natively when it is this machine's, else under qemu-user
// (qemu-aarch64-static). What only a box can show (pid 1's reaping, the
// terminal, bwrap's descriptors) is tested by the integration tests.

type cinitArch struct {
	name   string
	file   string   // the checked-in binary
	runner []string // how to start it here
}

func cinitArches(t *testing.T) []cinitArch {
	var out []cinitArch
	for _, a := range []string{"amd64", "arm64"} {
		file, err := filepath.Abs(filepath.Join("..", "cinit", "c", "init-linux-"+a))
		if err != nil {
			t.Fatal(err)
		}
		ca := cinitArch{name: a, file: file}
		if a != runtime.GOARCH {
			q := map[string]string{"arm64": "qemu-aarch64-static", "amd64": "qemu-x86_64-static"}[a]
			path, err := exec.LookPath(q)
			if err != nil {
				if os.Getenv("AGENTBOX_MUST_WORK") != "" {
					t.Errorf("%s is not installed: the %s C init cannot be run here (apt-get install qemu-user-static)", q, a)
				}
				t.Logf("%s is not installed: the %s C init is not run", q, a)
				continue
			}
			ca.runner = []string{path}
		}
		out = append(out, ca)
	}
	return out
}

// command starts the C init of a with args, from an executable copy.
func (a cinitArch) command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	data, err := os.ReadFile(a.file)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "init")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	argv := append(append(append([]string(nil), a.runner...), exe, InitCommand), args...)
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = t.TempDir()
	if os.Getuid() != 0 {
		// The init drops every capability, the bounding set too, and
		// refuses to start CMD if one is left; an ordinary user's
		// bounding set is full and only CAP_SETPCAP may empty it. In a
		// box bwrap leaves the init that capability of the box's user
		// namespace (Render); here a user namespace of its own, mapping
		// this user only, does.
		uid, gid := os.Getuid(), os.Getgid()
		c.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			AmbientCaps: []uintptr{unix.CAP_SETPCAP},
		}
	}
	return c
}

// cinitTimeout bounds every run of the C init here (under qemu-user on a
// busy machine, seconds).
const cinitTimeout = 60 * time.Second

func runCInit(t *testing.T, c *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := proctest.Run(t, c, cinitTimeout)
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestCInitEmbedded(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		if len(cinit.Bytes()) != 0 {
			t.Fatal("a C init is embedded for an architecture it is not built for")
		}
		return
	}
	want, err := os.ReadFile(filepath.Join("..", "cinit", "c", "init-linux-"+runtime.GOARCH))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cinit.Bytes(), want) || len(want) < 1000 {
		t.Fatalf("the embedded C init (%d bytes) is not cinit/c/init-linux-%s (%d bytes)", len(cinit.Bytes()), runtime.GOARCH, len(want))
	}
	f := cinit.Memfd()
	if f == nil {
		t.Fatal("the kernel refused the C init's memfd")
	}
	defer f.Close()
	// Sealed: nothing can change the program once it is made.
	if _, err := f.WriteAt([]byte{0}, 0); err == nil {
		t.Fatal("the C init's memfd can still be written")
	}
	if kind, why := InitKind(Detail{}); kind != InitC {
		t.Fatalf("InitKind without the log = %s (%s), want the C init", kind, why)
	}
	if kind, _ := InitKind(Detail{LogFD: 10}); kind != InitC {
		t.Fatalf("InitKind with the filesystem log = %s, want the C init", kind)
	}
	self := Detail{Args: []string{"--ro-bind", "/", "/", "--", "/proc/self/fd/5", InitCommand, "--ready-fd", "4", "--", "/proc/self/exe", "__verify"}, CommandAt: 3, Self: true}
	if kind, _ := InitKind(self); kind != InitGo {
		t.Fatalf("InitKind for agentbox's own probe = %s, want the Go init", kind)
	}
	self.Args[9], self.Self = "sh", false
	if kind, _ := InitKind(self); kind != InitC {
		t.Fatalf("InitKind for sh = %s, want the C init", kind)
	}
	t.Setenv(InitEnv, "go")
	if kind, _ := InitKind(Detail{}); kind != InitGo {
		t.Fatalf("InitKind with %s=go = %s", InitEnv, kind)
	}
}

func TestCInitCommand(t *testing.T) {
	for _, a := range cinitArches(t) {
		t.Run(a.name, func(t *testing.T) {
			notExec := filepath.Join(t.TempDir(), "notexec")
			if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				args   []string
				code   int
				stdout string
				stderr string
			}{
				{[]string{"--", "sh", "-c", "exit 3"}, 3, "", ""},
				{[]string{"--", "sh", "-c", "kill -TERM $$"}, 143, "", ""},
				{[]string{"--", "no-such-command-xyz"}, 127, "", "agentbox: error: no-such-command-xyz: command not found\n"},
				{[]string{"--", "/"}, 126, "", "agentbox: error: /: cannot execute: is a directory\n"},
				{[]string{"--", notExec}, 126, "", "agentbox: error: " + notExec + ": cannot execute: permission denied\n"},
				{[]string{"--"}, 125, "", "agentbox: error: init: no command\n"},
				{[]string{"--rlimit", "nofile=50", "--rlimit", "cpu=9", "--", "sh", "-c", "ulimit -n; ulimit -t"}, 0, "50\n9\n", ""},
				{[]string{"--rlimit", "bogus=1", "--", "true"}, 125, "", "agentbox: error: init: bad rlimit \"bogus=1\"\n"},
			} {
				code, stdout, stderr := runCInit(t, a.command(t, c.args...))
				if code != c.code || stdout != c.stdout || stderr != c.stderr {
					t.Errorf("%q: got exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
				}
			}
			// The init holds none of the limits it sets for CMD.
			code, stdout, _ := runCInit(t, a.command(t, "--rlimit", "nofile=50", "--", "sh", "-c", `grep 'Max open files' /proc/$PPID/limits`))
			if code != 0 || strings.Contains(stdout, " 50 ") {
				t.Errorf("the init's own limits: exit %d, %q", code, stdout)
			}
		})
	}
}

// The ready byte, the closing of every inherited descriptor, and the
// forwarding of each of the seven signals.
func TestCInitReadySignals(t *testing.T) {
	for _, a := range cinitArches(t) {
		t.Run(a.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			leak, err := os.Open("/etc/hostname")
			if err != nil {
				t.Fatal(err)
			}
			c := a.command(t, "--ready-fd", "3", "--", "sh", "-c", `ls /proc/self/fd | tr '\n' ' '`)
			c.ExtraFiles = []*os.File{w, leak}
			var out bytes.Buffer
			c.Stdout = &out
			proctest.Start(t, c)
			w.Close()
			leak.Close()
			// The read ends when the init writes or exits: Wait bounds both.
			r.SetReadDeadline(time.Now().Add(cinitTimeout))
			b := make([]byte, 2)
			n, _ := r.Read(b)
			r.Close()
			proctest.Wait(t, c, cinitTimeout)
			if n != 1 || b[0] != 'R' {
				t.Errorf("ready byte: got %q", b[:n])
			}
			// 0, 1, 2 and ls's own listing descriptor: nothing inherited.
			if fds := strings.Fields(out.String()); len(fds) != 4 {
				t.Errorf("CMD holds descriptors %v, want only 0, 1, 2 and ls's own", fds)
			}

			// The trap relies on the signals' default disposition in the
			// shell, which TestMain gives every process the tests start
			// (a shell ignores for good what it inherits ignored, as under
			// nohup or a shell's &).
			for _, sig := range []syscall.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2} {
				name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
				c := a.command(t, "--", "sh", "-c", `trap 'echo got `+name+`; exit 7' `+name+`; echo ready; while :; do sleep 0.05; done`)
				stdout, err := c.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				proctest.Start(t, c)
				br := bufio.NewReader(stdout)
				if line := proctest.Line(t, br, cinitTimeout); line != "ready\n" {
					t.Fatalf("%s: %q", name, line)
				}
				c.Process.Signal(sig)
				line := proctest.Line(t, br, 10*time.Second)
				err = proctest.Wait(t, c, 10*time.Second)
				if ee, ok := err.(*exec.ExitError); line != "got "+name+"\n" || !ok || ee.ExitCode() != 7 {
					t.Errorf("%s: CMD printed %q and the init ended with %v, want the trap's exit 7", name, line, err)
				}
			}
		})
	}
}

// The C init's mount check says what the Go one (verifyMounts) says about
// the same records. Whatever / is here (a tmpfs in some containers and
// live systems), the records that must fail name paths that cannot pass:
// /proc is never a tmpfs, and /dev/shm is a tmpfs case only where it is a
// writable tmpfs mounted there (not a folder of /dev's own tmpfs, as in a
// bwrap box).
func TestCInitCheckMatchesGo(t *testing.T) {
	var root unix.Stat_t
	if err := unix.Stat("/", &root); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	var st unix.Stat_t
	unix.Stat(sub, &st)
	os.Symlink("/", filepath.Join(dir, "link"))
	rec := checkRecord
	cases := []struct {
		name, data string
		ok         bool
	}{
		{"the opened root", rec("bind", root.Dev, root.Ino, "/"), true},
		{"another inode", rec("bind", root.Dev, root.Ino+1, "/"), false},
		{"another device", rec("bind", root.Dev+1, root.Ino, "/"), false},
		{"not a mount point", rec("bind", st.Dev, st.Ino, sub), false},
		{"a symlink on the way", rec("bind", root.Dev, root.Ino, filepath.Join(dir, "link")), false},
		{"a symlink inside the path", rec("bind", root.Dev, root.Ino, filepath.Join(dir, "link", "etc")), false},
		{"missing", rec("bind", 1, 1, filepath.Join(dir, "gone")), false},
		{"hidden folder not a tmpfs", rec("hide-dir", 0, 0, "/proc"), false},
		{"hidden file not a tmpfs", rec("hide-file", 0, 0, "/proc"), false},
		{"tmpfs not a tmpfs", rec("tmpfs", 0, 0, "/proc"), false},
		{"second record fails", rec("bind", root.Dev, root.Ino, "/") + rec("tmpfs", 0, 0, "/proc"), false},
		{"empty", "", true},
		{"read-only missing", rec("ro", 0, 0, filepath.Join(dir, "gone")), true},
		{"read-only through a symlink", rec("ro", 0, 0, filepath.Join(dir, "link", "proc")), false},
	}
	var procfs unix.Statfs_t
	if unix.Statfs("/proc", &procfs) == nil && procfs.Flags&unix.ST_RDONLY == 0 {
		cases = append(cases, struct {
			name, data string
			ok         bool
		}{"read-only writable", rec("ro", 0, 0, "/proc"), false})
	}
	if ro := readOnlyMount(t); ro != "" {
		cases = append(cases, struct {
			name, data string
			ok         bool
		}{"read-only", rec("ro", 0, 0, ro), true})
		var rost unix.Stat_t
		if unix.Stat(ro, &rost) == nil {
			cases = append(cases, struct {
				name, data string
				ok         bool
			}{"a read-only bind", rec("bind-ro", rost.Dev, rost.Ino, ro), true})
		}
	}
	var rootfs unix.Statfs_t
	if unix.Statfs("/", &rootfs) == nil && rootfs.Flags&unix.ST_RDONLY == 0 {
		cases = append(cases, struct {
			name, data string
			ok         bool
		}{"a read-only bind that is writable", rec("bind-ro", root.Dev, root.Ino, "/"), false})
	}
	var shm unix.Statfs_t
	var shmx unix.Statx_t
	mounted := unix.Statx(unix.AT_FDCWD, "/dev/shm", unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &shmx) == nil &&
		shmx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && shmx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	if mounted && unix.Statfs("/dev/shm", &shm) == nil && shm.Type == unix.TMPFS_MAGIC && shm.Flags&unix.ST_RDONLY == 0 {
		cases = append(cases,
			struct {
				name, data string
				ok         bool
			}{"tmpfs", rec("tmpfs", 0, 0, "/dev/shm"), true},
			struct {
				name, data string
				ok         bool
			}{"hidden folder writable", rec("hide-dir", 0, 0, "/dev/shm"), false})
	}
	for _, a := range cinitArches(t) {
		for _, c := range cases {
			t.Run(a.name+"/"+c.name, func(t *testing.T) {
				goErr := verifyMounts([]byte(c.data))
				if (goErr == nil) != c.ok {
					t.Fatalf("Go init: %v, want ok=%v", goErr, c.ok)
				}
				f, err := supervise.SealedFile("checks", []byte(c.data))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				cmd := a.command(t, "--check-fd", "3", "--", "true")
				cmd.ExtraFiles = []*os.File{f}
				code, _, stderr := runCInit(t, cmd)
				want, wantCode := "", 0
				if goErr != nil {
					want, wantCode = "agentbox: error: init: "+goErr.Error()+"\n", 125
				}
				if code != wantCode || stderr != want {
					t.Errorf("C init: exit %d, %q\nGo init: exit %d, %q", code, stderr, wantCode, want)
				}
			})
		}
	}
}

// Where close_range is missing (before Linux 5.9) or refused (a
// container's seccomp profile), the init still closes every descriptor it
// inherited: here close_range fails with ENOSYS under a filter bwrap
// installs, and CMD must hold nothing but 0, 1, 2 (and ls's own).
func TestCInitClosesWithoutCloseRange(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("AGENTBOX_MUST_WORK") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if len(cinit.Bytes()) == 0 {
		t.Skip("no C init for " + runtime.GOARCH)
	}
	// close_range (436 on every architecture) -> ENOSYS, the rest allowed.
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_CLOSE_RANGE, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	var raw []byte
	for _, f := range prog {
		raw = append(raw, byte(f.Code), byte(f.Code>>8), f.Jt, f.Jf, byte(f.K), byte(f.K>>8), byte(f.K>>16), byte(f.K>>24))
	}
	filter, err := supervise.SealedFile("filter", raw)
	if err != nil {
		t.Fatal(err)
	}
	defer filter.Close()
	exe := filepath.Join(t.TempDir(), "init")
	if err := os.WriteFile(exe, cinit.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	leak1, _ := os.Open("/etc/hostname")
	leak2, _ := os.Open("/")
	defer leak1.Close()
	defer leak2.Close()
	args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--die-with-parent"}
	// The capabilities Render leaves the init, to drop before it starts
	// CMD (and, not as root, to make the box's mounts private).
	initArgs := []string{exe, InitCommand}
	if os.Getuid() == 0 {
		args = append(args, "--cap-drop", "ALL", "--cap-add", "CAP_SETPCAP")
	} else {
		args = append(args, "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")
		initArgs = append(initArgs, "--private-mounts")
	}
	args = append(append(append(args, "--seccomp", "3", "--as-pid-1", "--"), initArgs...), "--", "sh", "-c", `ls /proc/self/fd | tr '\n' ' '`)
	c := exec.Command(bwrap, args...)
	c.ExtraFiles = []*os.File{filter, leak1, leak2}
	var b bytes.Buffer
	c.Stdout, c.Stderr = &b, &b
	err = proctest.Run(t, c, cinitTimeout)
	out := b.Bytes()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if fds := strings.Fields(string(out)); len(fds) != 4 {
		t.Fatalf("without close_range CMD holds descriptors %v, want only 0, 1, 2 and ls's own", fds)
	}
}

// A proxy that does not read (its socket full) must not stop the init: it
// keeps reaping and ends with CMD's status, as the Go init (one goroutine
// per listener) does.
func TestCInitRelayDoesNotBlock(t *testing.T) {
	for _, a := range cinitArches(t) {
		t.Run(a.name, func(t *testing.T) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			host := os.NewFile(uintptr(fds[0]), "proxy") // never read
			box := os.NewFile(uintptr(fds[1]), "box")
			defer host.Close()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			script := fmt.Sprintf(`
import socket, sys
n = 0
for i in range(1500):
    try:
        s = socket.create_connection(("127.0.0.1", %d), timeout=1)
        s.close()
        n += 1
    except OSError:
        pass
print("connected", n)
sys.exit(3)
`, port)
			c := a.command(t, "--net-fd", "3", "--net-port", fmt.Sprint(port), "--", "python3", "-c", script)
			c.ExtraFiles = []*os.File{box}
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			proctest.Start(t, c)
			box.Close()
			// Wait fails the test if the init hangs on a proxy that does
			// not read (CMD having ended).
			if err := proctest.Wait(t, c, cinitTimeout); err != nil {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
					t.Fatalf("want CMD's exit 3, got %v: %s", err, out.String())
				}
			} else {
				t.Fatalf("want CMD's exit 3, got 0: %s", out.String())
			}
			if !strings.Contains(out.String(), "connected") {
				t.Fatalf("CMD did not run: %s", out.String())
			}
		})
	}
}

// A log socket without the supervisor's filter on it: the C init says so
// on the socket ('E' and why) and does not start CMD, whose connects
// nothing would judge.
func TestCInitLogWithoutFilter(t *testing.T) {
	for _, a := range cinitArches(t) {
		t.Run(a.name, func(t *testing.T) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Non-blocking, so that the read below can have a deadline.
			unix.SetNonblock(fds[0], true)
			host, box := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "box")
			defer host.Close()
			defer box.Close()
			c := a.command(t, "--log-fd", "3", "--log-reads", "--", "sh", "-c", "exit 4")
			c.ExtraFiles = []*os.File{box}
			code, _, stderr := runCInit(t, c)
			if code != 125 || !strings.Contains(stderr, "the box's unix socket connects cannot be judged") {
				t.Fatalf("want 125 and why, got %d: %s", code, stderr)
			}
			buf := make([]byte, 256)
			host.SetReadDeadline(time.Now().Add(cinitTimeout))
			n, err := host.Read(buf)
			if err != nil || string(buf[:n]) != "Ethe log's filter did not come from agentbox" {
				t.Fatalf("the init said %q (%v)", buf[:n], err)
			}
		})
	}
}

// With --publish the C init answers agentbox's questions for sockets
// (netproxy.DialBox): agentbox connects each to the box's server.
func TestCInitAnswersSockets(t *testing.T) {
	for _, a := range cinitArches(t) {
		t.Run(a.name, func(t *testing.T) {
			host, box, err := netproxy.Pair()
			if err != nil {
				t.Fatal(err)
			}
			rules, _ := netproxy.Compile(nil, nil)
			p, err := netproxy.New(rules, netproxy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- p.Serve(host) }()
			defer func() { p.Close(); <-served }()
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Write([]byte("from the server\n"))
					c.Close()
				}
			}()
			c := a.command(t, "--net-fd", "3", "--publish", "1", "--", "sleep", "20")
			c.ExtraFiles = []*os.File{box}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			box.Close()
			defer func() { c.Process.Kill(); c.Wait() }()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			conn, err := p.DialBox(ctx, ln.Addr().(*net.TCPAddr).Port)
			if err != nil {
				t.Fatalf("DialBox: %v", err)
			}
			defer conn.Close()
			line, err := bufio.NewReader(conn).ReadString('\n')
			if line != "from the server\n" {
				t.Fatalf("read %q, %v", line, err)
			}
		})
	}
}

// readOnlyMount is a mount point of this process that is read-only and
// reached through no symbolic link, or "" if there is none.
func readOnlyMount(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || strings.Contains(f[4], "\\") {
			continue
		}
		var st unix.Statfs_t
		if real, err := filepath.EvalSymlinks(f[4]); err != nil || real != f[4] || unix.Statfs(f[4], &st) != nil || st.Flags&unix.ST_RDONLY == 0 {
			continue
		}
		return f[4]
	}
	return ""
}

// checkRecord is one record of the init's check file: kind, device,
// inode, path.
func checkRecord(kind string, dev, ino uint64, path string) string {
	return fmt.Sprintf("%s\t%d\t%d\t%s\x00", kind, dev, ino, path)
}

// runMakes runs the C init a with the check file data (the mounts it makes
// and its checks) in a mount namespace of its own made private first
// (--private-mounts, as in a box), CMD being `sh -c script args...` in
// dir, and returns its exit status and output.
func runMakes(t *testing.T, a cinitArch, dir, data, script string, args ...string) (int, string, string) {
	t.Helper()
	f, err := supervise.SealedFile("checks", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := a.command(t, append([]string{"--check-fd", "3", "--private-mounts", "--", "/bin/sh", "-c", script}, args...)...)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Dir = dir
	if cmd.SysProcAttr != nil {
		// A user's own user namespace gives the init CAP_SYS_ADMIN
		// there too, as bwrap does in a box.
		cmd.SysProcAttr.AmbientCaps = append(cmd.SysProcAttr.AmbientCaps, unix.CAP_SYS_ADMIN)
	}
	return runCInit(t, cmd)
}

// expectMakesRefused runs the C init a with each named check file: each
// must end the box with 125 and the init's error, CMD never run.
func expectMakesRefused(t *testing.T, a cinitArch, dir string, cases map[string]string) {
	t.Helper()
	for name, data := range cases {
		code, out, stderr := runMakes(t, a, dir, data, "echo ran")
		if code != 125 || out != "" || !strings.Contains(stderr, "agentbox: error: init: ") {
			t.Errorf("%s: exit %d, %q, %q; want 125 and nothing run", name, code, out, stderr)
		}
	}
}

// TestCInitMakesReadOnlyBinds: the binds the C init makes in bwrap's place
// (make-ro records, InitMount), in a mount namespace of its own made
// private first (--private-mounts, as in a box): the folder is read-only
// for CMD by its path and as its working folder (entered again over the
// bind: bwrap had entered it before), and the bind-ro record agentbox adds
// for it passes. A path that is not the file agentbox opened, or one
// reached through a symlink, is refused before anything is mounted.
func TestCInitMakesReadOnlyBinds(t *testing.T) {
	if !MountAPI() {
		t.Fatal("this kernel has no mount API (mount_setattr): the C init's binds cannot be tested here")
	}
	rec := checkRecord
	for _, a := range cinitArches(t) {
		t.Run(a.name, func(t *testing.T) {
			dir := t.TempDir()
			ro := filepath.Join(dir, "ro")
			if err := os.Mkdir(ro, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Symlink(ro, filepath.Join(dir, "link"))
			var st unix.Stat_t
			if err := unix.Stat(ro, &st); err != nil {
				t.Fatal(err)
			}
			probe := `for p in "$0" .; do if touch "$p/x" 2>/dev/null; then echo "$p writable"; else echo "$p read-only"; fi; done`
			code, out, stderr := runMakes(t, a, ro, rec("make-ro", st.Dev, st.Ino, ro)+rec("bind-ro", st.Dev, st.Ino, ro), strings.Replace(probe, "$0", ro, 1))
			if a.runner != nil {
				// Emulated (qemu-user 7.2 has no open_tree): where the
				// system call is missing the init refuses, nothing runs.
				if code != 125 || out != "" || !strings.Contains(stderr, "open_tree") {
					t.Errorf("emulated, without the mount API: exit %d, %q, %q; want 125 and nothing run", code, out, stderr)
				}
			} else if want := ro + " read-only\n. read-only\n"; code != 0 || out != want {
				t.Errorf("made read-only: exit %d, %q (stderr %q), want %q", code, out, stderr, want)
			}
			if _, err := os.Lstat(filepath.Join(ro, "x")); err == nil {
				t.Error("CMD wrote into the folder made read-only")
			}
			expectMakesRefused(t, a, ro, map[string]string{
				"another inode":      rec("make-ro", st.Dev, st.Ino+1, ro),
				"through a symlink":  rec("make-ro", st.Dev, st.Ino, filepath.Join(dir, "link")),
				"missing":            rec("make-ro", st.Dev, st.Ino, filepath.Join(dir, "gone")),
				"a check that fails": rec("make-ro", st.Dev, st.Ino, ro) + rec("bind-ro", st.Dev, st.Ino+1, ro),
			})
		})
	}
}

// TestCInitMakesPins: the C init pins a folder (record make-pin, as
// .git and .git/info in a project): CMD can write in it but neither rename
// nor remove it (it is a mount point), and the same checks as for bwrap's
// pin pass; another inode, a symlink or a missing path and nothing runs.
func TestCInitMakesPins(t *testing.T) {
	if !MountAPI() {
		t.Fatal("this kernel has no mount API (mount_setattr): the C init's mounts cannot be tested here")
	}
	rec := checkRecord
	for _, a := range cinitArches(t) {
		t.Run(a.name, func(t *testing.T) {
			dir := t.TempDir()
			pin := filepath.Join(dir, ".git")
			if err := os.Mkdir(pin, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Symlink(pin, filepath.Join(dir, "link"))
			var st unix.Stat_t
			if err := unix.Stat(pin, &st); err != nil {
				t.Fatal(err)
			}
			script := `echo x >"$0/HEAD" && echo wrote; mv "$0" "$0.moved" 2>/dev/null && echo moved; rmdir "$0" 2>/dev/null && echo removed; ` +
				`awk -v a="$0" '$5 == a { split($6, o, ","); print o[1] }' /proc/self/mountinfo`
			code, out, stderr := runMakes(t, a, dir, rec("make-pin", st.Dev, st.Ino, pin)+rec("bind", st.Dev, st.Ino, pin), script, pin)
			if a.runner != nil {
				if code != 125 || out != "" || !strings.Contains(stderr, "agentbox: error: init: ") {
					t.Errorf("emulated, without the mount API: exit %d, %q, %q; want 125 and nothing run", code, out, stderr)
				}
			} else if want := "wrote\nrw\n"; code != 0 || out != want {
				t.Errorf("pinned: exit %d, %q (stderr %q), want %q", code, out, stderr, want)
			}
			if _, err := os.Lstat(pin); err != nil {
				t.Errorf("the pinned folder is gone: %v", err)
			}
			expectMakesRefused(t, a, dir, map[string]string{
				"another inode":      rec("make-pin", st.Dev, st.Ino+1, pin),
				"through a symlink":  rec("make-pin", st.Dev, st.Ino, filepath.Join(dir, "link")),
				"missing":            rec("make-pin", st.Dev, st.Ino, filepath.Join(dir, "gone")),
				"a check that fails": rec("make-pin", st.Dev, st.Ino, pin) + rec("bind", st.Dev, st.Ino+1, pin),
			})
		})
	}
}

// TestCInitMakesHides: the C init hides a folder and a file (records
// make-hide-dir, make-hide-file) as bwrap's --tmpfs and --remount-ro, and
// --ro-bind-data of nothing, would: an empty read-only folder (0755) and
// an empty read-only file (0600) where they were, which the same checks
// as bwrap's hidden paths pass; nothing CMD does there reaches the host's
// files. A path through a symlink, a missing one, a folder taken for a
// file and the other way round, or a failing check: nothing runs.
func TestCInitMakesHides(t *testing.T) {
	if !MountAPI() {
		t.Fatal("this kernel has no mount API (mount_setattr): the C init's mounts cannot be tested here")
	}
	rec := func(kind, path string) string { return checkRecord(kind, 0, 0, path) }
	for _, a := range cinitArches(t) {
		t.Run(a.name, func(t *testing.T) {
			dir := t.TempDir()
			secret, tok := filepath.Join(dir, "secret"), filepath.Join(dir, "tok")
			if err := os.Mkdir(secret, 0o777); err != nil {
				t.Fatal(err)
			}
			for f, data := range map[string]string{filepath.Join(secret, "s"): "TOP", tok: "TOKEN"} {
				if err := os.WriteFile(f, []byte(data), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			os.Symlink(secret, filepath.Join(dir, "link"))
			script := `ls -A "$0"; stat -c '%A %s %F' "$0" "$1"; cat "$1"; ` +
				`touch "$0/x" 2>/dev/null && echo wrote folder; echo x 2>/dev/null >"$1" && echo wrote file; ` +
				`chmod 777 "$0" 2>/dev/null && echo chmod; echo done`
			code, out, stderr := runMakes(t, a, dir, rec("make-hide-dir", secret)+rec("make-hide-file", tok)+rec("hide-dir", secret)+rec("hide-file", tok), script, secret, tok)
			if a.runner != nil {
				// Emulated (qemu-user 7.2 lacks parts of the mount API):
				// where a system call is missing the init refuses.
				if code != 125 || out != "" || !strings.Contains(stderr, "agentbox: error: init: ") {
					t.Errorf("emulated, without the mount API: exit %d, %q, %q; want 125 and nothing run", code, out, stderr)
				}
			} else if want := "drwxr-xr-x 40 directory\n-rw------- 0 regular empty file\ndone\n"; code != 0 || out != want {
				t.Errorf("hidden: exit %d, %q (stderr %q), want %q", code, out, stderr, want)
			}
			for f, data := range map[string]string{filepath.Join(secret, "s"): "TOP", tok: "TOKEN"} {
				if got, err := os.ReadFile(f); err != nil || string(got) != data {
					t.Errorf("%s: %q, %v after the run; want %q", f, got, err, data)
				}
			}
			if _, err := os.Lstat(filepath.Join(secret, "x")); err == nil {
				t.Error("CMD wrote into the hidden folder")
			}
			expectMakesRefused(t, a, dir, map[string]string{
				"through a symlink":         rec("make-hide-dir", filepath.Join(dir, "link")),
				"missing":                   rec("make-hide-file", filepath.Join(dir, "gone")),
				"a folder taken for a file": rec("make-hide-file", secret),
				"a file taken for a folder": rec("make-hide-dir", tok),
				"a check that fails":        rec("make-hide-dir", secret) + rec("hide-file", secret),
			})
		})
	}
}

// TestCInitUnreachableWorkingFolder: when the init's working folder cannot
// be reached from its root (the host moved it out of the box's view, or
// its mount is gone), getcwd answers "(unreachable)/..." — a relative
// path. The init, which enters its working folder again over its binds,
// must refuse then, not open that path relative to the old working folder
// (where a folder of that name would become CMD's working folder).
func TestCInitUnreachableWorkingFolder(t *testing.T) {
	if !MountAPI() {
		t.Fatal("this kernel has no mount API (mount_setattr): the C init's binds cannot be tested here")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		if os.Getenv("AGENTBOX_MUST_WORK") != "" {
			t.Fatal("unshare (util-linux) is not installed")
		}
		t.Skip("unshare (util-linux) is not installed")
	}
	a := cinitArch{name: runtime.GOARCH}
	var err error
	if a.file, err = filepath.Abs(filepath.Join("..", "cinit", "c", "init-linux-"+runtime.GOARCH)); err != nil {
		t.Fatal(err)
	}
	exe := a.command(t).Path
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	ro := filepath.Join(dir, "ro")
	gone := filepath.Join(dir, "gone")
	for _, d := range []string{ro, gone} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(ro, &st); err != nil {
		t.Fatal(err)
	}
	f, err := supervise.SealedFile("checks", []byte(fmt.Sprintf("make-ro\t%d\t%d\t%s\x00", st.Dev, st.Ino, ro)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A tmpfs of its own, entered at d, then detached: the working folder
	// is unreachable, and "(unreachable)/d" exists below it.
	script := `mount -t tmpfs t "$0" && mkdir -p "$0/d/(unreachable)/d" && cd "$0/d" && umount -l "$0" && exec "$@"`
	wrap := []string{"unshare", "--mount", "--propagation", "private"}
	if os.Getuid() != 0 {
		wrap = []string{"unshare", "--user", "--map-current-user", "--keep-caps", "--mount", "--propagation", "private"}
	}
	argv := append(wrap, "sh", "-c", script, gone, exe, InitCommand, "--check-fd", "3", "--private-mounts", "--", "/bin/sh", "-c", "echo ran in; pwd")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{f}
	code, out, stderr := runCInit(t, cmd)
	if code != 125 || out != "" || !strings.Contains(stderr, "agentbox: error: init: (unreachable)/d: the working folder is not reachable") {
		t.Errorf("an unreachable working folder: exit %d, %q, %q; want 125 and nothing run", code, out, stderr)
	}
}
