package seatbelt

import (
	"fmt"
	"strings"
)

// Node is one element of a profile as Read reads it: a list (Kids), or an
// atom: a symbol, a string ("…", unescaped) or a regular expression
// (#"…").
type Node struct {
	List   bool
	Kids   []*Node
	Symbol string
	String string
	Regex  string
	IsStr  bool
	IsRe   bool
	Line   int
}

// Head is the first symbol of a list, "" for anything else.
func (n *Node) Head() string {
	if n.List && len(n.Kids) > 0 && !n.Kids[0].List {
		return n.Kids[0].Symbol
	}
	return ""
}

// Read parses an SBPL profile into its top-level forms: the subset of the
// language agentbox writes (lists, symbols, strings with \" and \\
// escapes, #"…" regular expressions, ; comments). It is how the tests
// check that every profile agentbox makes is well formed, and what each
// rule of the plan became.
func Read(src string) ([]*Node, error) {
	r := &reader{src: src, line: 1}
	var top []*Node
	for {
		r.space()
		if r.pos >= len(r.src) {
			return top, nil
		}
		n, err := r.node()
		if err != nil {
			return nil, err
		}
		if !n.List {
			return nil, fmt.Errorf("line %d: an atom at the top level", n.Line)
		}
		top = append(top, n)
	}
}

type reader struct {
	src  string
	pos  int
	line int
}

func (r *reader) space() {
	for r.pos < len(r.src) {
		switch c := r.src[r.pos]; {
		case c == '\n':
			r.line++
			r.pos++
		case c == ' ' || c == '\t' || c == '\r':
			r.pos++
		case c == ';':
			for r.pos < len(r.src) && r.src[r.pos] != '\n' {
				r.pos++
			}
		default:
			return
		}
	}
}

func (r *reader) node() (*Node, error) {
	line := r.line
	switch c := r.src[r.pos]; {
	case c == '(':
		r.pos++
		n := &Node{List: true, Line: line}
		for {
			r.space()
			if r.pos >= len(r.src) {
				return nil, fmt.Errorf("line %d: a list that is never closed", line)
			}
			if r.src[r.pos] == ')' {
				r.pos++
				return n, nil
			}
			k, err := r.node()
			if err != nil {
				return nil, err
			}
			n.Kids = append(n.Kids, k)
		}
	case c == ')':
		return nil, fmt.Errorf("line %d: a ) that closes nothing", line)
	case c == '"':
		s, err := r.str()
		return &Node{String: s, IsStr: true, Line: line}, err
	case c == '#' && strings.HasPrefix(r.src[r.pos:], `#"`):
		r.pos += 2
		end := strings.IndexAny(r.src[r.pos:], "\"\n")
		if end < 0 || r.src[r.pos+end] != '"' {
			return nil, fmt.Errorf("line %d: a regular expression that is never closed", line)
		}
		re := r.src[r.pos : r.pos+end]
		r.pos += end + 1
		return &Node{Regex: re, IsRe: true, Line: line}, nil
	default:
		start := r.pos
		for r.pos < len(r.src) && !strings.ContainsRune(" \t\r\n();\"", rune(r.src[r.pos])) {
			r.pos++
		}
		return &Node{Symbol: r.src[start:r.pos], Line: line}, nil
	}
}

func (r *reader) str() (string, error) {
	line := r.line
	r.pos++ // the opening quote
	var b strings.Builder
	for r.pos < len(r.src) {
		c := r.src[r.pos]
		switch c {
		case '"':
			r.pos++
			return b.String(), nil
		case '\\':
			if r.pos+1 >= len(r.src) {
				break
			}
			b.WriteByte(r.src[r.pos+1])
			r.pos += 2
			continue
		case '\n':
			return "", fmt.Errorf("line %d: a string that runs past its line", line)
		}
		b.WriteByte(c)
		r.pos++
	}
	return "", fmt.Errorf("line %d: a string that is never closed", line)
}
