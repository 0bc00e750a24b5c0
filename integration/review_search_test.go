//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests in this file are a review's attacks on the search of the
// writable roots for what host programs run, and on the after-run check
// built on it: each steers a shortcut the check takes, then runs the real
// host program and asserts it executed nothing the box wrote.

// A folder watched for .pth files (the site-packages of the interpreter
// pre-commit's hook runs) is judged by the change time of each entry: what
// changed during the run is moved away. A folder the box made in an
// earlier run, holding a .pth, and renamed into the watched path in this
// one keeps its entries' old change times.
func TestReviewPthDirSwapped(t *testing.T) {
	needTool(t, "pre-commit", "apt-get install pre-commit")
	needTool(t, "python3", "apt-get install python3")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		venv := filepath.Join(w.project, ".venv")
		if out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--without-pip", "--system-site-packages", venv).CombinedOutput(); err != nil {
			t.Fatalf("venv: %v %s", err, out)
		}
		write(t, filepath.Join(w.project, ".pre-commit-config.yaml"), "repos: []\n")
		w.mustGit(w.project, "add", "-A")
		w.mustGit(w.project, "commit", "-q", "-m", "setup")
		env := []string{"PRE_COMMIT_HOME=" + filepath.Join(w.home, ".cache", "pre-commit")}
		out := w.hostRun(w.project, env, filepath.Join(venv, "bin", "python3"), "-m", "pre_commit", "install")
		hook, _ := os.ReadFile(filepath.Join(w.project, ".git", "hooks", "pre-commit"))
		if !strings.Contains(string(hook), venv) {
			t.Fatalf("pre-commit install did not name the venv's interpreter: %s\n%s", out, hook)
		}
		site := strings.TrimSpace(w.hostRun(w.project, nil, filepath.Join(venv, "bin", "python3"), "-c", "import site; print(site.getsitepackages()[0])"))
		if !strings.HasPrefix(site, venv) {
			t.Fatalf("site-packages %q is not in the venv", site)
		}
		// Run 1: a folder with a .pth, anywhere in the project.
		r := w.boxed(be, nil, `mkdir -p build/stash && echo 'import os; os.system("`+w.payload("pth")+`")' > build/stash/evil.pth && echo made`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "made")
		// Run 2: it becomes the watched site-packages.
		r = w.boxed(be, nil, `mv `+site+` build/old && mv build/stash `+site+` && echo swapped`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "swapped")
		w.env = append(w.env, env...)
		out, _ = w.hostGit(w.project, "commit", "-q", "--allow-empty", "-m", "host")
		w.expectNoMark("pth", "host git commit through pre-commit after the box swapped in a site-packages of its own ("+out+")")
	})
}

// A folder an allowed .envrc puts on PATH (PATH_add bin) is watched the
// same way: a program there under the name of a command on the user's
// PATH is moved away only when it changed during the run.
func TestReviewPathDirSwapped(t *testing.T) {
	needTool(t, "direnv", "apt-get install direnv")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, ".envrc"), "PATH_add bin\n")
		mkdir(t, filepath.Join(w.project, "bin"))
		env := []string{"XDG_CONFIG_HOME=" + filepath.Join(w.home, ".config"), "XDG_DATA_HOME=" + filepath.Join(w.home, ".local", "share")}
		if out := w.hostRun(w.project, env, "direnv", "allow", "."); strings.Contains(out, "error") {
			t.Fatalf("direnv allow: %s", out)
		}
		r := w.boxed(be, nil, `mkdir -p build/stash && `+w.script("build/stash/git", "path-git")+` && echo made`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "made")
		r = w.boxed(be, nil, `mv bin build/old && mv build/stash bin && echo swapped`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "swapped")
		out := w.hostRun(w.project, env, "direnv", "exec", w.project, "bash", "-c", "git --version")
		w.expectNoMark("path-git", "direnv exec in the project, then git, after the box swapped in a bin of its own ("+out+")")
	})
}

