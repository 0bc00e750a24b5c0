package supervise

import "testing"

func TestInert(t *testing.T) {
	for _, c := range []struct {
		rule, rel string
		want      bool
	}{
		{"git hooks", "pre-commit.sample", true},
		{"git hooks", "h100000.sample", true},
		{"git hooks", "pre-commit", false},
		{"git hooks", "", false},
		{"git hooks", "sub/x.sample", false},
		{"git hooks", `sub\x.sample`, false},
		{"claude hooks", "x.sample", false},
	} {
		if got := inert(c.rule, c.rel); got != c.want {
			t.Errorf("inert(%q, %q) = %v, want %v", c.rule, c.rel, got, c.want)
		}
	}
}
