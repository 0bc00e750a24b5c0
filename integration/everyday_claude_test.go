//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// claudeWarnings are what Claude Code prints when it starts without the
// configuration it expected.
var claudeWarnings = []string{"configuration file not found", "A backup file exists", "cp \""}

// Claude Code for a user who already used it: the confined CLI starts with
// the user's state (a user-scope MCP server, settings from
// ~/.claude/settings.json) and without warnings, under both backends; the
// host's ~/.claude.json is never written; what the box changes stays in
// its copy across runs, and what the user changes outside reaches the box
// at the next run. Before, the box pointed CLAUDE_CONFIG_DIR at ~/.claude,
// Claude Code warned three times that ~/.claude/.claude.json was missing
// and started without the user's state.
func TestClaudeStateInBox(t *testing.T) {
	needCLI(t, "claude")
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			api := fakeClaude(t)
			// A user who used Claude Code before agentbox: a turn, a
			// user-scope MCP server, a setting.
			runUnconfinedTurn(t, w, api, "echo unconfined-ran")
			c := exec.Command("claude", "mcp", "add", "--scope", "user", "docs", "--", "/bin/true")
			c.Dir, c.Env = w.cwd, w.env
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("claude mcp add: %v\n%s", err, out)
			}
			write(t, filepath.Join(w.home, ".claude", "settings.json"), `{"env":{"FROM_USER_SETTINGS":"yes"}}`+"\n")
			hostConfig := filepath.Join(w.home, ".claude.json")
			hostBefore, err := os.ReadFile(hostConfig)
			if err != nil {
				t.Fatal(err)
			}
			if m, _ := filepath.Glob(filepath.Join(w.home, ".claude", "backups", ".claude.json.backup.*")); len(m) == 0 {
				t.Fatal("the unconfined runs left no backup of ~/.claude.json; the warning this test is about needs one")
			}

			tr := runTurnResult(t, w, api, []string{"--backend", backend}, `echo "settings=$FROM_USER_SETTINGS"`)
			expectContains(t, "tool output", tr.toolOutput, "settings=yes")
			for _, bad := range claudeWarnings {
				expectNotContains(t, "stderr", tr.stderr, bad)
			}
			r := w.run("run", "--backend", backend, "--", "claude", "mcp", "get", "docs")
			expectContains(t, "the user's MCP server", r.stdout, "Scope: User config")
			for _, bad := range claudeWarnings {
				expectNotContains(t, "stderr", r.stderr, bad)
			}
			if after, _ := os.ReadFile(hostConfig); string(after) != string(hostBefore) {
				t.Fatalf("the box changed the host's ~/.claude.json:\nbefore %s\nafter %s", hostBefore, after)
			}

			// The box's own change (a user MCP server added inside) stays in
			// its copy, and a change outside reaches the box.
			r = w.run("run", "--backend", backend, "--", "claude", "mcp", "add", "--scope", "user", "boxed", "--", "/bin/true")
			expectCode(t, r, 0)
			c = exec.Command("claude", "mcp", "add", "--scope", "user", "later", "--", "/bin/true")
			c.Dir, c.Env = w.cwd, w.env
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("claude mcp add: %v\n%s", err, out)
			}
			r = w.run("run", "--backend", backend, "--", "claude", "mcp", "list")
			expectContains(t, "mcp list", r.stdout, "docs:")
			expectContains(t, "mcp list", r.stdout, "boxed:")
			expectContains(t, "mcp list", r.stdout, "later:")
			host, _ := os.ReadFile(hostConfig)
			if strings.Contains(string(host), "boxed") {
				t.Error("the server added in the box reached the host's ~/.claude.json")
			}
		})
	}
}

