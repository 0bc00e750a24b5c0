//go:build linux

package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// One verdict for a refusal: the fix the run's summary gives and the one
// `agentbox log --denials` shows for the same run are the same; a folder
// that holds a repository's .git/hooks is risky in both. Before, the
// summary called --writable of such a folder risky and the log called it
// safe.
func TestOneVerdictForARefusal(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		other := filepath.Join(w.home, "other")
		mkdir(t, other)
		w.repo(other)
		r := w.boxed(be, nil, "echo x > "+other+"/f 2>/dev/null; true")
		expectCode(t, r, 0)
		var summary string
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.Contains(l, "~/other/f") {
				summary = l
			}
		}
		if summary == "" {
			t.Fatalf("the summary names no refusal of ~/other/f:\n%s", r.stderr)
		}
		expectContains(t, "summary", summary, "risky")
		lg := w.run("log", "--denials", "--wide")
		expectCode(t, lg, 0)
		var logged string
		for _, l := range strings.Split(lg.stdout, "\n") {
			if strings.Contains(l, "other/f") {
				logged = l
			}
		}
		if logged == "" {
			t.Fatalf("log --denials names no refusal of other/f:\n%s", lg.stdout)
		}
		_, fix, _ := strings.Cut(summary, ": ")
		_, fix, _ = strings.Cut(fix, ": ")
		if !strings.Contains(logged, "risky") || strings.Contains(logged, "(safe") {
			t.Errorf("log --denials gives another verdict than the summary:\nsummary: %s\nlog:     %s", summary, logged)
		}
		if !strings.Contains(logged, fix) {
			t.Errorf("log --denials gives another fix than the summary:\nsummary fix: %s\nlog:         %s", fix, logged)
		}
	})
}
