//go:build linux

package integration

import (
	"os"
	"path/filepath"
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
