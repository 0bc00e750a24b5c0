//go:build linux

// The real agent CLIs, driven offline through whole turns by a stand-in of
// their model API on 127.0.0.1 (fakeAPI). What the experiments showed, with
// Claude Code 2.1.197 and Codex 0.171.0:
//
// Claude Code follows ANTHROPIC_BASE_URL with any ANTHROPIC_API_KEY. A
// `claude -p` turn sends HEAD / (a connectivity probe; not sent when an
// HTTP proxy is set, as in allowlist mode), then POST /v1/messages?beta=true
// with stream true once per model answer: one for the tool_use, one after
// the tool_result. After a failed streaming request it retries the same
// request with stream false. It calls no count_tokens or model listing in
// this mode. Its telemetry still goes to api.anthropic.com whatever the base
// URL (ten lookups of that name in one turn); DISABLE_TELEMETRY=1 leaves
// two, DISABLE_AUTOUPDATER=1 and DISABLE_ERROR_REPORTING=1 change nothing in
// a -p turn, and CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 alone leaves
// none: only 127.0.0.1 is reached (strace of connect and DNS sends).
// `--allowedTools Bash` lets the Bash tool run without a prompt, as root too.
// The Bash tool runs the command in zsh when SHELL is unset and zsh is
// installed, else bash (a slow zsh probe also ends in bash), so tests read
// errors from commands, not from the shell.
//
// Codex ignores OPENAI_BASE_URL. The config key openai_base_url is honoured,
// but the built-in provider first tries the Responses WebSocket (GET
// /v1/responses, seven attempts) before falling back to HTTP. A provider of
// our own (-c model_provider=fake -c model_providers.fake={base_url=...,
// env_key=..., wire_api="responses", supports_websockets=false}) posts only
// /v1/responses, SSE. The default model (gpt-6.2-sol) runs in "code mode":
// its only tool is JavaScript that calls the others; gpt-5.5, also in the
// bundled catalog, has a plain exec_command function tool ({"cmd": ...}),
// answered with a function_call and read back as function_call_output.
// Besides the API, `codex exec` looks up github.com, api.github.com and
// chatgpt.com (the curated plugin sync; -c features.plugins=false stops it)
// and ab.chatgpt.com (metrics; -c analytics.enabled=false);
// check_for_update_on_startup changes nothing in exec. It needs
// --skip-git-repo-check outside a git repository; inside agentbox its own
// sandbox is off (agentbox adds --sandbox danger-full-access) and its
// default approval in exec is never, so the command runs.
//
// Network modes: open (the default) shares the host's network, so the CLIs
// reach the stand-in under bwrap and Landlock. allowlist with --allow
// localhost:PORT works under bwrap (a port forward in the box's own network
// namespace; the proxy reports any other connection, which the tests
// assert there is none of). Landlock refuses allowlist (it filters TCP by
// port, not host) with exit 125 before the CLI starts. none leaves the CLI
// nothing to reach.
//
// Confined, both CLIs complete turns as root and unprivileged, with a new
// home and with one an unconfined turn used first. Two things fail that are
// agentbox's: with a home that used Claude Code unconfined, the box's
// CLAUDE_CONFIG_DIR=~/.claude makes Claude Code look for
// ~/.claude/.claude.json, warn three times on stderr that it is missing
// (with the backup it found), and ignore ~/.claude.json (user-scope MCP
// servers are gone inside the box); and as root, `claude
// --dangerously-skip-permissions` exits 1 ("cannot be used with root/sudo
// privileges") because the box sets neither IS_SANDBOX=1 nor
// CLAUDE_CODE_BUBBLEWRAP, the variables Claude Code checks.

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/proctest"
)

// fakeAPI is a scripted stand-in of a model API on 127.0.0.1, so the real
// agent CLIs run whole turns offline: the model's first answers are tool
// calls running the scripted shell commands, its last a final text, and the
// server records what each command printed as the CLI sent it back.
type fakeAPI struct {
	kind string // "claude" or "codex"
	srv  *httptest.Server

	mu       sync.Mutex
	calls    []string       // scripted shell commands, in order
	base     int            // index in calls of the current turn's first
	final    string         // the last answer's text
	results  map[int]string // what call i printed, as the CLI reported it
	requests []string       // "METHOD path" of every request, in order
	problems []string       // requests the stand-in could not answer
}

// Tool call ids carry the index of the scripted command, so a retried or
// replayed request maps back to the same command.
const (
	claudeCallPrefix = "toolu_fake_"
	codexCallPrefix  = "call_fake_"
)

// fakeClaude starts a stand-in of Anthropic's Messages API for Claude Code.
func fakeClaude(t *testing.T) *fakeAPI { return newFakeAPI(t, "claude") }

// fakeCodex starts a stand-in of OpenAI's Responses API for Codex.
func fakeCodex(t *testing.T) *fakeAPI { return newFakeAPI(t, "codex") }

