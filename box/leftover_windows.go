package box

import (
	"fmt"
	"io"

	"github.com/agentbox/agentbox/supervise"
	"github.com/agentbox/agentbox/winsandbox"
)

// A killed run's after-run check leaves alone the placeholders a live run
// holds (winsandbox.MarkLivePlaceholders).
func init() { supervise.KeptByLiveRuns = winsandbox.MarkLivePlaceholders }

// removeLeftovers removes the git placeholders a killed run of the
// Windows backend left (winsandbox.RemoveLeftoverPlaceholders), before
// that run's after-run check would take them for files the box planted
// and before this run's plan would take them for the user's.
func removeLeftovers(w io.Writer) {
	if err := winsandbox.RemoveLeftoverPlaceholders(); err != nil {
		fmt.Fprintf(w, "agentbox: the git placeholders of a killed run: %v\n", err)
	}
}