// An allowed .envrc that runs a script of the project by its path, or
// exports what a file of the project says, runs it on every cd with no
// prompt (direnv's allow covers .envrc alone), like what it sources.
func TestReviewDirenvRunsScript(t *testing.T) {
	needTool(t, "direnv", "apt-get install direnv")
	for _, kind := range []string{"script", "export-env-file", "missing-script"} {
		t.Run(kind, func(t *testing.T) {
			backends(t, func(t *testing.T, be string) {
				w := newWorld(t)
				w.repo(w.project)
				var envrc, plant string
				switch kind {
				case "script":
					envrc = "./scripts/dev-env.sh\n"
					write(t, filepath.Join(w.project, "scripts", "dev-env.sh"), "#!/bin/sh\nexit 0\n")
					os.Chmod(filepath.Join(w.project, "scripts", "dev-env.sh"), 0o755)
					plant = w.script("scripts/dev-env.sh", "direnv-script")
				case "missing-script":
					// Run only if it exists: it does not, before the run.
					envrc = "[ -x ./scripts/local-env.sh ] && ./scripts/local-env.sh\ntrue\n"
					plant = `mkdir -p scripts && ` + w.script("scripts/local-env.sh", "direnv-script")
				case "export-env-file":
					envrc = "export $(grep -v '^#' .env.shared | xargs)\n"
					write(t, filepath.Join(w.project, ".env.shared"), "APP_MODE=dev\n")
					plant = `printf '%s\n' '#!/bin/sh' '` + w.payload("direnv-script") + `' > evil.sh && echo "BASH_ENV=$PWD/evil.sh" >> .env.shared`
				}
				write(t, filepath.Join(w.project, ".envrc"), envrc)
				env := []string{"XDG_CONFIG_HOME=" + filepath.Join(w.home, ".config"), "XDG_DATA_HOME=" + filepath.Join(w.home, ".local", "share")}
				if out := w.hostRun(w.project, env, "direnv", "allow", "."); strings.Contains(out, "error") {
					t.Fatalf("direnv allow: %s", out)
				}
				// Refused (the file is kept read-only) or written and
				// undone after the run: either way the host runs nothing.
				r := w.boxed(be, nil, `{ `+plant+`; } 2>/dev/null; echo done`)
				expectCode(t, r, 0)
				expectContains(t, "stdout", r.stdout, "done")
				out := w.hostRun(w.project, env, "direnv", "exec", w.project, "bash", "-c", "true")
				w.expectNoMark("direnv-script", "direnv exec in the project after the box rewrote what its .envrc runs ("+out+")")
			})
		})
	}
}

// A repository the user keeps read-only for the run (--read-only) cannot
// be changed by the box; the after-run check must not take it for one the
// box made and strip its hooks and config.
func TestReviewReadOnlyRepositoryLeftAlone(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		lib := filepath.Join(w.project, "vendor", "lib")
		w.repo(lib)
		hook := filepath.Join(lib, ".git", "hooks", "pre-commit")
		write(t, hook, "#!/bin/sh\nexit 0\n")
		os.Chmod(hook, 0o755)
		w.mustGit(lib, "config", "core.hooksPath", ".git/hooks")
		config, _ := os.ReadFile(filepath.Join(lib, ".git", "config"))
		r := w.boxed(be, []string{"--read-only", lib}, `echo ran`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "ran")
		if !exists(hook) {
			t.Errorf("the after-run check moved away the hook of a repository the box could not write:\n%s", r.stderr)
		}
		if now, _ := os.ReadFile(filepath.Join(lib, ".git", "config")); string(now) != string(config) {
			t.Errorf("the after-run check rewrote the config of a repository the box could not write:\n%s\nnow:\n%s", r.stderr, now)
		}
	})
}

