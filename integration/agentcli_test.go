//go:build linux

package integration

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentCLIs are the agent CLIs the tests drive through whole turns.
var agentCLIs = []struct {
	name string
	api  func(*testing.T) *fakeAPI
}{
	{"claude", fakeClaude},
	{"codex", fakeCodex},
}

// homeStates are the two homes a user brings: a new one, and one where the
// CLI already ran unconfined and left its state.
var homeStates = []string{"fresh home", "used home"}

// The real CLI's shell tool runs inside the box, as a prompt-injected agent
// would use it: the write in the project reaches the host; writes to /etc
// and to a folder outside the writable roots fail and leave nothing behind;
// a denied file does not give up its content; the command sees AGENTBOX=1.
// For each CLI, under bwrap and Landlock, with a new home and with a home
// the CLI used unconfined first.
func TestAgentCLIToolCallConfined(t *testing.T) {
	for _, cli := range agentCLIs {
		t.Run(cli.name, func(t *testing.T) {
			needCLI(t, cli.name)
			for _, backend := range []string{"bwrap", "landlock"} {
				for _, home := range homeStates {
					t.Run(backend+"/"+home, func(t *testing.T) {
						toolCallConfined(t, cli.api(t), backend, home == "used home")
					})
				}
			}
		})
	}
}

func toolCallConfined(t *testing.T, api *fakeAPI, backend string, usedHome bool) {
	w := newWorld(t)
	if usedHome {
		_, out := runUnconfinedTurn(t, w, api, "echo unconfined-ran")
		expectContains(t, "unconfined tool output", out, "unconfined-ran")
		if !exists(filepath.Join(w.home, "."+api.kind)) {
			t.Fatalf("the unconfined turn left no ~/.%s to start from", api.kind)
		}
	}
	tag := randomTag(t)
	secretText := "SECRET-" + tag
	secret := filepath.Join(w.base, "secret", "key")
	write(t, secret, secretText+"\n")
	outside := filepath.Join(w.base, "outside")
	mkdir(t, outside)
	etcProbe := "/etc/agentbox-agentcli-" + tag

	// One check a line, each error before its NAME=status line (stderr is
	// stdout, so the CLI reports them in order). The errors come from
	// touch and cat, not the shell: Claude Code picks zsh or bash by what
	// is installed and SHELL, and their messages differ.
	script := strings.Join([]string{
		`exec 2>&1`,
		`echo "env AGENTBOX=$AGENTBOX"`,
		`echo made-by-agent > made.txt && echo "project=ok"`,
		`touch ` + etcProbe + `; echo "etc=$?"`,
		`touch ` + outside + `/f; echo "outside=$?"`,
		`cat ` + secret + `; echo "deny=$?"`,
	}, "\n")
	_, out := runTurn(t, w, api, []string{"--backend", backend, "--deny", secret}, script)

	expectContains(t, "tool output", out, "env AGENTBOX=1")
	expectContains(t, "tool output", out, "project=ok")
	got, err := os.ReadFile(filepath.Join(w.project, "made.txt"))
	if err != nil || string(got) != "made-by-agent\n" {
		t.Fatalf("the project write is not on the host (%v, %q); tool output:\n%s", err, got, out)
	}

	// The writes outside the writable roots failed, saying why, and
	// nothing appeared on the host.
	refused := "Read-only file system"
	if backend == "landlock" {
		refused = "Permission denied"
	}
	for _, name := range []string{"etc", "outside"} {
		expectContains(t, "tool output", out, name+"=1")
	}
	expectContains(t, "tool output", out, "cannot touch '"+etcProbe+"': "+refused)
	expectContains(t, "tool output", out, "cannot touch '"+outside+"/f': "+refused)
	if exists(etcProbe) || exists(filepath.Join(outside, "f")) {
		os.Remove(etcProbe)
		t.Fatalf("a write outside the writable roots reached the host; tool output:\n%s", out)
	}

	// The denied file gave nothing away: Landlock refuses it; bwrap hides
	// it behind an empty file, so cat prints nothing.
	expectNotContains(t, "tool output", out, secretText)
	if backend == "landlock" {
		expectContains(t, "tool output", out, secret+": Permission denied\ndeny=1")
	} else {
		expectContains(t, "tool output", out, "outside=1\ndeny=0")
	}
}

// In allowlist mode the box has its own network namespace; --allow
// localhost:PORT forwards the stand-in's port into it, the turn completes,
// and the proxy saw no other connection (the CLIs' telemetry, update and
// plugin traffic is off). Landlock cannot confine by host and refuses
// allowlist before the CLI starts.
func TestAgentCLIAllowlistReachesOnlyTheAPI(t *testing.T) {
	for _, cli := range agentCLIs {
		t.Run(cli.name, func(t *testing.T) {
			needCLI(t, cli.name)
			w := newWorld(t)
			api := cli.api(t)
			tr := runTurnResult(t, w, api, []string{"--network", "allowlist", "--allow", "localhost:" + api.Port()},
				`echo "env AGENTBOX=$AGENTBOX"; echo made > made.txt`)
			expectContains(t, "tool output", tr.toolOutput, "env AGENTBOX=1")
			if !exists(filepath.Join(w.project, "made.txt")) {
				t.Fatalf("the project write is not on the host; tool output:\n%s", tr.toolOutput)
			}
			expectNotContains(t, "agentbox stderr", tr.stderr, "denied")

			r := runCLI(t, w, api, append([]string{bin, "run", "--backend", "landlock", "--network", "allowlist",
				"--allow", "localhost:" + api.Port(), "--"}, cliArgv(api, "do it")...))
			expectCode(t, r, 125)
			expectContains(t, "stderr", r.stderr, "landlock cannot enforce: network: allowlist")
		})
	}
}

// randomTag makes names no other run shares (the tests may run as root and
// as a user at the same time, both writing under /etc if the box failed).
func randomTag(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
