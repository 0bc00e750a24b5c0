//go:build linux

package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/proctest"
)

// inPod runs a shell script in the stand-in of a restricted pod with a
// masked /proc (podArgs), where bwrap cannot start and auto falls back to
// Landlock; /work and /home/agent persist between calls.
func inPod(t *testing.T, w *world, work, home string, env []string, script string) result {
	t.Helper()
	policy, err := filepath.Abs("../examples/ci.toml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "bwrap", podArgs(t, w, policy, work, home, env, "sh", "-c", script)...)
	proctest.Own(t, c)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err = c.Run()
	r := result{out.String(), errb.String(), 0}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running the pod: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the pod did not finish within 60s:\n%s", r)
	}
	return r
}

// Under a masked /proc, where Landlock confines because bwrap cannot, a
// run says so in one line of at most 100 characters that names the real
// cause (as doctor does) and where to read more, once per project until
// what it rests on changes; --quiet and [notice] backend = "never" silence
// it; errors are never silenced. Before, every run printed 397 characters
// blaming disabled user namespaces.
func TestLandlockFallbackNotice(t *testing.T) {
	_, err := exec.LookPath("bwrap")
	need(t, err == nil, "bwrap is not installed")
	w := newWorld(t)
	work, home := filepath.Join(w.base, "work"), filepath.Join(w.base, "agent-home")
	for _, d := range []string{work, home, filepath.Join(work, "quiet"), filepath.Join(work, "never")} {
		mkdir(t, d)
		os.Chmod(d, 0o777)
	}
	write(t, filepath.Join(work, "never.toml"), "[notice]\nbackend = \"never\"\n")
	os.Chmod(filepath.Join(work, "never.toml"), 0o644)
	run := func(script string, env ...string) result {
		t.Helper()
		r := inPod(t, w, work, home, env, script)
		if r.code != 0 && !strings.Contains(script, "--backend bwrap") {
			t.Fatalf("%s:\n%s", script, r)
		}
		return r
	}

	r := run("agentbox run -- true")
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 1 || len(lines[0]) > 100 {
		t.Fatalf("want one line of at most 100 characters, got:\n%s", r.stderr)
	}
	expectContains(t, "notice", lines[0], "agentbox: notice: using Landlock: /proc is masked")
	expectContains(t, "notice", lines[0], "agentbox doctor")
	expectNotContains(t, "notice", lines[0], "user namespaces")

	if r = run("agentbox run -- true"); r.stderr != "" {
		t.Errorf("the second run in the project repeats the notice:\n%s", r.stderr)
	}
	// Something changes (the backend is chosen by hand), then changes back.
	r = run("agentbox run --backend landlock -- true")
	expectContains(t, "forced backend", r.stderr, "agentbox: notice: landlock enforces")
	r = run("agentbox run -- true")
	expectContains(t, "back to auto", r.stderr, "/proc is masked")

	// --quiet shows nothing and remembers nothing.
	if r = run("cd quiet && agentbox run --quiet -- true"); r.stderr != "" {
		t.Errorf("--quiet:\n%s", r.stderr)
	}
	expectContains(t, "after --quiet", run("cd quiet && agentbox run -- true").stderr, "/proc is masked")
	// [notice] backend = "never".
	if r = run("cd never && agentbox run -- true", "AGENTBOX_POLICY=/work/never.toml"); r.stderr != "" {
		t.Errorf("[notice] backend = \"never\":\n%s", r.stderr)
	}
	// Errors stay: bwrap asked for by name cannot run here.
	r = run("agentbox run --quiet --backend bwrap -- true")
	if r.code != 125 || !strings.Contains(r.stderr, "agentbox: error:") {
		t.Errorf("--quiet hid the error of a run that cannot be confined:\n%s", r)
	}
	// What the notice points to explains it.
	r = run("agentbox doctor")
	expectContains(t, "doctor", r.stdout, "/proc is masked")
}