// On a file system that stamps change times in whole seconds (ext4 made
// with 128-byte inodes, ext3, FAT), a folder changed in the same second as
// the last change before the search keeps its stamp: the search takes it
// as unchanged and never looks at what the box made in it. The window of
// half a second the search allows for coarse clocks is shorter than the
// clock's tick. Here the folder's last change before the run is the host's
// (the user saving a file, or the run before in a loop); the box plants a
// repository in it within the same second.
func TestReviewCoarseTimestamps(t *testing.T) {
	rootOnly(t, "mounts a file system image")
	_, err := exec.LookPath("mkfs.ext4")
	need(t, err == nil, "mkfs.ext4 is not installed")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		img := filepath.Join(w.base, "fs.img")
		if out, err := exec.Command("truncate", "-s", "64M", img).CombinedOutput(); err != nil {
			t.Fatalf("truncate: %v %s", err, out)
		}
		if out, err := exec.Command("mkfs.ext4", "-q", "-I", "128", img).CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4: %v %s", err, out)
		}
		if out, err := exec.Command("mount", "-o", "loop", img, w.project).CombinedOutput(); err != nil {
			t.Fatalf("mount: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", "-l", w.project).Run() })
		w.repo(w.project)
		planted := ""
		for attempt := 0; attempt < 8 && planted == ""; attempt++ {
			lib := fmt.Sprintf("lib%d", attempt)
			mkdir(t, filepath.Join(w.project, lib))
			time.Sleep(1100 * time.Millisecond)
			// Just after a second begins, the folder changes; half a second
			// later the run starts.
			now := time.Now()
			time.Sleep(time.Until(now.Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
			write(t, filepath.Join(w.project, lib, "notes.txt"), "x\n")
			time.Sleep(530 * time.Millisecond)
			r := w.boxed(be, nil, `if [ "$(stat -c %Z `+lib+`)" != "$(date +%s)" ]; then echo late; exit 0; fi
git init -q `+lib+` && git -C `+lib+` config core.fsmonitor '`+w.payload("coarse")+`; false'
if [ "$(stat -c %Z `+lib+`)" = "$(date +%s)" ]; then echo planted; else echo late; fi`)
			expectCode(t, r, 0)
			if strings.Contains(r.stdout, "planted") {
				planted = lib
			}
		}
		need(t, planted != "", "the box never started within the same second as the folder's last change (a loaded machine)")
		w.hostGit(filepath.Join(w.project, planted), "status")
		w.expectNoMark("coarse", "host git status in a folder the box changed in the same second as before the run")
	})
}

// An .envrc is not kept (direnv asks again after it changes), yet the
// search follows what it names: one the box writes names the project
// itself, which every later run then keeps read-only (bubblewrap) or puts
// back after the run (Landlock), undoing all the agent's work.
func TestReviewEnvrcSteersGuards(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		r := w.boxed(be, nil, `echo 'source_env .' > .envrc && echo done`)
		expectCode(t, r, 0)
		r = w.boxed(be, nil, `echo work > work.txt && echo wrote`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "wrote")
		if !exists(filepath.Join(w.project, "work.txt")) {
			t.Fatalf("the agent's work in the project was undone after an .envrc the box wrote named the project:\n%s", r.stderr)
		}
	})
}

// A repository the box makes keeps the *.sample files of its hooks
// folder, any number of them; the next run records the hooks folder it
// keeps by restoring (always under Landlock; under bubblewrap once the
// guards' mounts are spent) and refuses to start beyond 100,000 entries,
// naming no fix: every later run is refused.
func TestReviewSampleHooksBlockRuns(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.timeout = 5 * time.Minute
		w.repo(w.project)
		r := w.boxed(be, nil, `i=0; while [ $i -lt 80 ]; do git init -q a$i; i=$((i+1)); done
git init -q zz && cd zz/.git/hooks && python3 -c '
for i in range(100001): open("h%d.sample" % i, "w").close()
' && echo made`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "made")
		r = w.boxed(be, nil, `echo started`)
		if r.code == 125 && !strings.Contains(r.stderr, "zz") {
			t.Fatalf("the next run was refused without naming the folder:\n%s", r.stderr)
		}
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "started")
	})
}
