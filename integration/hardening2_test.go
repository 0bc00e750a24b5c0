//go:build linux

package integration

import (
	"bufio"
	"context"
	"encoding/json"
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

	"golang.org/x/sys/unix"
)

// Attacks on the promises agentbox makes, tried the way a prompt-injected
// agent (or a second box of the same project) would: paths swapped while a
// box starts, descriptors inherited from whatever started agentbox, the
// memory of agentbox's own processes, renamed parents of hidden files,
// host-side logs, the per-run temporary folders, hostile policy files,
// socket families that leave the box, a stranger's project policy, and
// credentials readable by default. Each runs under both Linux backends
// where it applies, and scripts/test.sh runs it as root and as an ordinary
// user.

// eachBackend runs f once per Linux backend with the flags that force it.
func eachBackend(t *testing.T, f func(t *testing.T, be []string)) {
	for _, name := range []string{"bwrap", "landlock"} {
		t.Run(name, func(t *testing.T) {
			if name == "landlock" {
				needLandlock(t)
			}
			f(t, []string{"--backend", name})
		})
	}
}

func needLandlock(t *testing.T) {
	t.Helper()
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	need(t, errno == 0 && v >= 1, fmt.Sprintf("no Landlock on this kernel (%v)", errno))
}

// buildC compiles one C file into dir and returns the program.
func buildC(t *testing.T, dir, src string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	need(t, err == nil, "gcc is not installed: cannot build the probe "+src)
	out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
	if b, err := exec.Command(gcc, "-O1", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", src, err, b)
	}
	return out
}

func args(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// raceTries is how many boxes the race tests start against a swapping box.
func raceTries(t *testing.T) int {
	n := 1000
	if v := os.Getenv("AGENTBOX_RACE_TRIES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("AGENTBOX_RACE_TRIES=%q: want a positive number", v)
		}
	}
	return n
}

// A box of the project swaps a folder that another box's plan pins (it
// holds a read-only path) with a symlink to another project, over and over,
// while new boxes of the project start. Whatever the timing, a new box never
// gets the other project writable: every path is opened once, without
// following links, and the box is given that descriptor. A start that finds
// the symlink is refused (exit 125); one that finds the folder runs.
func TestRaceSwappedFolder(t *testing.T) {
	tries := raceTries(t)
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		swap := buildC(t, w.base, "testdata/swap.c")
		other := filepath.Join(w.base, "other")
		write(t, filepath.Join(other, "ro"), "other project\n")
		d := filepath.Join(w.project, "d")
		write(t, filepath.Join(d, "ro"), "read-only\n")
		link := filepath.Join(w.project, "l")
		// Relative, as a box would plant it: it resolves the same from the
		// host and from bwrap's view of the host.
		if err := os.Symlink("../other", link); err != nil {
			t.Fatal(err)
		}
		// The files themselves, opened before any exchange: read by
		// name, both names may meet the link while they are read.
		mine, err := os.Open(filepath.Join(d, "ro"))
		if err != nil {
			t.Fatal(err)
		}
		defer mine.Close()
		theirs, err := os.Open(filepath.Join(other, "ro"))
		if err != nil {
			t.Fatal(err)
		}
		defer theirs.Close()
		written := func(f *os.File) bool {
			b := make([]byte, 256)
			n, _ := f.ReadAt(b, 0)
			return strings.Contains(string(b[:n]), "pwn")
		}
		won := filepath.Join(other, "won")
		// Every box that starts writes the read-only file by both names
		// the swap gives it: it stays read-only under either, whether
		// the box has its bind (says "bound") or was started while the
		// name was the link. (A plan resolved through a link that was a
		// folder when the path was walked is refused: before, it bound
		// nothing and the box wrote the project's file once the name
		// was a folder again; and Landlock's carving took the link for
		// the folder and granted the folder whole.)
		writeRO := `awk -v a="$0" -v b="$1" '$5 == a || $5 == b' /proc/self/mountinfo | grep -q . && echo bound; { echo pwn >> "$0"; echo pwn >> "$1"; } 2>/dev/null; touch "$2"`
		// Two swapping boxes one after the other: one exchanging without
		// a rest, which meets every start half way (nearly all are
		// refused: the path changes under them) and found both holes
		// above; then one resting 20 ms between two exchanges, so that
		// starts run too, with the exchanges anywhere in them.
		for _, phase := range []struct {
			rest     string
			mustRun  bool
			attempts int
		}{{"0", false, tries / 2}, {"20000", true, tries - tries/2}} {
			ctx, cancel := context.WithCancel(context.Background())
			a := exec.CommandContext(ctx, bin, args([]string{"run"}, be, []string{"--", swap, d, link, phase.rest})...)
			a.Dir, a.Env = w.project, w.env
			a.WaitDelay = 2 * time.Second
			var aerr strings.Builder
			a.Stderr = &aerr
			out, err := a.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			if line := readLine(t, bufio.NewReader(out)); line != "swapping\n" {
				cancel()
				a.Wait()
				t.Fatalf("the swapping box did not start: %q %s", line, aerr.String())
			}
			ran, refused, bound := 0, 0, 0
			// A bound on the test's time on a loaded machine (the suite
			// runs under go test's timeout); at least minTries starts
			// either way.
			const budget, minTries = 45 * time.Second, 50
			start := time.Now()
			for i := 0; i < phase.attempts; i++ {
				if i >= minTries && time.Since(start) > budget {
					t.Logf("stopped after %d starts: the machine is slow (%v)", i, time.Since(start).Round(time.Second))
					break
				}
				r := w.run(args([]string{"run"}, be, []string{"--read-only", filepath.Join(d, "ro"), "--", "sh", "-c", writeRO, filepath.Join(d, "ro"), filepath.Join(link, "ro"), won})...)
				if exists(won) {
					cancel()
					a.Wait()
					t.Fatalf("rest %s µs, start %d: the box wrote %s in another project: %s", phase.rest, i+1, won, r)
				}
				if written(mine) || written(theirs) {
					cancel()
					a.Wait()
					t.Fatalf("rest %s µs, start %d: a box wrote a read-only file: %s", phase.rest, i+1, r)
				}
				if r.code == 125 {
					refused++
					continue
				}
				ran++
				if strings.Contains(r.stdout, "bound") {
					bound++
				}
			}
			cancel()
			a.Wait()
			t.Logf("rest %s µs: %d starts against the swapping box: %d ran (%d with the read-only file bound), %d refused a swapped path", phase.rest, ran+refused, ran, bound, refused)
			if phase.mustRun && ran == 0 {
				t.Fatal("no box ever started: the test proves nothing")
			}
		}
	})
}

