package mount

import (
	"os"
	"testing"

	"github.com/agentbox/agentbox/proctest"
)

// TestMain gives every process the tests start the default signal
// dispositions, whatever this binary inherited (nohup, a shell's &): the
// init's tests send signals and wait for what they do.
func TestMain(m *testing.M) {
	proctest.DefaultSignals()
	os.Exit(m.Run())
}
