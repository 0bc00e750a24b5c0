//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A path given by flag (or by the user's configuration) is pinned by where
// it leads, as a trusted policy's is: run 1 replaces the project's build
// folder with a link to a folder elsewhere; run 2 names --writable
// PROJECT/build and must not make the other folder writable. The path the
// link leads to, given as such, is accepted.
func TestFlagPathRelinked(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		gitInit(t, w, w.project)
		mkdir(t, filepath.Join(w.project, "build"))
		victim := filepath.Join(w.home, "victim")
		write(t, filepath.Join(victim, "Makefile"), "all:\n")
		r := w.sh(be, "rm -rf build && ln -s "+victim+" build")
		expectCode(t, r, 0)
		build := filepath.Join(w.project, "build")
		r = w.sh(append(append([]string{}, be...), "--writable", build), "echo pwned > build/Makefile; echo ran")
		if r.code != 125 {
			t.Errorf("--writable through the box's link ran: %s", r)
		}
		expectContains(t, "the refusal", r.stderr, "flag --writable")
		expectContains(t, "the refusal", r.stderr, build+" -> "+victim)
		if got, _ := os.ReadFile(filepath.Join(victim, "Makefile")); string(got) != "all:\n" {
			t.Errorf("the folder the link leads to was written: %q", got)
		}
		// Named as what it is, the folder is the user's choice.
		r = w.sh(append(append([]string{}, be...), "--writable", victim), "echo mine > "+victim+"/Makefile && echo ok")
		expectCode(t, r, 0)
		expectContains(t, "the resolved path", r.stdout, "ok")
	})
}

// The forged entry of TestLaterForgedIndexEntry, moved into a split
// index's shared part (git update-index --split-index): the index the
// check reads holds only a link to it. The run's check fails closed naming
// the index; once the user makes the index whole again, the next run's
// check names the hidden edit and host git status shows it.
func TestForgedEntryInSplitIndex(t *testing.T) {
	needTool(t, "python3", "apt-get install python3")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		index := filepath.Join(w.project, ".git", "index")
		r := forgeMakefileEntry(t, w, be, " && git update-index --split-index")
		if r.code == 0 {
			t.Fatalf("the run ended as checked although its split index was not read:\n%s", r)
		}
		expectContains(t, "stderr", r.stderr, index)
		expectContains(t, "stderr", r.stderr, "split index")
		r = w.run("run", "--backend", be, "--", "sh", "-c", "echo the box ran")
		if r.code == 0 || strings.Contains(r.stdout, "the box ran") {
			t.Fatalf("a run started while the split index stands unchecked:\n%s", r)
		}
		// The user makes the index whole: the next run checks it and names
		// the edit; host git shows it.
		w.mustGit(w.project, "update-index", "--no-split-index")
		r = w.run("run", "--backend", be, "--", "sh", "-c", "echo the box ran")
		expectCode(t, r, 0)
		expectContains(t, "stderr (the check of the earlier run)", r.stderr, filepath.Join(w.project, "Makefile"))
		st := w.mustGit(w.project, "status", "--porcelain", "--untracked-files=no")
		expectContains(t, "host git status", st, "Makefile")
	})
}

// A part of a flag's path that cannot be followed (a link loop the box
// made in the project) is refused, never taken for a path through no link.
func TestFlagPathUnfollowable(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		gitInit(t, w, w.project)
		r := w.sh(be, "ln -s loop2 loop1 && ln -s loop1 loop2")
		expectCode(t, r, 0)
		p := filepath.Join(w.project, "loop1", "out")
		r = w.sh(append(append([]string{}, be...), "--writable", p), "echo ran")
		if r.code != 125 || strings.Contains(r.stdout, "ran") {
			t.Fatalf("--writable through a link loop ran: %s", r)
		}
		expectContains(t, "the refusal", r.stderr, "flag --writable")
	})
}
