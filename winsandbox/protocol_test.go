package winsandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sampleMessages() []*Message {
	return []*Message{
		{Type: TypeSpawn, Spawn: &SpawnRequest{CommandLine: "git status", Args: []string{"git", "status"}, Cwd: `C:\p`,
			Env: []string{"A=1"}, RestrictingSIDs: []string{CapabilitySID(`C:\p`)}, Console: true, Cols: 80, Rows: 24}},
		{Type: TypeReady, PID: 4242},
		{Type: TypeOutput, Stream: Stdout, Data: []byte("hello\x00\xff\n")},
		{Type: TypeOutput, Stream: Stderr, Data: []byte("oops")},
		{Type: TypeStdin, Data: []byte("input")},
		{Type: TypeStdin},
		{Type: TypeCloseStdin},
		{Type: TypeResize, Cols: 120, Rows: 40},
		{Type: TypeExit, Code: 0xC000013A},
		{Type: TypeExit},
		{Type: TypeError, Error: &ErrorInfo{Stage: "token", Code: 5, Message: "CreateRestrictedToken: Access is denied."}},
		{Type: TypeTerminate},
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	msgs := sampleMessages()
	for _, m := range msgs {
		if err := WriteMessage(&buf, m); err != nil {
			t.Fatalf("WriteMessage(%s): %v", m.Type, err)
		}
	}
	for _, want := range msgs {
		got, err := ReadMessage(&buf)
		if err != nil {
			t.Fatalf("ReadMessage (want %s): %v", want.Type, err)
		}
		if want.Type == TypeStdin && len(want.Data) == 0 {
			want = &Message{Type: TypeStdin} // nil and empty data encode alike
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round trip of %s (-want +got):\n%s", want.Type, diff)
		}
	}
	if _, err := ReadMessage(&buf); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
}

func frame(body string) []byte {
	b := make([]byte, 4+len(body))
	binary.LittleEndian.PutUint32(b, uint32(len(body)))
	copy(b[4:], body)
	return b
}

func TestReadMessageRejects(t *testing.T) {
	huge := make([]byte, 4)
	binary.LittleEndian.PutUint32(huge, MaxMessageSize+1)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"too large", huge, "more than"},
		{"short header", []byte{1, 0}, "unexpected EOF"},
		{"short body", frame(`{"type":"terminate"}`)[:10], "unexpected EOF"},
		{"not json", frame(`hello`), "decoding message"},
		{"unknown type", frame(`{"type":"exec"}`), "unknown message type"},
		{"unknown field", frame(`{"type":"terminate","shell":true}`), "unknown field"},
		{"two objects", frame(`{"type":"terminate"}{"type":"terminate"}`), "data after"},
		{"trailing garbage", frame(`{"type":"terminate"} x`), "data after"},
		{"spawn without request", frame(`{"type":"spawn"}`), "without a request"},
		{"spawn without command", frame(`{"type":"spawn","spawn":{"cwd":"C:\\"}}`), "without a command line"},
		{"bad stream", frame(`{"type":"output","stream":"stdlog","data":"eA=="}`), "stream"},
		{"extra field for type", frame(`{"type":"exit","code":1,"pid":3}`), "has a pid field"},
		{"zero resize", frame(`{"type":"resize","cols":80}`), "zero size"},
		{"error without stage", frame(`{"type":"error","error":{"message":"x"}}`), "without a stage"},
		{"big chunk", frame(`{"type":"stdin","data":"` + strings.Repeat("A", (MaxChunk+3)/3*4+8) + `"}`), "chunk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMessage(bytes.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestWriteMessageRejects(t *testing.T) {
	for _, m := range []*Message{
		{Type: "nope"},
		{Type: TypeOutput, Stream: Stdout, Data: make([]byte, MaxChunk+1)},
		{Type: TypeTerminate, Code: 3},
	} {
		if err := WriteMessage(io.Discard, m); err == nil {
			t.Errorf("WriteMessage(%+v) succeeded", m)
		}
	}
	// A spawn request too big for one frame is refused, not truncated.
	big := &Message{Type: TypeSpawn, Spawn: &SpawnRequest{CommandLine: "x", Env: []string{strings.Repeat("A", MaxMessageSize)}}}
	if err := WriteMessage(io.Discard, big); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("oversized spawn: %v", err)
	}
}

// A writer that fails must surface its error.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("pipe broken") }

func TestWriteMessageError(t *testing.T) {
	if err := WriteMessage(failWriter{}, &Message{Type: TypeTerminate}); err == nil {
		t.Error("write error lost")
	}
}

// FuzzReadMessage: no input may panic the decoder or make it allocate more
// than MaxMessageSize, and whatever it accepts must encode and decode to
// the same message.
func FuzzReadMessage(f *testing.F) {
	for _, m := range sampleMessages() {
		var buf bytes.Buffer
		if err := WriteMessage(&buf, m); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add(frame(`{"type":"output","stream":"stdout","data":null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := ReadMessage(bytes.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteMessage(&buf, m); err != nil {
			t.Fatalf("accepted message does not encode: %v (%+v)", err, m)
		}
		m2, err := ReadMessage(&buf)
		if err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if diff := cmp.Diff(m, m2); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}
