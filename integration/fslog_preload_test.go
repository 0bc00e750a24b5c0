//go:build linux

package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/event"
)

// The preloaded filesystem log, the default: every refusal a dynamically
// linked program of the box is refused is recorded with its rule, under
// both backends, as root and not; what it cannot see (static programs, a
// program started without the library) is the complete mode's; it breaks
// no program, never blocks one, floods nothing, and nothing the box sends
// it can make a change look safe.

// cProgram builds a C program from src into the project (the box runs it
// from there) with gcc and flags.
func cProgram(t *testing.T, w *world, name, src string, flags ...string) string {
	t.Helper()
	return cProgramWith(t, w, "gcc", name, src, flags...)
}

// cProgramWith is cProgram with the compiler cc.
func cProgramWith(t *testing.T, w *world, cc, name, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		need(t, false, cc+" is not installed")
	}
	dir := filepath.Join(w.base, "src")
	mkdir(t, dir)
	file := filepath.Join(dir, name+".c")
	write(t, file, src)
	out := filepath.Join(w.project, name)
	if b, err := exec.Command(cc, append(flags, "-O2", "-o", out, file)...).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, b)
	}
	return out
}

// preloadMechanism checks that the plan records refusals with the
// preloaded log.
func preloadMechanism(t *testing.T, w *world, backend string) {
	t.Helper()
	r := w.run("plan", "--backend", backend, "--json", "--", "true")
	expectCode(t, r, 0)
	expectContains(t, "plan --json", r.stdout, `"filesystem": "preload"`)
}

// A refused write by sh, python3, node and git, each recorded with the
// process, the path, the errno and the rule with the policy file and line
// that made it; the summary at the end names them.
func TestFSLogPreloadPrograms(t *testing.T) {
	for _, tool := range []string{"python3", "node", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			need(t, false, tool+" is not installed")
		}
	}
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			locked := filepath.Join(w.project, "locked")
			mkdir(t, locked)
			config := filepath.Join(w.home, ".config", "agentbox", "config.toml")
			write(t, config, "version = 1\n\n[filesystem]\nread_only = [\""+locked+"\"]\n")
			preloadMechanism(t, w, backend)
			// (In a folder of its own: Landlock keeps the project's
			// top folder unchangeable to keep locked read-only.)
			mkdir(t, filepath.Join(w.project, "out"))
			r := w.sh([]string{"--backend", backend, "--writable", w.project}, `cd `+w.project+`
echo x > locked/by-sh
python3 -c 'open("locked/by-python", "w")'
node -e 'require("fs").writeFileSync("locked/by-node", "x")'
git init -q locked/by-git
echo ok > out/done.txt
exit 0`)
			expectCode(t, r, 0)
			if got, err := os.ReadFile(filepath.Join(w.project, "out", "done.txt")); err != nil || string(got) != "ok\n" {
				t.Errorf("a write in the writable root: %q, %v", got, err)
			}
			expectContains(t, "summary", r.stderr, "agentbox: the box was refused 4 filesystem operations")
			rule := "read-only " + locked + " (" + config + ":4 filesystem.read_only[0])"
			evs := w.denials()
			for _, c := range []struct{ op, name, process string }{
				{"create", "by-sh", "sh (pid "}, {"create", "by-python", "python"}, {"create", "by-node", "node (pid "}, {"mkdir", "by-git", "git (pid "},
			} {
				e := find(t, evs, c.op, filepath.Join(locked, c.name))
				if e.Rule != rule || !strings.Contains(e.Process, c.process) || !processShape.MatchString(e.Process) || e.Errno == "" {
					t.Errorf("%s %s: rule %q, process %q, errno %q; want rule %q, process %q", c.op, c.name, e.Rule, e.Process, e.Errno, rule, c.process)
				}
				expectContains(t, "summary", r.stderr, "locked/"+c.name)
			}
			for _, e := range evs {
				if strings.HasSuffix(e.Path, "done.txt") {
					t.Errorf("an allowed write was recorded: %+v", e)
				}
			}
			l := w.run("log", "--denials", "-n", "1")
			expectCode(t, l, 0)
			expectContains(t, "log --denials", l.stdout, "denied create "+filepath.Join(locked, "by-node"))
			expectContains(t, "log --denials", l.stdout, "rule "+rule)
			// The run's folder for the log is gone with the run.
			left, _ := filepath.Glob(filepath.Join(w.home, ".local", "state", "agentbox", "fslog-*"))
			if len(left) > 0 {
				t.Errorf("the log's folder was left behind: %v", left)
			}
		})
	}
}

