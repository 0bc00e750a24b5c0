//go:build darwin

package macos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// model is a stand-in of the Anthropic Messages API on 127.0.0.1: its first
// answer calls the Bash tool with cmd, its second says "done"; it keeps
// what the tool printed as Claude Code sent it back.
type model struct {
	cmd    string
	mu     sync.Mutex
	result string
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusOK) // the connectivity probe, anything else
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct{ Name string } `json:"tools"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	answered := false
	for _, msg := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				answered = true
				m.mu.Lock()
				m.result = string(b.Content)
				m.mu.Unlock()
			}
		}
	}
	call := !answered && len(req.Tools) > 0
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		w.(http.Flusher).Flush()
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message",
		"role": "assistant", "model": req.Model, "content": []any{}, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}})
	stop := "end_turn"
	if call {
		stop = "tool_use"
		input, _ := json.Marshal(map[string]string{"command": m.cmd, "description": "scripted"})
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": "done"}})
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 1}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// TestClaudeTurn: a real `claude -p` turn in the box against the stand-in;
// its Bash tool writes in the project and is refused outside it.
func TestClaudeTurn(t *testing.T) {
	if os.Getenv("AGENTBOX_MACOS_CLAUDE") == "" {
		t.Skip("AGENTBOX_MACOS_CLAUDE=1 runs it (the workflow installs claude first)")
	}
	w := newWorld(t)
	m := &model{cmd: `echo made > turn.txt && (echo x > "$HOME/escaped.txt" || echo refused)`}
	srv := httptest.NewServer(m)
	defer srv.Close()
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-agentbox-fake-key")
	t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
	out, code := w.run(t, "--", "claude", "-p", "--allowedTools", "Bash", "do it")
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("claude -p exited %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(w.proj, "turn.txt")); err != nil {
		t.Errorf("the tool call did not write the project: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.home, "escaped.txt")); err == nil {
		t.Error("the tool call wrote the home folder")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !strings.Contains(m.result, "refused") {
		t.Errorf("the tool's output was %q, want the write outside refused", m.result)
	}
}
