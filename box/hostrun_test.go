package box

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
)

// The registry of what host programs run or obey classifies each folder a
// change would make writable, whatever the advice said: what a shell, tmux
// or git would run there makes it risky, present or not yet; a plain cache
// is safe; a folder too large to search is risky.
func TestHostRun(t *testing.T) {
	home := t.TempDir()
	files := []string{".bashrc", ".npm/_cacache/index", ".cache/tool/repo/.git/HEAD"}
	for i := range 40 {
		files = append(files, fmt.Sprintf(".cache/big/d%d/x/f", i))
	}
	for _, f := range files {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := &plan.Plan{GOOS: "linux", Identity: plan.Identity{Home: home}}
	tests := []struct {
		dir   string
		limit int
		risky bool
		why   string
	}{
		{dir: ".bashrc", risky: true, why: "~/.bashrc: "},
		{dir: ".tmux.conf", risky: true, why: "~/.tmux.conf, once created, is what a host program runs or obeys (tmux .tmux.conf)"},
		{dir: ".npm"},
		{dir: ".cache/tool", risky: true, why: "~/.cache/tool holds ~/.cache/tool/repo/.git"},
		{dir: ".cache/big", limit: 2, risky: true, why: "agentbox did not search all of ~/.cache/big for what host programs run or obey (more than 2 folders)"},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = summaryLimit
			}
			risky, why := hostRun(p, limit)(filepath.Join(home, tc.dir))
			if risky != tc.risky || !strings.HasPrefix(why, tc.why) {
				t.Errorf("hostRun(~/%s) = %v, %q; want %v, %q…", tc.dir, risky, why, tc.risky, tc.why)
			}
		})
	}
}
