package event

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Summary is the sink that tells the user, on stderr, what they must know
// about a run as it happens: each item an after-run check neutralised,
// each limit hit, each warning, each allowed host that could not be
// reached (once). Text that came from the box is escaped, so
// nothing it chose can act on the terminal. What the box was refused is
// summed up at the end by another sink (package refusal), which knows the
// policy.
type Summary struct {
	W io.Writer
	// NetLog is the --net-log file; "" for none.
	NetLog string
	// What the box changed out of git's sight, summed up in one line at
	// the end (Close); the audit log has each item.
	run    string
	unseen []Event
	// The allowed hosts that could not be reached, said once each.
	unreachable map[string]bool
}

// Emit writes the lines e calls for.
func (s *Summary) Emit(e Event) {
	switch e.Kind {
	case Quarantine:
		if e.Path != "" {
			fmt.Fprintf(s.W, "agentbox: warning: %s: %s\n", Escape(e.Path), Escape(e.Detail))
		} else {
			fmt.Fprintf(s.W, "agentbox: warning: %s\n", Escape(e.Detail))
		}
	case Limit:
		fmt.Fprintf(s.W, "agentbox: the box hit its %s limit: %s\n", e.Limit, Escape(e.Detail))
	case Warning:
		fmt.Fprintf(s.W, "agentbox: warning: %s\n", Escape(e.Detail))
	case Net:
		if e.Unreachable == "" || s.unreachable[e.Target] {
			return
		}
		if s.unreachable == nil {
			s.unreachable = map[string]bool{}
		}
		s.unreachable[e.Target] = true
		got := "the box got 502 Bad Gateway"
		if e.Proto == "socks5" {
			got = "the box's SOCKS5 connect failed"
		}
		fmt.Fprintf(s.W, "agentbox: %s is allowed, but it cannot be reached: %s (%s)\n",
			Escape(e.Target), Escape(e.Unreachable), got)
	case Unseen:
		s.run = e.Run
		s.unseen = append(s.unseen, e)
	}
}

// Close writes, in one line, what the box changed that git status will
// not show.
func (s *Summary) Close() error {
	if len(s.unseen) > 0 {
		fmt.Fprintln(s.W, UnseenLine(s.unseen, s.run))
	}
	return nil
}

// UnseenLine sums up Unseen events in one line: the trees out of git
// changed, the new programs, the index marks cleared, and where the whole
// list is.
func UnseenLine(evs []Event, run string) string {
	var trees, untracked, progs, marks, other []string
	seen := map[string]bool{}
	for _, e := range evs {
		p := Escape(e.Path)
		if seen[e.Action+"\x00"+e.Path] {
			continue // each change once
		}
		seen[e.Action+"\x00"+e.Path] = true
		switch e.Action {
		case "ignored tree", "untracked tree":
			// "N folder(s) changed[, ...]: ..."
			n, _, _ := strings.Cut(e.Detail, " changed")
			if e.Action == "ignored tree" {
				trees = append(trees, p+" ("+n+")")
			} else {
				untracked = append(untracked, p+" ("+n+")")
			}
		case "new program":
			progs = append(progs, p)
		case "index mark cleared", "index mark":
			marks = append(marks, p)
		default:
			other = append(other, p)
		}
	}
	short := func(list []string, n int) string {
		if len(list) <= n {
			return strings.Join(list, ", ")
		}
		return strings.Join(list[:n], ", ") + fmt.Sprintf(" and %d more", len(list)-n)
	}
	var parts []string
	if len(marks) > 0 {
		parts = append(parts, "git index marks that hid changes, cleared: "+short(marks, 3))
	}
	if len(progs) > 0 {
		parts = append(parts, "new or changed programs: "+short(progs, 3))
	}
	if len(trees) > 0 {
		parts = append(parts, "ignored "+noun(len(trees), "tree", "trees")+": "+short(trees, 3))
	}
	if len(untracked) > 0 {
		parts = append(parts, "inside untracked "+noun(len(untracked), "folder", "folders")+": "+short(untracked, 3))
	}
	if len(other) > 0 {
		parts = append(parts, short(other, 3))
	}
	line := "agentbox: out of git's sight the box changed " + strings.Join(parts, "; ")
	if run != "" {
		line += "; agentbox log --run " + run + " lists them"
	}
	return line
}

// noun is the word for n things.
func noun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Escape makes text that a boxed process chose safe to print and to store:
// every character that is not graphic (control characters such as escape
// sequences, carriage returns and newlines; format characters such as
// bidirectional overrides and zero-width marks, which make a terminal show
// text other than what is there; line and paragraph separators) and invalid
// UTF-8 become Go-style escapes (\x1b, \u202e); everything else is kept.
// Its result holds graphic characters only, so escaping it again changes
// nothing.
func Escape(s string) string {
	clean := utf8.ValidString(s)
	for _, r := range s {
		if !clean {
			break
		}
		clean = unicode.IsGraphic(r)
	}
	if clean {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return strings.TrimSuffix(strings.TrimPrefix(q, `"`), `"`)
}
