package plan

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The readable outputs (plan, verify, a backend's description) are written
// as lines whose table cells are separated by Cell, as for text/tabwriter:
// consecutive lines with cells form one table. In a row, Why ends the
// cells that must stay on the row's line (a number, a path, an access)
// and starts the ones that say why (the rule, a note), which Fit may move
// below the row and wrap. Names (paths, rules, notes) go in through Escape,
// so that none of them can hold a mark, a line break or a terminal escape.
const (
	Cell = "\t"
	Why  = "\v"
)

// Fit writes text laid out for a terminal of width columns. Each table's
// columns are aligned. A table whose rows fit in width stays as it is;
// otherwise each row keeps its fixed cells on its line and the why cells
// go below it, joined, indented and wrapped at spaces. Any other line
// wider than width is wrapped at spaces, its continuation lines indented
// past its label ("backend:   …") or its own indentation. A word longer
// than a line (a long path) is never cut. width <= 0 aligns the tables and
// wraps nothing, as --wide asks.
func Fit(w io.Writer, text string, width int) error {
	var b strings.Builder
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i := 0; i < len(lines); {
		if !isRow(lines[i]) {
			for _, l := range wrapLine(Escape(lines[i]), width) {
				b.WriteString(l)
				b.WriteByte('\n')
			}
			i++
			continue
		}
		j := i
		for j < len(lines) && isRow(lines[j]) {
			j++
		}
		for _, l := range table(lines[i:j], width) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		i = j
	}
	if text == "" {
		return nil
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func isRow(line string) bool { return strings.ContainsAny(line, Cell+Why) }

// row is one line of a table: the fixed cells and the why cells.
type row struct{ fixed, why []string }

func splitRow(line string) row {
	fixed, why, _ := strings.Cut(line, Why)
	r := row{fixed: strings.Split(fixed, Cell)}
	for i := range r.fixed {
		r.fixed[i] = Escape(r.fixed[i])
	}
	if why != "" {
		for _, c := range strings.Split(why, Cell) {
			r.why = append(r.why, Escape(c))
		}
	}
	return r
}

// padding is the space between two columns.
const padding = 2

// table lays out a block of rows.
func table(lines []string, width int) []string {
	rows := make([]row, len(lines))
	for i, l := range lines {
		rows[i] = splitRow(l)
	}
	// All cells as columns: the full table.
	full := make([][]string, len(rows))
	for i, r := range rows {
		full[i] = append(append([]string(nil), r.fixed...), r.why...)
	}
	out := align(full)
	fits := width <= 0
	if !fits {
		fits = true
		for _, l := range out {
			if runes(l) > width {
				fits = false
				break
			}
		}
	}
	if fits {
		return out
	}
	fixed := make([][]string, len(rows))
	for i, r := range rows {
		fixed[i] = r.fixed
	}
	heads := align(fixed)
	var lines2 []string
	for i, r := range rows {
		indent := strings.Repeat(" ", leading(heads[i])+4)
		head := heads[i]
		last := r.fixed[len(r.fixed)-1]
		if runes(head) > width && len(r.fixed) > 1 && last != "" && strings.HasSuffix(head, last) {
			// The last fixed cell (a long path) goes on a line of its own.
			lines2 = append(lines2, strings.TrimRight(strings.TrimSuffix(head, last), " "))
			lines2 = append(lines2, wrapWords(indent, indent, last, width)...)
		} else {
			lines2 = append(lines2, head)
		}
		why := ""
		for _, c := range r.why {
			switch {
			case c == "":
			case why == "":
				why = c
			case strings.HasPrefix(c, "("):
				why += " " + c
			default:
				why += " — " + c
			}
		}
		if why != "" {
			lines2 = append(lines2, wrapWords(indent, indent, why, width)...)
		}
	}
	return lines2
}

// align pads every cell but a row's last to its column's width, as
// text/tabwriter does with a padding of two and a minimum width of two.
func align(rows [][]string) []string {
	var widths []int
	for _, r := range rows {
		for c := 0; c < len(r)-1; c++ {
			if c >= len(widths) {
				widths = append(widths, 0)
			}
			if n := runes(r[c]) + padding; n > widths[c] {
				widths[c] = n
			}
		}
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		for c, cell := range r {
			b.WriteString(cell)
			if c < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[c]-runes(cell)))
			}
		}
		out[i] = strings.TrimRight(b.String(), " ")
	}
	return out
}

// wrapLine wraps one line that is not a table row.
func wrapLine(line string, width int) []string {
	if width <= 0 || runes(line) <= width {
		return []string{line}
	}
	lead := leading(line)
	first, text, hang := line[:lead], line[lead:], lead+2
	if n := labelEnd(line); n > 0 && n <= width/2 {
		// The label keeps its own spacing; the rest lines up after it.
		first, text, hang = line[:n], line[n:], n
	}
	return wrapWords(first, strings.Repeat(" ", hang), text, width)
}

// labelEnd is where the text after a label such as "backend:   " or
// "  passed over: " starts, 0 when the line has none.
func labelEnd(line string) int {
	i := leading(line)
	j := i
	for j < len(line) && (line[j] >= 'a' && line[j] <= 'z' || line[j] >= 'A' && line[j] <= 'Z' || line[j] == ' ' || line[j] == '-') {
		j++
	}
	if j == i || j >= len(line) || line[j] != ':' || j+1 >= len(line) || line[j+1] != ' ' {
		return 0
	}
	j++
	for j < len(line) && line[j] == ' ' {
		j++
	}
	return j
}

// wrapWords fills lines of at most width columns with the words of text,
// the first line starting with first, the others with rest.
func wrapWords(first, rest, text string, width int) []string {
	words := strings.Fields(text)
	var out []string
	cur := first
	empty := true
	for _, word := range words {
		switch {
		case empty:
			cur += word
			empty = false
		case width > 0 && runes(cur)+1+runes(word) > width:
			out = append(out, cur)
			cur = rest + word
		default:
			cur += " " + word
		}
	}
	if !empty {
		out = append(out, cur)
	}
	return out
}

func leading(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

func runes(s string) int { return utf8.RuneCountInString(s) }

// Escape makes a name safe to print on a terminal and in Fit's layout:
// every character that is not printable (control characters and escape
// sequences, tabs, line breaks, bidirectional overrides) and every byte
// that is not UTF-8 becomes a Go-style escape; the rest is kept. A folder
// called "\x1b]0;…" shows as text, and cannot split a table's cells.
func Escape(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
