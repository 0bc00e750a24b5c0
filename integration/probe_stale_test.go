//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A cached "bubblewrap works" that has gone stale for a cause the probe's
// key cannot see (here a bwrap that starts failing without changing) does
// not fail the run with exit 125: the command, which never started, runs
// under Landlock, the run says in a notice that it chose again and which
// backend it uses, and the cache is refreshed, so the next run goes to
// Landlock directly. Before, the run failed with "bubblewrap cannot create
// the sandbox" until `agentbox doctor` was run.
func TestStaleBwrapProbeFallsBack(t *testing.T) {
	real, err := exec.LookPath("bwrap")
	need(t, err == nil, "bwrap is not installed")
	w := newWorld(t)
	bin := filepath.Join(w.base, "fakebin")
	mkdir(t, bin)
	broken := filepath.Join(w.base, "broken")
	write(t, filepath.Join(bin, "bwrap"), `#!/bin/sh
if [ -e `+broken+` ]; then
	echo 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2
	exit 1
fi
exec `+real+` "$@"
`)
	if err := os.Chmod(filepath.Join(bin, "bwrap"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, e := range w.env {
		if strings.HasPrefix(e, "PATH=") {
			w.env[i] = "PATH=" + bin + ":" + strings.TrimPrefix(e, "PATH=")
		}
	}
	backendOf := func() string {
		t.Helper()
		r := w.run("plan", "--json", "--", "true")
		expectCode(t, r, 0)
		for _, b := range []string{"bwrap", "landlock"} {
			if strings.Contains(r.stdout, `"backend": "`+b+`"`) {
				return b
			}
		}
		t.Fatalf("plan --json names no backend:\n%s", r)
		return ""
	}
	if b := backendOf(); b != "bwrap" {
		t.Skipf("bubblewrap does not run here (auto chose %s): nothing to go stale", b)
	}
	r := w.run("run", "--", "sh", "-c", "echo ran")
	expectCode(t, r, 0)
	expectNotContains(t, "stderr", r.stderr, "notice")

	write(t, broken, "")
	r = w.run("run", "--", "sh", "-c", "echo ran")
	expectCode(t, r, 0)
	if r.stdout != "ran\n" {
		t.Errorf("the command ran other than once: stdout %q", r.stdout)
	}
	expectContains(t, "stderr", r.stderr, "agentbox: notice: bubblewrap no longer works here (its message is above): choosing again")
	expectContains(t, "stderr", r.stderr, "agentbox: notice: using Landlock")
	for _, l := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
		if len(l) > 100 && !strings.HasPrefix(l, "bwrap:") {
			t.Errorf("a line of %d characters: %q", len(l), l)
		}
	}
	// The cache was refreshed: the next plan and run use Landlock without
	// starting the broken bwrap's sandbox again.
	if b := backendOf(); b != "landlock" {
		t.Errorf("after the fallback plan says %s, want landlock", b)
	}
	r = w.run("run", "--", "sh", "-c", "echo ran")
	expectCode(t, r, 0)
	expectNotContains(t, "stderr", r.stderr, "choosing again")
	expectNotContains(t, "stderr", r.stderr, "bwrap:")
	expectNotContains(t, "stderr", r.stderr, "notice")

	// bwrap works again, doctor refreshes the probe, and runs go back to
	// bwrap silently; when it breaks again, the change is said again.
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	w.run("doctor")
	if b := backendOf(); b != "bwrap" {
		t.Fatalf("after doctor plan says %s, want bwrap", b)
	}
	r = w.run("run", "--", "true")
	expectCode(t, r, 0)
	expectNotContains(t, "stderr", r.stderr, "notice")
	write(t, broken, "")
	r = w.run("run", "--", "true")
	expectCode(t, r, 0)
	expectContains(t, "stderr", r.stderr, "choosing again")
	expectContains(t, "stderr", r.stderr, "agentbox: notice: using Landlock")
}