func newFakeAPI(t *testing.T, kind string) *fakeAPI {
	t.Helper()
	f := &fakeAPI{kind: kind, final: "done", results: map[int]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		// Close waits for the handlers; a CLI still connected is cut off.
		f.srv.CloseClientConnections()
		f.srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, p := range f.problems {
			t.Errorf("fake %s API: %s", f.kind, p)
		}
	})
	return f
}

// ToolCall scripts one more model answer in the current conversation: a
// call of the CLI's shell tool running cmd. The calls come in order, then
// the final text.
func (f *fakeAPI) ToolCall(cmd string) *fakeAPI {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, cmd)
	return f
}

// Final sets the text of the model's last answer ("done" by default).
func (f *fakeAPI) Final(text string) *fakeAPI {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.final = text
	return f
}

// URL is the server's base URL, http://127.0.0.1:PORT.
func (f *fakeAPI) URL() string { return f.srv.URL }

// Port is the server's TCP port on 127.0.0.1.
func (f *fakeAPI) Port() string {
	_, port, _ := net.SplitHostPort(f.srv.Listener.Addr().String())
	return port
}

// fakeAPIKey is the dummy key the CLIs send; nothing checks it.
const fakeAPIKey = "sk-agentbox-fake-key"

// Env is what the CLI's environment needs to reach the stand-in and nothing
// else.
func (f *fakeAPI) Env() []string {
	if f.kind == "codex" {
		// Codex 0.171.0 ignores OPENAI_BASE_URL; the provider comes from
		// Args, and its key from the variable the provider names.
		return []string{"AGENTBOX_FAKE_API_KEY=" + fakeAPIKey}
	}
	return []string{
		"ANTHROPIC_BASE_URL=" + f.URL(),
		"ANTHROPIC_API_KEY=" + fakeAPIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
}

// Args are the CLI arguments that point it at the stand-in, to put after
// the subcommand ("codex exec ARGS ..."). Claude Code needs none.
func (f *fakeAPI) Args() []string {
	if f.kind != "codex" {
		return nil
	}
	provider := fmt.Sprintf(`model_providers.fake={name="fake",base_url="%s/v1",env_key="AGENTBOX_FAKE_API_KEY",`+
		`wire_api="responses",supports_websockets=false,request_max_retries=0,stream_max_retries=0}`, f.URL())
	return []string{"-c", "model_provider=fake", "-c", provider, "-c", "features.plugins=false", "-c", "analytics.enabled=false"}
}

// Results are what the scripted commands printed, in order, as the CLI
// reported them back to the model ("" for a command it never ran).
func (f *fakeAPI) Results() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.calls))
	for i := range out {
		out[i] = f.results[i]
	}
	return out
}

