//go:build linux

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests in this file steer the search of the writable roots for what
// host programs run (package hostexec): each takes a shortcut the search
// could take — a folder's shape, a permission the box set, a count, a
// reference to a file outside the searched set — and checks that the host
// program run afterwards executes nothing the box wrote.

// hostRun runs name with args on the host, unconfined, in dir with the
// world's environment (and extra variables), bounded in time.
func (w *world) hostRun(dir string, extra []string, name string, args ...string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, name, args...)
	c.Dir = dir
	c.Env = append(append([]string(nil), w.gitEnv()...), extra...)
	out, _ := c.CombinedOutput()
	return string(out)
}

// expectNoMarks is expectNoMark for several markers, reporting each.
func (w *world) expectNoMarks(what string, names ...string) {
	w.t.Helper()
	for _, n := range names {
		if exists(filepath.Join(w.marks(), n)) {
			w.t.Errorf("%s (%s): the host ran code the box wrote (marker %s exists)", what, n, n)
		}
	}
}

// A folder shaped like a bare repository (HEAD, objects/, refs/) is
// searched like any other: a repository inside it is found.
func TestSearchBareShapedFolder(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		for _, when := range []string{"made-by-the-box", "there-before"} {
			t.Run(when, func(t *testing.T) {
				w := newWorld(t)
				w.repo(w.project)
				lib := filepath.Join(w.project, "lib")
				script := `mkdir -p lib/objects lib/refs && echo 'ref: refs/heads/main' > lib/HEAD
mkdir -p lib/src && git -C lib/src init -q 2>/dev/null
`
				if when == "there-before" {
					mkdir(t, filepath.Join(lib, "objects"))
					mkdir(t, filepath.Join(lib, "refs"))
					write(t, filepath.Join(lib, "HEAD"), "ref: refs/heads/main\n")
					w.repo(filepath.Join(lib, "src"))
					script = ""
				}
				script += `git -C lib/src config core.fsmonitor '` + w.payload("fsmonitor") + `; false' 2>/dev/null
printf '%s\n' '#!/bin/sh' '` + w.payload("hook") + `' > lib/src/.git/hooks/pre-commit 2>/dev/null; chmod +x lib/src/.git/hooks/pre-commit 2>/dev/null
echo done`
				r := w.boxed(be, nil, script)
				expectCode(t, r, 0)
				src := filepath.Join(lib, "src")
				w.hostGit(src, "status")
				w.hostGit(src, "commit", "-q", "--allow-empty", "-m", "host")
				w.expectNoMark("fsmonitor", "host git status in lib/src")
				w.expectNoMark("hook", "host git commit in lib/src")
			})
		}
	})
}

