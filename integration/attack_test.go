//go:build linux

package integration

import (
	"fmt"
	"os"
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

// A Landlock box takes a placeholder of a bubblewrap run out of its
// reach while both run in one project. rename: the box renames the
// placeholder folder away; the rename happens in a mount namespace where
// the placeholder is no mount point, so the kernel detaches the bubblewrap
// box's read-only mount over it (Linux 3.18 and later), and the bubblewrap
// box sees the project's own entry again, missing, and makes the control
// folder. The bubblewrap run's check must leave nothing of it where the
// host program finds it (before: it never looked at its own placeholders).
func TestHostExecConcurrentPlaceholderDetached(t *testing.T) {
	tasks := `{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"touch /nonexistent/x","runOptions":{"runOn":"folderOpen"}}]}`
	for _, tc := range []struct{ name, landlock, bwrap, planted string }{
		{"rename", `mv .vscode stash && echo moved`, `mkdir -p .vscode; printf '%s' '` + tasks + `' > .vscode/tasks.json`, ".vscode/tasks.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.repo(w.project)
			c, br, errb := w.startWaiting("bwrap", tc.bwrap+` && echo written`)
			first := strings.Split(tc.planted, "/")[0]
			if _, err := os.Lstat(filepath.Join(w.project, first)); err != nil {
				t.Fatalf("the bubblewrap run holds no placeholder at %s: %v", first, err)
			}
			r := w.boxed("landlock", nil, tc.landlock)
			t.Logf("landlock run: %s", r)
			expectContains(t, "stdout", r.stdout, "moved")
			write(t, filepath.Join(w.project, "go"), "")
			rest := readRest(t, br)
			werr := waitCmd(t, c)
			expectContains(t, "stdout", rest, "written")
			t.Logf("bubblewrap run: %v\n%s", werr, errb.String())
			if data, err := os.ReadFile(filepath.Join(w.project, tc.planted)); err == nil && strings.Contains(string(data), "nonexistent") {
				t.Errorf("what the bubblewrap box wrote at %s once a Landlock box took its placeholder out of its reach is still there", tc.planted)
			}
		})
	}
}

// The same with the paths a bubblewrap run keeps read-only (the user's
// own git hooks folder and config): a Landlock box of the same user moves
// them away and puts copies back (or links the config to a name the
// bubblewrap box may write), which detaches the bubblewrap box's
// read-only mounts over them, and the bubblewrap box then writes a hook
// and a core.fsmonitor there. Host git must run neither. The same with a
// Landlock run first: its rules hold the inodes that stood there, not
// the copies put in their place.
func TestHostExecConcurrentReadOnlyDetached(t *testing.T) {
	for _, first := range []string{"bwrap", "landlock"} {
		for _, tc := range []struct{ name, landlock, bwrap string }{
			{"hooks", `mv .git/hooks .git/hooks.old && mkdir .git/hooks && echo moved`, `printf '#!/bin/sh\n%s\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`},
			{"config", `mv .git/config .git/config.old && cp .git/config.old .git/config && echo moved`, `printf '[core]\n\tfsmonitor = %s; false\n' >> .git/config`},
			{"link", `ln .git/config keep && echo moved`, `printf '[core]\n\tfsmonitor = %s; false\n' >> keep`},
		} {
			t.Run(first+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t)
				w.repo(w.project)
				c, br, errb := w.startWaiting(first, fmt.Sprintf(tc.bwrap, w.payload(tc.name))+` && echo written`)
				r := w.boxed("landlock", nil, tc.landlock)
				t.Logf("landlock run: %s", r)
				write(t, filepath.Join(w.project, "go"), "")
				rest := readRest(t, br)
				werr := waitCmd(t, c)
				t.Logf("bubblewrap run: %v\n%s\n%s", werr, rest, errb.String())
				cfg, _ := os.ReadFile(filepath.Join(w.project, ".git", "config"))
				t.Logf("config after the runs:\n%s", cfg)
				w.hostGit(w.project, "status")
				w.hostGit(w.project, "commit", "-q", "--allow-empty", "-m", "x")
				w.expectNoMarks("host git after a Landlock box took a read-only path out of a bubblewrap box's mounts", tc.name)
			})
		}
	}
}

