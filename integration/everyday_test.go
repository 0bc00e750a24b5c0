//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `--allow` without a network mode means allowlist: the box gets its own
// network with only the allowed host reachable. Before, the flag was
// ignored and every host was reachable.
func TestAllowWithoutNetworkMode(t *testing.T) {
	needCurl(t)
	allowed, other := startWeb(t), startWeb(t)
	w := newWorld(t)
	r := w.sh([]string{"--allow", "localhost:" + allowed.port},
		`curl -sS http://localhost:`+allowed.port+`/ok; curl -sS --noproxy '' http://127.0.0.1:`+other.port+`/leak; echo net=$AGENTBOX_NETWORK`)
	expectCode(t, r, 0)
	expectContains(t, "allowed host", r.stdout, "hello localhost:"+allowed.port+" /ok")
	expectContains(t, "mode", r.stdout, "net=allowlist")
	expectNotContains(t, "other host", r.stdout, "/leak")

	// With a mode that contradicts it: one line naming both flags, exit
	// 125, nothing run.
	for _, mode := range []string{"open", "none"} {
		r = w.sh([]string{"--network", mode, "--allow", "localhost:" + allowed.port}, `echo ran`)
		expectCode(t, r, 125)
		expectContains(t, "error", r.stderr, `agentbox: error: flag --allow: "localhost:`+allowed.port+`": allowing a host needs network mode allowlist, but --network sets the network to "`+mode+`"`)
		expectNotContains(t, "stdout", r.stdout, "ran")
	}
	p := w.run("plan", "--allow", "example.com", "--", "true")
	expectCode(t, p, 0)
	expectContains(t, "plan", p.stdout, "network:   allowlist")
	expectContains(t, "plan", p.stdout, "mode:    allowlist because flag --allow allows example.com")
}

// agentBin is a folder holding the agentbox under test as `agentbox`, for
// scripts that run it by name inside a box.
func agentBin(t *testing.T, w *world) string {
	t.Helper()
	dir := filepath.Join(w.base, "agentbin")
	mkdir(t, dir)
	if err := os.Symlink(bin, filepath.Join(dir, "agentbox")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Inside a box, agentbox confines further with whatever backend works there
// (Landlock inside bwrap), or runs the command in the outer box with one
// line; the outer box's variables are never read back as settings, and
// status says how deep the nesting is. Before, the inner agentbox read
// AGENTBOX_BACKEND=bwrap as a setting and failed with exit 125.
func TestNestedRun(t *testing.T) {
	w := newWorld(t)
	w.env = append(w.env, "PATH="+agentBin(t, w)+":"+os.Getenv("PATH"))
	outside := filepath.Join(w.base, "outside")
	mkdir(t, outside)
	// Inside bwrap, bwrap cannot make namespaces (the seccomp filter
	// refuses them) and Landlock adds the inner box. Inside Landlock a
	// second Landlock box cannot be built, so the command runs in the outer
	// box.
	for _, tc := range []struct{ outer, inner string }{{"bwrap", "inner=landlock depth=2"}, {"landlock", "inner=landlock depth=1"}} {
		t.Run(tc.outer, func(t *testing.T) {
			r := w.sh([]string{"--backend", tc.outer}, `
agentbox run -- sh -c 'echo inner=$AGENTBOX_BACKEND depth=$AGENTBOX_DEPTH; touch `+outside+`/x 2>/dev/null || echo refused'
echo status=$?
agentbox run -- agentbox status | grep nesting
agentbox plan -- true | grep -A1 '^  env'
`)
			expectCode(t, r, 0)
			expectContains(t, "inner run", r.stdout, tc.inner+"\nrefused\nstatus=0\n")
			expectContains(t, "plan", r.stdout, "inside a box: AGENTBOX_BACKEND, ")
			expectContains(t, "plan", r.stdout, "describe the outer box and are not read as settings")
			if tc.outer == "bwrap" {
				expectContains(t, "status", r.stdout, "nesting:  depth 2 (this box runs inside 1 other agentbox boxes)")
			} else {
				expectContains(t, "status", r.stdout, "nesting:  depth 1 (not nested")
				expectContains(t, "one line", r.stderr, "agentbox: running sh in the outer box (landlock) without a box of its own: ")
			}
			if exists(filepath.Join(outside, "x")) {
				t.Fatal("the inner box wrote outside its writable roots")
			}
		})
	}

	// Where no inner box can be made (Landlock cannot filter by host), the
	// command runs in the outer box, which still confines it, with one line.
	r := w.sh(nil, `agentbox run --network allowlist -- sh -c 'echo in=$AGENTBOX_BACKEND depth=$AGENTBOX_DEPTH; touch `+outside+`/y 2>/dev/null || echo refused; exit 3'; echo status=$?`)
	expectCode(t, r, 0)
	expectContains(t, "outer run", r.stdout, "in=bwrap depth=1\nrefused\nstatus=3\n")
	expectContains(t, "one line", r.stderr, "agentbox: running sh in the outer box (bwrap) without a box of its own: ")
	if n := strings.Count(r.stderr, "agentbox:"); n != 1 {
		t.Errorf("want one line from agentbox, got %d:\n%s", n, r.stderr)
	}
	// A backend the user names is not second-guessed.
	r = w.sh(nil, `agentbox run --backend bwrap -- true; echo status=$?`)
	expectContains(t, "forced backend", r.stdout, "status=125")
}

// The everyday case: an aliased agent CLI started from a shell that runs in
// a box (eval "$(agentbox shell-init bash)", then agentbox run -- bash).
func TestNestedAliasedClaude(t *testing.T) {
	_, err := exec.LookPath("claude")
	need(t, err == nil, "claude is not installed (npm install -g @anthropic-ai/claude-code)")
	w := newWorld(t)
	w.env = append(w.env, "PATH="+agentBin(t, w)+":"+os.Getenv("PATH"))
	r := w.run("run", "--", "bash", "-c", `shopt -s expand_aliases
eval "$(agentbox shell-init bash)"
alias claude
claude --version; echo status=$?`)
	expectCode(t, r, 0)
	expectContains(t, "alias", r.stdout, "run -- claude")
	expectContains(t, "claude", r.stdout, "(Claude Code)")
	expectContains(t, "status", r.stdout, "status=0")
	expectNotContains(t, "stderr", r.stderr, "error")
}
