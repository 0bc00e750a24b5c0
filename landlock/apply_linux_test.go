package landlock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/proctest"
	"golang.org/x/sys/unix"
)

// The integration tests run real commands through testdata/applytest, a
// helper that assesses a plan, calls Apply and execs the command, and assert
// what the kernel allowed. Set AGENTBOX_LANDLOCK_HELPER to a prebuilt helper
// (to run the test binary as another user without a Go toolchain), and
// AGENTBOX_MUST_WORK=1 (as CI sets it) to turn the skips into failures.

var helperPath string

func TestMain(m *testing.M) {
	proctest.DefaultSignals()
	code := func() int {
		if p := os.Getenv("AGENTBOX_LANDLOCK_HELPER"); p != "" {
			helperPath = p
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "applytest-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		helperPath = filepath.Join(dir, "applytest")
		out, err := exec.Command("go", "build", "-mod=readonly", "-buildvcs=false", "-o", helperPath, "./testdata/applytest").CombinedOutput()
		if err != nil {
			// Unit tests still run; the integration tests skip or fail.
			fmt.Fprintf(os.Stderr, "building the helper: %v\n%s", err, out)
			helperPath = ""
		}
		return m.Run()
	}()
	os.Exit(code)
}

func skipUnless(t *testing.T, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("AGENTBOX_MUST_WORK") == "1" {
		t.Fatalf("cannot run: %s (AGENTBOX_MUST_WORK=1 forbids skipping)", why)
	}
	t.Skip(why)
}

// realFixture creates the fixture's tree under /var/tmp: not under /tmp,
// which the plan makes inaccessible.
func realFixture(t *testing.T) fixture {
	t.Helper()
	skipUnless(t, helperPath != "", "the applytest helper could not be built")
	abi, err := ABI()
	skipUnless(t, err == nil && abi >= 1, fmt.Sprintf("no landlock here: %v", err))
	base, err := os.MkdirTemp("/var/tmp", "agentbox-landlock-")
	skipUnless(t, err == nil, fmt.Sprintf("cannot create the test tree under /var/tmp: %v", err))
	t.Cleanup(func() { os.RemoveAll(base) })
	f := newFixture(base)
	files := map[string]string{
		"home/.aws/credentials":  "aws-secret",
		"home/.netrc":            "netrc-secret",
		"home/notes.txt":         "notes",
		"proj/README":            "readme",
		"proj/src/a.txt":         "a",
		"proj/.git/config":       "[core]",
		"proj/.git/HEAD":         "ref: refs/heads/main",
		"proj/.git/hooks/.keep":  "",
		"proj/secrets/key":       "proj-secret",
		"work/a/.keep":           "",
		"work/.repos/a/.keep":    "",
		"work/b/secret.txt":      "other-workspace",
		"outside/existing.txt":   "outside",
		"tmpws/.keep":            "",
		"tmphost-sentinel/.keep": "",
	}
	for name, content := range files {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

type result struct {
	code           int
	stdout, stderr string
}

// run execs sh -c script confined by p, with the fixture's folders in the
// environment as $HOME_, $PROJ, $WORK, $TMPWS, $OUTSIDE.
func run(t *testing.T, f fixture, p *plan.Plan, script string, helperArgs ...string) result {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(pf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helperPath, append(helperArgs, pf, "/bin/sh", "-c", script)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "HOME_="+f.home, "PROJ="+f.proj, "WORK="+f.work,
		"TMPWS="+f.tmpws, "OUTSIDE="+f.outside)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = proctest.Run(t, cmd, 2*time.Minute)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code == 125 && strings.Contains(errb.String(), "applytest: error") {
		t.Fatalf("helper failed: %s", errb.String())
	}
	return result{code, out.String(), errb.String()}
}

func TestApplyFilesystem(t *testing.T) {
	f := realFixture(t)
	p := f.plan(plan.NetOpen)
	tests := []struct {
		name   string
		script string
		ok     bool   // exit status 0 expected
		stderr string // must appear in stderr when !ok
	}{
		{"read /usr and run /bin/sh", `test -r /usr/bin/env && ls /usr/bin >/dev/null && /bin/sh -c 'exit 0'`, true, ""},
		{"read a file in the home folder", `test "$(cat "$HOME_/notes.txt")" = notes`, true, ""},
		{"write outside the writable roots", `echo x > "$OUTSIDE/new"`, false, "Permission denied"},
		{"change a file outside the writable roots", `echo x >> "$OUTSIDE/existing.txt"`, false, "Permission denied"},
		{"write under /etc", `touch /etc/agentbox-landlock-test`, false, "Permission denied"},
		{"create, move and write inside the writable root", `echo hello > "$PROJ/src/new.txt" && mkdir "$PROJ/src/d" && mv "$PROJ/src/new.txt" "$PROJ/src/d/new.txt"`, true, ""},
		{"append to an existing file at the top of the writable root", `echo more >> "$PROJ/README"`, true, ""},
		{"write an existing file inside .git", `echo "ref: refs/heads/x" > "$PROJ/.git/HEAD"`, true, ""},
		{"create a file at the top of a carved writable root (weaker)", `touch "$PROJ/newtop"`, false, "Permission denied"},
		{"read the deny folder", `cat "$HOME_/.aws/credentials"`, false, "Permission denied"},
		{"list the deny folder", `ls "$HOME_/.aws"`, false, "Permission denied"},
		{"stat the deny folder (Landlock cannot hide it)", `stat "$HOME_/.aws" >/dev/null && stat "$HOME_/.aws/credentials" >/dev/null`, true, ""},
		{"read the deny file", `cat "$HOME_/.netrc"`, false, "Permission denied"},
		{"stat the deny file", `stat "$HOME_/.netrc" >/dev/null`, true, ""},
		{"read a deny folder inside the writable root", `cat "$PROJ/secrets/key"`, false, "Permission denied"},
		{"write into a deny folder inside the writable root", `echo x > "$PROJ/secrets/new"`, false, "Permission denied"},
		{"remove a deny folder inside the writable root", `rm -rf "$PROJ/secrets"; test -d "$PROJ/secrets"`, true, ""},
		{"read another workspace", `cat "$WORK/b/secret.txt"`, false, "Permission denied"},
		{"list the workspace root", `ls "$WORK"`, false, "Permission denied"},
		{"create beside the workspaces", `mkdir "$WORK/c"`, false, "Permission denied"},
		{"write in our workspace and repo cache", `echo x > "$WORK/a/f" && echo y > "$WORK/.repos/a/f"`, true, ""},
		{"read the read-only .git/config", `test "$(cat "$PROJ/.git/config")" = "[core]"`, true, ""},
		{"write the read-only .git/config", `echo x >> "$PROJ/.git/config"`, false, "Permission denied"},
		{"remove the read-only .git/config", `rm -f "$PROJ/.git/config"`, false, "Permission denied"},
		{"replace .git/config by a rename", `mv -f "$PROJ/src/a.txt" "$PROJ/.git/config"`, false, "Permission denied"},
		{"replace .git/config by a same-folder rename", `mv -f "$PROJ/.git/HEAD" "$PROJ/.git/config"`, false, "Permission denied"},
		{"plant a hook", `touch "$PROJ/.git/hooks/pre-commit"`, false, "Permission denied"},
		{"plant a hook as a symlink", `ln -s /bin/true "$PROJ/.git/hooks/pre-commit"`, false, "Permission denied"},
		{"move the hooks folder away", `mv "$PROJ/.git/hooks" "$PROJ/src/hooks"`, false, "Permission denied"},
		{"TMPDIR is the per-workspace folder", `test "$TMPDIR" = "$TMPWS" && echo t > "$TMPDIR/f"`, true, ""},
		{"write the host /tmp", `touch /tmp/agentbox-landlock-$$`, false, "Permission denied"},
		{"list the host /tmp", `ls /tmp`, false, "Permission denied"},
		{"use the allowed devices", `echo x > /dev/null && head -c 4 /dev/urandom >/dev/null && head -c 4 /dev/zero >/dev/null`, true, ""},
		{"no_new_privs is set", `grep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status`, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, f, p, tc.script)
			if tc.ok && r.code != 0 {
				t.Fatalf("exit %d, want 0; stderr: %s", r.code, r.stderr)
			}
			if !tc.ok {
				if r.code == 0 {
					t.Fatalf("exit 0, want a failure")
				}
				if !strings.Contains(r.stderr, tc.stderr) {
					t.Fatalf("stderr %q does not contain %q", r.stderr, tc.stderr)
				}
			}
		})
	}

	// What the confined commands did must be visible on the host.
	for name, want := range map[string]string{
		"proj/src/d/new.txt": "hello\n",
		"proj/README":        "readmemore\n",
		"work/a/f":           "x\n",
		"work/.repos/a/f":    "y\n",
		"tmpws/f":            "t\n",
		"proj/.git/config":   "[core]",
		"proj/secrets/key":   "proj-secret",
	} {
		got, err := os.ReadFile(filepath.Join(f.base, name))
		if err != nil || string(got) != want {
			t.Errorf("host %s = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"outside/new", "proj/newtop", "proj/.git/hooks/pre-commit", "proj/secrets/new", "work/c"} {
		if _, err := os.Lstat(filepath.Join(f.base, name)); err == nil {
			t.Errorf("host %s exists; the sandbox must not have created it", name)
		}
	}
}

// TestApplyKeepRootsWritable: with the option, the writable root stays
// fully writable (and its read-only paths are not enforced) when no deny
// path lies inside it; deny paths inside it stay closed, and still make the
// folders above them unchangeable.
func TestApplyKeepRootsWritable(t *testing.T) {
	f := realFixture(t)
	p := f.plan(plan.NetOpen)
	noDenyInside := f.plan(plan.NetOpen)
	noDenyInside.Mounts = noDenyInside.Mounts[:len(noDenyInside.Mounts)-1] // drop proj/secrets
	r := run(t, f, noDenyInside, `touch "$PROJ/newtop" && echo x > "$PROJ/.git/index.lock" && echo "[user]" >> "$PROJ/.git/config"`, "-keep-roots-writable")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	r = run(t, f, p, `cat "$PROJ/secrets/key"`, "-keep-roots-writable")
	if r.code == 0 || !strings.Contains(r.stderr, "Permission denied") {
		t.Fatalf("deny path inside the writable root: exit %d, %q", r.code, r.stderr)
	}
	if r := run(t, f, p, `touch "$PROJ/newtop2"`, "-keep-roots-writable"); r.code == 0 {
		t.Fatalf("created a file beside a deny path: the writable root must stay carved around it")
	}
}

func TestApplyNetworkNone(t *testing.T) {
	f := realFixture(t)
	abi, _ := ABI()
	skipUnless(t, abi >= 4, fmt.Sprintf("landlock ABI %d has no TCP rules", abi))
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf(`exec bash -c 'echo hi > /dev/tcp/127.0.0.1/%d'`, port)

	if r := run(t, f, f.plan(plan.NetOpen), connect); r.code != 0 {
		t.Fatalf("network open: connect failed (exit %d): %s", r.code, r.stderr)
	}
	r := run(t, f, f.plan(plan.NetNone), connect)
	if r.code == 0 || !strings.Contains(r.stderr, "Permission denied") {
		t.Fatalf("network none: connect exit %d, stderr %q; want Permission denied", r.code, r.stderr)
	}
}

func TestApplySignalScope(t *testing.T) {
	f := realFixture(t)
	abi, _ := ABI()
	skipUnless(t, abi >= 6, fmt.Sprintf("landlock ABI %d has no signal scope", abi))
	// The test process is outside the sandbox: kill -0 must be refused.
	r := run(t, f, f.plan(plan.NetOpen), fmt.Sprintf("kill -0 %d", os.Getpid()))
	if r.code == 0 || !strings.Contains(r.stderr, "ermitted") {
		t.Fatalf("kill -0 of a process outside: exit %d, stderr %q; want Operation not permitted", r.code, r.stderr)
	}
	// Inside, signals still work.
	if r := run(t, f, f.plan(plan.NetOpen), `sleep 5 & kill $!`); r.code != 0 {
		t.Fatalf("kill of a child: exit %d: %s", r.code, r.stderr)
	}
}

func TestApplyRootDropsCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: nothing to drop")
	}
	f := realFixture(t)
	p := f.plan(plan.NetOpen)
	p.Identity = plan.Identity{UID: 0, GID: 0, Home: f.home}
	r := run(t, f, p, `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !strings.HasSuffix(line, "0000000000000000") {
			t.Errorf("capabilities left: %s", line)
		}
	}
	// Root without capabilities still owns the disks: /dev must stay closed.
	if r := run(t, f, p, `for d in /dev/sda /dev/vda /dev/nvme0n1 /dev/mem /dev/kmsg; do test -e $d || continue; head -c1 $d >/dev/null && exit 1; done; exit 0`); r.code != 0 {
		t.Errorf("root could read a device node")
	}
}

// TestApplyWithoutUserNamespaces is the case Landlock exists for: user
// namespaces are denied (user.max_user_namespaces=0, set in a user namespace
// of the test's own so the host keeps its value), bwrap cannot start for an
// ordinary user, and Landlock still confines the command.
func TestApplyWithoutUserNamespaces(t *testing.T) {
	f := realFixture(t)
	setpriv, err := exec.LookPath("setpriv")
	skipUnless(t, err == nil, "setpriv is not installed")
	b, err := json.Marshal(f.plan(plan.NetOpen))
	if err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(pf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
	if uid != 0 {
		// Setting the sysctl of our own namespace needs CAP_SYS_RESOURCE
		// there; it is dropped again before anything else runs.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_RESOURCE}
	}
	script := `echo 0 > /proc/sys/user/max_user_namespaces
drop="` + setpriv + ` --inh-caps=-all --ambient-caps=-all"
if [ "$(id -u)" != 0 ] && $drop bwrap --ro-bind / / -- true 2>/dev/null; then echo "bwrap still works" >&2; exit 3; fi
exec $drop "$HELPER" "$PLAN" /bin/sh -c '
	echo x > "$OUTSIDE/new" 2>/dev/null && exit 10
	cat "$HOME_/.aws/credentials" 2>/dev/null && exit 11
	cat "$WORK/b/secret.txt" 2>/dev/null && exit 12
	echo ok > "$PROJ/src/userns.txt" || exit 13
'`
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = attr
	cmd.Env = append(os.Environ(), "HELPER="+helperPath, "PLAN="+pf, "HOME_="+f.home, "PROJ="+f.proj,
		"WORK="+f.work, "OUTSIDE="+f.outside)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = proctest.Run(t, cmd, 2*time.Minute)
	out := buf.Bytes()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 3 {
		t.Fatalf("exit %d: %s", ee.ExitCode(), out)
	}
	skipUnless(t, err == nil, fmt.Sprintf("cannot set up a user namespace without user namespaces: %v: %s", err, out))
	if got, _ := os.ReadFile(filepath.Join(f.proj, "src", "userns.txt")); string(got) != "ok\n" {
		t.Errorf("the write inside the writable root did not reach the host: %q", got)
	}
}
