//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// badOutput is what a CLI prints when the box refuses a write it needed.
var badOutput = regexp.MustCompile(`(?i)read-only file system|EROFS|EACCES|permission denied`)

// The real agent CLIs run inside agentbox as they run outside it: the same
// exit status, no refused writes in their output, and nothing written
// outside their declared folders and the project. Install them with
// `npm install -g @anthropic-ai/claude-code @openai/codex` (scripts/test.sh
// does).
func TestRealProviders(t *testing.T) {
	steps := map[string][][]string{
		"claude": {{"--version"}, {"--help"}, {"auth", "status"}, {"mcp", "list"}, {"-p", "hi"}},
		"codex":  {{"--version"}, {"--help"}, {"login", "status"}, {"features", "list"}, {"mcp", "list"}},
	}
	for _, cli := range []string{"claude", "codex"} {
		t.Run(cli, func(t *testing.T) {
			_, err := exec.LookPath(cli)
			need(t, err == nil, cli+" is not installed (npm install -g @anthropic-ai/claude-code @openai/codex)")
			for _, args := range steps[cli] {
				t.Run(strings.Join(args, " "), func(t *testing.T) {
					// Unconfined, in a fresh world, for the expected status.
					plain := newWorld(t)
					c := exec.Command(cli, args...)
					c.Dir, c.Env = plain.cwd, append(plain.env, "CI=1")
					out, _ := c.CombinedOutput()
					want := c.ProcessState.ExitCode()

					w := newWorld(t)
					w.env = append(w.env, "CI=1")
					before := listTree(t, w.base)
					r := w.run(append([]string{"run", "--", cli}, args...)...)
					expectCode(t, r, want)
					if m := badOutput.FindString(r.stdout + r.stderr); m != "" {
						t.Fatalf("the box refused something (%q):\n%s\nunconfined it printed:\n%s", m, r, out)
					}
					for _, line := range strings.Split(listTree(t, w.base), "\n") {
						path, _, _ := strings.Cut(line, " ")
						if path == "" || strings.Contains(before, path+" ") {
							continue
						}
						// agentbox's own probe cache and state (the audit log,
						// the after-run check's records, the workspace's
						// private caches, the box's temporary folders, with
						// the folders made for them) are agentbox's, not the
						// CLI's.
						state := filepath.Join(w.home, ".local", "state", "agentbox")
						if !under(path, filepath.Join(w.home, "."+cli), w.project, filepath.Join(w.home, ".cache"), w.logDir(), state) &&
							!strings.HasPrefix(w.logDir(), path+"/") && !strings.HasPrefix(state, path+"/") {
							t.Errorf("written outside the declared paths: %s", path)
						}
					}
				})
			}
		})
	}
}

func under(p string, dirs ...string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// Confined, Codex's own sandbox is turned off, and a mode the user chose is
// kept; the real CLI accepts both command lines (it refuses -s twice).
func TestCodexInnerSandbox(t *testing.T) {
	_, err := exec.LookPath("codex")
	need(t, err == nil, "codex is not installed (npm install -g @openai/codex)")
	w := newWorld(t)
	p := w.run("plan", "--", "codex", "features", "list")
	expectContains(t, "plan", p.stdout, "command:   codex --sandbox danger-full-access features list")
	r := w.run("run", "--", "codex", "features", "list")
	expectCode(t, r, 0)
	p = w.run("plan", "--", "codex", "-s", "read-only", "features", "list")
	expectContains(t, "plan", p.stdout, "left alone: the command chooses a sandbox mode")
	r = w.run("run", "--", "codex", "-s", "read-only", "features", "list")
	expectCode(t, r, 0)
	// Unconfined (best-effort without a backend), nothing is changed.
	p = w.run("plan", "--backend", "windows", "--best-effort", "--", "codex", "exec", "hi")
	expectContains(t, "plan", p.stdout, "command:   codex exec hi")
}

// A known but unverified agent CLI is refused under require with the block
// that would declare it; best-effort runs it unconfined and says so; a
// declared provider with sandbox = true is confined.
func TestUnverifiedProvider(t *testing.T) {
	w := newWorld(t)
	bin := filepath.Join(w.base, "bin")
	write(t, filepath.Join(bin, "kimi"), "#!/bin/sh\necho \"kimi|$AGENTBOX|$AGENTBOX_DEGRADED\"\n")
	os.Chmod(filepath.Join(bin, "kimi"), 0o755)
	w.env = append(w.env, "PATH="+bin+":"+os.Getenv("PATH"))

	r := w.run("run", "--", "kimi")
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "provider kimi has not been verified")
	expectContains(t, "stderr", r.stderr, "[providers.kimi]")
	expectNotContains(t, "stdout", r.stdout, "kimi|")

	r = w.run("run", "--best-effort", "--", "kimi")
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "kimi||provider-unsupported:kimi")
	expectContains(t, "stderr", r.stderr, "agentbox: warning: running UNCONFINED")

	mkdir(t, filepath.Join(w.home, ".kimi"))
	pol := policyFile(t, w, "[providers.kimi]\nwritable = [\"~/.kimi\"]\nsandbox = true\n")
	r = w.run("run", "--policy", pol, "--", "kimi")
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "kimi|1|")

	pr := w.run("providers")
	expectContains(t, "providers", pr.stdout, "kimi")
	expectContains(t, "providers", pr.stdout, "no (not verified)")
}
