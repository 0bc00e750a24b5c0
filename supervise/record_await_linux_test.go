package supervise

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/plan"
)

// awaiter is a backend that waits for the pending record as bwrap's and
// Landlock's do (backend.RecordAwaiter), then runs start in place of the
// box's first process, unless the wait failed.
type awaiter struct {
	call  bool // call Context.Recorded (a backend that fails earlier does not)
	start func()
}

func (a awaiter) Name() string                       { return "awaiter" }
func (a awaiter) Available() error                   { return nil }
func (a awaiter) Complete(p *plan.Plan) error        { return nil }
func (a awaiter) Describe(p *plan.Plan, w io.Writer) {}
func (a awaiter) SelfCheck() (string, bool)          { return "", false }
func (a awaiter) AwaitsRecord()                      {}
func (a awaiter) Run(p *plan.Plan, c *backend.Context) (int, error) {
	if !a.call {
		return 0, os.ErrInvalid
	}
	if c.Recorded == nil {
		panic("no Context.Recorded for a RecordAwaiter")
	}
	if err := c.Recorded(); err != nil {
		return 0, err
	}
	a.start()
	return 0, nil
}

// The pending record written while the backend prepares the box is whole on
// disk when the box's first process starts; one that cannot be written
// starts no box and says where and why; a backend that fails before it
// waits leaves no record behind (the write is joined before the record is
// removed).
func TestPendingRecordAwaited(t *testing.T) {
	b := newBox(t)
	p := &plan.Plan{RunID: "awaited", HostExec: *b.host()}
	record := filepath.Join(b.state, "pending", "awaited.json")
	ran := false
	_, err := Run(awaiter{call: true, start: func() {
		ran = true
		var r pendingRecord
		data, err := os.ReadFile(record)
		if err != nil || json.Unmarshal(data, &r) != nil || r.Run != "awaited" || len(r.HostExec.Roots) != 1 {
			t.Errorf("the box started before its record was whole on disk: %v %q", err, data)
		}
	}}, p, backend.Context{Events: &events{}})
	if err != nil || !ran {
		t.Fatalf("the run failed (%v) or its box never started", err)
	}
	if exists(record) {
		t.Error("the record is left after the run")
	}

	// The record's name is taken by a folder with something in it: the
	// rename over it fails, even for root.
	p.RunID = "unwritable"
	if err := os.MkdirAll(filepath.Join(b.state, "pending", "unwritable.json", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = Run(awaiter{call: true, start: func() { t.Error("the box started without its pending record") }}, p, backend.Context{Events: &events{}})
	if err == nil || !strings.Contains(err.Error(), "pending record cannot be written") {
		t.Fatalf("run without its record: %v", err)
	}

	p.RunID = "early"
	if _, err := Run(awaiter{}, p, backend.Context{Events: &events{}}); err == nil {
		t.Fatal("the backend's failure was not reported")
	}
	for _, ext := range []string{".json", ".lock"} {
		if exists(filepath.Join(b.state, "pending", "early"+ext)) {
			t.Errorf("early%s is left after a run whose backend failed", ext)
		}
	}
}
