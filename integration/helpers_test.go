//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/proctest"
)

// bin is the agentbox binary under test.
var bin string

func TestMain(m *testing.M) {
	// What the tests start gets the default signal dispositions, even
	// when this binary inherited them ignored (nohup, a shell's &).
	proctest.DefaultSignals()
	bin = os.Getenv("AGENTBOX_BIN")
	if bin == "" {
		// Outside /tmp: the box replaces /tmp, and tests run the binary
		// inside the box too.
		dir, err := os.MkdirTemp("/var/tmp", "agentbox-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		bin = filepath.Join(dir, "agentbox")
		build := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin, "..")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building agentbox:", err)
			os.Exit(1)
		}
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// bound is the longest a test waits for any one thing a process it
// started should say or do (a line, its end); past it the test fails and
// what it started is killed.
const bound = 60 * time.Second

// readLine reads one line from r within bound.
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	return proctest.Line(t, r, bound)
}

// waitCmd waits for c within bound and returns its exit error.
func waitCmd(t *testing.T, c *exec.Cmd) error {
	t.Helper()
	return proctest.Wait(t, c, bound)
}

// readRest reads r to its end within bound.
func readRest(t *testing.T, r io.Reader) string {
	t.Helper()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	select {
	case b := <-got:
		return string(b)
	case <-time.After(bound):
		t.Fatalf("the output did not end within %v", bound)
	}
	return ""
}

// need skips the test with why when a capability is missing, and fails it
// instead when AGENTBOX_MUST_WORK=1 says everything must run.
func need(t *testing.T, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("AGENTBOX_MUST_WORK") == "1" {
		t.Fatalf("cannot run: %s (AGENTBOX_MUST_WORK=1 forbids skipping)", why)
	}
	t.Skipf("skipped: %s", why)
}

func isRoot() bool { return os.Getuid() == 0 }

// rootOnly skips, even under AGENTBOX_MUST_WORK=1, a test that only root
// can run on any machine: scripts/test.sh runs every test as root first, so
// the unprivileged pass skipping it hides nothing (as the cgroup package's
// tests do).
func rootOnly(t *testing.T, why string) {
	t.Helper()
	if !isRoot() {
		t.Skipf("skipped as uid %d: %s (the root pass runs it)", os.Getuid(), why)
	}
}

// world is an isolated home and project for one test, outside /tmp (the box
// replaces /tmp, so paths there would not be what the test means).
type world struct {
	t       *testing.T
	base    string
	home    string
	project string
	cwd     string
	env     []string
	// timeout bounds each agentbox run; 60 seconds when zero.
	timeout time.Duration
}

func newWorld(t *testing.T) *world {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "abit-")
	if err != nil {
		t.Fatal(err)
	}
	base, _ = filepath.EvalSymlinks(base)
	t.Cleanup(func() {
		// Folders the box made read-only are still writable on the host.
		os.RemoveAll(base)
	})
	w := &world{t: t, base: base, home: filepath.Join(base, "home"), project: filepath.Join(base, "proj")}
	mkdir(t, w.home)
	mkdir(t, w.project)
	w.cwd = w.project
	w.env = []string{
		"HOME=" + w.home,
		"PATH=" + os.Getenv("PATH"),
		"XDG_STATE_HOME=" + filepath.Join(w.home, ".local", "state"),
		"LANG=C",
		// agentbox fits what it prints to $COLUMNS (100 when it is not
		// set and the output is no terminal): the tests look for whole
		// messages, so lines stay whole here; TestOutputFits checks the
		// fitting at 100.
		"COLUMNS=100000",
	}
	return w
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cmd prepares agentbox with args in the world.
func (w *world) cmd(args ...string) *exec.Cmd {
	return w.command(context.Background(), args...)
}

// command is agentbox with args in the world. For a test that asked for the
// network tests' names (netNames), it starts in a mount namespace of its
// own whose /etc/hosts has them, so the host's file is never edited;
// unshare and sh exec, so the process is agentbox itself. It is the
// test's (proctest.Own): in a session of its own, killed whole when ctx
// ends or the test does, its output waited for a bounded time.
func (w *world) command(ctx context.Context, args ...string) *exec.Cmd {
	var c *exec.Cmd
	if hosts := hostsFileFor(w.t); hosts != "" {
		c = exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "--",
			"sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts, bin}, args...)...)
	} else {
		c = exec.CommandContext(ctx, bin, args...)
	}
	c.Dir = w.cwd
	c.Env = w.env
	proctest.Own(w.t, c)
	return c
}

// run runs agentbox with args and returns what happened.
func (w *world) run(args ...string) result {
	w.t.Helper()
	return w.runIn("", args...)
}

func (w *world) runIn(stdin string, args ...string) result {
	w.t.Helper()
	limit := w.timeout
	if limit == 0 {
		limit = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := w.command(ctx, args...)
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		w.t.Fatalf("running agentbox %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// sh runs a shell script confined with extra agentbox flags before "--".
func (w *world) sh(flags []string, script string) result {
	w.t.Helper()
	args := append([]string{"run"}, flags...)
	args = append(args, "--", "sh", "-c", script)
	return w.run(args...)
}

func expectCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d, got %s", code, r)
	}
}

func expectContains(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Fatalf("%s: want it to contain %q, got:\n%s", what, want, got)
	}
}

func expectNotContains(t *testing.T, what, got, notWant string) {
	t.Helper()
	if strings.Contains(got, notWant) {
		t.Fatalf("%s: want it NOT to contain %q, got:\n%s", what, notWant, got)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
