package learn

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentbox/agentbox/policy"
)

// Addition is one value a proposal adds to a policy file.
type Addition struct {
	// Key is the dotted key: "filesystem.writable", "network.allow",
	// "sandbox.backend".
	Key string
	// Value is the value, as a policy spells it ("~/.npm").
	Value string
	// List says Value is one more entry of an array; else it is the
	// key's single value.
	List bool
	// Comment says why, one line each (without "#").
	Comment []string
}

// Edit returns the policy file data with every addition made, each with
// its comment above it, and everything else as it was: a value goes at
// the end of its array, which a single-line array becomes a multi-line
// one for; a missing key goes right below its table's header; a missing
// table at the end; a new file starts with version = 1. The result is
// parsed again and checked to hold everything the file held and the
// additions: a file Edit cannot change that way (a key written as a
// dotted key or an inline table) is an error, and nothing is changed.
func Edit(file string, data []byte, adds []Addition) ([]byte, error) {
	before, err := policy.Parse("project", file, data)
	if err != nil {
		return nil, err
	}
	text := string(data)
	if strings.TrimSpace(text) == "" {
		text = "version = 1\n"
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	for _, a := range adds {
		text = edit(text, a)
	}
	after, err := policy.Parse("project", file, []byte(text))
	if err != nil {
		return nil, fmt.Errorf("%s: the proposal would not parse (%v); add the entries by hand", file, err)
	}
	if err := holds(before, after, adds); err != nil {
		return nil, fmt.Errorf("%s: %v; add the entries by hand", file, err)
	}
	return []byte(text), nil
}

// holds checks that after has everything before had, and the additions.
func holds(before, after *policy.Layer, adds []Addition) error {
	for key, list := range before.Lists {
		for i, e := range list {
			if i >= len(after.Lists[key]) || after.Lists[key][i].Value != e.Value {
				return fmt.Errorf("%s would lose or reorder its entries", key)
			}
		}
	}
	for key, e := range before.Scalars {
		if after.Scalars[key].Value != e.Value && !slices.ContainsFunc(adds, func(a Addition) bool { return a.Key == key }) {
			return fmt.Errorf("%s would change", key)
		}
	}
	for _, a := range adds {
		if a.List {
			if !slices.ContainsFunc(after.Lists[a.Key], func(e policy.Entry) bool { return e.Value == a.Value }) {
				return fmt.Errorf("%s could not be given %q where it is written", a.Key, a.Value)
			}
		} else if after.Scalars[a.Key].Value != a.Value {
			return fmt.Errorf("%s could not be set to %q where it is written", a.Key, a.Value)
		}
	}
	return nil
}

// line is one line of a policy file, with what the scanner found in it.
type line struct {
	text  string
	table string // the table the line belongs to
	key   string // the key it starts, "" if none
	// header says the line is a table header.
	header bool
}

// lines splits text into lines and notes tables and keys. Lines inside a
// multi-line array or string belong to the key above them.
func lines(text string) []line {
	var out []line
	table := ""
	depth, inString := 0, ""
	for _, t := range strings.SplitAfter(text, "\n") {
		if t == "" {
			continue
		}
		l := line{text: t, table: table}
		trimmed := strings.TrimSpace(t)
		if depth == 0 && inString == "" {
			switch {
			case strings.HasPrefix(trimmed, "[[") || strings.HasPrefix(trimmed, "["):
				name := strings.Trim(strings.SplitN(trimmed, "]", 2)[0], "[ \t")
				table = name
				l.table, l.header = name, true
			case trimmed != "" && !strings.HasPrefix(trimmed, "#"):
				if k, _, ok := strings.Cut(trimmed, "="); ok {
					l.key = strings.Trim(strings.TrimSpace(k), `"'`)
				}
			}
		}
		depth, inString = scan(t, depth, inString)
		out = append(out, l)
	}
	return out
}

// scan follows brackets and strings through one line, from the state
// (array depth, open multi-line string delimiter) the line starts in.
func scan(t string, depth int, inString string) (int, string) {
	for i := 0; i < len(t); i++ {
		if inString != "" {
			if strings.HasPrefix(t[i:], inString) {
				i += len(inString) - 1
				inString = ""
			} else if inString == `"""` && t[i] == '\\' {
				i++
			}
			continue
		}
		switch c := t[i]; {
		case strings.HasPrefix(t[i:], `"""`) || strings.HasPrefix(t[i:], `'''`):
			inString = t[i : i+3]
			i += 2
		case c == '"':
			for i++; i < len(t) && t[i] != '"'; i++ {
				if t[i] == '\\' {
					i++
				}
			}
		case c == '\'':
			for i++; i < len(t) && t[i] != '\''; i++ {
			}
		case c == '#':
			return depth, inString
		case c == '[':
			depth++
		case c == ']':
			depth--
		}
	}
	return depth, inString
}

// edit makes one addition in text.
func edit(text string, a Addition) string {
	table, key, _ := strings.Cut(a.Key, ".")
	ls := lines(text)
	comment := ""
	for _, c := range a.Comment {
		comment += "# " + c + "\n"
	}
	// The key, where it is written in its table.
	for i, l := range ls {
		if l.table != table || l.key != key {
			continue
		}
		end := i
		if a.List {
			depth, inString := 0, ""
			for end = i; end < len(ls); end++ {
				depth, inString = scan(ls[end].text, depth, inString)
				if depth == 0 && inString == "" {
					break
				}
			}
			if end == len(ls) {
				return text
			}
			if end > i && strings.TrimSpace(ls[end].text[:lastBracket(ls[end].text)]) == "" {
				// "]" on a line of its own: the last entry above it
				// needs a comma.
				done := false
				for k := end - 1; k > i && !done; k-- {
					ls[k].text, done = withComma(ls[k].text)
				}
				if !done {
					ls[i].text, _ = withComma(ls[i].text)
				}
			}
			return join(ls[:end]) + appendEntry(ls[end].text, i == end, comment, a.Value) + join(ls[end+1:])
		}
		indent := l.text[:len(l.text)-len(strings.TrimLeft(l.text, " \t"))]
		var b strings.Builder
		for _, c := range a.Comment {
			b.WriteString(indent + "# " + c + "\n")
		}
		return join(ls[:i]) + b.String() + indent + key + " = " + quote(a.Value) + "\n" + join(ls[i+1:])
	}
	value := quote(a.Value)
	if a.List {
		value = "[\n    " + quote(a.Value) + ",\n]"
	}
	entry := comment + key + " = " + value + "\n"
	// The table's header: the key right below it.
	for i, l := range ls {
		if l.header && l.table == table {
			return join(ls[:i+1]) + entry + join(ls[i+1:])
		}
	}
	return strings.TrimRight(text, "\n") + "\n\n[" + table + "]\n" + entry
}

// appendEntry adds value at the end of the array that closes in the line
// t (which also opens it when single): after the last entry, with a
// comma, on a line of its own with its comment above.
func appendEntry(t string, single bool, comment, value string) string {
	close := lastBracket(t)
	before, after := t[:close], t[close:]
	body := strings.TrimRight(before, " \t")
	trail := ""
	if !strings.HasSuffix(body, "[") && !strings.HasSuffix(body, ",") && strings.TrimSpace(body) != "" {
		trail = ","
	}
	ind := "    "
	var b strings.Builder
	if strings.TrimSpace(body) != "" {
		b.WriteString(body + trail + "\n")
	}
	for _, c := range strings.SplitAfter(comment, "\n") {
		if c != "" {
			b.WriteString(ind + c)
		}
	}
	b.WriteString(ind + quote(value) + ",\n")
	if single || strings.TrimSpace(before) != "" {
		return b.String() + after
	}
	return b.String() + strings.TrimLeft(after, " \t")
}

// lastBracket is the index of the "]" that closes the array in t: the
// last one outside strings and comments.
func lastBracket(t string) int {
	at := -1
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '"':
			for i++; i < len(t) && t[i] != '"'; i++ {
				if t[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(t) && t[i] != '\''; i++ {
			}
		case '#':
			return at
		case ']':
			at = i
		}
	}
	return at
}

func join(ls []line) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.text)
	}
	return b.String()
}

// quote writes s as a TOML basic string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// stripComment returns t without its comment and line end.
func stripComment(t string) string {
	at := len(t)
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '"':
			for i++; i < len(t) && t[i] != '"'; i++ {
				if t[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(t) && t[i] != '\''; i++ {
			}
		case '#':
			at = i
			i = len(t)
		}
	}
	return strings.TrimRight(t[:at], " \t\r\n")
}

// withComma returns the array line t with a comma after its last entry,
// and false for a line with no entry (blank, a comment) or one that ends
// with a comma or opens the array already.
func withComma(t string) (string, bool) {
	body := stripComment(t)
	trimmed := strings.TrimSpace(body)
	switch {
	case trimmed == "":
		return t, false
	case strings.HasSuffix(trimmed, ",") || strings.HasSuffix(trimmed, "["):
		return t, true
	}
	return body + "," + t[len(body):], true
}
