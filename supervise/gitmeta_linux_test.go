package supervise

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	time.Sleep(20 * time.Millisecond)
	started := runStart()
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

// TestRunStartStamps: a file written right after a run began has a change
// time the check counts as the run's. Before, the start was read from the
// precise clock and the kernel's stamp, from the coarse one, could be
// older: a rebase the box left in its first moments stayed (seen in CI).
func TestRunStartStamps(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 300; i++ {
		started := runStart()
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if !since(st.Ctim, started) {
			t.Fatalf("a file written after the start (%d) has a change time before it (%d)", started, st.Ctim.Nano())
		}
	}
}

// TestSinceGranularity: a stamp truncated by its file system (whole
// seconds, two, hundredths) counts as the run's when the start falls in
// the same step; a precise stamp before the start does not.
func TestSinceGranularity(t *testing.T) {
	const s = int64(1_700_000_001) // odd: FAT's two seconds round it down
	started := s*1e9 + 400_000_000
	for _, tc := range []struct {
		name string
		ts   unix.Timespec
		want bool
	}{
		{"precise, before", unix.Timespec{Sec: s, Nsec: 399_999_999}, false},
		{"precise, at", unix.Timespec{Sec: s, Nsec: 400_000_000}, true},
		{"precise, after", unix.Timespec{Sec: s + 1, Nsec: 1}, true},
		{"whole second, same", unix.Timespec{Sec: s}, true},
		{"two seconds, same step", unix.Timespec{Sec: s - 1}, true},
		{"whole second, two before", unix.Timespec{Sec: s - 2}, false},
		{"hundredths, same", unix.Timespec{Sec: s, Nsec: 400_000_000}, true},
		{"hundredths, before", unix.Timespec{Sec: s, Nsec: 390_000_000}, false},
		{"microseconds, same", unix.Timespec{Sec: s, Nsec: 399_999_000}, false},
	} {
		if got := since(tc.ts, started); got != tc.want {
			t.Errorf("%s: since(%d.%09d, start %d) = %v, want %v", tc.name, tc.ts.Sec, tc.ts.Nsec, started, got, tc.want)
		}
	}
}