// A folder the search cannot list is not empty: the box plants a
// repository and takes the read permission away from the folder holding
// it (git needs only search permission to find it).
func TestSearchUnreadableFolder(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		r := w.boxed(be, nil, `mkdir -p sub/deep && git -C sub/deep init -q &&
git -C sub/deep config core.fsmonitor '`+w.payload("fsmonitor")+`; false' &&
chmod 0111 sub/deep && chmod 0111 sub && echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		w.hostGit(filepath.Join(w.project, "sub", "deep"), "status")
		w.expectNoMark("fsmonitor", "host git status in a folder the box made unreadable")
		// The next run starts.
		r = w.boxed(be, nil, `echo again`)
		expectCode(t, r, 0)
	})
}

// A folder that cannot be listed before the run (the user's own, or one
// left so) is kept from the box: it cannot plant anything in it.
func TestSearchUnreadableBeforeRun(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		hidden := filepath.Join(w.project, "private")
		w.repo(filepath.Join(hidden, "inner"))
		if err := os.Chmod(hidden, 0o311); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(hidden, 0o755) })
		r := w.boxed(be, nil, `git -C private/inner config core.fsmonitor '`+w.payload("fsmonitor")+`; false' 2>/dev/null
mkdir -p private/new 2>/dev/null && git -C private/new init -q 2>/dev/null && git -C private/new config core.fsmonitor '`+w.payload("new")+`; false' 2>/dev/null
echo done`)
		if r.code == 125 {
			// Refused: it must name the folder and the fix.
			expectContains(t, "stderr", r.stderr, hidden)
			expectContains(t, "stderr", r.stderr, "chmod")
			return
		}
		expectCode(t, r, 0)
		os.Chmod(hidden, 0o755)
		w.hostGit(filepath.Join(hidden, "inner"), "status")
		w.hostGit(filepath.Join(hidden, "new"), "status")
		w.expectNoMark("fsmonitor", "host git status in a repository the search could not list")
		w.expectNoMark("new", "host git status in a repository made where the search could not list")
	})
}

// Every file a repository's config includes is kept: the shared team
// config, an includeIf, a file the include names that does not exist yet,
// and an include of an include.
func TestSearchConfigIncludes(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, ".gitconfig-shared"), "[user]\n\tname = team\n[include]\n\tpath = .gitconfig-more\n")
		write(t, filepath.Join(w.project, ".gitconfig-more"), "[color]\n\tui = auto\n")
		write(t, filepath.Join(w.project, "conf", "ifdir"), "[color]\n\tui = auto\n")
		w.mustGit(w.project, "config", "--add", "include.path", "../.gitconfig-shared")
		w.mustGit(w.project, "config", "--add", "include.path", "../.gitconfig-local")
		w.mustGit(w.project, "config", "--add", "includeIf.gitdir:"+w.project+"/.git.path", "../conf/ifdir")
		r := w.boxed(be, nil, `
printf '[core]\n\tfsmonitor = "`+w.payload("shared")+`; false"\n' >> .gitconfig-shared 2>/dev/null
printf '[core]\n\tfsmonitor = "`+w.payload("more")+`; false"\n' >> .gitconfig-more 2>/dev/null
printf '[core]\n\tfsmonitor = "`+w.payload("local")+`; false"\n' > .gitconfig-local 2>/dev/null
printf '[core]\n\tfsmonitor = "`+w.payload("ifdir")+`; false"\n' >> conf/ifdir 2>/dev/null
echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		w.hostGit(w.project, "status")
		w.expectNoMarks("host git status after the box edited an included config", "shared", "more", "local", "ifdir")
		// git runs only the last core.fsmonitor it reads: each file must
		// also be as it was.
		for f, want := range map[string]string{
			".gitconfig-shared": "[user]\n\tname = team\n[include]\n\tpath = .gitconfig-more\n",
			".gitconfig-more":   "[color]\n\tui = auto\n",
			"conf/ifdir":        "[color]\n\tui = auto\n",
		} {
			if got, _ := os.ReadFile(filepath.Join(w.project, f)); string(got) != want {
				t.Errorf("%s after the run: %q", f, got)
			}
		}
		if exists(filepath.Join(w.project, ".gitconfig-local")) {
			t.Errorf(".gitconfig-local, which the config includes, was created by the box and is still there")
		}
		p := w.run("plan", "--backend", be, "--", "true")
		expectCode(t, p, 0)
		for _, f := range []string{".gitconfig-shared", ".gitconfig-more", ".gitconfig-local", filepath.Join("conf", "ifdir")} {
			expectContains(t, "plan", p.stdout, filepath.Join(w.project, f))
		}
	})
}

