// Package wrap fits agentbox's readable output to the terminal: the width
// to fit (the terminal's, $COLUMNS, or 100 columns when the output is not a
// terminal) and the wrapping of lines that are longer, with the rest of a
// line indented under where its text starts.
//
// What does not belong here: what is printed (each command's own package);
// the machine-readable outputs (--json), which are never wrapped.
package wrap

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Default is the width of an output that is not a terminal when $COLUMNS
// does not say one.
const Default = 100

// Width is how many columns w's readable output may use: none (0: no
// limit) with wide (--wide); the terminal's width when w is one; else
// $COLUMNS when it is a number; else Default.
func Width(w io.Writer, wide bool) int {
	if wide {
		return 0
	}
	if f, ok := w.(*os.File); ok {
		if n := terminalWidth(f); n > 0 {
			return n
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return Default
}

// Line wraps one line (no newline in it) to width columns (0: no limit):
// it breaks at spaces, a word longer than a line is cut, and each
// continuation is indented under the line's text (see indentOf).
func Line(s string, width int) []string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return []string{s}
	}
	ind := indentOf(s, width)
	pad := strings.Repeat(" ", ind)
	var out []string
	first := true
	for {
		limit := width
		prefix := ""
		if !first {
			limit = width - ind
			prefix = pad
			s = strings.TrimLeft(s, " ")
		}
		if utf8.RuneCountInString(s) <= limit {
			out = append(out, prefix+s)
			return out
		}
		cut := runeOffset(s, limit)
		// The last space at or before the limit (not in the leading
		// indent of the first line).
		start := 0
		if first {
			start = len(s) - len(strings.TrimLeft(s, " "))
		}
		brk := strings.LastIndexByte(s[:cut+1], ' ')
		if cut < len(s) && s[cut] == ' ' {
			brk = cut
		}
		if brk <= start {
			brk = cut // one word longer than the line: cut it
			out = append(out, prefix+s[:brk])
			s = s[brk:]
		} else {
			out = append(out, prefix+strings.TrimRight(s[:brk], " "))
			s = s[brk+1:]
		}
		first = false
	}
}

// runeOffset is the byte offset of rune n of s (len(s) when s is shorter).
func runeOffset(s string, n int) int {
	i := 0
	for off := range s {
		if i == n {
			return off
		}
		i++
	}
	return len(s)
}

// indentOf is where a wrapped line's continuations start: under the text
// after "agentbox: WORD: ", or under a table's last column (the text after
// the last run of two or more spaces in the first part of the line), else
// two columns in from the line's own indent; never more than half the
// width.
func indentOf(s string, width int) int {
	lead := len(s) - len(strings.TrimLeft(s, " "))
	ind := lead + 2
	if strings.HasPrefix(s, "agentbox: ") {
		if _, rest, ok := strings.Cut(s[len("agentbox: "):], ": "); ok && !strings.Contains(s[:len(s)-len(rest)], " (") {
			ind = len(s) - len(rest)
		}
	} else if i := strings.LastIndex(s[:min(len(s), width/2+2)], "  "); i > lead {
		j := i
		for j < len(s) && s[j] == ' ' {
			j++
		}
		ind = j
	}
	if ind > width/2 {
		ind = min(lead+2, width/2)
	}
	return ind
}

// Text wraps every line of s to width.
func Text(s string, width int) string {
	if width <= 0 {
		return s
	}
	var b strings.Builder
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		for j, part := range Line(l, width) {
			if j > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(part)
		}
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Writer wraps what is written to it, line by line, to Width columns, and
// writes it to W. A line without its newline yet waits for it (Flush
// writes it).
type Writer struct {
	W     io.Writer
	Width int
	buf   bytes.Buffer
}

// NewWriter wraps w to width.
func NewWriter(w io.Writer, width int) *Writer { return &Writer{W: w, Width: width} }

// Write takes p; it writes the complete lines.
func (w *Writer) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf.Next(i + 1))
		if _, err := io.WriteString(w.W, Text(strings.TrimSuffix(line, "\n"), w.Width)+"\n"); err != nil {
			return len(p), err
		}
	}
}

// Flush writes a last line that has no newline.
func (w *Writer) Flush() error {
	if w.buf.Len() == 0 {
		return nil
	}
	_, err := io.WriteString(w.W, Text(w.buf.String(), w.Width))
	w.buf.Reset()
	return err
}
