package usage

import (
	"fmt"
	"io"
	"strings"
)

// Section is a part of the man page that is prose, not made from the
// commands: paragraphs separated by blank lines, "- " items, lines
// indented by two spaces shown as typed, and `code` in bold.
type Section struct {
	Title string
	Text  string
}

// Man writes the man page of m in roff (man(7)): NAME, SYNOPSIS, the
// sections before (DESCRIPTION, ...), COMMANDS with their own flags, the
// policy flags once, and the sections after (EXIT STATUS, ENVIRONMENT, ...).
func Man(w io.Writer, m App, before, after []Section) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p(".\\\" Generated from agentbox's commands by `make docs`; do not edit.\n")
	p(".TH %s 1 \"\" \"%s\" \"User Commands\"\n", strings.ToUpper(roff(m.Name)), roff(m.Name))
	p(".SH NAME\n%s \\- %s\n", roff(m.Name), roff(m.Usage))
	p(".SH SYNOPSIS\n")
	for _, c := range m.Commands {
		for _, s := range c.Synopsis {
			p(".br\n%s\n", synopsisRoff(s))
		}
	}
	for _, s := range before {
		section(&b, s)
	}
	p(".SH COMMANDS\n")
	var policy []Flag
	for _, c := range m.Commands {
		p(".SS \"%s\"\n", roff(c.Name))
		for _, s := range c.Synopsis {
			p(".br\n%s\n", synopsisRoff(s))
		}
		p(".PP\n%s.\n", roff(sentence(c.Usage)))
		var own []Flag
		for _, f := range c.Flags {
			switch {
			case f.Name == "help":
			case f.Policy:
				if !hasFlag(policy, f.Name) {
					policy = append(policy, f)
				}
			default:
				own = append(own, f)
			}
		}
		if hasPolicy(c) {
			p(".PP\nIt takes the policy flags (see \\fBPOLICY FLAGS\\fR).\n")
		}
		for _, f := range own {
			flagRoff(&b, f)
		}
	}
	if len(policy) > 0 {
		p(".SH POLICY FLAGS\n")
		p("They form the last policy layer, over the policy files and the environment. Every path and list flag can be repeated.\n")
		for _, f := range policy {
			flagRoff(&b, f)
		}
	}
	p(".SH GLOBAL FLAGS\n")
	for _, f := range m.Flags {
		flagRoff(&b, f)
	}
	for _, s := range after {
		section(&b, s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func hasFlag(flags []Flag, name string) bool {
	for _, f := range flags {
		if f.Name == name {
			return true
		}
	}
	return false
}

func hasPolicy(c Command) bool {
	for _, f := range c.Flags {
		if f.Policy {
			return true
		}
	}
	return false
}

// flagRoff writes one flag as a tagged paragraph.
func flagRoff(b *strings.Builder, f Flag) {
	var names []string
	for _, n := range append(append([]string(nil), f.Aliases...), f.Name) {
		names = append(names, `\fB`+roff(Spelling(n))+`\fR`)
	}
	tag := strings.Join(names, ", ")
	if f.Placeholder != "" {
		tag += ` \fI` + roff(f.Placeholder) + `\fR`
	}
	fmt.Fprintf(b, ".TP\n%s\n%s.\n", tag, roff(sentence(f.Usage)))
}

// synopsisRoff sets a usage line: the program and command in bold,
// upper-case words (placeholders) in italics.
func synopsisRoff(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		switch {
		case i < 2 && !strings.ContainsAny(w, "[]-"):
			words[i] = `\fB` + roff(w) + `\fR`
		default:
			words[i] = italicCaps(roff(w))
		}
	}
	return strings.Join(words, " ")
}

// italicCaps puts the upper-case runs of s (placeholders) in italics.
func italicCaps(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		caps := r >= 'A' && r <= 'Z'
		if caps && !in {
			b.WriteString(`\fI`)
		}
		if !caps && in {
			b.WriteString(`\fR`)
		}
		in = caps
		b.WriteRune(r)
	}
	if in {
		b.WriteString(`\fR`)
	}
	return b.String()
}

// section writes prose in the markup Section describes.
func section(b *strings.Builder, s Section) {
	fmt.Fprintf(b, ".SH %s\n", roff(s.Title))
	for _, para := range strings.Split(strings.TrimSpace(s.Text), "\n\n") {
		lines := strings.Split(para, "\n")
		switch {
		case strings.HasPrefix(lines[0], "  "):
			b.WriteString(".PP\n.nf\n.RS 4\n")
			for _, l := range lines {
				b.WriteString(roffLine(roff(strings.TrimPrefix(l, "  "))) + "\n")
			}
			b.WriteString(".RE\n.fi\n")
		case strings.HasPrefix(lines[0], "- "):
			var item []string
			flush := func() {
				if len(item) > 0 {
					fmt.Fprintf(b, ".IP \\(bu 2\n%s\n", inline(strings.Join(item, " ")))
					item = nil
				}
			}
			for _, l := range lines {
				if rest, ok := strings.CutPrefix(l, "- "); ok {
					flush()
					item = append(item, rest)
				} else {
					item = append(item, strings.TrimSpace(l))
				}
			}
			flush()
		default:
			fmt.Fprintf(b, ".PP\n%s\n", inline(strings.Join(lines, " ")))
		}
	}
}

// inline escapes prose and sets `code` in bold.
func inline(s string) string {
	parts := strings.Split(s, "`")
	for i := range parts {
		parts[i] = roff(parts[i])
		if i%2 == 1 {
			parts[i] = `\fB` + parts[i] + `\fR`
		}
	}
	return roffLine(strings.Join(parts, ""))
}

// roff escapes text for roff: backslashes, and hyphens as minus signs so
// that flags copied from the page work.
func roff(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// roffLine protects a line that would start with a control character.
func roffLine(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		return `\&` + s
	}
	return s
}

// sentence capitalises a description's first letter.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
