package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// Report is every check of one box and how it came out.
type Report struct {
	Backend string   `json:"backend"`
	Run     string   `json:"run"`
	Results []Result `json:"results"`
}

// Count returns how many results have status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, x := range r.Results {
		if x.Status == s {
			n++
		}
	}
	return n
}

// Failed returns the failed results.
func (r Report) Failed() []Result {
	var out []Result
	for _, x := range r.Results {
		if x.Status == Failed {
			out = append(out, x)
		}
	}
	return out
}

// Summary is the report's first line.
func (r Report) Summary() string {
	return fmt.Sprintf("verify: %s box, run %s: %d verified, %d consistent, %d failed, %d not probed",
		r.Backend, r.Run, r.Count(Verified), r.Count(Consistent), r.Count(Failed), r.Count(NotProbed))
}

// WriteText prints the report: the summary, then one line per check,
// fitted to width columns (plan.Fit; 0 for no limit).
func (r Report) WriteText(w io.Writer, width int) error {
	var b strings.Builder
	fmt.Fprintln(&b, r.Summary())
	for _, x := range r.Results {
		fmt.Fprintf(&b, "  %s\t%s\v%s\n", x.Status, event.Escape(x.Rule), event.Escape(x.What()))
	}
	return plan.Fit(w, b.String(), width)
}

// WriteJSON prints the report as one JSON document.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// What says what was checked and what happened.
func (x Result) What() string {
	if x.Status == NotProbed {
		return x.Why
	}
	got := x.Got.Code
	if x.Got.Code == "ok" || strings.HasPrefix(x.Got.Code, "file:") {
		got = strings.TrimPrefix(x.Got.Code, "file:")
	}
	if x.Got.Text != "" {
		got += " (" + x.Got.Text + ")"
	}
	s := x.Says + ": " + x.Probe.Op
	if x.Probe.Path != "" {
		s += " " + x.Probe.Path
	} else if x.Probe.Arg != "" && x.Probe.Op != "env" {
		s += " " + x.Probe.Arg
	}
	s += " gave " + got
	switch x.Status {
	case Failed:
		s += ", want " + strings.Join(x.Want, " or ")
		if x.N != nil && x.Got.Code == "ok" {
			s += fmt.Sprintf(" with %d", *x.N)
		}
	case Consistent:
		s += ", which the kernel answers here without the rule too"
	}
	return s
}
