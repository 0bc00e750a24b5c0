package hostexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
)

// CommandStrings returns every string under the top-level keys of a JSON
// or TOML document, at any depth: the command lines and program paths a
// control file names (hooks, MCP servers, a notify program). A document
// that does not parse names nothing; one too complex for agentbox to
// parse is an error (errTOMLTooComplex), never "nothing".
func CommandStrings(data []byte, format string, keys []string) ([]string, error) {
	var doc map[string]any
	switch format {
	case "json":
		d := json.NewDecoder(bytes.NewReader(data))
		if d.Decode(&doc) != nil {
			return nil, nil
		}
	case "toml":
		if err := decodeTOML(string(data), &doc); err != nil {
			if errors.Is(err, errTOMLTooComplex) {
				return nil, err
			}
			return nil, nil
		}
	default:
		return nil, nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, k := range keys {
		if v, ok := doc[k]; ok {
			walk(v)
		}
	}
	return out, nil
}

// Words splits a command line into the words a shell would see, roughly:
// blanks and shell operators separate, quotes are removed. It never runs
// anything; it is used to find the files a command names, so a word too
// many costs nothing but a path kept read-only.
func Words(cmd string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	quote := byte(0)
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				b.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\' && i+1 < len(cmd):
			i++
			b.WriteByte(cmd[i])
		case strings.IndexByte(" \t\n;|&()<>`=", c) >= 0:
			flush()
		default:
			b.WriteByte(c)
		}
	}
	flush()
	return out
}

// Expander turns a word into a path: ~ and variables the caller knows are
// expanded; ok is false when the word holds another variable or is not a
// path at all.
type Expander struct {
	Home string
	// Vars are the variables that may appear in the word
	// (CLAUDE_PROJECT_DIR, CLAUDE_CONFIG_DIR, HOME).
	Vars map[string]string
	// Dir is the folder a relative path is relative to; "" refuses
	// relative paths.
	Dir string
}

// Path expands word; see Expander.
func (e Expander) Path(word string) (string, bool) {
	w := word
	if w == "~" || strings.HasPrefix(w, "~/") {
		w = e.Home + w[1:]
	}
	bad := false
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if w[i] != '$' {
			b.WriteByte(w[i])
			continue
		}
		j := i + 1
		name := ""
		if j < len(w) && w[j] == '{' {
			end := strings.IndexByte(w[j:], '}')
			if end < 0 {
				return "", false
			}
			name = w[j+1 : j+end]
			i = j + end
		} else {
			k := j
			for k < len(w) && (isAlnum(w[k]) || w[k] == '_') {
				k++
			}
			name = w[j:k]
			i = k - 1
		}
		v, ok := e.Vars[name]
		if name == "HOME" {
			v, ok = e.Home, true
		}
		if !ok || v == "" {
			bad = true
			break
		}
		b.WriteString(v)
	}
	if bad {
		return "", false
	}
	p := b.String()
	if !strings.Contains(p, "/") || strings.ContainsAny(p, "*?[") || strings.Contains(p, "://") {
		return "", false
	}
	if !filepath.IsAbs(p) {
		if e.Dir == "" {
			return "", false
		}
		p = filepath.Join(e.Dir, p)
	}
	return filepath.Clean(p), true
}

// Sourced returns the files a shell startup file sources with ". FILE" or
// "source FILE" (also after "[ -f FILE ] &&" and "if ... then"), as
// written.
func Sourced(data []byte) []string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		words := Words(line)
		for i := 0; i+1 < len(words); i++ {
			if words[i] == "." || words[i] == "source" {
				out = append(out, words[i+1])
			}
		}
	}
	return out
}
