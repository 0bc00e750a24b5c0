package winsandbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The runner protocol. agentbox (the client) and the runner talk over two
// byte streams (named pipes on Windows): each message is a little-endian
// uint32 length followed by that many bytes of one JSON object. The length
// is checked against MaxMessageSize before anything is allocated, and the
// JSON must be exactly one object of a known type with no unknown fields.

// MaxMessageSize is the largest message body either side accepts. Output and
// stdin are sent in chunks of at most MaxChunk bytes, which base64 and the
// JSON around them keep well below it.
const (
	MaxMessageSize = 1 << 20
	MaxChunk       = 64 << 10
)

// Type names a message.
type Type string

// Message types. "client" is agentbox, "runner" the process that starts the
// command as the sandbox user.
const (
	TypeSpawn      Type = "spawn"       // client → runner: start the command (Spawn)
	TypeReady      Type = "ready"       // runner → client: the command runs (PID)
	TypeOutput     Type = "output"      // runner → client: Stream, Data
	TypeStdin      Type = "stdin"       // client → runner: Data for the command's stdin
	TypeCloseStdin Type = "close-stdin" // client → runner: no more stdin
	TypeResize     Type = "resize"      // client → runner: Cols, Rows of the console
	TypeExit       Type = "exit"        // runner → client: the command's exit Code
	TypeError      Type = "error"       // runner → client: Error; the runner stops
	TypeTerminate  Type = "terminate"   // client → runner: kill the command's job
)

// Streams of output messages.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// JobLimits are the job object limits the runner sets; zero means none.
type JobLimits struct {
	ActiveProcesses uint32 `json:"active_processes,omitempty"`
	MemoryBytes     uint64 `json:"memory_bytes,omitempty"`
	CPUSeconds      uint64 `json:"cpu_seconds,omitempty"`
	// UI are the job's UI restrictions (JOB_OBJECT_UILIMIT_*): JobUILimits
	// for every run.
	UI uint32 `json:"ui_restrictions,omitempty"`
}

// SpawnRequest tells the runner what to start and how.
type SpawnRequest struct {
	// Application is the resolved program (lpApplicationName); empty lets
	// CreateProcessAsUser take it from the command line.
	Application string `json:"application,omitempty"`
	// CommandLine is the full Windows command line (CommandLine quoting).
	CommandLine string `json:"command_line"`
	// Args is the command as an argument vector, for messages only.
	Args []string `json:"args"`
	Cwd  string   `json:"cwd"`
	// Env is the whole environment block, sorted, "NAME=value".
	Env []string `json:"env"`
	// RestrictingSIDs are the capability SIDs of the writable roots; the
	// runner adds its own logon SID (see runner_windows.go).
	RestrictingSIDs []string  `json:"restricting_sids"`
	Limits          JobLimits `json:"limits"`
	// Desktop is the window station and desktop the command starts on:
	// the run's own ("agentbox-…\agentbox", station.go), never the
	// user's. Named explicitly because programs that load user32
	// (PowerShell) fail at start with a restricted token otherwise. The
	// runner refuses a request without one (checkSpawnUI).
	Desktop string `json:"desktop,omitempty"`
	// Console asks for a pseudo console of Cols × Rows instead of pipes.
	Console bool   `json:"console,omitempty"`
	Cols    uint16 `json:"cols,omitempty"`
	Rows    uint16 `json:"rows,omitempty"`
}

// ErrorInfo is a failure in the runner: the stage that failed, the Windows
// error code (0 when there is none) and a message.
type ErrorInfo struct {
	Stage   string `json:"stage"`
	Code    uint32 `json:"code"`
	Message string `json:"message"`
}

// Error makes ErrorInfo an error.
func (e *ErrorInfo) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("runner: %s: %s (windows error %d)", e.Stage, e.Message, e.Code)
	}
	return fmt.Sprintf("runner: %s: %s", e.Stage, e.Message)
}

// Message is one protocol message; which fields are set depends on Type.
type Message struct {
	Type   Type          `json:"type"`
	Spawn  *SpawnRequest `json:"spawn,omitempty"`
	PID    uint32        `json:"pid,omitempty"`
	Stream string        `json:"stream,omitempty"`
	Data   []byte        `json:"data,omitempty"`
	Cols   uint16        `json:"cols,omitempty"`
	Rows   uint16        `json:"rows,omitempty"`
	Code   uint32        `json:"code,omitempty"`
	Error  *ErrorInfo    `json:"error,omitempty"`
}

