//go:build linux

package integration

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
)

// setidFiles are the files under dir that have a setuid or setgid bit.
func setidFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// openat2(2) keeps the mode of a file it creates in struct open_how, which
// a seccomp filter cannot read: the box makes a file with mode 06755
// through it, through O_TMPFILE and a link, and through openat and libc's
// open. openat2 is refused with ENOSYS (what an older kernel answers, so
// libc falls back to openat, which the filter checks), the others refuse
// the mode, and no file in the project has a setuid or setgid bit after
// the run.
func TestOpenat2MakesNoSetuidFile(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		for _, in := range inits {
			t.Run(in.name, func(t *testing.T) { openat2NoSetuid(t, be, in.env) })
		}
	})
}

func openat2NoSetuid(t *testing.T, be []string, init string) {
	{
		w := initWorld(t, init)
		os.Chmod(w.base, 0o755)
		probe := buildC(t, w.base, "testdata/openat2probe.c")
		r := w.run(args([]string{"run"}, be, []string{"--", probe, w.project})...)
		expectCode(t, r, 0)
		got := outcomes(r.stdout)
		for _, name := range []string{"openat2", "openat2-tmp"} {
			if got[name] != "errno=38" {
				t.Errorf("%s in the box: %q, want errno=38 (ENOSYS)", name, got[name])
			}
		}
		for _, name := range []string{"openat", "libc-open"} {
			if got[name] == "ok" {
				t.Errorf("%s with mode 06755 succeeded in the box", name)
			}
		}
		if files := setidFiles(t, w.project); len(files) > 0 {
			t.Errorf("setuid or setgid files outlast the run: %v\n%s", files, r)
		}
	}
}

// With the setuid group reopened by the policy, the box may set the bits
// during the run, but the after-run check takes them off every file the
// run made or changed in the writable roots (and moves away a file with
// more than one name): none outlasts the run.
func TestSetidBitsClearedAfterRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		os.Chmod(w.base, 0o755)
		probe := buildC(t, w.base, "testdata/openat2probe.c")
		pol := policyFile(t, w, "[seccomp]\nallow = [\"setuid\"]\n")
		mkdir(t, filepath.Join(w.project, "deep", "er"))
		write(t, filepath.Join(w.project, "deep", "old"), "#!/bin/sh\n")
		// Under Landlock the metadata broker refuses a setuid or setgid
		// mode whatever the filter lets through: the chmods may fail there.
		r := w.run(args([]string{"run", "--policy", pol}, be, []string{"--", "sh", "-c",
			probe + " deep/er; chmod 4755 deep/old; chmod 2755 deep/er/o2-suid; echo x > deep/linked; chmod 4755 deep/linked; ln deep/linked deep/er/linked2; ls -l deep/old deep/er"})...)
		expectCode(t, r, 0)
		if be[1] == "bwrap" {
			expectContains(t, "the box's view", r.stdout, "rws")
		}
		if files := setidFiles(t, w.project); len(files) > 0 {
			t.Errorf("setuid or setgid files outlast the run: %v\n%s", files, r)
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(w.project, "deep", "old"), &st); err != nil || be[1] == "bwrap" && st.Mode&0o777 != 0o755 {
			t.Errorf("deep/old: mode %o (%v), want 755 kept without the setuid bit", st.Mode, err)
		}
		// A file with two names never keeps a bit through another name
		// (a host program's): after the run each name is a file of its own
		// (agentbox gives linked files copies of their own), or is gone.
		var a, b unix.Stat_t
		if unix.Stat(filepath.Join(w.project, "deep", "linked"), &a) == nil && unix.Stat(filepath.Join(w.project, "deep", "er", "linked2"), &b) == nil &&
			a.Ino == b.Ino && a.Dev == b.Dev {
			t.Errorf("the two names of the setuid file are still one file after the run")
		}
	})
}

// Under Landlock the box shares the host's /dev/pts. Another session of
// the user's has a terminal there ("other", opened here with its echo on);
// the box runs on a terminal of its own. The box cannot open the other
// terminal (read-write, read-only, write-only), so it can neither read
// what is typed there nor turn its echo off; its own terminal works: by
// its descriptors, by /dev/tty and (Landlock) by its own path.
func TestOtherTerminalsClosed(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		for _, in := range inits {
			t.Run(in.name, func(t *testing.T) { otherTerminalsClosed(t, be, in.env) })
		}
	})
}

