// standin is a stand-in of the Anthropic Messages API that the Windows CI
// workflow runs on the host to drive a real `claude -p` turn inside the box
// offline (docs/windows.md):
//
//	standin -port-file F -result-file R -cmd COMMAND
//
// It listens on 127.0.0.1 (a free port, written to F), answers the first
// POST /v1/messages that offers tools with a call of the Bash tool running
// COMMAND, writes the tool's result as Claude Code sends it back to R, and
// answers every later turn with the text "done" (streamed, as Claude Code
// asks). Anything else (the connectivity probe) gets 200.
//
// It lives under testdata so `go build ./...` leaves it out; the workflow
// builds it by its path.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
)

func main() {
	portFile := flag.String("port-file", "", "write the port listened on here")
	resultFile := flag.String("result-file", "", "write the Bash tool's result here")
	cmd := flag.String("cmd", "echo hi", "the command the Bash tool call runs")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if err := os.WriteFile(*portFile, []byte(port), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on 127.0.0.1:%s", port)
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, *cmd, *resultFile)
	})))
}

func serve(w http.ResponseWriter, r *http.Request, cmd, resultFile string) {
	log.Printf("%s %s", r.Method, r.URL)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusOK)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct{ Name string } `json:"tools"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	answered := false
	for _, m := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				answered = true
				if resultFile != "" {
					os.WriteFile(resultFile, b.Content, 0o644)
				}
			}
		}
	}
	hasBash := false
	for _, t := range req.Tools {
		hasBash = hasBash || t.Name == "Bash"
	}
	call := !answered && hasBash
	stop := "end_turn"
	var block, delta map[string]any
	if call {
		stop = "tool_use"
		input, _ := json.Marshal(map[string]string{"command": cmd, "description": "scripted by the stand-in"})
		block = map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(input)}
	} else {
		block = map[string]any{"type": "text", "text": ""}
		delta = map[string]any{"type": "text_delta", "text": "done"}
	}
	if !req.Stream {
		content := map[string]any{"type": "text", "text": "done"}
		if call {
			var in map[string]any
			json.Unmarshal([]byte(delta["partial_json"].(string)), &in)
			content = map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": in}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": req.Model,
			"content": []any{content}, "stop_reason": stop, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message",
		"role": "assistant", "model": req.Model, "content": []any{}, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}})
	send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
	send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 1}})
	send("message_stop", map[string]any{"type": "message_stop"})
}