const staticWriter = `#include <fcntl.h>
int main(int argc, char **argv) { return open(argv[1], O_WRONLY | O_CREAT, 0644) >= 0 ? 1 : 0; }
`

// A static program is not seen by the preloaded log (no dynamic linker
// loads anything into it): its refusal is recorded in the complete mode
// only.
func TestFSLogPreloadStaticOnlyComplete(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			prog := cProgram(t, w, "static-writer", staticWriter, "-static")
			target := filepath.Join(w.home, "by-static")
			r := w.run("run", "--backend", backend, "--", prog, target)
			expectCode(t, r, 0)
			expectNotContains(t, "stderr", r.stderr, "the box was refused")
			for _, e := range w.denials() {
				if e.Path == target {
					t.Errorf("the preloaded log recorded a static program's refusal: %+v", e)
				}
			}
			complete := policyFile(t, w, "[log]\nfilesystem = \"complete\"\n")
			r = w.run("run", "--backend", backend, "--policy", complete, "--", prog, target)
			expectCode(t, r, 0)
			expectContains(t, "stderr", r.stderr, "the box was refused 1 filesystem operation")
			if e := find(t, w.denials(), "create", target); !strings.Contains(e.Process, "static-writer") || !processShape.MatchString(e.Process) {
				t.Errorf("process %q", e.Process)
			}
		})
	}
}

const stress = `#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
/* stress closeall|fork REFUSED OUT */
int main(int argc, char **argv) {
	if (argc != 4) return 2;
	if (!strcmp(argv[1], "closeall")) {
		struct rlimit rl;
		getrlimit(RLIMIT_NOFILE, &rl);
		for (long fd = 0; fd < (long)rl.rlim_cur && fd < 1 << 20; fd++) close((int)fd);
		if (open(argv[2], O_WRONLY | O_CREAT, 0644) >= 0) return 3;
		int out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (out < 0 || write(out, "closed-all ok\n", 14) != 14) return 4;
		return 0;
	}
	if (!strcmp(argv[1], "fork")) {
		int n = 0;
		for (int i = 0; i < 1000; i++) {
			pid_t p = fork();
			if (p < 0) return 5;
			if (p == 0) _exit(open(argv[2], O_WRONLY | O_CREAT, 0644) >= 0 ? 1 : 0);
			int st;
			if (waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0) n++;
		}
		FILE *f = fopen(argv[3], "w");
		if (!f) return 6;
		fprintf(f, "forked %d ok\n", n);
		return fclose(f) != 0;
	}
	return 2;
}
`

const prog32 = `#include <stdio.h>
int main(int argc, char **argv) {
	FILE *f = fopen(argv[1], "w");
	printf("32-bit %s\n", f ? "wrote" : "refused");
	return 0;
}
`

