//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/refusal"
)

// agentbox learn runs a command confined, and proposes a policy that
// allows what it was refused: only safe changes to the project's policy
// file, kept aside (runs go on with the trusted policy) until the user
// applies it with agentbox trust --proposal.

func needNpm(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("npm")
	need(t, err == nil, "npm is not installed")
}

// The proposal's values for a key, from what learn keeps for the
// project's policy file in the world's state folder.
func proposed(t *testing.T, w *world, file, key string) []string {
	t.Helper()
	prop, ok, err := policy.Proposals{Dir: filepath.Join(w.home, ".local", "state", "agentbox", "proposals")}.Get(file)
	if err != nil || !ok {
		t.Fatalf("no proposal for %s: %v", file, err)
	}
	data := prop.Data
	l, err := policy.Parse("project", file, data)
	if err != nil {
		t.Fatalf("the proposal does not parse: %v\n%s", err, data)
	}
	var out []string
	for _, e := range l.Lists[key] {
		out = append(out, e.Value)
	}
	return out
}

// learn -- npm install PKG on a project whose network is an allowlist:
// the proposal lets the same command succeed confined once applied; until
// then runs go on with the trusted policy (before, learn wrote its
// proposal into the policy file and every run was refused until trust).
func TestLearnNpmInstall(t *testing.T) {
	needNpm(t)
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			write(t, filepath.Join(w.project, "package.json"), `{"name":"p","version":"1.0.0","private":true}`+"\n")
			// The policy of the folder above the project: under Landlock a
			// read-only file at the project's top would keep npm from
			// making node_modules there (plan says so).
			file := filepath.Join(w.base, policy.ProjectFile)
			// The network is an allowlist under both backends (Landlock's
			// through the proxy's port).
			network := "allowlist"
			// The backend is the user's choice (a project policy may only
			// tighten it), the network the project's.
			write(t, filepath.Join(w.home, ".config", "agentbox", "config.toml"), "version = 1\n\n[sandbox]\nbackend = \""+backend+"\"\n")
			write(t, file, "version = 1\n\n[network]\nmode = \""+network+"\"\n")
			expectCode(t, w.run("trust", file), 0)
			install := []string{"npm", "install", "is-number", "--no-audit", "--no-fund"}
			r := w.run(append([]string{"learn", "--"}, install...)...)
			expectCode(t, r, 0)
			expectContains(t, "learn's diff", r.stdout, "+++ b/.agentbox.toml")
			expectContains(t, "learn's diff", r.stdout, "to review and apply it: agentbox trust --proposal")
			if got := proposed(t, w, file, "network.allow"); network == "allowlist" && !contains(got, "registry.npmjs.org") {
				t.Errorf("network.allow %v, want registry.npmjs.org:\n%s", got, r)
			}
			// npm's cache: proposed, unless the policy lets npm write one
			// already.
			if got := proposed(t, w, file, "filesystem.writable"); !contains(got, "~/.npm") && strings.Contains(r.stderr, "~/.npm") {
				t.Errorf("filesystem.writable %v, want ~/.npm:\n%s", got, r)
			}
			// Not in force until applied, and the trusted policy still runs.
			r = w.run(append([]string{"run", "--"}, install...)...)
			if r.code == 125 || strings.Contains(r.stderr, "project policy") {
				t.Fatalf("the run after learn was refused:\n%s", r)
			}
			p := w.run("plan", "--", "true")
			expectContains(t, "plan", p.stdout, "agentbox trust --proposal")
			expectCode(t, w.run("trust", "--proposal"), 0)
			r = w.run(append([]string{"run", "--"}, install...)...)
			expectCode(t, r, 0)
			if !exists(filepath.Join(w.project, "node_modules", "is-number", "package.json")) {
				t.Fatalf("npm install did not install is-number:\n%s", r)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Whatever the command is refused, the proposal holds nothing that is
// always protected or that a host program runs: git hooks and config,
// shell startup files, programs on PATH, agent CLI settings; it says what
// it left out. Without a project policy it makes a new one.
func TestLearnNeverProtected(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			gitInit(t, w, w.project)
			write(t, filepath.Join(w.home, ".bashrc"), "# host\n")
			mkdir(t, filepath.Join(w.home, ".local", "bin"))
			mkdir(t, filepath.Join(w.home, ".claude"))
			mkdir(t, filepath.Join(w.home, ".config", "tool"))
			mkdir(t, filepath.Join(w.project, "src"))
			r := w.run("learn", "--backend", backend, "--", "sh", "-c", `cd src
echo evil > ../.git/hooks/pre-commit
echo evil >> ../.git/config
echo evil >> ~/.bashrc
echo evil > ~/.local/bin/git
echo evil > ~/.claude/settings.json
echo ok > ~/.config/tool/state
exit 0`)
			expectCode(t, r, 0)
			file := filepath.Join(w.project, policy.ProjectFile)
			if exists(file) {
				t.Fatalf("learn wrote %s", file)
			}
			writable := proposed(t, w, file, "filesystem.writable")
			if !contains(writable, "~/.config/tool") {
				t.Errorf("the safe folder was not proposed: %v\n%s", writable, r)
			}
			// Checked against the plan of the proposed policy.
			expectCode(t, w.run("trust", "--proposal"), 0)
			pr := w.run("plan", "--json", "--backend", backend, "--", "true")
			expectCode(t, pr, 0)
			var p plan.Plan
			if err := json.Unmarshal([]byte(pr.stdout), &p); err != nil {
				t.Fatal(err)
			}
			for _, v := range writable {
				path := filepath.Join(w.home, strings.TrimPrefix(v, "~/"))
				if risky, why := refusal.HostExecuted(&p, path); risky {
					t.Errorf("proposed %s, which a host program runs or obeys: %s", v, why)
				}
				for _, m := range p.Mounts {
					if strings.HasPrefix(m.Origin.Key, "always: ") && (plan.Within(m.Path, path) || plan.Within(path, m.Path)) {
						t.Errorf("proposed %s, which holds the always protected %s", v, m.Path)
					}
				}
			}
			for _, left := range []string{".git/hooks/pre-commit", "~/.bashrc", "~/.local/bin", "~/.claude/settings.json"} {
				expectContains(t, "what learn left out", r.stdout, left)
			}
			expectContains(t, "learn's output", r.stdout, "not proposed")
		})
	}
}

