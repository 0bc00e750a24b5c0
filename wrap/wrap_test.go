package wrap

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestLine(t *testing.T) {
	long := strings.Repeat("x", 30)
	for _, tc := range []struct {
		name  string
		in    string
		width int
		want  []string
	}{
		{"fits", "short line", 20, []string{"short line"}},
		{"no limit", "a b c d e f g h i j k l m n o p", 0, []string{"a b c d e f g h i j k l m n o p"}},
		{"agentbox voice", "agentbox: hint: run agentbox trust to trust it after reading it", 34,
			[]string{"agentbox: hint: run agentbox trust", "                to trust it after", "                reading it"}},
		{"indent at most half the width", "agentbox: hint: run agentbox trust to trust it", 30,
			[]string{"agentbox: hint: run agentbox", "  trust to trust it"}},
		{"table column", "  --wide  show every detail of every rule without cutting", 40,
			[]string{"  --wide  show every detail of every", "          rule without cutting"}},
		{"plain indent", "    one two three four five six seven", 20,
			[]string{"    one two three", "      four five six", "      seven"}},
		{"a word too long is cut", "see " + long, 20, []string{"see", "  xxxxxxxxxxxxxxxxxx", "  xxxxxxxxxxxx"}},
		{"runes count, not bytes", "ééééé ééééé ééééé", 11, []string{"ééééé ééééé", "  ééééé"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Line(tc.in, tc.width)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, l := range got {
				if tc.width > 0 && utf8.RuneCountInString(l) > tc.width {
					t.Errorf("line of %d > %d: %q", utf8.RuneCountInString(l), tc.width, l)
				}
			}
		})
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b, 12)
	w.Write([]byte("one two three four\nfive"))
	w.Write([]byte(" six\nseven"))
	w.Flush()
	want := "one two\n  three four\nfive six\nseven"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