// Requests are "METHOD path" of every request the CLI sent, in order.
func (f *fakeAPI) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func (f *fakeAPI) problem(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	switch {
	case f.kind == "claude" && r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		f.serveMessages(w, body)
	case f.kind == "claude" && r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		// Not sent in a -p turn today; answered so a version that counts
		// first still proceeds.
		writeJSON(w, map[string]any{"input_tokens": 1})
	case f.kind == "codex" && r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		f.serveResponses(w, body)
	case r.URL.Path == "/":
		// Claude Code's connectivity probe (HEAD /).
		w.WriteHeader(http.StatusOK)
	default:
		http.Error(w, `{"error":{"type":"not_found_error","message":"not served by the fake API"}}`, http.StatusNotFound)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// next is the model's next answer after the CLI reported done tool results:
// the next scripted command, or the final text (ok false).
func (f *fakeAPI) next(done int) (i int, cmd string, ok bool, final string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i = f.base + done
	if i < len(f.calls) {
		return i, f.calls[i], true, ""
	}
	return i, "", false, f.final
}

// newTurn starts a new conversation whose model calls the shell tool with
// cmds, in order, and returns the index of the first in Results.
func (f *fakeAPI) newTurn(cmds ...string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.base = len(f.calls)
	f.calls = append(f.calls, cmds...)
	return f.base
}

func (f *fakeAPI) record(id, prefix, output string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(id, prefix))
	if !strings.HasPrefix(id, prefix) || err != nil {
		f.problem("a tool result for a call the stand-in never made: %q", id)
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results[i] = output
	return 1
}

// sse writes one server-sent event and sends it on its way.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// Anthropic Messages API (POST /v1/messages).

type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// blockText is the text of a tool_result's content: a string or a list of
// text blocks.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

func (f *fakeAPI) serveMessages(w http.ResponseWriter, body []byte) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		f.problem("POST /v1/messages: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	hasBash := false
	for _, tool := range req.Tools {
		hasBash = hasBash || tool.Name == "Bash"
	}
	// Every tool result in the conversation is one scripted call done: the
	// conversation, not the request count, says what comes next, so a
	// retried request gets the same answer.
	done := 0
	for _, m := range req.Messages {
		var blocks []anthropicBlock
		if m.Role != "user" || json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				done += f.record(b.ToolUseID, claudeCallPrefix, blockText(b.Content))
			}
		}
	}
	i, cmd, call, final := f.next(done)
	if !hasBash {
		// A side request (no tools): plain text, never a tool call.
		call, final = false, "ok"
	}
	var block map[string]any
	stop := "end_turn"
	if call {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": claudeCallPrefix + strconv.Itoa(i), "name": "Bash",
			"input": map[string]any{"command": cmd, "description": "Run the scripted command"}}
	} else {
		block = map[string]any{"type": "text", "text": final}
	}
	msg := map[string]any{"id": "msg_fake_" + strconv.Itoa(i), "type": "message", "role": "assistant",
		"model": req.Model, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}
	if !req.Stream {
		msg["content"], msg["stop_reason"] = []any{block}, stop
		writeJSON(w, msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	msg["content"] = []any{}
	sse(w, "message_start", map[string]any{"type": "message_start", "message": msg})
	if call {
		input, _ := json.Marshal(block["input"])
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": "Bash", "input": map[string]any{}}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": final}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// OpenAI Responses API (POST /v1/responses).

type responsesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Input  []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	} `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

func (f *fakeAPI) serveResponses(w http.ResponseWriter, body []byte) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		f.problem("POST /v1/responses: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	done := 0
	for _, item := range req.Input {
		if item.Type == "function_call_output" {
			done += f.record(item.CallID, codexCallPrefix, blockText(item.Output))
		}
	}
	i, cmd, call, final := f.next(done)
	var tools []string
	shell := ""
	for _, tool := range req.Tools {
		tools = append(tools, tool.Name)
		if tool.Type == "function" && tool.Name == "exec_command" {
			shell = tool.Name
		}
	}
	var item map[string]any
	if call && shell == "" {
		// A model whose tools Codex wraps differently (code mode) or a side
		// request: say so rather than guess.
		f.problem("model %s: no exec_command tool among %v", req.Model, tools)
		call, final = false, "no shell tool"
	}
	if call {
		args, _ := json.Marshal(map[string]any{"cmd": cmd})
		item = map[string]any{"type": "function_call", "id": "fc_fake_" + strconv.Itoa(i),
			"call_id": codexCallPrefix + strconv.Itoa(i), "name": shell, "arguments": string(args)}
	} else {
		item = map[string]any{"type": "message", "role": "assistant", "id": "msg_fake_" + strconv.Itoa(i),
			"content": []any{map[string]any{"type": "output_text", "text": final}}}
	}
	id := "resp_fake_" + strconv.Itoa(i)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": id,
		"usage": map[string]any{"input_tokens": 1, "input_tokens_details": nil, "output_tokens": 1,
			"output_tokens_details": nil, "total_tokens": 2}}})
}

// agentTurnTimeout bounds one whole CLI turn; a turn that hangs is killed
// with its process group.
const agentTurnTimeout = 3 * time.Minute

// runCLI runs argv in the world with the stand-in's environment and returns
// what happened. It fails the test if the CLI outlives agentTurnTimeout or
// leaves a process behind.
func runCLI(t *testing.T, w *world, api *fakeAPI, argv []string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentTurnTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = w.cwd
	c.Env = append(append([]string(nil), w.env...), api.Env()...)
	c.Stdin = strings.NewReader("")
	// Its own session, so a hung turn is killed whole.
	proctest.Own(t, c)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := result{out.String(), errb.String(), 0}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", argv, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%v did not finish within %v:\n%s\nrequests: %v", argv, agentTurnTimeout, r, api.Requests())
	}
	if left := leftBehind(w.home); len(left) > 0 {
		t.Errorf("%v left processes running (killed now):\n%s", argv, strings.Join(left, "\n"))
	}
	return r
}

// leftBehind finds the processes still running with HOME=home (every
// process of a world's CLI has it, confined or not), waits a few seconds
// for them to exit, and kills and lists those that do not.
func leftBehind(home string) []string {
	marker := []byte("\x00HOME=" + home + "\x00")
	find := func() map[int]string {
		found := map[int]string{}
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !bytes.Contains(append([]byte{0}, env...), marker) {
				continue
			}
			cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			found[pid] = strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
		return found
	}
	deadline := time.Now().Add(10 * time.Second)
	found := find()
	for len(found) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		found = find()
	}
	var left []string
	for pid, cmdline := range found {
		syscall.Kill(pid, syscall.SIGKILL)
		left = append(left, fmt.Sprintf("%d %s", pid, cmdline))
	}
	return left
}

// cliArgv is the command line of one non-interactive turn of the CLI.
func cliArgv(api *fakeAPI, prompt string) []string {
	if api.kind == "codex" {
		// gpt-5.5 is in Codex's bundled model catalog with a plain
		// exec_command function tool (the default model wraps its tools in
		// JavaScript "code mode"). Codex's own sandbox stays as agentbox
		// sets it (danger-full-access) or as the caller chose.
		argv := []string{"codex", "exec", "--skip-git-repo-check", "--json", "-m", "gpt-5.5"}
		argv = append(argv, api.Args()...)
		return append(argv, prompt)
	}
	return []string{"claude", "-p", prompt, "--allowedTools", "Bash", "--output-format", "json"}
}

// turnAnswer is the final text of a turn from the CLI's JSON output, or ""
// when there is none.
func turnAnswer(api *fakeAPI, stdout string) string {
	if api.kind == "claude" {
		var res struct {
			Result  string `json:"result"`
			IsError bool   `json:"is_error"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(stdout)), &res) != nil || res.IsError {
			return ""
		}
		return res.Result
	}
	// codex exec --json prints one event a line; the answer is the last
	// agent message of a completed item.
	answer := ""
	for _, line := range strings.Split(stdout, "\n") {
		var ev struct {
			Type string `json:"type"`
			Item struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
			answer = ev.Item.Text
		}
	}
	return answer
}

