//go:build linux

package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// deepGitDir is a folder under root whose path is between the search's
// tooLong limit (4096-256 bytes) and PATH_MAX: too long for the search,
// short enough for host git to open by its full name.
func deepGitDir(root string) string {
	p := root
	seg := strings.Repeat("g", 200)
	for len(p)+len(seg)+1 < 3950 {
		p += "/" + seg
	}
	return p + "/" + strings.Repeat("h", 3960-len(p)-1)
}

// A shallow work tree whose .git file names a git folder deeper than the
// search reaches (but within PATH_MAX, where host git opens it by its
// full name): what the box writes in that git folder, in the run that
// makes it or in a later one, must not run when the user runs git in
// the shallow work tree.
func TestSearchDeepGitDirShallowWorkTree(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		for _, later := range []bool{false, true} {
			t.Run(fmt.Sprintf("later=%v", later), func(t *testing.T) {
				w := newWorld(t)
				w.repo(w.project)
				g := deepGitDir(filepath.Join(w.project, "store"))
				make := fmt.Sprintf(`mkdir -p %s/objects %s/refs/heads %s/hooks && printf 'ref: refs/heads/main\n' > %s/HEAD && printf '[core]\n\trepositoryformatversion = 0\n' > %s/config && mkdir -p sub && printf 'gitdir: %s\n' > sub/.git`, g, g, g, g, g, g)
				plant := fmt.Sprintf(`printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = %s; false\n' > %s/config && printf '#!/bin/sh\n%s\n' > %s/hooks/pre-commit && chmod +x %s/hooks/pre-commit`, w.payload("fsmonitor"), g, w.payload("hook"), g, g)
				if later {
					r := w.boxed(be, nil, make+` && echo made`)
					expectCode(t, r, 0)
					expectContains(t, "stdout", r.stdout, "made")
					r = w.boxed(be, nil, plant+` && echo planted`)
					expectCode(t, r, 0)
					expectContains(t, "stdout", r.stdout, "planted")
				} else {
					r := w.boxed(be, nil, make+` && `+plant+` && echo planted`)
					expectCode(t, r, 0)
					expectContains(t, "stdout", r.stdout, "planted")
				}
				out, err := w.hostGit(filepath.Join(w.project, "sub"), "status")
				t.Logf("host git status: %v %s", err, out)
				w.hostGit(filepath.Join(w.project, "sub"), "commit", "-q", "--allow-empty", "-m", "x")
				w.expectNoMarks("host git in a work tree whose git folder is deeper than the search reaches", "fsmonitor", "hook")
			})
		}
	})
}
