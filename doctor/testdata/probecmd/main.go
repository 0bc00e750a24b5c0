// Command probecmd is the helper of doctor's tests: it prints, as JSON, the
// doctor's full report ("report") or the fast probe's answer ("fast"), so the
// tests can ask as another user or inside another user namespace.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/box"
	"github.com/agentbox/agentbox/doctor"
	"github.com/agentbox/agentbox/mount"
)

func main() {
	var v any
	switch {
	case len(os.Args) == 2 && os.Args[1] == "report":
		v = doctor.Probe(box.Backends())
	case len(os.Args) == 2 && os.Args[1] == "fast":
		path, err := mount.LookBwrap()
		if err != nil {
			v = mount.BwrapStatus{Reason: err.Error()}
			break
		}
		v = mount.CheckBwrap(path)
	case len(os.Args) == 2 && os.Args[1] == "text":
		doctor.Probe(box.Backends()).Text(os.Stdout)
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
