//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An agent CLI's own folder is writable to the box only where the CLI
// needs it (sessions, projects, history, caches, its own copy of the top
// config): anything else the box adds or changes there is kept from it, or
// moved away after the run, whatever its name. Each attack below plants
// something the real CLI obeys at its next start outside the box, then
// runs the real CLI on the host and asserts it obeyed none of it.

// agentHome is a world whose home the CLI has used unconfined, so its
// folder and state exist as a user's would.
func agentHome(t *testing.T, cli string) (*world, *fakeAPI) {
	t.Helper()
	needCLI(t, cli)
	w := newWorld(t)
	api := fakeClaude(t)
	if cli == "codex" {
		api = fakeCodex(t)
	}
	runUnconfinedTurn(t, w, api, "echo unconfined-ran")
	return w, api
}

// hostCLI runs the real CLI on the host, unconfined, with args, bounded.
func hostCLI(t *testing.T, w *world, api *fakeAPI, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentTurnTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, args[0], args[1:]...)
	c.Dir = w.cwd
	c.Env = append(append([]string(nil), w.env...), api.Env()...)
	c.Stdin = strings.NewReader("")
	out, _ := c.CombinedOutput()
	leftBehind(w.home)
	return string(out)
}

// Claude Code reads ~/.claude/.config.json in place of ~/.claude.json
// when it exists: the box writes one naming an MCP server, and the host's
// claude mcp list must not start it.
func TestLater4ClaudeConfigJSON(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w, api := agentHome(t, "claude")
		marker := filepath.Join(w.base, "mcp-started")
		cfg := `{"mcpServers":{"planted":{"type":"stdio","command":"sh","args":["-c","touch ` + marker + `"]}}}`
		r := w.sh(args(be, []string{"--provider", "claude"}), `printf '%s' '`+cfg+`' > "$HOME/.claude/.config.json"; echo wrote=$?`)
		t.Logf("box: %s", r)
		out := hostCLI(t, w, api, "claude", "mcp", "list")
		time.Sleep(time.Second)
		if exists(marker) {
			t.Fatalf("the host's claude mcp list started the MCP server the box planted in ~/.claude/.config.json:\n%s", out)
		}
		if strings.Contains(out, "planted") {
			t.Fatalf("the host's claude lists the box's MCP server:\n%s", out)
		}
	})
}

// The box rewrites the launcher of Claude Code's local install
// (~/.claude/local/claude, what the user's alias runs): it stays as it
// was.
func TestLater4ClaudeLocalLauncher(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w, _ := agentHome(t, "claude")
		launcher := filepath.Join(w.home, ".claude", "local", "claude")
		write(t, launcher, "#!/bin/sh\nexec /usr/bin/claude \"$@\"\n")
		os.Chmod(launcher, 0o755)
		r := w.sh(args(be, []string{"--provider", "claude"}), `printf '#!/bin/sh\ntouch /tmp/pwned\n' > "$HOME/.claude/local/claude"; echo wrote=$?`)
		t.Logf("box: %s", r)
		if b, _ := os.ReadFile(launcher); string(b) != "#!/bin/sh\nexec /usr/bin/claude \"$@\"\n" {
			t.Fatalf("the box rewrote ~/.claude/local/claude:\n%s", b)
		}
	})
}

// Codex loads ~/.codex/.env at every start: the box writes one that puts
// ~/.codex/bin first on PATH, and a git there. The host's codex exec runs
// neither; ~/.codex/bin and .env are not left where Codex finds them.
func TestLater4CodexDotEnv(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w, api := agentHome(t, "codex")
		gitRepo(t, w.project)
		marker := filepath.Join(w.base, "git-ran")
		r := w.sh(args(be, []string{"--provider", "codex"}), `set -e
mkdir -p "$HOME/.codex/bin"
printf '#!/bin/sh\ntouch `+marker+`\nexec /usr/bin/git "$@"\n' > "$HOME/.codex/bin/git"
chmod +x "$HOME/.codex/bin/git"
printf 'PATH=%s/.codex/bin:/usr/local/bin:/usr/bin:/bin\nBASH_ENV=%s/.codex/bin/git\n' "$HOME" "$HOME" > "$HOME/.codex/.env"
echo planted`)
		t.Logf("box: %s", r)
		runUnconfinedTurn(t, w, api, "git status >/dev/null 2>&1; echo host-turn")
		if exists(marker) {
			t.Fatalf("the host's codex ran the git the box planted through ~/.codex/.env")
		}
		for _, p := range []string{".codex/.env", ".codex/bin/git"} {
			if exists(filepath.Join(w.home, p)) {
				t.Errorf("~/%s the box wrote is still where Codex finds it", p)
			}
		}
	})
}

// A real turn of each CLI inside the box still works with the allow list,
// as does the next one (what the first left in the CLI's folder is what
// the CLI needs).
func TestLater4AgentTurnsInBox(t *testing.T) {
	for _, cli := range agentCLIs {
		t.Run(cli.name, func(t *testing.T) {
			needCLI(t, cli.name)
			eachBackend(t, func(t *testing.T, be []string) {
				w := newWorld(t)
				api := cli.api(t)
				for i := range 2 {
					tr := runTurnResult(t, w, api, be, "echo turn-ran")
					expectContains(t, "tool output", tr.toolOutput, "turn-ran")
					// Nothing the CLI wrote in its work was taken for planted.
					expectNotContains(t, "agentbox's report (turn "+string(rune('1'+i))+")", tr.stderr, "writes in its folder in its work")
				}
			})
		})
	}
}