// Descriptors open in whatever started agentbox (a shell redirection, an
// IDE, a CI runner, make's jobserver) never reach the box: not to CMD, not
// through /proc/1/fd (the init under bwrap), not through the supervisor's
// /proc/PID/fd (Landlock). Two point at files outside the writable roots,
// one at a denied credential file.
func TestInheritedDescriptors(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		secret := filepath.Join(w.home, ".aws", "credentials")
		write(t, secret, "AWS-SECRET-INHERITED\n")
		out7, out100 := filepath.Join(w.base, "outside7"), filepath.Join(w.base, "outside100")
		write(t, out7, "")
		write(t, out100, "")
		script := `
echo pwn >&7 && echo wrote-7
echo pwn >&100 && echo wrote-100
cat <&200
cat /proc/1/fd/200
echo pwn >> /proc/1/fd/100 && echo wrote-init
cat /proc/$PPID/fd/200
echo pwn >> /proc/$PPID/fd/100 && echo wrote-parent
ls /proc/self/fd
echo end`
		c := exec.Command("bash", append([]string{"-c", `exec 7>>"$1" 100>>"$2" 200<"$3"; shift 3; exec "$@"`, "bash", out7, out100, secret, bin},
			args([]string{"run"}, be, []string{"--", "bash", "-c", script})...)...)
		c.Dir, c.Env = w.project, w.env
		got, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, got)
		}
		expectContains(t, "output", string(got), "end")
		for _, bad := range []string{"wrote-", "AWS-SECRET-INHERITED"} {
			expectNotContains(t, "output", string(got), bad)
		}
		for _, f := range []string{out7, out100} {
			if b, _ := os.ReadFile(f); len(b) > 0 {
				t.Errorf("%s outside the writable roots was written through an inherited descriptor: %q", f, b)
			}
		}
	})
}