func otherTerminalsClosed(t *testing.T, be []string, init string) {
	{
		w := initWorld(t, init)
		_, other := openPty(t)
		before, err := unix.IoctlGetTermios(int(other.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if before.Lflag&unix.ECHO == 0 {
			t.Fatal("the other terminal starts with its echo off")
		}
		master, own := openPty(t)
		go func() { // drain what the box writes to its terminal
			buf := make([]byte, 4096)
			for {
				if _, err := master.Read(buf); err != nil {
					return
				}
			}
		}()
		results := filepath.Join(w.project, "results")
		script := `o=` + other.Name() + `
exec >` + results + ` 2>&1
(exec 3<>$o) 2>/dev/null && echo other-rdwr ok
(exec 3<$o) 2>/dev/null && echo other-rdonly ok
(exec 3>$o) 2>/dev/null && echo other-wronly ok
stty -echo <$o 2>/dev/null && echo other-echo-off ok
stty size <&0 >/dev/null && echo own-stdin ok
(exec 3<>/dev/tty) && echo own-tty ok
t=$(tty) && (exec 3<>$t) && echo own-path ok
python3 -c '
import os, tty
m, s = os.openpty()
tty.setraw(s)
os.write(s, b"x")
assert os.read(m, 1) == b"x"
print("box-pty ok")'
script -qc true /dev/null </dev/null >/dev/null && echo box-script ok
python3 -c 'import fcntl; fcntl.ioctl(0, 0x5441, 2); print("peer-of-own-terminal ok")' 2>/dev/null
true`
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := w.command(ctx, args([]string{"run"}, be, []string{"--", "sh", "-c", script})...)
		c.Stdin, c.Stdout, c.Stderr = own, own, own
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := c.Run(); err != nil {
			t.Fatalf("agentbox: %v", err)
		}
		data, _ := os.ReadFile(results)
		got := outcomes(string(data))
		t.Logf("in the box:\n%s", data)
		for _, name := range []string{"other-rdwr", "other-rdonly", "other-wronly", "other-echo-off"} {
			if got[name] == "ok" {
				t.Errorf("%s: the box opened another session's terminal", name)
			}
		}
		for _, name := range []string{"own-stdin", "own-tty"} {
			if got[name] != "ok" {
				t.Errorf("%s: the box's own terminal does not work", name)
			}
		}
		// A pty the box makes works: under bubblewrap in the box's own
		// /dev/pts; under Landlock the supervisor opens its terminal
		// from the master the box holds (TIOCGPTPEER). Asking for the
		// peer of a terminal that is no master still fails.
		for _, name := range []string{"box-pty", "box-script"} {
			if got[name] != "ok" {
				t.Errorf("%s: the box cannot use a pty of its own", name)
			}
		}
		if got["peer-of-own-terminal"] == "ok" {
			t.Error("TIOCGPTPEER on the box's terminal, which is no master, gave a descriptor")
		}
		if be[1] == "landlock" && got["own-path"] != "ok" {
			t.Errorf("own-path: the box cannot open its own terminal by its path")
		}
		after, err := unix.IoctlGetTermios(int(other.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if after.Lflag != before.Lflag {
			t.Errorf("the other terminal's local modes changed: %#x, before %#x", after.Lflag, before.Lflag)
		}
	}
}

// A trusted project policy says writable = ["out/gen"], inside the project.
// Run 1 swaps out for a folder whose gen is a link to a folder elsewhere in
// the home folder; run 2, with no new trust, must not make that folder
// writable: it is refused (exit 125) with one line naming the file, line,
// key and the fix, and the folder is unchanged. A policy whose paths still
// lead where they led when it was trusted runs without new trust, and a
// link the user trusts is used.
func TestTrustedPathRelinked(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		gitInit(t, w, w.project)
		mkdir(t, filepath.Join(w.project, "out", "gen"))
		other := filepath.Join(w.home, "other")
		write(t, filepath.Join(other, "Makefile"), "all:\n")
		file := filepath.Join(w.project, ".agentbox.toml")
		write(t, file, "version = 1\n[filesystem]\nwritable = [\".\", \"out/gen\"]\n")
		expectCode(t, w.run("trust"), 0)
		r := w.sh(be, "echo x > out/gen/made && echo unchanged-ok")
		expectCode(t, r, 0)
		expectContains(t, "the trusted policy, unchanged", r.stdout, "unchanged-ok")

		r = w.sh(be, "mv out out.old && mkdir out && ln -s "+other+" out/gen")
		expectCode(t, r, 0)
		r = w.sh(be, "echo pwned > "+other+"/Makefile; echo ran")
		if r.code != 125 {
			t.Errorf("the relinked policy path ran: %s", r)
		}
		expectContains(t, "the refusal", r.stderr, file+":3")
		expectContains(t, "the refusal", r.stderr, "filesystem.writable")
		expectContains(t, "the refusal", r.stderr, "agentbox trust")
		if got, _ := os.ReadFile(filepath.Join(other, "Makefile")); string(got) != "all:\n" {
			t.Errorf("the folder the link leads to was written: %q", got)
		}

		// The user looks and trusts the link: it is used as trusted.
		r = w.run("trust")
		expectCode(t, r, 0)
		expectContains(t, "trust names the link", r.stdout, other)
		r = w.sh(be, "echo mine > out/gen/Makefile && echo trusted-ok")
		expectCode(t, r, 0)
		expectContains(t, "the trusted link", r.stdout, "trusted-ok")
	})
}

// After the box tried to write in /sys, /proc and /dev (kernel interfaces:
// cgroups, memory management, modules, kernel settings, device nodes),
// learn proposes none of them as a writable folder, and says why it left
// them out; a folder of the home folder written in the same run is still
// proposed.
func TestLearnProposesNoKernelInterface(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			if backend == "landlock" {
				needLandlock(t)
			}
			w := newWorld(t)
			gitInit(t, w, w.project)
			mkdir(t, filepath.Join(w.home, ".config", "tool"))
			r := w.run("learn", "--backend", backend, "--", "sh", "-c", `
echo 1 > /sys/fs/cgroup/agentbox-learn-probe/cgroup.procs
mkdir /sys/fs/cgroup/agentbox-learn-probe
echo 1 > /sys/kernel/mm/ksm/run
touch /sys/module/agentbox-probe
echo 1 > /proc/sys/vm/drop_caches
touch /dev/agentbox-probe
touch /dev/shm/agentbox-probe/x
echo ok > ~/.config/tool/state
exit 0`)
			expectCode(t, r, 0)
			file := filepath.Join(w.project, policy.ProjectFile)
			writable := proposed(t, w, file, "filesystem.writable")
			if !contains(writable, "~/.config/tool") {
				t.Errorf("the safe folder was not proposed: %v\n%s", writable, r)
			}
			for _, v := range writable {
				for _, k := range []string{"/sys", "/proc", "/dev"} {
					if plan.Within(v, k) {
						t.Errorf("proposed the kernel interface %s as writable\n%s", v, r)
					}
				}
			}
			expectContains(t, "what learn left out", r.stdout, "kernel")
		})
	}
}
