package box

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/plan"
)

// StatusSchema is the version of the JSON `agentbox status --json` prints.
const StatusSchema = 1

// Status is what `agentbox status` reports about the calling process's box.
type Status struct {
	Schema   int      `json:"schema"`
	Active   bool     `json:"active"`
	Backend  string   `json:"backend,omitempty"`
	Writable []string `json:"writable,omitempty"`
	Deny     []string `json:"deny,omitempty"`
	Network  string   `json:"network,omitempty"`
	// Publish are the published ports, ADDR:PORT:BOXPORT: the host's
	// ADDR:PORT reaches the box's 127.0.0.1:BOXPORT.
	Publish  []string `json:"publish,omitempty"`
	Tmp      string   `json:"tmpdir,omitempty"`
	Degraded string   `json:"degraded,omitempty"`
	// Depth is how many boxes the caller runs in (AGENTBOX_DEPTH): 1
	// for a box started outside any box.
	Depth int `json:"depth,omitempty"`
	// Checked is what this process could verify for itself (the backend's
	// SelfCheck): a variable can be inherited or forged, a read-only root
	// cannot.
	Checked    string `json:"checked,omitempty"`
	Consistent bool   `json:"consistent"`
}

// ReadStatus reads the truthful variables and checks them with the
// backend they name.
func ReadStatus(all []backend.Backend) Status {
	st := Status{
		Schema:   StatusSchema,
		Active:   os.Getenv(plan.VarActive) == "1",
		Backend:  os.Getenv(plan.VarBackend),
		Writable: plan.SplitList(runtime.GOOS, os.Getenv(plan.VarWritable)),
		Deny:     plan.SplitList(runtime.GOOS, os.Getenv(plan.VarDeny)),
		Network:  os.Getenv(plan.VarNetwork),
		Publish:  plan.SplitList("linux", os.Getenv(plan.VarPublish)),
		Tmp:      os.Getenv("TMPDIR"),
		Degraded: os.Getenv(plan.VarDegraded),
	}
	if !st.Active {
		return st
	}
	st.Depth = 1
	if n, err := strconv.Atoi(os.Getenv(plan.VarDepth)); err == nil && n > 1 {
		st.Depth = n
	}
	b, ok := backend.Find(all, st.Backend)
	if !ok {
		st.Checked = "AGENTBOX_BACKEND names no backend agentbox has (" + st.Backend + ")"
		return st
	}
	st.Checked, st.Consistent = b.SelfCheck()
	return st
}

// ErrNotConfined is returned by WriteStatus when the caller is not in a
// working box (the CLI exits 1 for it).
var ErrNotConfined = fmt.Errorf("not in a working agentbox sandbox")

// WriteStatus prints st, as text or JSON, and returns ErrNotConfined when
// the caller is not confined.
func WriteStatus(st Status, asJSON bool, w io.Writer) error {
	confined := st.Active && st.Consistent
	if asJSON {
		if err := writeJSON(w, st); err != nil {
			return err
		}
	} else {
		switch {
		case st.Active && !st.Consistent:
			fmt.Fprintf(w, "agentbox: AGENTBOX=1 is set but %s: this is NOT a working agentbox sandbox\n", st.Checked)
		case st.Active:
			fmt.Fprintf(w, "sandbox:  active (%s; checked: %s)\n", st.Backend, st.Checked)
			fmt.Fprintf(w, "writable: %s\n", strings.Join(st.Writable, ", "))
			hidden := strings.Join(st.Deny, ", ")
			if hidden == "" {
				hidden = "nothing (none of the credentials hidden by default, nor a denied path, exists here)"
			}
			fmt.Fprintf(w, "hidden:   %s\n", hidden)
			fmt.Fprintf(w, "network:  %s\n", st.Network)
			for _, pub := range st.Publish {
				if i := strings.LastIndexByte(pub, ':'); i > 0 {
					fmt.Fprintf(w, "publish:  the host's %s reaches 127.0.0.1:%s here\n", pub[:i], pub[i+1:])
				}
			}
			fmt.Fprintf(w, "tmp:      %s (private to this box's workspace or run)\n", st.Tmp)
			fmt.Fprintf(w, "nesting:  %s\n", depthText(st.Depth))
		case st.Degraded != "":
			fmt.Fprintf(w, "sandbox:  NOT active: running unconfined (%s)\n", st.Degraded)
		default:
			fmt.Fprintln(w, "sandbox:  not active")
		}
	}
	if !confined {
		return ErrNotConfined
	}
	return nil
}

// Prompt is the notice an agent can be given about the box `agentbox run`
// with the same request would start, made from the same frozen plan.
func Prompt(req Request, w io.Writer) error {
	if len(req.Command) == 0 {
		req.Command = []string{"sh"}
	}
	p, _, err := Resolve(req, Backends())
	if err != nil {
		return err
	}
	if p.Box.Outer != "" {
		_, err := fmt.Fprintf(w, "You are running in an agentbox sandbox (%s) started around this one; run `agentbox status` inside it to see what it enforces.\n", p.Box.Outer)
		return err
	}
	if !p.Confined() {
		_, err := fmt.Fprintf(w, "You are NOT running in a sandbox: %s\n", p.Box.Degraded)
		return err
	}
	_, err = fmt.Fprint(w, p.Prompt(p.Box.Backend))
	return err
}

// depthText says how deep a box is nested, as status prints it.
func depthText(n int) string {
	if n <= 1 {
		return "depth 1 (not nested: the box was started outside any box)"
	}
	return fmt.Sprintf("depth %d (this box runs inside %d other agentbox boxes)", n, n-1)
}