// agentbox's own processes in and beside the box (the init, pid 1 under
// bwrap, which holds no limits; the supervisor under Landlock) are not
// dumpable: no process of the box opens their memory, their descriptors or
// their environment, so none can rewrite the init to lift the box's
// limits. Processes of the box itself still can open each other's memory
// (they are one agent; README says so), which this test also shows, so
// that it can tell a refusal from a /proc that refuses everything. (Under
// Landlock /proc is read-only, so they can read each other's memory but
// not write it.)
func TestAgentboxProcessesNotDumpable(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		pol := policyFile(t, w, "[limits]\nprocesses = 40\n")
		target := "1"
		if be[1] == "landlock" {
			target = "$PPID"
		}
		r := w.run(args([]string{"run", "--policy", pol}, be, []string{"--", "bash", "-c", `
t=` + target + `
(exec 3</proc/$t/mem) 2>/dev/null && echo open-mem
(exec 3<>/proc/$t/mem) 2>/dev/null && echo open-mem-rw
for n in 0 1 2 3 4 5 6 7 8 9; do (exec 4</proc/$t/fd/$n) 2>/dev/null && echo open-fd-$n; done
cat /proc/$t/environ >/dev/null 2>&1 && echo read-environ
cat /proc/$t/maps >/dev/null 2>&1 && echo read-maps
sleep 5 & s=$!
(exec 3</proc/$s/mem) 2>/dev/null && echo box-process-mem
kill $s
echo end`})...)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "box-process-mem\nend")
		for _, bad := range []string{"open-mem", "open-fd", "read-environ", "read-maps"} {
			expectNotContains(t, "stdout", r.stdout, bad)
		}
	})
}

// A deny path inside a writable root keeps its parent folders where they
// are: a run cannot rename them to read the secret under another name in
// that run or any later one.
func TestDenyParentsPinned(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		write(t, filepath.Join(w.project, "conf", "secret.txt"), "DENY-FILE-SECRET\n")
		write(t, filepath.Join(w.project, "conf", "other.txt"), "other\n")
		write(t, filepath.Join(w.project, "a", "b", "private", "key"), "DENY-DIR-SECRET\n")
		flags := args(be, []string{"--deny", filepath.Join(w.project, "conf", "secret.txt"), "--deny", filepath.Join(w.project, "a", "b", "private")})
		r := w.sh(flags, `
mv conf conf2 2>/dev/null && echo moved-conf
mv a a2 2>/dev/null && echo moved-a
mv a/b a/b2 2>/dev/null && echo moved-b
echo other > conf/new.txt && echo wrote-beside
echo end`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "end")
		expectNotContains(t, "stdout", r.stdout, "moved-")
		if be[1] == "bwrap" {
			// Pinned, the folder's contents stay as writable as before.
			expectContains(t, "stdout", r.stdout, "wrote-beside")
		}
		r = w.sh(flags, `cat conf2/secret.txt conf/secret.txt a2/b/private/key a/b2/private/key a/b/private/key 2>/dev/null; echo end`)
		expectContains(t, "stdout", r.stdout, "end")
		expectNotContains(t, "stdout", r.stdout, "DENY-")
	})
}

// --net-log is a file agentbox writes on the host: it is refused inside a
// writable root (the box could replace it with a link to ~/.bashrc) and when
// it is a symlink, and what the box chose (a CONNECT target) is escaped in
// it, so no shell, terminal or log reader runs or renders it.
func TestNetLogHostFile(t *testing.T) {
	w := newWorld(t)
	bashrc := filepath.Join(w.home, ".bashrc")
	write(t, bashrc, "# original\n")
	connect := `exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT $(touch${IFS}pwned)\033]0;owned\007:443 HTTP/1.1\r\n\r\n' >&3; head -c 300 <&3; echo`
	inRoot := filepath.Join(w.project, "net.log")
	flags := []string{"run", "--backend", "bwrap", "--network", "allowlist", "--allow", "example.test"}

	r := w.run(args(flags, []string{"--net-log", inRoot, "--", "sh", "-c", "rm -f net.log; ln -s " + bashrc + " net.log; echo planted"})...)
	expectCode(t, r, 125)
	expectNotContains(t, "stdout", r.stdout, "planted")
	expectContains(t, "stderr", r.stderr, "inside a writable folder")
	// Whatever the first run left, a second one never writes through it.
	os.Remove(inRoot)
	os.Symlink(bashrc, inRoot)
	r = w.run(args(flags, []string{"--net-log", inRoot, "--", "bash", "-c", connect})...)
	expectCode(t, r, 125)

	logs := filepath.Join(w.base, "logs")
	mkdir(t, logs)
	link := filepath.Join(logs, "link.log")
	os.Symlink(bashrc, link)
	r = w.run(args(flags, []string{"--net-log", link, "--", "bash", "-c", connect})...)
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "symlink")
	if b, _ := os.ReadFile(bashrc); string(b) != "# original\n" {
		t.Fatalf("~/.bashrc was written through the network log: %q", b)
	}

	log := filepath.Join(logs, "net.log")
	r = w.run(args(flags, []string{"--net-log", log, "--", "bash", "-c", connect})...)
	expectCode(t, r, 0)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	expectContains(t, "log", string(data), " deny ")
	for _, raw := range []string{"$(", "\x1b", "\x07"} {
		expectNotContains(t, "log", string(data), raw)
	}
}

