package supervise

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

type keep []event.Event

func (k *keep) Emit(e event.Event) { *k = append(*k, e) }

// TestWindowsRecoverAfterKill: when agentbox was killed during a run (its
// pending record is left and its process is gone), the next run does that
// run's after-run check before its own; a record of a live process is left
// alone.
func TestWindowsRecoverAfterKill(t *testing.T) {
	base, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	proj, state := filepath.Join(base, "proj"), filepath.Join(base, "state")
	vscode := filepath.Join(proj, ".vscode")
	if err := os.MkdirAll(filepath.Join(vscode), 0o755); err != nil { // what the killed run's box made
		t.Fatal(err)
	}
	h := plan.HostExec{Roots: []string{proj}, State: state, Controls: []string{".vscode"},
		Guards: []plan.Guard{{Path: vscode, Rule: "vscode .vscode", Kind: plan.KindMissing, Keep: plan.KeepChecked}}}
	if err := os.MkdirAll(filepath.Join(state, "pending"), 0o700); err != nil {
		t.Fatal(err)
	}
	pid, started := self()
	for name, rec := range map[string]pendingRecord{
		"killed.json": {Run: "killed", PID: pid, Started: started + 1, HostExec: h}, // this PID, another process
		"live.json":   {Run: "live", PID: pid, Started: started, HostExec: h},
	} {
		data, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(state, "pending", name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var ev keep
	Recover(state, &ev)
	if _, err := os.Lstat(vscode); err == nil {
		t.Error("the killed run's .vscode is still there: its check was not done")
	}
	if _, err := os.Stat(filepath.Join(state, "pending", "killed.json")); err == nil {
		t.Error("the killed run's pending record is still there after its check")
	}
	if _, err := os.Stat(filepath.Join(state, "pending", "live.json")); err != nil {
		t.Errorf("the live run's pending record was taken: %v", err)
	}
}
