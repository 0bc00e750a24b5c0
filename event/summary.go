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
// each limit hit, each warning. Text that came from the box is escaped, so
// nothing it chose can act on the terminal. What the box was refused is
// summed up at the end by another sink (package refusal), which knows the
// policy.
type Summary struct {
	W io.Writer
	// NetLog is the --net-log file; "" for none.
	NetLog string
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
	}
}

// Close does nothing: Summary writes as it goes.
func (s *Summary) Close() error { return nil }

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