// The per-workspace and per-run temporary folders live under a folder only
// the user owns, not under the shared /tmp (or TMPDIR): another user can
// neither block them by creating agentbox's folder first nor read them, and
// no box sees the temporary folders of other workspaces.
func TestTmpFoldersPrivate(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		shared := filepath.Join(w.base, "shared")
		mkdir(t, shared)
		os.Chmod(shared, 0o1777)
		w.env = append(w.env, "TMPDIR="+shared)
		if isRoot() {
			// Another user was first: the old folder name is taken.
			squat := filepath.Join(shared, fmt.Sprintf("agentbox-%d", os.Getuid()))
			mkdir(t, squat)
			os.Chmod(squat, 0o700)
			if err := os.Chown(squat, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		r := w.sh(be, `echo x > "$TMPDIR/f" && echo wrote`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "wrote")

		p := w.run(args([]string{"plan", "--json"}, be, []string{"--", "true"})...)
		expectCode(t, p, 0)
		var pj struct {
			Tmp struct {
				HostDir string `json:"host_dir"`
			} `json:"tmp"`
		}
		if err := json.Unmarshal([]byte(p.stdout), &pj); err != nil {
			t.Fatal(err)
		}
		host := pj.Tmp.HostDir
		for _, bad := range []string{shared, "/tmp", "/var/tmp/agentbox-"} {
			if strings.HasPrefix(host, bad) {
				t.Fatalf("the per-workspace tmp %s is under the shared %s", host, bad)
			}
		}
		if !strings.HasPrefix(host, w.home+"/") {
			t.Fatalf("the per-workspace tmp %s is not in the user's own folders (%s)", host, w.home)
		}
		for _, d := range []string{host, filepath.Dir(host)} {
			fi, err := os.Lstat(d)
			if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
				t.Fatalf("%s: %v, %v; want a folder only the user can enter", d, err, fi)
			}
		}
		// Another workspace's temporary files are not visible in this box.
		write(t, filepath.Join(filepath.Dir(host), "other-ws-0000", "secret"), "OTHER-WORKSPACE-TMP\n")
		r = w.sh(be, `cat `+filepath.Join(filepath.Dir(host), "other-ws-0000", "secret")+` 2>/dev/null; echo end`)
		expectContains(t, "stdout", r.stdout, "end")
		expectNotContains(t, "stdout", r.stdout, "OTHER-WORKSPACE-TMP")
		if isRoot() {
			os.Chmod(w.base, 0o755)
			os.Chmod(w.home, 0o755)
			out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "ls", host).CombinedOutput()
			if err == nil {
				t.Fatalf("another user lists the box's tmp %s: %s", host, out)
			}
		}
	})
}