// A dotfiles repository: the home folder's startup files link to, include
// or source files of the project. The box must not be able to change what
// host bash, a login shell and git run.
func TestSearchDotfilesRepository(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		dots := filepath.Join(w.home, "dotfiles")
		w.repo(dots)
		write(t, filepath.Join(dots, "bashrc"), "# bashrc\n")
		write(t, filepath.Join(dots, "gitconfig"), "[color]\n\tui = auto\n")
		write(t, filepath.Join(dots, "profile.sh"), "# profile\n")
		write(t, filepath.Join(dots, "aliases"), "# aliases\n")
		write(t, filepath.Join(dots, "bashrc"), "# bashrc\n. ~/dotfiles/aliases\n")
		if err := os.Symlink(filepath.Join(dots, "bashrc"), filepath.Join(w.home, ".bashrc")); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(w.home, ".gitconfig"), "[include]\n\tpath = ~/dotfiles/gitconfig\n")
		write(t, filepath.Join(w.home, ".profile"), "[ -f \"$HOME/dotfiles/profile.sh\" ] && . \"$HOME/dotfiles/profile.sh\"\n")
		w.cwd = dots
		r := w.boxed(be, nil, `
echo '`+w.payload("bashrc")+`' >> bashrc 2>/dev/null
echo '`+w.payload("aliases")+`' >> aliases 2>/dev/null
printf '[core]\n\tfsmonitor = "`+w.payload("gitconfig")+`; false"\n' >> gitconfig 2>/dev/null
echo '`+w.payload("profile")+`' >> profile.sh 2>/dev/null
echo ok > notes.txt
echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		if !exists(filepath.Join(dots, "notes.txt")) {
			t.Fatalf("the box could not write its project: %s", r)
		}
		w.hostRun(w.home, nil, "bash", "-i", "-c", "true")
		w.hostRun(w.home, nil, "sh", "-l", "-c", "true")
		w.hostGit(dots, "status")
		w.expectNoMarks("a host shell or git after the box edited a dotfile of the project", "bashrc", "aliases", "gitconfig", "profile")
	})
}

// Thousands of repositories the box makes cannot stop later runs, and
// cost no mount each: the next run starts, and what it plants in one of
// them is kept from host git.
func TestSearchManyRepositories(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		// Each run searches 6,000 repositories and keeps them by
		// recording: seconds on a loaded machine.
		w.timeout = 5 * time.Minute
		w.repo(w.project)
		r := w.boxed(be, nil, `i=0; while [ $i -lt 6000 ]; do mkdir -p r$i/.git/hooks && echo "[core]" > r$i/.git/config; i=$((i+1)); done; echo done`)
		expectCode(t, r, 0)
		r = w.boxed(be, nil, `git -C r5999 config core.fsmonitor '`+w.payload("fsmonitor")+`; false' 2>/dev/null
printf '%s\n' '#!/bin/sh' '`+w.payload("hook")+`' > r17/.git/hooks/pre-commit 2>/dev/null; chmod +x r17/.git/hooks/pre-commit 2>/dev/null
echo again`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "again")
		for _, d := range []string{"r5999", "r17"} {
			w.mustGit(filepath.Join(w.project, d), "status")
			w.hostGit(filepath.Join(w.project, d), "commit", "-q", "--allow-empty", "-m", "host")
		}
		w.expectNoMark("fsmonitor", "host git status in the 6000th repository")
		w.expectNoMark("hook", "host git commit in the 18th repository")
		r = w.boxed(be, nil, `echo third`)
		expectCode(t, r, 0)
	})
}

// A tree deeper than any bound on depth is searched to its bottom, and a
// tree deeper than the kernel resolves in one path stops no later run.
func TestSearchDeepTree(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		deep := strings.Repeat("d/", 700)
		r := w.boxed(be, nil, fmt.Sprintf(`mkdir -p %s && cd %s && git init -q && git config core.fsmonitor '%s; false' && echo done`, deep, deep, w.payload("fsmonitor")))
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		w.hostGit(filepath.Join(w.project, deep), "status")
		w.expectNoMark("fsmonitor", "host git status at the bottom of a 700-folder-deep tree")
		// Deeper than PATH_MAX: built step by step, by relative names. The
		// check reaches it one folder at a time: the fsmonitor the box
		// set there is taken out (before, the check stopped on "file name
		// too long" and the config stayed).
		name := strings.Repeat("e", 200)
		r = w.boxed(be, nil, fmt.Sprintf(`python3 -c '
import os
for i in range(30):
    os.mkdir("%s"); os.chdir("%s")
for d in (".git", ".git/hooks", ".git/objects", ".git/refs"):
    os.mkdir(d)
open(".git/HEAD", "w").write("ref: refs/heads/main\\n")
open(".git/config", "w").write("[core]\\n\\tfsmonitor = %s\\n")
' && echo made`, name, name, w.payload("deep-fsmonitor")))
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "made")
		cfg, err := exec.Command("python3", "-c", fmt.Sprintf(`
import os
os.chdir(%q)
for i in range(30):
    os.chdir(%q)
print(open(".git/config").read() if os.path.exists(".git/config") else "")`, w.project, name)).CombinedOutput()
		if err != nil || strings.Contains(string(cfg), "fsmonitor") {
			t.Errorf("the config deeper than PATH_MAX after the run (%v): %s", err, cfg)
		}
		r = w.boxed(be, nil, `echo again`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "again")
	})
}

