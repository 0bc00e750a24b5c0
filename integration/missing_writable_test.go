//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A writable folder of the policy that does not exist: in the project it is
// made for the run (0700, each missing level) and the command writes there,
// and `agentbox trust` says so; outside the project the run is refused with
// the mkdir to run, or under best-effort runs after one warning line saying
// the same. Before, each exited 125 with "writable root does not exist",
// and trust said nothing.
func TestMissingWritableFolder(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			write(t, filepath.Join(w.project, ".agentbox.toml"), "[filesystem]\nwritable = [\"build/out\"]\n")
			r := w.run("trust")
			expectCode(t, r, 0)
			expectContains(t, "trust", r.stdout, "note: "+filepath.Join(w.project, "build", "out")+" does not exist yet: a run makes it (0700)")
			r = w.run("run", "--backend", backend, "--", "sh", "-c", "echo x > build/out/f && stat -c %a build build/out")
			expectCode(t, r, 0)
			if r.stdout != "700\n700\n" {
				t.Errorf("modes: %q, want 700 for both", r.stdout)
			}
			if b, err := os.ReadFile(filepath.Join(w.project, "build", "out", "f")); err != nil || string(b) != "x\n" {
				t.Errorf("build/out/f: %q, %v", b, err)
			}
			expectNotContains(t, "stderr", r.stderr, "warning")

			outside := filepath.Join(w.base, "cache", "mytool")
			r = w.run("run", "--backend", backend, "--writable", outside, "--", "echo", "RAN")
			expectCode(t, r, 125)
			expectNotContains(t, "stdout", r.stdout, "RAN")
			expectContains(t, "stderr", r.stderr, "mkdir -p "+outside)
			if exists(outside) {
				t.Errorf("%s was made", outside)
			}
			r = w.run("run", "--backend", backend, "--best-effort", "--writable", outside, "--", "echo", "RAN")
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "RAN")
			var warnings []string
			for _, l := range strings.Split(r.stderr, "\n") {
				if strings.Contains(l, "warning") {
					warnings = append(warnings, l)
				}
			}
			want := "agentbox: warning: " + outside + " does not exist, so it is not writable (mkdir -p " + outside + ")"
			if len(warnings) != 1 || warnings[0] != want {
				t.Errorf("warnings %q, want exactly %q", warnings, want)
			}
			if exists(outside) {
				t.Errorf("%s was made", outside)
			}
		})
	}
}

// The README's sample policy runs as written in a fresh project: its
// writable "build" is made, the read-only and denied paths that do not exist
// are skipped.
func TestReadmeSamplePolicy(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## A policy")
	if ok {
		_, after, ok = strings.Cut(after, "```toml\n")
	}
	sample, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 || !strings.Contains(sample, "[filesystem]") {
		t.Fatal("README.md has no toml sample under \"## A policy\"")
	}
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			write(t, filepath.Join(w.project, ".agentbox.toml"), sample)
			expectCode(t, w.run("trust"), 0)
			r := w.run("run", "--backend", backend, "--", "sh", "-c", "echo x > build/f && echo ok")
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "ok")
		})
	}
}