// Policy files are regular files of a bounded size, checked before they
// are read: a project policy that is a link to /proc/self/pagemap, /dev/zero
// or a FIFO, or a huge file, is one clear error, not a hang or an out of
// memory death (agentbox runs under a 4 GiB address-space limit here, so the
// old behaviour fails the test instead of the machine).
func TestPolicyFilesBounded(t *testing.T) {
	w := newWorld(t)
	proj := filepath.Join(w.project, ".agentbox.toml")
	big := filepath.Join(w.base, "big.toml")
	if err := os.WriteFile(big, []byte("version = 1\n"+strings.Repeat("# padding\n", 300000)), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(w.base, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, target string
		want         string
	}{
		{"pagemap", "/proc/self/pagemap", "larger than"},
		{"zero", "/dev/zero", "not a regular file"},
		{"fifo", fifo, "not a regular file"},
		{"big", big, "larger than"},
	}
	run := func(t *testing.T, extra ...string) result {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, "sh", append([]string{"-c", `ulimit -v 4194304; exec "$@"`, "sh", bin, "run"}, append(extra, "--", "true")...)...)
		c.Dir, c.Env = w.project, w.env
		var out, errb strings.Builder
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			t.Fatalf("agentbox %v did not finish within 20s", extra)
		}
		return result{out.String(), errb.String(), code}
	}
	for _, tc := range cases {
		t.Run("project-"+tc.name, func(t *testing.T) {
			os.Remove(proj)
			if err := os.Symlink(tc.target, proj); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(proj)
			r := run(t)
			expectCode(t, r, 125)
			expectContains(t, "stderr", r.stderr, tc.want)
		})
		t.Run("policy-flag-"+tc.name, func(t *testing.T) {
			r := run(t, "--policy", tc.target)
			expectCode(t, r, 125)
			expectContains(t, "stderr", r.stderr, tc.want)
		})
	}
}

// bwrap's arguments travel through a file descriptor (--args), so a plan of
// any size starts: here over 2.5 MiB of read-only paths, beyond the
// kernel's limit for a command line (ARG_MAX, 2 MiB by default).
func TestBwrapArgsBeyondArgMax(t *testing.T) {
	w := newWorld(t)
	deep := w.project
	for i := 0; i < 17; i++ {
		deep = filepath.Join(deep, fmt.Sprintf("%03d%s", i, strings.Repeat("d", 196)))
	}
	mkdir(t, deep)
	var paths []string
	for i := 0; i < 700; i++ {
		p := filepath.Join(deep, fmt.Sprintf("%04d%s", i, strings.Repeat("f", 196)))
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var flags []string
	for i := 0; i < len(paths); i += 175 {
		var b strings.Builder
		b.WriteString("[filesystem]\nread_only = [\n")
		for _, p := range paths[i:min(i+175, len(paths))] {
			fmt.Fprintf(&b, "  %q,\n", p)
		}
		b.WriteString("]\n")
		flags = append(flags, "--policy", policyFile(t, w, b.String()))
		time.Sleep(time.Millisecond) // policyFile names files by the time
	}
	r := w.run(args([]string{"run", "--backend", "bwrap"}, flags, []string{"--", "sh", "-c", `echo y > "$1" 2>/dev/null || echo refused; echo ran`, "sh", paths[699]})...)
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "refused\nran")
}

// Under network "none" and "allowlist" the only socket families a box can
// open are the ones it needs (unix, IPv4 and IPv6 for loopback and the
// proxy, netlink): AF_VSOCK, a way to the hypervisor that no network
// namespace cuts, and every other family are refused by the seccomp filter.
func TestSocketFamilies(t *testing.T) {
	w := newWorld(t)
	probe := buildC(t, w.base, "../seccomp/testdata/probes/families.c")
	families := func(out string) []int {
		var fs []int
		for _, line := range strings.Split(out, "\n") {
			if n, ok := strings.CutPrefix(line, "family "); ok {
				v, _ := strconv.Atoi(n)
				fs = append(fs, v)
			}
		}
		return fs
	}
	hostOut, err := exec.Command(probe).Output()
	if err != nil {
		t.Fatal(err)
	}
	host := families(string(hostOut))
	t.Logf("families on the host: %v", host)
	allowed := []int{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}
	cases := []struct {
		name  string
		flags []string
	}{
		{"bwrap-none", []string{"--backend", "bwrap", "--network", "none"}},
		{"bwrap-allowlist", []string{"--backend", "bwrap", "--network", "allowlist", "--allow", "example.test"}},
		{"landlock-none", []string{"--backend", "landlock", "--network", "none"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.flags[1] == "landlock" {
				needLandlock(t)
			}
			r := w.run(args([]string{"run"}, tc.flags, []string{"--", probe})...)
			expectCode(t, r, 0)
			expectContains(t, "probe", r.stdout, "done")
			for _, f := range families(r.stdout) {
				if !slices.Contains(allowed, f) {
					t.Errorf("socket family %d can be opened in the box", f)
				}
			}
		})
	}
	if slices.Contains(host, unix.AF_VSOCK) {
		// The filter is what refuses it: with the network open it works.
		r := w.run("run", "--backend", "bwrap", "--", probe)
		if !slices.Contains(families(r.stdout), unix.AF_VSOCK) {
			t.Errorf("AF_VSOCK is refused with the network open too: %s", r)
		}
	}
}