// The library breaks no program: one that closes every descriptor it has
// (the library keeps none) and one that forks 1,000 children keep working
// and are still seen (but the first: it closed the
// log's pipe); one started with an empty environment runs without
// the library (and is not seen); a 32-bit program (under qemu-user: the
// box's seccomp filter kills native i386 system calls) gets the library
// built for it, says nothing about it, and is seen.
func TestFSLogPreloadProgramsKeepWorking(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			cProgram(t, w, "stress", stress)
			ro := filepath.Join(w.home, "ro")
			mkdir(t, ro)
			r := w.sh([]string{"--backend", backend}, `cd `+w.project+`
./stress closeall `+ro+`/after-close closeall.out; echo "closeall $?"
./stress fork `+ro+`/by-child fork.out; echo "fork $?"
env -i /bin/sh -c 'echo envless-ok; echo x > `+ro+`/envless' 2>/dev/null; echo "envless $?"`)
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "closeall 0\nfork 0\nenvless-ok\nenvless 2\n")
			for file, want := range map[string]string{"closeall.out": "closed-all ok\n", "fork.out": "forked 1000 ok\n"} {
				if got, err := os.ReadFile(filepath.Join(w.project, file)); err != nil || string(got) != want {
					t.Errorf("%s: %q, %v; want %q", file, got, err, want)
				}
			}
			expectNotContains(t, "stderr", r.stderr, "ld.so")
			evs := w.denials()
			// Under both backends the library writes to an inherited
			// pipe: a program that closed it has no log (a box may not
			// make the datagram socket it falls back to).
			for _, e := range evs {
				if e.Path == filepath.Join(ro, "after-close") {
					t.Errorf("a refusal after closing every descriptor was recorded under %s: %+v", backend, e)
				}
			}
			find(t, evs, "create", filepath.Join(ro, "by-child"))
			for _, e := range evs {
				if e.Path == filepath.Join(ro, "envless") {
					t.Errorf("a program started without the library was seen: %+v", e)
				}
			}
		})
	}
}

func TestFSLogPreload32Bit(t *testing.T) {
	// The i686 cross compiler (gcc-i686-linux-gnu: its C library lives
	// under /usr/i686-linux-gnu and co-installs with the aarch64 one,
	// where gcc-multilib does not), or gcc -m32 with gcc-multilib.
	cc, flags, prefix := "i686-linux-gnu-gcc", []string(nil), "/usr/i686-linux-gnu"
	if _, err := exec.LookPath(cc); err != nil {
		cc, flags, prefix = "gcc", []string{"-m32"}, ""
		if _, err := os.Stat("/usr/lib32/crt1.o"); err != nil {
			need(t, false, "no compiler for 32-bit programs (apt-get install gcc-i686-linux-gnu)")
		}
	}
	qemu, err := exec.LookPath("qemu-i386-static")
	need(t, err == nil, "qemu-i386-static is not installed (apt-get install qemu-user-static): no 32-bit program can run in a box")
	runner := []string{qemu}
	if prefix != "" {
		runner = append(runner, "-L", prefix)
	}
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			prog := cProgramWith(t, w, cc, "prog32", prog32, flags...)
			target := filepath.Join(w.home, "by-32-bit")
			r := w.run(append(append([]string{"run", "--backend", backend, "--"}, runner...), prog, target)...)
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "32-bit refused")
			expectNotContains(t, "stderr", r.stderr, "ld.so")
			find(t, w.denials(), "create", target)
		})
	}
}

const flood = `#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
/* flood DIR STARTED DONE: 100,000 refused creates of distinct files */
int main(int argc, char **argv) {
	char p[4096];
	struct timespec a, b;
	close(open(argv[2], O_WRONLY | O_CREAT, 0644));
	usleep(300000);
	clock_gettime(CLOCK_MONOTONIC, &a);
	int refused = 0;
	for (int i = 0; i < 100000; i++) {
		snprintf(p, sizeof p, "%s/f%d", argv[1], i);
		int fd = open(p, O_WRONLY | O_CREAT, 0644);
		if (fd < 0) refused++; else close(fd);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	FILE *f = fopen(argv[3], "w");
	if (!f) return 1;
	fprintf(f, "%d %ld\n", refused, (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000);
	return fclose(f) != 0;
}
`

