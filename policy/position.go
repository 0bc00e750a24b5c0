package policy

import (
	"fmt"
	"strings"
)

// keyLines maps a TOML key path ("filesystem.deny", "filesystem.deny[1]") to
// the line it is written on, so errors and plan output can point at it. The
// TOML decoder does not expose key positions, so this reads the text itself;
// it only has to be right for valid documents, which the decoder has checked.
type keyLines map[string]int

func (k keyLines) line(key string) int {
	for key != "" {
		if n, ok := k[key]; ok {
			return n
		}
		if i := strings.LastIndexAny(key, ".["); i > 0 {
			key = key[:i]
			continue
		}
		break
	}
	return 0
}

func positions(data []byte) keyLines {
	out := keyLines{}
	table := ""
	plain := ""                // table without an array-of-tables index
	arrays := map[string]int{} // how many [[name]] tables so far
	lines := strings.Split(string(data), "\n")
	multi := "" // the delimiter of a multi-line string being skipped
	for i := 0; i < len(lines); i++ {
		if multi != "" {
			if strings.Contains(lines[i], multi) {
				multi = ""
			}
			continue
		}
		if d := openMultiline(lines[i]); d != "" {
			multi = d
		}
		line := strings.TrimSpace(stripComment(lines[i]))
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "[["):
			// An array of tables: [[network.secret]] is network.secret[0],
			// then network.secret[1], ...
			plain = unquoteKey(strings.TrimSuffix(strings.TrimPrefix(line, "[["), "]]"))
			table = fmt.Sprintf("%s[%d]", plain, arrays[plain])
			arrays[plain]++
			if _, ok := out[plain]; !ok {
				out[plain] = i + 1
			}
			out[table] = i + 1
			continue
		case strings.HasPrefix(line, "["):
			table = unquoteKey(strings.TrimSuffix(strings.TrimPrefix(line, "["), "]"))
			plain = table
			out[table] = i + 1
			continue
		}
		eq := strings.Index(line, "=")
		if eq <= 0 {
			continue
		}
		key := unquoteKey(line[:eq])
		if plain != table {
			// The decoder names a key in an array of tables without
			// the index: the first such line stands for it.
			if k := plain + "." + key; out[k] == 0 {
				out[k] = i + 1
			}
		}
		if table != "" {
			key = table + "." + key
		}
		out[key] = i + 1
		value := strings.TrimSpace(line[eq+1:])
		if !strings.HasPrefix(value, "[") {
			continue
		}
		// An array: note the line of each element, following it over lines.
		elem, depth := 0, 0
		for j := i; j < len(lines); j++ {
			text := stripComment(lines[j])
			if j == i {
				text = value
			}
			for k := 0; k < len(text); k++ {
				c := text[k]
				switch c {
				case '[':
					depth++
				case ']':
					depth--
				case '"', '\'':
					end := closingQuote(text, k)
					if depth == 1 {
						out[fmt.Sprintf("%s[%d]", key, elem)] = j + 1
						elem++
					}
					k = end
				}
				if depth == 0 {
					break
				}
			}
			if depth <= 0 {
				i = j
				break
			}
		}
	}
	return out
}

// openMultiline returns the delimiter of a multi-line string that opens on
// this line and does not close on it, or "".
func openMultiline(line string) string {
	for _, d := range []string{tripleDouble, tripleSingle} {
		if strings.Count(line, d)%2 == 1 {
			return d
		}
	}
	return ""
}

const (
	tripleDouble = `"""`
	tripleSingle = "\x27\x27\x27"
)

// stripComment cuts a # comment that is not inside a string.
func stripComment(s string) string {
	for k := 0; k < len(s); k++ {
		switch s[k] {
		case '"', '\'':
			k = closingQuote(s, k)
		case '#':
			return s[:k]
		}
	}
	return s
}

// closingQuote returns the index of the quote that closes the string opened
// at s[start], or the last index when it is not closed on this line.
func closingQuote(s string, start int) int {
	q := s[start]
	for k := start + 1; k < len(s); k++ {
		if q == '"' && s[k] == '\\' {
			k++
			continue
		}
		if s[k] == q {
			return k
		}
	}
	return len(s) - 1
}

func unquoteKey(s string) string {
	parts := strings.Split(strings.TrimSpace(s), ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}