// A fresh home: no warnings either, and the state Claude Code makes in the
// box is there at the next run (no repeated onboarding).
func TestClaudeFreshHome(t *testing.T) {
	needCLI(t, "claude")
	w := newWorld(t)
	api := fakeClaude(t)
	var ids []string
	for i := 0; i < 2; i++ {
		tr := runTurnResult(t, w, api, nil, `echo turn`)
		for _, bad := range claudeWarnings {
			expectNotContains(t, "stderr", tr.stderr, bad)
		}
		var state struct {
			UserID string `json:"userID"`
		}
		data, err := os.ReadFile(filepath.Join(w.home, ".claude", ".claude.json"))
		if err != nil || json.Unmarshal(data, &state) != nil || state.UserID == "" {
			t.Fatalf("no state in the box's copy after run %d (%v):\n%s", i+1, err, data)
		}
		ids = append(ids, state.UserID)
	}
	if ids[0] != ids[1] {
		t.Errorf("the box's state was not kept across runs: user id %s, then %s", ids[0], ids[1])
	}
	if exists(filepath.Join(w.home, ".claude.json")) {
		t.Error("the box made a ~/.claude.json on the host")
	}
}

// As root (a CI container), Claude Code's skip-permissions mode needs to be
// told it runs in a sandbox: agentbox says so (IS_SANDBOX=1) when it
// confines it, under both backends, and never when it does not.
func TestClaudeSkipPermissionsAsRoot(t *testing.T) {
	needCLI(t, "claude")
	w := newWorld(t)
	api := fakeClaude(t)
	argv := []string{"claude", "-p", "do it", "--dangerously-skip-permissions", "--output-format", "json"}
	if isRoot() {
		// Unconfined, Claude Code refuses (the check this is about).
		api.newTurn("echo never")
		r := runCLI(t, w, api, argv)
		expectCode(t, r, 1)
		expectContains(t, "unconfined root", r.stderr, "cannot be used with root/sudo privileges")
	}
	for _, backend := range []string{"bwrap", "landlock"} {
		n := api.newTurn(`echo "sandbox=$IS_SANDBOX"; touch made-by-root-agent`)
		r := runCLI(t, w, api, append([]string{bin, "run", "--backend", backend, "--"}, argv...))
		expectCode(t, r, 0)
		expectContains(t, backend+" tool output", api.Results()[n], "sandbox=1")
		if !exists(filepath.Join(w.project, "made-by-root-agent")) {
			t.Fatalf("%s: the tool call did not run:\n%s", backend, r)
		}
		os.Remove(filepath.Join(w.project, "made-by-root-agent"))
	}
	// Unconfined (best-effort, no backend): nothing claims a sandbox.
	p := w.run("plan", "--json", "--backend", "windows", "--best-effort", "--", "claude")
	expectCode(t, p, 0)
	expectNotContains(t, "unconfined plan", p.stdout, "IS_SANDBOX")
	expectNotContains(t, "unconfined plan", p.stdout, `"confined_env"`)
}