// A stranger's project policy is shown classified: grants inside the
// project, elsewhere in the home folder, outside it, and what loosens
// enforcement, the backend, seccomp or the network, the dangerous ones
// marked with "!"; once trusted it still cannot loosen enforce or the
// backend beyond the user's own configuration unless that allows it.
func TestTrustInforms(t *testing.T) {
	w := newWorld(t)
	mkdir(t, filepath.Join(w.project, "build"))
	mkdir(t, filepath.Join(w.home, ".config"))
	mkdir(t, filepath.Join(w.home, ".local", "bin"))
	elsewhere := filepath.Join(w.base, "elsewhere")
	mkdir(t, elsewhere)
	write(t, filepath.Join(w.project, ".agentbox.toml"), `version = 1
[sandbox]
enforce = "best-effort"
backend = "windows"
[filesystem]
writable = ["build", "~/.config", "~/.local/bin", "`+elsewhere+`"]
deny = ["secrets"]
[seccomp]
allow = ["userns", "ptrace"]
[network]
mode = "open"
`)
	r := w.sh(nil, `echo ran`)
	expectCode(t, r, 125)
	for _, want := range []string{
		"inside the project",
		"! elsewhere in your home folder",
		"~/.config",
		"~/.local/bin",
		"! outside your home folder",
		"! loosens enforcement",
		"! loosens the backend",
		"! loosens seccomp",
		"userns, ptrace",
		"tightens",
	} {
		expectContains(t, "stderr", r.stderr, want)
	}
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.Contains(line, "filesystem.writable") && strings.Contains(line, "build") && strings.Contains(line, "!") {
			t.Errorf("a grant inside the project is marked dangerous: %q", line)
		}
	}
	expectCode(t, w.run("trust"), 0)
	r = w.sh(nil, `echo ran`)
	expectCode(t, r, 125)
	expectNotContains(t, "stdout", r.stdout, "ran")
	expectContains(t, "stderr", r.stderr, "sandbox.enforce")
	expectContains(t, "stderr", r.stderr, "project_may_loosen")

	// The user's own config may allow it.
	write(t, filepath.Join(w.home, ".config", "agentbox", "config.toml"), "version = 1\n[sandbox]\nproject_may_loosen = true\n")
	r = w.sh(nil, `echo "ran $AGENTBOX_DEGRADED"`)
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "ran ")
}

// Re-trusting after an edit shows what changed, not the whole policy again.
func TestTrustShowsDiff(t *testing.T) {
	w := newWorld(t)
	mkdir(t, filepath.Join(w.project, "build"))
	mkdir(t, filepath.Join(w.project, "docs"))
	mkdir(t, filepath.Join(w.home, ".ssh"))
	pol := filepath.Join(w.project, ".agentbox.toml")
	write(t, pol, "version = 1\n[filesystem]\nwritable = [\"build\"]\nread_only = [\"docs\"]\n")
	expectCode(t, w.run("trust"), 0)
	write(t, pol, "version = 1\n[filesystem]\nwritable = [\"build\", \"~/.ssh\"]\n")
	r := w.sh(nil, `echo ran`)
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "changed since it was trusted")
	expectContains(t, "stderr", r.stderr, "+ ! elsewhere in your home folder")
	expectContains(t, "stderr", r.stderr, "~/.ssh")
	expectContains(t, "stderr", r.stderr, "- ")
	expectContains(t, "stderr", r.stderr, "docs")
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.Contains(line, "build") {
			t.Errorf("an unchanged grant is shown again: %q", line)
		}
	}
	tr := w.run("trust")
	expectCode(t, tr, 0)
	expectContains(t, "trust", tr.stdout, "+ ! elsewhere in your home folder")
	expectNotContains(t, "trust", tr.stdout, "build")
}

// Names from a project (its folder, its values) are escaped before they
// reach the terminal.
func TestTrustEscapesNames(t *testing.T) {
	w := newWorld(t)
	evil := filepath.Join(w.base, "evil\x1b]0;owned\x07\x1b[2J")
	mkdir(t, evil)
	// TOML refuses control characters in values; a right-to-left
	// override is allowed there and still reorders what the terminal shows.
	write(t, filepath.Join(evil, ".agentbox.toml"), "version = 1\n[filesystem]\ndeny = [\"x\u202ey\"]\n")
	w.cwd = evil
	r := w.sh(nil, `echo ran`)
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "not trusted")
	for _, raw := range []string{"\x1b", "\x07", "\u202e"} {
		expectNotContains(t, "stderr", r.stderr, raw)
	}
	tr := w.run("trust")
	expectCode(t, tr, 0)
	for _, raw := range []string{"\x1b", "\x07", "\u202e"} {
		expectNotContains(t, "trust", tr.stdout, raw)
	}
}

