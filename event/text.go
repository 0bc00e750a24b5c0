package event

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// The text `agentbox log` prints. Every string it prints from an event has
// been through Stored (the reader applies it to each line it parses), so
// nothing a box chose reaches the terminal unescaped.

// timeLayout is how times are printed, in the reader's time zone.
const timeLayout = "2006-01-02 15:04:05"

// WriteRuns prints one line per run: when it started, its ID, status,
// duration, backend, counts of denials, quarantined items and limits hit,
// project and command. With denials, each run's denials follow it, one
// indented line each.
func WriteRuns(w io.Writer, runs []*Run, denials bool, loc *time.Location) {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tRUN\tSTATUS\tDURATION\tBACKEND\tDENIED\tQUARANTINED\tLIMITS\tPROJECT\tCOMMAND")
	for _, r := range runs {
		started, backend, project, command := "?", "?", "?", "?"
		if s := r.Start; s != nil {
			started = s.Time.In(loc).Format(timeLayout)
			backend = s.Backend
			if backend == "" {
				backend = "UNCONFINED"
			}
			project = s.Project
			command = clipRunes(shellJoin(s.Command), 80)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", started, r.ID, status(r), duration(r), backend,
			r.Denied, r.Quarantined, r.Limits, project, command)
	}
	tw.Flush()
	// The table is aligned as a whole; each run's denials follow its line.
	lines := strings.SplitAfter(table.String(), "\n")
	io.WriteString(w, lines[0])
	for i, r := range runs {
		io.WriteString(w, lines[i+1])
		if !denials {
			continue
		}
		for _, e := range r.Denials() {
			fmt.Fprintf(w, "  %s\n", Describe(e))
		}
		if d := droppedDenials(r); d > 0 {
			fmt.Fprintf(w, "  … and %d more denials that were not recorded (the log's cap per run)\n", d)
		}
	}
}

func droppedDenials(r *Run) int {
	n := 0
	for _, e := range r.Events {
		if e.Kind == Dropped {
			n += e.Counts["net-denied"] + e.Counts[string(Denied)]
		}
	}
	return n
}

// status says how the run ended.
func status(r *Run) string {
	switch {
	case r.End != nil && r.End.Status != nil:
		return "exit " + strconv.Itoa(*r.End.Status)
	case r.End != nil:
		return "ended"
	case r.Start != nil && r.Start.Backend == "":
		return "unconfined"
	}
	return "no end"
}

func duration(r *Run) string {
	if r.End == nil {
		return "-"
	}
	return FormatDuration(time.Duration(r.End.DurationMS * float64(time.Millisecond)))
}

// FormatDuration prints d short: 0.42s, 12.3s, 3m04s, 1h02m.
func FormatDuration(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// WriteEvent prints e as one line: time, run, kind and what happened.
func WriteEvent(w io.Writer, e Event, loc *time.Location) {
	fmt.Fprintf(w, "%s  %s  %-10s  %s\n", e.Time.In(loc).Format(timeLayout+".000"), e.Run, e.Kind, Describe(e))
}

// Describe says what e reports, in a few words.
func Describe(e Event) string {
	switch e.Kind {
	case RunStart:
		if e.Backend == "" {
			return join("UNCONFINED: "+e.Reason, "project "+e.Project, "command "+shellJoin(e.Command))
		}
		return join("backend "+e.Backend, "network "+e.Network, "project "+e.Project, opt("workspace ", e.Workspace),
			"cwd "+e.Cwd, "command "+shellJoin(e.Command), opt("plan ", e.Digest))
	case RunEnd:
		s := status(&Run{End: &e})
		s += " after " + FormatDuration(time.Duration(e.DurationMS*float64(time.Millisecond)))
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		return s
	case Net:
		verdict := "allowed"
		if e.Allowed == nil || !*e.Allowed {
			verdict = "denied"
		}
		s := "network " + verdict + " " + e.Proto + " " + e.Target
		if e.Reason != "" {
			s += " (" + e.Reason + ")"
		}
		if e.Unreachable != "" {
			s += ", but it cannot be reached: " + e.Unreachable
		}
		return s
	case Quarantine:
		return join(e.Action+" "+e.Path, e.Detail, opt("rule ", e.Rule))
	case Unseen:
		return join(e.Action+" "+e.Path, e.Detail)
	case Limit:
		return e.Limit + " limit: " + e.Detail
	case Denied:
		return join("denied "+e.Op+" "+e.Path, opt("", e.Errno), opt("by ", e.Process), opt("rule ", e.Rule), opt("allow: ", e.Detail))
	case Dropped:
		var kinds []string
		for k := range e.Counts {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %d", k, e.Counts[k]))
		}
		return e.Detail + " (" + strings.Join(parts, ", ") + ")"
	}
	return join(e.Detail, opt("", e.Reason))
}

// join joins the non-empty parts with ", ".
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}

// opt is prefix+v, or "" when v is empty.
func opt(prefix, v string) string {
	if v == "" {
		return ""
	}
	return prefix + v
}

// shellJoin prints a command as a shell would take it. Its arguments are
// escaped already; quoting only shows where one ends.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsAny(a, " '\"$`\\!*?[]{}()<>|&;#~\t") {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// clipRunes cuts s to n characters, marking the cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