// podArgs is bwrap's command line for a stand-in of the example's
// Kubernetes pod: a root file system of its own (the image: the host's
// /usr, /etc and the agentbox binary in /opt/agentbox/bin), the pod's uid
// 1000 in a user namespace, every capability dropped, and its own PID
// namespace with a /proc masked the way container runtimes mask it
// (read-only /proc/sys, /proc/bus, /proc/irq, /proc/sysrq-trigger, a tmpfs
// over /proc/acpi, /dev/null over /proc/timer_list), so a fresh /proc
// cannot be mounted inside. The example's volumes are bound where it
// mounts them: the policy ConfigMap at /etc/agentbox, emptyDirs at /work,
// /home/agent and /tmp. The command runs with no_new_privs
// (allowPrivilegeEscalation: false). The runtime's seccomp profile is not
// reproduced: it would refuse user namespaces, and bwrap fails on the
// masked /proc before that matters.
func podArgs(t *testing.T, w *world, policy, work, home string, env []string, argv ...string) []string {
	t.Helper()
	args := []string{"--unshare-user", "--uid", "1000", "--gid", "1000", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr", "--dev", "/dev", "--ro-bind", "/sys", "/sys",
		"--proc", "/proc"}
	for _, m := range []string{"/proc/sys", "/proc/bus", "/proc/irq", "/proc/sysrq-trigger"} {
		args = append(args, "--ro-bind-try", m, m)
	}
	args = append(args, "--tmpfs", "/proc/acpi", "--ro-bind", "/dev/null", "/proc/timer_list")
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if target, err := os.Readlink("/" + l); err == nil {
			args = append(args, "--symlink", target, "/"+l)
		} else if exists("/" + l) {
			args = append(args, "--ro-bind", "/"+l, "/"+l)
		}
	}
	entries, err := os.ReadDir("/etc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.Join("/etc", e.Name())
		if target, err := os.Readlink(p); err == nil {
			args = append(args, "--symlink", target, p)
			continue
		}
		args = append(args, "--ro-bind-try", p, p)
	}
	args = append(args, "--ro-bind", policy, "/etc/agentbox/ci.toml",
		"--ro-bind", bin, "/opt/agentbox/bin/agentbox",
		"--bind", work, "/work", "--bind", home, "/home/agent", "--tmpfs", "/tmp", "--chdir", "/work",
		"--clearenv")
	for _, kv := range append([]string{"PATH=/opt/agentbox/bin:/usr/local/bin:/usr/bin:/bin", "HOME=/home/agent", "LANG=C", "COLUMNS=100000"}, env...) {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(args, "--", "setpriv", "--no-new-privs")
	return append(args, argv...)
}

// The example's Kubernetes Job, as written: in a stand-in of its pod
// (podArgs), doctor recognises the masked /proc and names the real fix,
// and the example's exact command line runs Claude Code through a whole
// turn under Landlock, reaching the provider (a stand-in on 127.0.0.1)
// through the allowlist with the key from the secret. Before, bwrap could
// not start there, doctor advised what the pod already had, and the
// example's policy removed the key and cut the network.
func TestKubernetesPodExample(t *testing.T) {
	needCLI(t, "claude")
	_, err := exec.LookPath("bwrap")
	need(t, err == nil, "bwrap is not installed")
	w := newWorld(t)
	api := fakeClaude(t)
	work, home := filepath.Join(w.base, "work"), filepath.Join(w.base, "agent-home")
	mkdir(t, work)
	mkdir(t, home)
	os.Chmod(work, 0o777)
	os.Chmod(home, 0o777)
	write(t, filepath.Join(work, "test.sh"), "#!/bin/sh\nexit 1\n")
	policy, err := filepath.Abs("../examples/ci.toml")
	if err != nil {
		t.Fatal(err)
	}
	// The test's own additions, in the environment rather than on the
	// command line: reach the stand-in instead of api.anthropic.com.
	extra := filepath.Join(work, ".test-policy.toml")
	write(t, extra, "version = 1\n[network]\nallow = [\"localhost:"+api.Port()+"\"]\n[env]\npass = [\"ANTHROPIC_BASE_URL\", \"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\"]\n")
	env := append(api.Env(), "AGENTBOX_POLICY=/work/.test-policy.toml")

	doctor := exec.Command("bwrap", podArgs(t, w, policy, work, home, env, "agentbox", "doctor")...)
	out, _ := doctor.CombinedOutput()
	for _, want := range []string{"auto         landlock", "proc         masked:", "/proc is masked", "procMount: Unmasked", "hostUsers: false"} {
		expectContains(t, "doctor in the pod", string(out), want)
	}
	expectNotContains(t, "doctor in the pod", string(out), "which forbids namespaces")

	n := api.newTurn(`echo "box=$AGENTBOX_BACKEND net=$AGENTBOX_NETWORK key=${ANTHROPIC_API_KEY:+set}"; echo fixed > test.sh; touch /etc/agentbox/x 2>&1; echo uid=$(id -u)`)
	argv := []string{"bwrap"}
	argv = append(argv, podArgs(t, w, policy, work, home, env,
		"agentbox", "run", "--policy", "/etc/agentbox/ci.toml", "--", "claude", "-p", "fix the failing test", "--allowedTools", "Bash", "--output-format", "json")...)
	r := runCLI(t, w, api, argv)
	expectCode(t, r, 0)
	if turnAnswer(api, r.stdout) != "done" {
		t.Fatalf("the turn did not complete:\n%s\nrequests: %v", r, api.Requests())
	}
	got := api.Results()[n]
	expectContains(t, "tool output", got, "box=landlock net=allowlist key=set")
	expectContains(t, "tool output", got, "uid=1000")
	expectContains(t, "tool output", got, "/etc/agentbox/x")
	if data, _ := os.ReadFile(filepath.Join(work, "test.sh")); string(data) != "fixed\n" {
		t.Errorf("the agent's fix is not in the checkout: %q", data)
	}
	expectContains(t, "stderr", r.stderr, "agentbox: notice: using Landlock: /proc is masked")
}