// learn --output FILE writes the proposal there and leaves the project
// alone: for a pull request comment.
func TestLearnOutput(t *testing.T) {
	w := newWorld(t)
	mkdir(t, filepath.Join(w.home, ".config", "tool"))
	out := filepath.Join(w.base, "proposal.diff")
	r := w.run("learn", "--output", out, "--", "sh", "-c", "echo x > ~/.config/tool/state; exit 0")
	expectCode(t, r, 0)
	if exists(filepath.Join(w.project, policy.ProjectFile)) {
		t.Fatal("learn --output wrote the project's policy")
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	expectContains(t, "the proposal", string(data), "+++ b/.agentbox.toml")
	expectContains(t, "the proposal", string(data), `+    "~/.config/tool",`)
	if exists(filepath.Join(w.home, ".local", "state", "agentbox", "proposals")) {
		t.Error("learn --output kept a proposal")
	}
}

// A project policy the box wrote during the run is never where learn
// writes its proposal.
func TestLearnRefusesABoxWrittenPolicy(t *testing.T) {
	w := newWorld(t)
	mkdir(t, filepath.Join(w.home, ".config", "tool"))
	r := w.run("learn", "--", "sh", "-c", `printf '[filesystem]\nwritable = ["~"]\n' > .agentbox.toml; echo x > ~/.config/tool/state; exit 0`)
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "changed while the command ran; nothing was proposed")
	data, _ := os.ReadFile(filepath.Join(w.project, policy.ProjectFile))
	expectNotContains(t, "the box's file", string(data), "agentbox learn")
}
