// Command probecmd is the helper of doctor's tests: it prints, as JSON, the
// doctor's full report ("report") or the fast probe's answer ("fast"), so the
// tests can ask as another user or inside another user namespace.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/doctor"
)

func main() {
	var v any
	switch {
	case len(os.Args) == 2 && os.Args[1] == "report":
		v = doctor.Probe()
	case len(os.Args) == 2 && os.Args[1] == "fast":
		v = doctor.CheckBwrap()
	case len(os.Args) == 2 && os.Args[1] == "text":
		doctor.Probe().Text(os.Stdout)
		return
	default:
		fmt.Fprintln(os.Stderr, "usage: probecmd report|fast|text")
		os.Exit(2)
	}
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
