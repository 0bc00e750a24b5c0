package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteTextFolds shows guards alike but for their names in one folder
// as one line, from foldGuards of them on; others one per line.
func TestWriteTextFolds(t *testing.T) {
	var h HostExec
	h.Roots = []string{"/p"}
	h.Guards = append(h.Guards, Guard{Path: "/p/.git/hooks", Rule: "git hooks", Kind: KindDir, Keep: KeepReadOnly})
	for i := range foldGuards {
		h.Guards = append(h.Guards, Guard{Path: fmt.Sprintf("/p/m%02d.py", i), Rule: "mod", Kind: KindMissing, Keep: KeepChecked, Note: "n"})
	}
	h.Guards = append(h.Guards, Guard{Path: "/p/types.py", Rule: "mod", Kind: KindFile, Keep: KeepReadOnly, Note: "n"})
	for i := range foldGuards - 1 {
		h.Guards = append(h.Guards, Guard{Path: fmt.Sprintf(`C:\p\w%02d.py`, i), Rule: "mod", Kind: KindMissing, Keep: KeepChecked})
	}
	for i := range foldGuards {
		h.Guards = append(h.Guards, Guard{Path: fmt.Sprintf(`C:\q\x%02d.py`, i), Rule: "mod", Kind: KindMissing, Keep: KeepChecked})
	}
	var b strings.Builder
	h.writeText(&b)
	var got []string
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(l); len(f) > 1 && (f[0] == "read-only" || f[0] == "checked") {
			got = append(got, f[0]+" "+f[1])
		}
	}
	want := []string{
		"read-only /p/.git/hooks",
		"checked /p/{m00.py,",
		"read-only /p/types.py",
	}
	for i := range foldGuards - 1 {
		want = append(want, fmt.Sprintf(`checked C:\p\w%02d.py`, i))
	}
	want = append(want, `checked C:\q\{x00.py,`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if !strings.Contains(b.String(), "/p/{m00.py, m01.py, m02.py, m03.py, m04.py, m05.py, … (16 names; plan --json lists each)}") {
		t.Errorf("no folded line in:\n%s", b.String())
	}
}
