package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFit(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		width int
		want  string
	}{
		{"a table that fits stays aligned", "  a\tbb\vwhy\n  ccc\td\vother\n", 40,
			"  a    bb  why\n  ccc  d   other\n"},
		{"wide: no limit", "  a\tbb\v" + strings.Repeat("x ", 60) + "\n", 0,
			"  a  bb  " + strings.TrimSpace(strings.Repeat("x ", 60)) + "\n"},
		{"a table that does not fit puts the why below its row", "  1\t/a/path\vdefault\tthe note says why\n  2\t/b\vflag --deny\t\n", 40,
			"  1  /a/path\n      default — the note says why\n  2  /b\n      flag --deny\n"},
		{"the why wraps at spaces", "  1\t/p\vone two three four five six seven\n", 20,
			"  1  /p\n      one two three\n      four five six\n      seven\n"},
		{"a label's text lines up after it", "network:   none (own network namespace, loopback only)\n", 30,
			"network:   none (own network\n           namespace, loopback\n           only)\n"},
		{"an indented line hangs two more", "  after the run every process ended is checked\n", 24,
			"  after the run every\n    process ended is\n    checked\n"},
		{"a word longer than the line is never cut", "cwd:       /a/very/long/path/that/does/not/fit/anywhere and more\n", 30,
			"cwd:       /a/very/long/path/that/does/not/fit/anywhere\n           and more\n"},
		{"control characters and escapes are shown as text", "cwd:       /p/\x1b[31mred\n  a\x1b]0;x\x07\tb\vc\n", 0,
			"cwd:       /p/\\x1b[31mred\n  a\\x1b]0;x\\a  b  c\n"},
		{"nothing", "", 80, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := Fit(&b, tc.text, tc.width); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Escape keeps a name from splitting a row or driving the terminal.
func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"/plain/path":     "/plain/path",
		"/a\tb":           `/a\tb`,
		"/a\nb":           `/a\nb`,
		"/a\vb":           `/a\vb`,
		"/\x1b[2J":        `/\x1b[2J`,
		"/bidi\u202eevil": `/bidi\u202eevil`,
		"/bad\xffutf8":    `/bad\xffutf8`,
		"/ünïcode/中文":     "/ünïcode/中文",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}
