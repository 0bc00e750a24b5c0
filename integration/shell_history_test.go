//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An interactive shell in the box keeps its history in the workspace's
// private cache folder, so the session does not end with a refusal for
// ~/.bash_history, and Debian's prompt shows "(agentbox)" unless
// AGENTBOX_DISABLE_PROMPT is set. Before, every session ended with a
// refusal and the prompt looked like the host's.
func TestShellHistoryAndPrompt(t *testing.T) {
	skel, err := os.ReadFile("/etc/skel/.bashrc")
	need(t, err == nil, "no /etc/skel/.bashrc (Debian's) to give the shell its prompt")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.home, ".bashrc"), string(skel))
		write(t, filepath.Join(w.home, ".bash_history"), "")
		r := w.runIn("echo typed-in-the-box\nexit\n", "run", "--backend", be, "--", "bash", "-i")
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "typed-in-the-box")
		expectContains(t, "prompt", r.stderr, "(agentbox)")
		expectNotContains(t, "stderr", r.stderr, ".bash_history")
		expectNotContains(t, "stderr", r.stderr, "the box was refused")
		if b, _ := os.ReadFile(filepath.Join(w.home, ".bash_history")); len(b) != 0 {
			t.Errorf("the host's history changed: %q", b)
		}
		var hist string
		filepath.Walk(filepath.Join(w.home, ".local", "state", "agentbox", "caches"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Name() == ".bash_history" {
				b, _ := os.ReadFile(p)
				hist = string(b)
			}
			return nil
		})
		if !strings.Contains(hist, "echo typed-in-the-box") {
			t.Errorf("the box's history: %q", hist)
		}
		w.env = append(w.env, "AGENTBOX_DISABLE_PROMPT=1")
		r = w.runIn("exit\n", "run", "--backend", be, "--", "bash", "-i")
		expectCode(t, r, 0)
		expectNotContains(t, "prompt", r.stderr, "(agentbox)")
	})
}