// maxRSS is the largest resident size of the finished command c and what
// it waited for, in KiB.
func maxRSS(c *exec.Cmd) int64 {
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

// A flood of 100,000 refusals never blocks the box, even with agentbox
// stopped while it runs (each record is sent without waiting, and dropped
// and counted when the socket is full); with agentbox running, what was
// not recorded is said, the audit log keeps its cap, and agentbox's
// memory does not grow with the flood.
func TestFSLogPreloadFlood(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			prog := cProgram(t, w, "flood", flood)
			ro := filepath.Join(w.home, "ro")
			mkdir(t, ro)
			started, done := filepath.Join(w.project, "started"), filepath.Join(w.project, "done")
			var stderr string
			run := func(stop bool, extra ...string) (*exec.Cmd, string) {
				os.Remove(started)
				os.Remove(done)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				c := w.command(ctx, append(append([]string{"run", "--backend", backend}, extra...), "--", prog, ro, started, done)...)
				var errb bytes.Buffer
				c.Stderr = &errb
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				if stop {
					// agentbox stopped as soon as the program runs, and
					// continued only once it has made every call.
					waitFile(t, started, time.Minute)
					if err := c.Process.Signal(syscall.SIGSTOP); err != nil {
						t.Fatal(err)
					}
					waitFile(t, done, 2*time.Minute)
					c.Process.Signal(syscall.SIGCONT)
				}
				if err := c.Wait(); err != nil {
					t.Fatalf("agentbox: %v\n%s", err, errb.String())
				}
				stderr = errb.String()
				got, err := os.ReadFile(done)
				if err != nil {
					t.Fatal(err)
				}
				out := strings.TrimSpace(string(got))
				if !strings.HasPrefix(out, "100000 ") {
					t.Fatalf("the flood: %q, want 100000 refused", out)
				}
				return c, out
			}
			kinds := func() map[event.Kind][]event.Event {
				evs := w.logged()
				return runEvents(evs, evs[len(evs)-1].Run)
			}
			off := policyFile(t, w, "[log]\nfilesystem = false\n")
			c, without := run(false, "--policy", off)
			rssOff := maxRSS(c)
			_, stopped := run(true)
			if n := len(kinds()[event.Denied]); n == 0 {
				t.Error("nothing was recorded of the flood once agentbox went on")
			}
			c, with := run(false)
			t.Logf("refused, µs: %s without the log, %s with agentbox stopped, %s with the log", without, stopped, with)
			if rss := maxRSS(c); rss-rssOff > 16<<10 {
				t.Errorf("agentbox's largest size grew by %d KiB with the flood (%d KiB without the log, %d KiB with)", rss-rssOff, rssOff, rss)
			} else {
				t.Logf("largest size: %d KiB without the log, %d KiB with the flood", rssOff, rss)
			}
			k := kinds()
			if n := len(k[event.Denied]); n == 0 || n > event.DefaultCap {
				t.Errorf("%d refusals recorded, want some, at most the cap %d", n, event.DefaultCap)
			}
			// The warning is on stderr; the audit log has it too, unless
			// the flood filled the run's cap first (then Dropped counts it).
			expectContains(t, "stderr", stderr, "agentbox: warning: filesystem log: ")
			expectContains(t, "stderr", stderr, " refusals were not recorded")
			t.Logf("%d recorded; %d dropped at the cap", len(k[event.Denied]), len(k[event.Dropped]))
		})
	}
}

