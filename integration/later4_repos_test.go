//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostHg runs real hg on the host in dir, unconfined, as the user would
// after the run, with the world's home (so no user config but the test's).
func (w *world) hostHg(dir string, args ...string) (string, error) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "hg", append([]string{"--cwd", dir}, args...)...)
	c.Env = append(append([]string(nil), w.env...), "HGUSER=t <t@example.invalid>", "HGPLAIN=")
	out, err := c.CombinedOutput()
	return string(out), err
}

// needHg skips when Mercurial is not installed.
func needHg(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("hg")
	need(t, err == nil, "Mercurial (hg) is not installed")
}

// shq quotes s for a POSIX shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// The box stops an interactive rebase at a break with exec lines still to
// run; the host's git rebase --continue must run none of them, and the
// repository must stay usable.
func TestLater4RebaseExecLeftBehind(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		w.mustGit(w.project, "commit", "-q", "--allow-empty", "-m", "second")
		w.mustGit(w.project, "commit", "-q", "--allow-empty", "-m", "third")
		editor := `printf 'break\nexec ` + w.payload("exec") + `\nx ` + w.payload("x") + `\n' >`
		r := w.boxed(be, nil, `
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e.invalid
GIT_SEQUENCE_EDITOR=`+shq(editor)+` git rebase -q -i HEAD~2 >/dev/null 2>&1
test -d .git/rebase-merge && echo stopped
echo done`)
		expectCode(t, r, 0)
		expectContains(t, "box output", r.stdout, "stopped")
		out, _ := w.hostGit(w.project, "rebase", "--continue")
		w.expectNoMark("exec", "host git rebase --continue: "+out)
		w.expectNoMark("x", "host git rebase --continue: "+out)
		expectContains(t, "stderr", r.stderr, filepath.Join(w.project, ".git", "rebase-merge"))
		w.mustGit(w.project, "status")
		w.mustGit(w.project, "commit", "-q", "--allow-empty", "-m", "after")
	})
}

// The same, with the todo list written by the box itself after a stop
// the user started: a rebase the user left stopped at "edit" before the
// run, whose todo the box rewrites with an exec line.
func TestLater4RebaseTodoRewritten(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		w.mustGit(w.project, "commit", "-q", "--allow-empty", "-m", "second")
		w.mustGit(w.project, "commit", "-q", "--allow-empty", "-m", "third")
		c := exec.Command("git", "-C", w.project, "rebase", "-q", "-i", "HEAD~2")
		c.Env = append(w.gitEnv(), "GIT_SEQUENCE_EDITOR=sed -i 1s/^pick/edit/")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("setting up the stopped rebase: %v\n%s", err, out)
		}
		r := w.boxed(be, nil, `printf 'exec %s\n' `+shq(w.payload("exec"))+` >> .git/rebase-merge/git-rebase-todo && echo written`)
		expectCode(t, r, 0)
		expectContains(t, "box output", r.stdout, "written")
		out, _ := w.hostGit(w.project, "rebase", "--continue")
		w.expectNoMark("exec", "host git rebase --continue: "+out)
	})
}

// Real git work inside the box is not in the way: a whole interactive
// rebase, a merge, a stash, a commit, and a rebase the box leaves stopped
// at "edit" (no program in its todo) that the host continues.
func TestLater4GitWorkInside(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, "a"), "one\n")
		w.mustGit(w.project, "add", "a")
		w.mustGit(w.project, "commit", "-q", "-m", "a")
		w.mustGit(w.project, "commit", "-q", "--allow-empty", "-m", "b")
		w.mustGit(w.project, "commit", "-q", "--allow-empty", "-m", "c")
		r := w.boxed(be, nil, `
set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e.invalid
GIT_SEQUENCE_EDITOR='sed -i 2s/^pick/fixup/' git rebase -q -i HEAD~2
git checkout -q -b side
echo two >> a && git commit -qam side
git checkout -q -
git merge -q --no-ff -m merged side
echo three >> a && git stash -q && git stash pop -q && git commit -qam stashed
git gc -q
GIT_SEQUENCE_EDITOR='sed -i 1s/^pick/edit/' git rebase -q -i HEAD~1 >/dev/null 2>&1 || true
test -d .git/rebase-merge && echo stopped
echo done`)
		expectCode(t, r, 0)
		expectContains(t, "box output", r.stdout, "stopped")
		expectNotContains(t, "stderr", r.stderr, "rebase-merge")
		log := w.mustGit(w.project, "log", "--oneline", "--all")
		for _, want := range []string{"merged", "side", "stashed"} {
			expectContains(t, "host git log", log, want)
		}
		expectNotContains(t, "host git log", log, " c\n")
		p := w.run("plan", "--backend", be, "--", "true")
		expectCode(t, p, 0)
		expectContains(t, "plan", p.stdout, "metadata")
		expectContains(t, "plan", p.stdout, "may write: objects, refs")
		w.mustGit(w.project, "rebase", "--continue")
		if out := w.mustGit(w.project, "status", "--short", "--branch"); strings.Contains(out, "rebase") || strings.Contains(out, "no branch") {
			t.Errorf("the rebase the box left stopped did not finish on the host: %s", out)
		}
	})
}

// hgInit makes dir a Mercurial repository with one commit.
func (w *world) hgInit(dir string) {
	w.t.Helper()
	mkdir(w.t, dir)
	if out, err := w.hostHg(dir, "init"); err != nil {
		w.t.Fatalf("hg init: %v\n%s", err, out)
	}
	write(w.t, filepath.Join(dir, "f"), "x\n")
	if out, err := w.hostHg(dir, "commit", "-q", "-A", "-m", "first"); err != nil {
		w.t.Fatalf("hg commit: %v\n%s", err, out)
	}
}