// An after-run check that cannot finish fails closed: here the limit on
// open files of the supervisor is lowered to 5 (soft and hard) while the
// box runs — what a box that can call prlimit(2) on it would do. The run
// exits non-zero and says so, the record stays, and the next run does the
// check first, then runs.
func TestSearchCheckFailsClosed(t *testing.T) {
	_, err := exec.LookPath("prlimit")
	need(t, err == nil, "prlimit (util-linux) is not installed")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		planted := filepath.Join(w.project, "planted")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := w.command(ctx, "run", "--backend", be, "--", "sh", "-c",
			`mkdir -p sub && git -C sub init -q && printf '%s\n' '#!/bin/sh' '`+w.payload("hook")+`' > sub/.git/hooks/post-checkout && chmod +x sub/.git/hooks/post-checkout && touch planted && sleep 3 && echo done`)
		var out, errb strings.Builder
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); !exists(planted); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				c.Process.Kill()
				c.Wait()
				t.Fatalf("the box did not plant: %s", errb.String())
			}
		}
		if b, err := exec.Command("prlimit", "--pid", fmt.Sprint(c.Process.Pid), "--nofile=5:5").CombinedOutput(); err != nil {
			c.Process.Kill()
			c.Wait()
			t.Fatalf("prlimit: %v: %s", err, b)
		}
		werr := waitCmd(t, c)
		if werr == nil {
			t.Fatalf("the check could not open a file, yet the run exited 0:\n%s\n%s", out.String(), errb.String())
		}
		expectContains(t, "stderr", errb.String(), "after-run check")
		expectContains(t, "stderr", errb.String(), "could not finish")
		// The next run does the check first, then runs.
		r := w.boxed(be, nil, `echo started`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "started")
		expectContains(t, "stderr", r.stderr, "doing it now")
		w.hostGit(filepath.Join(w.project, "sub"), "checkout", "-q", "-b", "x")
		w.expectNoMark("hook", "host git checkout after the check was finished by the next run")
	})
}

// The search costs what changed: after a run, the next search of the
// unchanged project lists none of its folders again (each is checked
// with one statx against the index the run's check left), and a folder
// changed since is listed again.
func TestSearchIndexUsed(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		for i := 0; i < 40; i++ {
			mkdir(t, filepath.Join(w.project, fmt.Sprintf("d%d", i), "sub"))
		}
		// Changes less than two seconds before a search are listed
		// again whatever their stamps say.
		time.Sleep(2100 * time.Millisecond)
		r := w.boxed(be, nil, `echo done`)
		expectCode(t, r, 0)
		time.Sleep(2100 * time.Millisecond)
		listed := func() (int, int) {
			t.Helper()
			p := w.run("plan", "--backend", be, "--", "true")
			expectCode(t, p, 0)
			var n, of int
			for _, line := range strings.Split(p.stdout, "\n") {
				if i := strings.Index(line, "; "); i >= 0 && strings.Contains(line, " folders listed") {
					fmt.Sscanf(line[i+2:], "%d of %d folders listed", &n, &of)
				}
			}
			if of == 0 {
				t.Fatalf("plan does not say how many folders it listed:\n%s", p.stdout)
			}
			return n, of
		}
		// At most the folders the run's placeholders stood in (removed
		// after the check) are listed again.
		before, of := listed()
		if before > 3 || of < 80 {
			t.Errorf("after a run, the search of the unchanged project listed %d of %d folders; want at most 3 of at least 80", before, of)
		}
		mkdir(t, filepath.Join(w.project, "d7", "sub", "new"))
		time.Sleep(2100 * time.Millisecond)
		if n, _ := listed(); n < 2 || n > before+2 {
			t.Errorf("after one folder changed (and one was made), the search listed %d folders; want 2 (and at most %d)", n, before+2)
		}
	})
}

// A folder one run kept read-only (and so did not search) is searched by
// the next run that may write it, though nothing changed in the folder
// holding it.
func TestSearchReadOnlyThenWritable(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		mkdir(t, filepath.Join(w.project, "docs", "inner"))
		time.Sleep(time.Second)
		r := w.boxed(be, []string{"--read-only", filepath.Join(w.project, "docs")}, `echo first`)
		expectCode(t, r, 0)
		time.Sleep(time.Second)
		r = w.boxed(be, nil, `git -C docs/inner init -q && git -C docs/inner config core.fsmonitor '`+w.payload("fsmonitor")+`; false' && echo planted`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "planted")
		w.hostGit(filepath.Join(w.project, "docs", "inner"), "status")
		w.expectNoMark("fsmonitor", "host git status in a folder the run before had kept read-only")
	})
}