// Check reports whether m carries what its type needs and nothing else.
func (m *Message) Check() error {
	has := func(want ...string) error {
		set := map[string]bool{
			"spawn": m.Spawn != nil, "pid": m.PID != 0, "stream": m.Stream != "",
			"data": len(m.Data) > 0, "size": m.Cols != 0 || m.Rows != 0,
			"code": m.Code != 0, "error": m.Error != nil,
		}
		for _, w := range want {
			delete(set, w)
		}
		for k, v := range set {
			if v {
				return fmt.Errorf("%s message has a %s field", m.Type, k)
			}
		}
		return nil
	}
	switch m.Type {
	case TypeSpawn:
		if m.Spawn == nil {
			return errors.New("spawn message without a request")
		}
		if m.Spawn.CommandLine == "" {
			return errors.New("spawn request without a command line")
		}
		return has("spawn")
	case TypeReady:
		return has("pid")
	case TypeOutput:
		if m.Stream != Stdout && m.Stream != Stderr {
			return fmt.Errorf("output message with stream %q", m.Stream)
		}
		if len(m.Data) > MaxChunk {
			return fmt.Errorf("output chunk of %d bytes, more than %d", len(m.Data), MaxChunk)
		}
		return has("stream", "data")
	case TypeStdin:
		if len(m.Data) > MaxChunk {
			return fmt.Errorf("stdin chunk of %d bytes, more than %d", len(m.Data), MaxChunk)
		}
		return has("data")
	case TypeResize:
		if m.Cols == 0 || m.Rows == 0 {
			return errors.New("resize message with a zero size")
		}
		return has("size")
	case TypeExit:
		return has("code")
	case TypeError:
		if m.Error == nil || m.Error.Stage == "" {
			return errors.New("error message without a stage")
		}
		return has("error")
	case TypeCloseStdin, TypeTerminate:
		return has()
	}
	return fmt.Errorf("unknown message type %q", m.Type)
}

// WriteMessage checks m and writes it as one length-prefixed frame, in a
// single Write so frames from one writer never interleave.
func WriteMessage(w io.Writer, m *Message) error {
	if err := m.Check(); err != nil {
		return err
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(body) > MaxMessageSize {
		return fmt.Errorf("%s message of %d bytes, more than %d", m.Type, len(body), MaxMessageSize)
	}
	frame := make([]byte, 4+len(body))
	binary.LittleEndian.PutUint32(frame, uint32(len(body)))
	copy(frame[4:], body)
	_, err = w.Write(frame)
	return err
}

// ReadMessage reads one frame and decodes it. It returns io.EOF only when the
// stream ends cleanly between frames, and io.ErrUnexpectedEOF inside one.
func ReadMessage(r io.Reader) (*Message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > MaxMessageSize {
		return nil, fmt.Errorf("message of %d bytes, more than %d", n, MaxMessageSize)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return DecodeMessage(body)
}

// DecodeMessage decodes one message body: exactly one JSON object, no
// unknown fields, and a valid message (Check).
func DecodeMessage(body []byte) (*Message, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var m Message
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decoding message: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decoding message: data after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("decoding message: data after the JSON object")
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	return &m, nil
}

// The runner's own exit status, when it fails before it can say so over
// its pipes (the command's status travels in the exit message): 0x2000_0000
// (the "customer" bit of an NTSTATUS, so no Windows status looks like it),
// the stage in bits 16-23 and the low 16 bits of the Windows error code.
const runnerFailBit = 0x2000_0000

// Runner stages that can fail before the pipes work.
const (
	runnerStageArgs   = 1 // wrong arguments
	runnerStageIn     = 2 // opening the input pipe
	runnerStageOut    = 3 // opening the output pipe
	runnerStageServer = 4 // the pipe's server is not agentbox
	runnerStageErr    = 5 // opening the standard error pipe
)

// runnerFailure is the exit status the runner ends with when stage failed
// with Windows error code errno.
func runnerFailure(stage int, errno uint32) uint32 {
	return runnerFailBit | uint32(stage&0xff)<<16 | errno&0xffff
}

// RunnerExitReason explains the exit status of a runner that ended before
// it connected.
func RunnerExitReason(code uint32) string {
	if code&0xff000000 != runnerFailBit {
		return fmt.Sprintf("the runner exited with status %#x before it connected", code)
	}
	what := map[int]string{
		runnerStageArgs:   "was started with the wrong arguments",
		runnerStageIn:     "could not open its input pipe",
		runnerStageOut:    "could not open its output pipe",
		runnerStageServer: "found a pipe server that is not agentbox",
		runnerStageErr:    "could not open its standard error pipe",
	}[int(code>>16&0xff)]
	if what == "" {
		what = "failed"
	}
	if errno := code & 0xffff; errno != 0 {
		return fmt.Sprintf("the runner %s (Windows error %d)", what, errno)
	}
	return "the runner " + what
}