// examplePolicy is the absolute path of an example policy.
func examplePolicy(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "examples", name))
	if err != nil || !exists(p) {
		t.Fatalf("examples/%s: %v", name, err)
	}
	return p
}

// Every example policy runs as its comment says, with the real agent CLI
// through a whole turn: claude.toml and codex.toml with their CLI,
// workspace.toml in its workspace and task folder, ci.toml under both
// backends (its allowlist through the proxy, the key kept in its clean
// environment). The stand-in's address reaches the box through an extra
// policy in AGENTBOX_POLICY, so the command lines are the examples' own.
func TestExamplePoliciesRun(t *testing.T) {
	for _, cli := range []string{"claude", "codex"} {
		needCLI(t, cli)
	}
	t.Run("claude.toml", func(t *testing.T) {
		w := newWorld(t)
		api := fakeClaude(t)
		_, out := runClaudeTurn(t, w, api, []string{"--policy", examplePolicy(t, "claude.toml")}, `echo made > made.txt; echo "box=$AGENTBOX_BACKEND"`)
		expectContains(t, "tool output", out, "box=bwrap")
		if !exists(filepath.Join(w.project, "made.txt")) {
			t.Fatal("the project write is not on the host")
		}
	})
	t.Run("codex.toml", func(t *testing.T) {
		w := newWorld(t)
		api := fakeCodex(t)
		_, out := runCodexTurn(t, w, api, []string{"--policy", examplePolicy(t, "codex.toml")}, `echo made > made.txt; echo "box=$AGENTBOX_BACKEND"`)
		expectContains(t, "tool output", out, "box=bwrap")
	})
	t.Run("workspace.toml", func(t *testing.T) {
		w := newWorld(t)
		api := fakeClaude(t)
		_, out := runClaudeTurn(t, w, api, []string{"--policy", examplePolicy(t, "workspace.toml"), "--workspace", "finance", "--task", "q3"}, `pwd; echo q3 > notes.txt`)
		task := filepath.Join(w.home, "agent-work", "finance", "q3")
		expectContains(t, "tool output", out, task)
		if !exists(filepath.Join(task, "notes.txt")) {
			t.Fatal("the task folder's write is not on the host")
		}
	})
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run("ci.toml/"+backend, func(t *testing.T) {
			w := newWorld(t)
			api := fakeClaude(t)
			extra := filepath.Join(w.base, "reach-the-stand-in.toml")
			write(t, extra, "version = 1\n[network]\nallow = [\"localhost:"+api.Port()+"\"]\n[env]\npass = [\"ANTHROPIC_BASE_URL\", \"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\"]\n")
			w.env = append(w.env, "AGENTBOX_POLICY="+extra, "SECRET_TOKEN=do-not-pass", "CI=true")
			tr := runTurnResult(t, w, api, []string{"--backend", backend, "--policy", examplePolicy(t, "ci.toml")},
				`echo "net=$AGENTBOX_NETWORK ci=$CI secret=$SECRET_TOKEN tmp=$TMPDIR"; echo made > made.txt`)
			expectContains(t, "tool output", tr.toolOutput, "net=allowlist ci=true secret= tmp=")
			if !exists(filepath.Join(w.project, "made.txt")) {
				t.Fatal("the project write is not on the host")
			}
		})
	}
}