// The box adds a pre-status hook to a Mercurial repository's hgrc (new,
// existing, or a file the existing one %includes), in an hg project and in
// an hg checkout inside a git project: the host's hg status must run none.
func TestLater4HgHooks(t *testing.T) {
	needHg(t)
	for _, tc := range []struct{ name, setup, attack string }{
		{"new-hgrc", "", `printf '[hooks]\npre-status = %s\n' "$MARK" > $HG/.hg/hgrc`},
		{"existing-hgrc", "[ui]\nusername = t\n", `printf '[hooks]\npre-status = %s\n' "$MARK" >> $HG/.hg/hgrc`},
		{"included", "%include local.rc\n", `printf '[hooks]\npre-status = %s\n' "$MARK" > $HG/.hg/local.rc`},
		{"not-shared", "", `printf '[hooks]\npre-status = %s\n' "$MARK" > $HG/.hg/hgrc-not-shared`},
		{"sharedpath", "", `hg init evil && printf '[hooks]\npre-status = %s\n' "$MARK" > evil/.hg/hgrc && printf 'share-safe\nshared\n' > $HG/.hg/requires && printf '%s/evil/.hg\n' "$PWD" > $HG/.hg/sharedpath`},
	} {
		for _, where := range []string{"hg-project", "in-git-project"} {
			t.Run(tc.name+"/"+where, func(t *testing.T) {
				backends(t, func(t *testing.T, be string) {
					w := newWorld(t)
					hg := w.project
					if where == "in-git-project" {
						w.repo(w.project)
						hg = filepath.Join(w.project, "vendor-hg")
					}
					w.hgInit(hg)
					if tc.setup != "" {
						write(t, filepath.Join(hg, ".hg", "hgrc"), strings.ReplaceAll(tc.setup, `\n`, "\n"))
					}
					attack := strings.ReplaceAll(tc.attack, "$HG", shq(hg))
					r := w.boxed(be, nil, "MARK="+shq(w.payload("hg"))+"\n"+attack+" 2>/dev/null || echo refused\necho done")
					expectCode(t, r, 0)
					out, _ := w.hostHg(hg, "status")
					w.expectNoMark("hg", "host hg status: "+out)
					// The box may break its own repository (it marked this
					// one shared, and its sharedpath is moved away); that
					// runs nothing.
					if out, err := w.hostHg(hg, "log", "-q"); err != nil && tc.name != "sharedpath" {
						t.Errorf("the repository no longer works on the host: %v\n%s", err, out)
					}
				})
			})
		}
	}
}

// Committing in a Mercurial repository inside the box works, and stays.
func TestLater4HgWorkInside(t *testing.T) {
	needHg(t)
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.hgInit(w.project)
		r := w.boxed(be, nil, `set -e; echo y >> f; HGUSER=t hg commit -q -m inside; echo done`)
		expectCode(t, r, 0)
		out, err := w.hostHg(w.project, "log", "-q", "-r", "tip", "--template", "{desc}")
		if err != nil || out != "inside" {
			t.Errorf("the commit made in the box is not there: %v %q", err, out)
		}
	})
}

// The other version-control systems' configuration: a new one the box
// writes in a checkout of each is moved away after the run, and one that
// was there is kept from the box.
func TestLater4OtherVCSConfig(t *testing.T) {
	for _, tc := range []struct{ name, dir, file string }{
		{"jj", ".jj/repo", "config.toml"},
		{"sapling", ".sl", "config"},
		{"bazaar", ".bzr/branch", "branch.conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backends(t, func(t *testing.T, be string) {
				w := newWorld(t)
				for _, sub := range []string{"new", "old"} {
					mkdir(t, filepath.Join(w.project, sub, filepath.FromSlash(tc.dir)))
				}
				old := filepath.Join(w.project, "old", filepath.FromSlash(tc.dir), tc.file)
				write(t, old, "# the user's\n")
				r := w.boxed(be, nil, `for d in new old; do echo planted >> "$d/`+tc.dir+`/`+tc.file+`" 2>/dev/null; done; echo done`)
				expectCode(t, r, 0)
				if exists(filepath.Join(w.project, "new", filepath.FromSlash(tc.dir), tc.file)) {
					t.Errorf("a new %s config the box wrote is still there after the run", tc.name)
				}
				if b, err := os.ReadFile(old); err != nil || string(b) != "# the user's\n" {
					t.Errorf("the existing %s config is not what the user had: %q %v", tc.name, b, err)
				}
			})
		})
	}
}

// Committing in a Breezy (Bazaar) branch inside the box works: the
// branch.conf kept read-only is not written by a commit.
func TestLater4BzrWorkInside(t *testing.T) {
	_, err := exec.LookPath("brz")
	need(t, err == nil, "Breezy (brz) is not installed")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		brz := func(args ...string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := exec.CommandContext(ctx, "brz", args...)
			c.Dir = w.project
			c.Env = append(append([]string(nil), w.env...), "BRZ_EMAIL=t <t@example.invalid>")
			out, err := c.CombinedOutput()
			return string(out), err
		}
		for _, args := range [][]string{{"init", "-q", "."}, {"add", "-q", "."}, {"commit", "-q", "--unchanged", "-m", "first"}} {
			if out, err := brz(args...); err != nil {
				t.Fatalf("brz %v: %v\n%s", args, err, out)
			}
		}
		r := w.boxed(be, nil, `set -e; echo y > f; brz add -q f; BRZ_EMAIL='t <t@example.invalid>' brz commit -q -m inside; echo done`)
		expectCode(t, r, 0)
		if out, err := brz("log", "--line", "-r", "-1"); err != nil || !strings.Contains(out, "inside") {
			t.Errorf("the commit made in the box is not there: %v %s", err, out)
		}
	})
}
