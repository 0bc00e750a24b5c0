package hostexec

import (
	"fmt"
	"math"
	"runtime/debug"
	"testing"

	"github.com/agentbox/agentbox/plan"
)

// The soft memory limit is set unless the user set GOMEMLIMIT, and an
// index of more than liftAt folders takes it away (a search that needs
// the memory must not have the collector running back to back).
func TestSoftMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "")
	SetSoftLimit()
	if got := debug.SetMemoryLimit(-1); got != softLimit {
		t.Fatalf("limit after SetSoftLimit: %d, want %d", got, softLimit)
	}
	small := sampleTree()
	if DecodeIndex(EncodeIndex(small), "/r") == nil {
		t.Fatal("the sample tree did not read back")
	}
	if got := debug.SetMemoryLimit(-1); got != softLimit {
		t.Fatalf("a 4-folder index lifted the limit to %d", got)
	}
	big := &plan.Tree{Root: "/r", Names: noteTable(nil)}
	n := liftAt + 1
	for i := range n {
		name := ""
		parent, end := int32(-1), int32(n)
		if i > 0 {
			name, parent, end = fmt.Sprint(i), 0, int32(i+1)
		}
		big.Dirs = append(big.Dirs, plan.TreeDir{Dev: 1, Ino: uint64(i + 2), Parent: parent, End: end,
			NameOff: uint32(len(big.Text)), NameLen: uint8(len(name))})
		big.Text = append(big.Text, name...)
	}
	if DecodeIndex(EncodeIndex(big), "/r") == nil {
		t.Fatal("the large tree did not read back")
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("an index of %d folders left the limit at %d", n, got)
	}
}