// The README's "Using it" lines run as written (the agent CLIs through a
// whole turn, make in a project): what each promises is what happens.
func TestReadmeUsingIt(t *testing.T) {
	for _, cli := range []string{"claude", "codex"} {
		needCLI(t, cli)
	}
	_, err := exec.LookPath("make")
	need(t, err == nil, "make is not installed")
	w := newWorld(t)
	claude, codex := fakeClaude(t), fakeCodex(t)

	// agentbox run -- claude
	_, out := runClaudeTurn(t, w, claude, nil, `echo "box=$AGENTBOX_BACKEND"; pwd`)
	expectContains(t, "run -- claude", out, "box=bwrap")
	expectContains(t, "run -- claude", out, w.project)

	// agentbox run --network none -- make test
	write(t, filepath.Join(w.project, "Makefile"), "test:\n\t@echo tests-ran net=$$AGENTBOX_NETWORK\n")
	r := w.run("run", "--network", "none", "--", "make", "test")
	expectCode(t, r, 0)
	expectContains(t, "make test", r.stdout, "tests-ran net=none")

	// agentbox run --deny ~/.ssh -- codex
	write(t, filepath.Join(w.home, ".ssh", "id_ed25519"), "PRIVATE KEY\n")
	_, out = runCodexTurn(t, w, codex, []string{"--deny", filepath.Join(w.home, ".ssh")}, `cat ~/.ssh/id_ed25519; echo "cat=$?"`)
	expectNotContains(t, "deny", out, "PRIVATE KEY")

	// agentbox run --workspace web --task fix-42 -- claude: the agent
	// starts in ~/agent-work/web/fix-42 (the default workspace root).
	_, out = runClaudeTurn(t, w, claude, []string{"--workspace", "web", "--task", "fix-42"}, `pwd`)
	expectContains(t, "workspace task", out, filepath.Join(w.home, "agent-work", "web", "fix-42"))

	// agentbox plan -- claude; agentbox plan --argv -- claude
	p := w.run("plan", "--", "claude")
	expectCode(t, p, 0)
	expectContains(t, "plan", p.stdout, "provider:  claude")
	expectContains(t, "plan", p.stdout, "caches:")
	a := w.run("plan", "--argv", "--wide", "--", "claude")
	expectCode(t, a, 0)
	expectContains(t, "plan --argv", a.stdout, "--ro-bind / /")

	// agentbox status, inside a box.
	s := w.run("run", "--", bin, "status")
	expectCode(t, s, 0)
	expectContains(t, "status", s.stdout, "sandbox:  active (bwrap")
	expectContains(t, "status", s.stdout, "nesting:  depth 1")
}

// The GitHub Actions job's command line, as the job runs it in a checkout
// holding examples/ci.toml as .github/agentbox.toml: a whole Claude Code
// turn confined.
func TestGitHubActionsCommandLine(t *testing.T) {
	needCLI(t, "claude")
	w := newWorld(t)
	api := fakeClaude(t)
	data, err := os.ReadFile(examplePolicy(t, "ci.toml"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.project, ".github", "agentbox.toml"), string(data))
	extra := filepath.Join(w.base, "reach-the-stand-in.toml")
	write(t, extra, "version = 1\n[network]\nallow = [\"localhost:"+api.Port()+"\"]\n[env]\npass = [\"ANTHROPIC_BASE_URL\", \"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\"]\n")
	w.env = append(w.env, "AGENTBOX_POLICY="+extra, "CI=true", "GITHUB_ACTIONS=true")
	api.newTurn("echo never")
	r := runCLI(t, w, api, []string{bin, "run", "--policy", ".github/agentbox.toml", "--", "claude", "-p", "run the tests and fix what fails"})
	expectCode(t, r, 0)
	expectContains(t, "the turn's answer", r.stdout, "done")
	if n := len(api.Requests()); n == 0 {
		t.Fatal("Claude Code never reached the provider")
	}
}