// waitFile waits for file to exist, at most limit.
func waitFile(t *testing.T, file string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(file); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v", file, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// forger sends records of its own to the preloaded log's socket (found
// from LD_PRELOAD, as the library finds it), or under Landlock writes them
// as frames to its pipe at descriptor 1021, naming pid 1 as their sender.
const forger = `import os, socket, struct, sys
lib = os.environ["LD_PRELOAD"].split()[0]
sock = os.path.join(os.path.dirname(lib), "log")
pipe = os.path.exists(os.path.join(os.path.dirname(lib), "pipe"))
if not pipe:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
class Pipe:
    def sendto(self, b, _):
        if b.startswith(b"fsl1"):
            b = struct.pack("<II", 8 + len(b), 1) + b
        os.write(1021, b)
if pipe:
    s = Pipe()
def rec(op, flags, errno, *strs):
    return b"fsl1" + struct.pack("<BBxxII", op, flags, errno, 0) + b"".join(x.encode() + b"\0" for x in strs)
home, project = sys.argv[1], sys.argv[2]
# refusals the plan does make (the home folder is read-only), never made
s.sendto(rec(2, 0, 30, "open", "", home + "/.tmux.conf", "", "", "tmux"), sock)
s.sendto(rec(2, 0, 30, "open", "", home + "/.bashrc", "", "", "bash"), sock)
# and one in a cache that holds a repository deep inside (names alone call it safe)
s.sendto(rec(3, 0, 30, "open", "", home + "/.cache/tool/x", "", "", "x"), sock)
# one the plan does not make: a write in the writable root
s.sendto(rec(3, 0, 30, "open", "", project + "/allowed", "", "", "x"), sock)
# a path made to move the cursor and forge a line
s.sendto(rec(3, 0, 30, "open", "", home + "/x\n\x1b[2Jagentbox:   forged", "", "", "x"), sock)
# not records
s.sendto(rec(99, 0, 30, "open", "", "/x", "", "", ""), sock)
s.sendto(b"garbage-garbage", sock)
print("sent")
`

// What the box sends the log is a report, judged against the plan:
// a made-up refusal of what the plan allows is not recorded; one of what
// it refuses is, but the change that would allow it is classified by the
// registry of what host programs run or obey (never "safe" for a file a
// shell or tmux runs, nor for a cache with a repository deep inside); text the box chose is escaped before the terminal
// and the audit log; what is no record is ignored and counted.
func TestFSLogPreloadForged(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		need(t, false, "python3 is not installed")
	}
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			write(t, filepath.Join(w.home, ".tmux.conf"), "# host\n")
			write(t, filepath.Join(w.home, ".bashrc"), "# host\n")
			write(t, filepath.Join(w.home, ".cache", "tool", "deep", "repo", ".git", "HEAD"), "ref: refs/heads/main\n")
			script := filepath.Join(w.project, "forger.py")
			write(t, script, forger)
			r := w.run("run", "--backend", backend, "--", "python3", script, w.home, w.project)
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "sent")
			if strings.ContainsAny(r.stderr, "\x1b") || strings.Contains(r.stderr, "\nagentbox:   forged") {
				t.Errorf("text the box chose reached the terminal unescaped:\n%q", r.stderr)
			}
			for _, f := range []string{".tmux.conf", ".bashrc", ".cache/tool/x"} {
				line := ""
				for _, l := range strings.Split(r.stderr, "\n") {
					if strings.Contains(l, "~/"+f+",") {
						line = l
					}
				}
				if line == "" || strings.Contains(line, "(safe") || !strings.Contains(line, "(risky") {
					t.Errorf("the summary's line for ~/%s: %q; want it risky\n%s", f, line, r.stderr)
				}
			}
			expectContains(t, "summary", r.stderr, "~/.tmux.conf: tmux")
			expectContains(t, "summary", r.stderr, "~/.cache/tool/deep/repo/.git")
			evs := w.denials()
			find(t, evs, "write", filepath.Join(w.home, ".tmux.conf"))
			for _, e := range evs {
				if strings.HasPrefix(e.Path, w.project) {
					t.Errorf("a made-up refusal of what the plan allows was recorded: %+v", e)
				}
				if strings.ContainsAny(e.Path, "\n\x1b") {
					t.Errorf("a path was stored unescaped: %q", e.Path)
				}
			}
			l := w.run("log", "--denials", "-n", "1")
			if strings.ContainsAny(l.stdout, "\x1b") {
				t.Errorf("log --denials printed an escape sequence:\n%q", l.stdout)
			}
			// The records come on a pipe under both backends. A
			// frame's pid is only what its writer says: agentbox names
			// no other process from it.
			channel := "pipe"
			if e := find(t, evs, "write", filepath.Join(w.home, ".tmux.conf")); e.Process != "tmux (pid 1, as it says)" {
				t.Errorf("the process of a forged frame: %q", e.Process)
			}
			warned := false
			for _, e := range runEvents(w.logged(), evs[0].Run)[event.Warning] {
				warned = warned || strings.Contains(e.Detail, "2 messages on its "+channel+" were not records")
			}
			if !warned {
				t.Error("no warning counts the messages that were not records")
			}
		})
	}
}

