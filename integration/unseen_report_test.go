//go:build linux

package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The report of what the box changed out of git's sight names only what
// changed during the run, once: a folder made on the host in an ignored
// tree is not blamed on the next runs, a change the box made is reported by
// its run and not again by the next, and the words fit: an ignored tree is
// "ignored", a folder git does not ignore is "untracked", one folder is "1
// folder". Before, "ignored trees: …/build (2 folders)" came with every
// `run -- true` after a host mkdir, a real change came again on the next
// run, and untracked folders were called ignored.
func TestUnseenReportOnlyThisRun(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, ".gitignore"), "build\n")
		w.mustGit(w.project, "add", "-A")
		w.mustGit(w.project, "commit", "-q", "-m", "ignore build")
		mkdir(t, filepath.Join(w.project, "build", "x"))
		unseen := func(r result) string {
			for _, l := range strings.Split(r.stderr, "\n") {
				if strings.Contains(l, "out of git's sight") {
					return l
				}
			}
			return ""
		}
		for i := 0; i < 3; i++ {
			r := w.boxed(be, nil, "true")
			expectCode(t, r, 0)
			if l := unseen(r); l != "" {
				t.Fatalf("run %d of true after a host mkdir reports: %s", i+1, l)
			}
			// The first runs are within the file system's coarse tick of
			// the host's mkdir at most once.
			time.Sleep(100 * time.Millisecond)
		}
		r := w.boxed(be, nil, "mkdir build/x/new node_modules && touch node_modules/f")
		expectCode(t, r, 0)
		l := unseen(r)
		expectContains(t, "report", l, "ignored tree: "+filepath.Join(w.project, "build")+" (2 folders)")
		expectContains(t, "report", l, "inside untracked folder: "+filepath.Join(w.project, "node_modules")+" (1 folder)")
		if strings.Count(l, filepath.Join(w.project, "build")) != 1 {
			t.Errorf("build named more than once: %s", l)
		}
		r = w.boxed(be, nil, "true")
		expectCode(t, r, 0)
		if l := unseen(r); l != "" {
			t.Errorf("the next run of true reports the last run's change again: %s", l)
		}
		// A writable folder agentbox makes for the run (out/gen, missing)
		// is agentbox's, not the box's: not reported unless the box
		// changes it.
		r = w.boxed(be, []string{"--writable", filepath.Join(w.project, "out", "gen")}, "true")
		expectCode(t, r, 0)
		if l := unseen(r); l != "" {
			t.Errorf("a folder agentbox made for the run is reported: %s", l)
		}
		r = w.boxed(be, []string{"--writable", filepath.Join(w.project, "out", "gen")}, "mkdir out/gen/x")
		expectCode(t, r, 0)
		expectContains(t, "report", unseen(r), "inside untracked folder: "+filepath.Join(w.project, "out")+" (2 folders)")
	})
}