// The default writable folder (the working directory or its git top-level)
// is refused when it is a system folder, the home folder or a dot-folder
// of it: `cd /etc && agentbox run` must not make /etc writable. Given
// explicitly, it is the user's choice.
func TestDefaultWritableRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		dot := filepath.Join(w.home, ".config")
		mkdir(t, dot)
		for _, dir := range []string{"/etc", "/usr/lib", dot} {
			w.cwd = dir
			r := w.sh(be, `echo "ran $AGENTBOX_WRITABLE"`)
			expectCode(t, r, 125)
			expectNotContains(t, "stdout", r.stdout, "ran")
			expectContains(t, "stderr", r.stderr, dir)
			expectContains(t, "stderr", r.stderr, "--writable")
		}
		w.cwd = dot
		r := w.run(args([]string{"plan"}, be, []string{"--writable", dot, "--", "true"})...)
		expectCode(t, r, 0)
	})
}

// Credentials the default policy hides: database and cloud-sync configs,
// desktop keyrings, shell history, ~/.ssh private keys (whatever their
// name; public keys, config and known_hosts stay), and each agent CLI's
// token file from every command but that agent. filesystem.ssh_keys =
// "visible" lets git use the keys.
func TestCredentialsHiddenByDefault(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		secrets := map[string]string{
			".pgpass":                             "PG-SECRET",
			".my.cnf":                             "MYSQL-SECRET",
			".config/rclone/rclone.conf":          "RCLONE-SECRET",
			".local/share/keyrings/login.keyring": "KEYRING-SECRET",
			".bash_history":                       "HISTORY-SECRET",
			".zsh_history":                        "ZHISTORY-SECRET",
			".ssh/id_ed25519":                     "SSH-KEY-SECRET",
			".ssh/work_key":                       "SSH-CUSTOM-KEY-SECRET",
			".codex/auth.json":                    "CODEX-TOKEN",
			".claude/.credentials.json":           "CLAUDE-TOKEN",
		}
		visible := map[string]string{
			".ssh/config":         "SSH-CONFIG",
			".ssh/known_hosts":    "SSH-KNOWN-HOSTS",
			".ssh/id_ed25519.pub": "SSH-PUBLIC",
		}
		var names []string
		for f, v := range secrets {
			write(t, filepath.Join(w.home, f), v+"\n")
			names = append(names, f)
		}
		for f, v := range visible {
			write(t, filepath.Join(w.home, f), v+"\n")
			names = append(names, f)
		}
		script := `for f in "$@"; do cat "$HOME/$f" 2>/dev/null; done; echo end`
		show := func(extra ...string) string {
			r := w.run(args([]string{"run"}, be, extra, []string{"--", "sh", "-c", script, "sh"}, names)...)
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "end")
			return r.stdout
		}
		out := show()
		for f, v := range secrets {
			if strings.Contains(out, v) {
				t.Errorf("%s is readable by default", f)
			}
		}
		for f, v := range visible {
			if !strings.Contains(out, v) {
				t.Errorf("%s is hidden, want it visible", f)
			}
		}
		out = show("--provider", "claude")
		expectContains(t, "claude's own token, for claude", out, "CLAUDE-TOKEN")
		expectNotContains(t, "codex's token, for claude", out, "CODEX-TOKEN")
		out = show("--provider", "codex")
		expectContains(t, "codex's own token, for codex", out, "CODEX-TOKEN")
		expectNotContains(t, "claude's token, for codex", out, "CLAUDE-TOKEN")
		out = show("--policy", policyFile(t, w, "[filesystem]\nssh_keys = \"visible\"\n"))
		expectContains(t, "ssh_keys = visible", out, "SSH-KEY-SECRET")
		expectContains(t, "ssh_keys = visible", out, "SSH-CUSTOM-KEY-SECRET")
		expectNotContains(t, "ssh_keys = visible", out, "PG-SECRET")
	})
}