// A hook of the user's past 1 MiB that only starts like a compiled
// program: execve refuses it and git runs it with /bin/sh, so the script
// it names is the user's to protect. Before, the search took it for a
// program and skipped it: the box rewrote the script and host git ran it.
func TestSearchHookOnlyLooksCompiled(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		for _, dir := range []string{".git/hooks", ".githooks"} {
			t.Run(strings.TrimPrefix(dir, "."), func(t *testing.T) {
				w := newWorld(t)
				w.repo(w.project)
				if dir != ".git/hooks" {
					w.mustGit(w.project, "config", "core.hooksPath", dir)
				}
				write(t, filepath.Join(w.project, "lint.sh"), "true\n")
				hook := filepath.Join(w.project, dir, "pre-commit")
				write(t, hook, "\x7fELF\nsh ./lint.sh\n"+strings.Repeat("# pad\n", 200_000))
				if err := os.Chmod(hook, 0o755); err != nil {
					t.Fatal(err)
				}
				r := w.boxed(be, nil, `echo '`+w.payload("lint")+`' > lint.sh; echo done`)
				t.Logf("run: %s", r)
				w.hostGit(w.project, "commit", "-q", "--allow-empty", "-m", "x")
				w.expectNoMarks("host git commit running a hook that only starts like a program", "lint")
			})
		}
	})
}

// TIOCGPTPEER, which the supervisor answers for a Landlock box, gives the
// box the terminal of a master it holds and nothing else: not through a
// descriptor opened O_PATH (no master: a path only), and for a master
// handed to another process of the box over a socket, that master's own
// terminal (its number is the master's, and what is written to it comes
// out of that master).
func TestPtyPeerOnlyOwnMaster(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		r := w.boxed(be, nil, `python3 -c '
import os, fcntl, socket, struct, termios
TIOCGPTPEER, TIOCGPTN = 0x5441, 0x80045430
try:
    p = os.open("/dev/ptmx", os.O_PATH)
    fcntl.ioctl(p, TIOCGPTPEER, os.O_RDWR | os.O_NOCTTY)
    print("opath ok", flush=True)
except OSError as e:
    print("opath refused", e.errno, flush=True)
m = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
fcntl.ioctl(m, 0x40045431, struct.pack("i", 0))  # TIOCSPTLCK: unlock
n = struct.unpack("I", fcntl.ioctl(m, TIOCGPTN, b"\0\0\0\0"))[0]
a, b = socket.socketpair(socket.AF_UNIX)
if os.fork() == 0:
    fd = socket.recv_fds(b, 1, 1)[1][0]
    peer = fcntl.ioctl(fd, TIOCGPTPEER, os.O_RDWR | os.O_NOCTTY)
    print("passed", os.readlink("/proc/self/fd/%d" % peer) == "/dev/pts/%d" % n, flush=True)
    os.write(peer, b"z")
    b.recv(1)
    os._exit(0)
socket.send_fds(a, [b"x"], [m])
print("read", os.read(m, 1) == b"z", flush=True)
a.send(b"q")
os.wait()
'`)
		t.Logf("%s", r)
		expectCode(t, r, 0)
		if strings.Contains(r.stdout, "opath ok") {
			t.Error("TIOCGPTPEER through an O_PATH descriptor gave a terminal")
		}
		expectContains(t, "stdout", r.stdout, "opath refused")
		expectContains(t, "stdout", r.stdout, "passed True")
		expectContains(t, "stdout", r.stdout, "read True")
	})
}

// A rebase state the box made in an earlier run and kept in an ordinary
// project folder is older than this run by its change times: moved back
// into .git whole (rename), or its files linked into a new state folder,
// it must still count as this run's (rename and link stamp the inode's
// change time), and host git rebase --continue runs none of its exec
// lines. (Under bubblewrap, .git is a mount of its own and the links
// fail with EXDEV.)
func TestLater4RebaseStateFromEarlierRun(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		for _, how := range []struct{ name, script string }{
			{"rename", `mv keep/rebase-merge .git/rebase-merge && echo back`},
			{"link", `mkdir .git/rebase-merge && for f in $(cd keep/rebase-merge && find . -type f); do mkdir -p .git/rebase-merge/$(dirname $f) && ln keep/rebase-merge/$f .git/rebase-merge/$f || exit 0; done && echo back`},
		} {
			t.Run(how.name, func(t *testing.T) {
				w := newWorld(t)
				w.repo(w.project)
				w.mustGit(w.project, "commit", "-q", "--allow-empty", "-m", "second")
				w.mustGit(w.project, "commit", "-q", "--allow-empty", "-m", "third")
				editor := `printf 'break\nexec ` + w.payload("exec") + `\n' >`
				r := w.boxed(be, nil, `
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e.invalid
GIT_SEQUENCE_EDITOR=`+shq(editor)+` git rebase -q -i HEAD~2 >/dev/null 2>&1
mkdir keep && mv .git/rebase-merge keep/ && echo kept`)
				expectCode(t, r, 0)
				expectContains(t, "box output", r.stdout, "kept")
				r = w.boxed(be, nil, how.script)
				t.Logf("second run: %s", r)
				if how.name == "rename" || be == "landlock" {
					// Under bubblewrap .git is a mount of its own: no link
					// into it from the project (EXDEV).
					expectContains(t, "box output", r.stdout, "back")
				}
				out, _ := w.hostGit(w.project, "rebase", "--continue")
				w.expectNoMark("exec", "host git rebase --continue: "+out)
			})
		}
	})
}
