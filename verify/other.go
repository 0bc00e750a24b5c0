//go:build !linux || !(amd64 || arm64)

package verify

import (
	"fmt"
	"os"
)

// Main fails: the probes are Linux's.
func Main() int {
	fmt.Fprintln(os.Stderr, "agentbox: error: verify: the probes run on Linux (amd64, arm64) only")
	return 125
}