// turnResult is one whole turn of an agent CLI.
type turnResult struct {
	result            // the CLI's (or agentbox's) exit status and output
	answer     string // the final text the CLI reported
	toolOutput string // what the scripted command printed, as the CLI sent it back
}

// runTurn runs one whole turn of api's CLI confined by agentbox with
// agentboxArgs, the model calling the shell tool once with cmd. It fails
// the test unless the turn completes (exit 0 and the scripted final
// answer), and returns the answer and what cmd printed as the CLI reported
// it (with the CLI's own decoration: Claude Code prefixes "Exit code N"
// when cmd fails, Codex a header ending in "Output:").
func runTurn(t *testing.T, w *world, api *fakeAPI, agentboxArgs []string, cmd string) (answer, toolOutput string) {
	t.Helper()
	tr := runTurnResult(t, w, api, agentboxArgs, cmd)
	return tr.answer, tr.toolOutput
}

// runTurnResult is runTurn with agentbox's exit status and output.
func runTurnResult(t *testing.T, w *world, api *fakeAPI, agentboxArgs []string, cmd string) turnResult {
	t.Helper()
	argv := append([]string{bin, "run"}, agentboxArgs...)
	argv = append(append(argv, "--"), cliArgv(api, "do it")...)
	return turn(t, w, api, argv, cmd)
}

// runUnconfinedTurn runs the same turn without agentbox, as a user who
// used the CLI before installing agentbox did: it leaves the CLI's own
// state in the world's home.
func runUnconfinedTurn(t *testing.T, w *world, api *fakeAPI, cmd string) (answer, toolOutput string) {
	t.Helper()
	tr := turn(t, w, api, cliArgv(api, "do it"), cmd)
	return tr.answer, tr.toolOutput
}

func turn(t *testing.T, w *world, api *fakeAPI, argv []string, cmd string) turnResult {
	t.Helper()
	n := api.newTurn(cmd)
	r := runCLI(t, w, api, argv)
	tr := turnResult{result: r, answer: turnAnswer(api, r.stdout), toolOutput: api.Results()[n]}
	api.mu.Lock()
	want := api.final
	api.mu.Unlock()
	if r.code != 0 || tr.answer != want {
		t.Fatalf("%s turn did not complete (want the answer %q):\n%s\nrequests: %v\ntool output: %q", api.kind, want, r, api.Requests(), tr.toolOutput)
	}
	return tr
}

// runClaudeTurn is runTurn for Claude Code.
func runClaudeTurn(t *testing.T, w *world, api *fakeAPI, agentboxArgs []string, cmd string) (answer, toolOutput string) {
	t.Helper()
	if api.kind != "claude" {
		t.Fatal("runClaudeTurn needs fakeClaude")
	}
	return runTurn(t, w, api, agentboxArgs, cmd)
}

// runCodexTurn is runTurn for Codex.
func runCodexTurn(t *testing.T, w *world, api *fakeAPI, agentboxArgs []string, cmd string) (answer, toolOutput string) {
	t.Helper()
	if api.kind != "codex" {
		t.Fatal("runCodexTurn needs fakeCodex")
	}
	return runTurn(t, w, api, agentboxArgs, cmd)
}

// needCLI skips (or under AGENTBOX_MUST_WORK=1 fails) without the CLI.
func needCLI(t *testing.T, cli string) {
	t.Helper()
	_, err := exec.LookPath(cli)
	need(t, err == nil, cli+" is not installed (npm install -g @anthropic-ai/claude-code @openai/codex)")
}