// The preloaded log is one setting: the box's programs get LD_PRELOAD
// with the library only when it is on, after the caller's own, and
// [log] filesystem = false leaves the environment as it was.
func TestFSLogPreloadSetting(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			w.env = append(w.env, "LD_PRELOAD=libmine.so")
			r := w.sh([]string{"--backend", backend}, `echo "$LD_PRELOAD"`)
			expectCode(t, r, 0)
			got := strings.TrimSpace(r.stdout)
			if !strings.HasSuffix(got, "/agentbox-fslog-$PLATFORM.so libmine.so") {
				t.Errorf("LD_PRELOAD in the box: %q", got)
			}
			off := policyFile(t, w, "[log]\nfilesystem = false\n")
			r = w.sh([]string{"--backend", backend, "--policy", off}, `echo "$LD_PRELOAD"`)
			expectCode(t, r, 0)
			if got := strings.TrimSpace(r.stdout); got != "libmine.so" {
				t.Errorf("LD_PRELOAD with the log off: %q", got)
			}
			pl := w.run("plan", "--backend", backend, "--policy", off, "--", "true")
			expectContains(t, "plan", pl.stdout, "filesystem refusals: not recorded ([log] filesystem = false")
		})
	}
}

// A limit on open files below the pipe's descriptor (1021) neither breaks
// a run nor its log: the box's first process puts the pipe there before
// the limit applies, and the box's programs keep it; with a soft limit
// below it too (ulimit -Sn) where agentbox starts. A hard limit below it
// there turns the log off under Landlock, and the run says so.
func TestFSLogPreloadLowOpenFiles(t *testing.T) {
	for _, backend := range linuxBackends {
		for _, init := range []string{"c", "go"} {
			t.Run(backend+"/"+init, func(t *testing.T) { preloadLowOpenFiles(t, backend, init) })
		}
	}
}

// preloadLowOpenFiles runs TestFSLogPreloadLowOpenFiles's box on backend
// with init's first process (AGENTBOX_INIT).
func preloadLowOpenFiles(t *testing.T, backend, init string) {
	{
		{
			w := newWorld(t)
			w.env = append(w.env, "AGENTBOX_INIT="+init)
			ro := filepath.Join(w.home, "ro")
			mkdir(t, ro)
			p := policyFile(t, w, "[limits]\nopen_files = 64\n")
			r := w.sh([]string{"--backend", backend, "--policy", p}, `ulimit -n; echo x > `+ro+`/low-limit; echo "wrote $?"`)
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "64\n")
			expectContains(t, "stdout", r.stdout, "wrote 2\n")
			expectNotContains(t, "stderr", r.stderr, "pipe")
			find(t, w.denials(), "create", filepath.Join(ro, "low-limit"))
			// agentbox started under a soft limit of 512.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := w.command(ctx, "run", "--backend", backend, "--", "sh", "-c", "echo x > "+ro+"/soft-limit")
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			var old syscall.Rlimit
			if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
				t.Fatal(err)
			}
			c.Args = append([]string{"prlimit", "--nofile=512:" + strconv.FormatUint(old.Max, 10), "--", c.Path}, c.Args[1:]...)
			prlimit, err := exec.LookPath("prlimit")
			need(t, err == nil, "prlimit is not installed")
			c.Path = prlimit
			c.Run()
			expectNotContains(t, "output", out.String(), "pipe")
			find(t, w.denials(), "create", filepath.Join(ro, "soft-limit"))
			if backend != "landlock" {
				return
			}
			// A hard limit below it: the run goes on without the log, and
			// says so.
			c = w.command(ctx, "run", "--backend", backend, "--", "sh", "-c", "echo x > "+ro+"/hard-limit; echo ran")
			c.Args = append([]string{"prlimit", "--nofile=512:512", "--", c.Path}, c.Args[1:]...)
			c.Path = prlimit
			out.Reset()
			c.Stdout, c.Stderr = &out, &out
			c.Run()
			expectContains(t, "output", out.String(), "ran\n")
			expectContains(t, "output", out.String(), "filesystem log: the limit on open files (ulimit -Hn 512) is below 1022")
		}
	}
}
