package supervise

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckGitMetadata: in a git folder, what the run made or changed
// outside what git writes in ordinary work is moved away, a rebase left in
// progress stays only when continuing it runs nothing, and what the run
// did not touch stays.
func TestCheckGitMetadata(t *testing.T) {
	b := newBox(t)
	g := b.gitRepo("", "")
	b.write(filepath.Join(g, "old-tool-state", "x"), "the user's\n")
	b.write(filepath.Join(g, "sequencer", "todo"), "exec the user's own\n")
	// Older than the run by more than the check's slack, whatever the file
	// system's stamps are.
	time.Sleep(time.Duration(ctimeSlack) + 100*time.Millisecond)
	started := time.Now().UnixNano()
	h := b.host()
	h.GitDirs = []string{g}
	b.write(filepath.Join(g, "rebase-merge", "git-rebase-todo"), "break\nexec touch /tmp/x\n")
	b.write(filepath.Join(g, "rebase-merge", "onto"), "1\n")
	b.write(filepath.Join(g, "rebase-apply", "0001"), "patch\n")
	b.write(filepath.Join(g, "rebase-apply", "next"), "1\n")
	b.write(filepath.Join(g, "remotes", "origin"), "URL: ext::sh -c evil\n")
	b.write(filepath.Join(g, "COMMIT_EDITMSG"), "msg\n")
	b.write(filepath.Join(g, "refs", "heads", "x"), "1\n")
	ev := &events{}
	if err := check(h, "r", started, nil, nil, ev); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"rebase-merge", "remotes"} {
		if exists(filepath.Join(g, p)) {
			t.Errorf("%s is still in the git folder", p)
		}
	}
	for _, p := range []string{"rebase-apply/0001", "COMMIT_EDITMSG", "refs/heads/x", "old-tool-state/x", "sequencer/todo"} {
		if !exists(filepath.Join(g, p)) {
			t.Errorf("%s was moved away", p)
		}
	}
	var moved []string
	for _, e := range ev.all {
		moved = append(moved, filepath.Base(e.Path))
	}
	if got := strings.Join(moved, " "); got != "rebase-merge remotes" {
		t.Errorf("reports: %s", got)
	}
}

// TestCheckCoarseStamps: a file the box wrote whose change time reads
// older than the run's start (a coarse clock tick, a file system keeping
// whole seconds) is still the run's. Before, a rebase the box left in the
// run's first moments stayed when the kernel's stamp lagged the clock the
// start was read from (seen in CI).
func TestCheckCoarseStamps(t *testing.T) {
	b := newBox(t)
	g := b.gitRepo("", "")
	h := b.host()
	h.GitDirs = []string{g}
	b.write(filepath.Join(g, "rebase-merge", "git-rebase-todo"), "break\nexec touch /tmp/x\n")
	// The stamp is older than the start by less than a whole second.
	started := time.Now().Add(900 * time.Millisecond).UnixNano()
	if err := check(h, "r", started, nil, nil, &events{}); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(g, "rebase-merge")) {
		t.Error("a rebase the box left stayed: its stamp read older than the run's start")
	}
}
