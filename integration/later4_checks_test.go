//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/proctest"
)

// The tests in this file attack the after-run check itself: a registry path
// whose middle part the box turned into a symlink, the user's own files the
// check must leave alone, a pending record starved of disk space, an index
// crafted to crash or to hide an edit.

// A control file behind a symlinked parent: in a repository nested in the
// project, the box replaces .config with a symlink to a folder of its own
// holding lefthook-local.yml; the host's next git commit there (lefthook
// installed) must run nothing the box wrote.
func TestLaterSymlinkedParentLefthook(t *testing.T) {
	needTool(t, "lefthook", "npm install -g lefthook")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		sub := filepath.Join(w.project, "sub")
		w.repo(sub)
		write(t, filepath.Join(sub, "lefthook.yml"), "pre-commit:\n  commands:\n    hello:\n      run: echo hello\n")
		if out := w.hostRun(sub, nil, "lefthook", "install"); !exists(filepath.Join(sub, ".git", "hooks", "pre-commit")) {
			t.Fatalf("lefthook install: %s", out)
		}
		r := w.boxed(be, nil, `mkdir -p evil && printf 'pre-commit:\n  commands:\n    evil:\n      run: %s\n' '`+w.payload("local-yml")+`' > evil/lefthook-local.yml
rm -rf sub/.config; ln -s ../evil sub/.config && echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		write(t, filepath.Join(sub, "file.txt"), "x\n")
		w.mustGit(sub, "add", "file.txt")
		out, _ := w.hostGit(sub, "commit", "-q", "-m", "host")
		w.expectNoMarks("host git commit with lefthook in the nested repository ("+out+")", "local-yml")
		if fi, err := os.Lstat(filepath.Join(sub, ".config")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("the box's symlink sub/.config is still there after the run\n%s", r)
		}
	})
}

// A registry path of several parts with a symlinked middle part
// (.claude/settings.json, gradle/wrapper/gradle-wrapper.properties): the
// symlink the box made stands where the control file's folder must be, and
// is moved away, whatever part of the path it is.
func TestLaterSymlinkedMiddlePart(t *testing.T) {
	cases := []struct{ name, link, target, file string }{
		{"claude", "sub/.claude", "../evil", "settings.json"},
		{"gradle", "sub/gradle", "../evil", "wrapper/gradle-wrapper.properties"},
		{"gradle-wrapper", "sub/gradle/wrapper", "../../evil", "gradle-wrapper.properties"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			backends(t, func(t *testing.T, be string) {
				w := newWorld(t)
				w.repo(w.project)
				mkdir(t, filepath.Join(w.project, "sub"))
				write(t, filepath.Join(w.project, "sub", "README"), "a folder of the project\n")
				r := w.boxed(be, nil, `mkdir -p evil/wrapper && echo '{"hooks":{}}' > evil/settings.json
echo 'distributionUrl=file:///evil.zip' > evil/wrapper/gradle-wrapper.properties
cp evil/wrapper/gradle-wrapper.properties evil/gradle-wrapper.properties
mkdir -p "$(dirname `+tc.link+`)" && ln -s `+tc.target+` `+tc.link+` && cat `+tc.link+`/`+tc.file+` >/dev/null && echo done`)
				expectCode(t, r, 0)
				expectContains(t, "stdout", r.stdout, "done")
				link := filepath.Join(w.project, tc.link)
				if fi, err := os.Lstat(link); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					t.Errorf("the box's symlink %s (in front of %s) is still there after the run\n%s", tc.link, tc.file, r)
				}
				expectContains(t, "stderr", r.stderr, link)
			})
		})
	}
}

// The after-run check never moves away what the user had before the run:
// every registry entry that exists before a run that changes nothing —
// kept read-only by the policy, in a writable root, in a nested folder —
// is still there, unchanged, after it.
func TestLaterUserFilesStay(t *testing.T) {
	entries := []string{
		".codex/config.toml", ".claude/settings.json", ".claude/settings.local.json", ".mcp.json",
		".vscode/tasks.json", ".envrc", "lefthook.yml", ".config/lefthook-local.yml",
		".pre-commit-config.yaml", "gradle/wrapper/gradle-wrapper.properties", ".cargo/config.toml",
		"rust-toolchain.toml", ".yarnrc.yml", ".npmrc", ".gemini/settings.json", ".idea/workspace.xml",
		".zed/settings.json", ".husky/pre-commit", ".lefthook/pre-commit/x.sh", ".cursor/rules",
	}
	// The user's own symlinks in the middle of a registry path stay too.
	t.Run("symlinked-parts", func(t *testing.T) {
		backends(t, func(t *testing.T, be string) {
			w := newWorld(t)
			w.repo(w.project)
			links := map[string]string{"sub/.config": "../shared/config", "sub/.claude": "../shared/claude", "sub/gradle": "../shared/gradle"}
			write(t, filepath.Join(w.project, "shared", "config", "lefthook-local.yml"), "# the user's own\n")
			write(t, filepath.Join(w.project, "shared", "claude", "settings.json"), "{}\n")
			write(t, filepath.Join(w.project, "shared", "gradle", "wrapper", "gradle-wrapper.properties"), "# the user's own\n")
			mkdir(t, filepath.Join(w.project, "sub"))
			for l, target := range links {
				if err := os.Symlink(target, filepath.Join(w.project, l)); err != nil {
					t.Fatal(err)
				}
			}
			r := w.run("run", "--backend", be, "--", "true")
			expectCode(t, r, 0)
			expectNotContains(t, "stderr", r.stderr, "moved to")
			for l, target := range links {
				if got, err := os.Readlink(filepath.Join(w.project, l)); err != nil || got != target {
					t.Errorf("%s: the user's symlink, there before the run, is not as it was after it: %q %v", l, got, err)
				}
			}
		})
	})
	for _, mode := range []string{"writable", "read-only", "nested", "nested-read-only"} {
		t.Run(mode, func(t *testing.T) {
			backends(t, func(t *testing.T, be string) {
				w := newWorld(t)
				h := filepath.Join(w.base, "H")
				mkdir(t, h)
				top := h
				if strings.HasPrefix(mode, "nested") {
					top = filepath.Join(h, "sub", "deeper")
				}
				flags := []string{"--writable", h}
				for _, e := range entries {
					write(t, filepath.Join(top, e), "# the user's own "+e+"\n")
					if strings.HasSuffix(mode, "read-only") {
						first, _, _ := strings.Cut(e, "/")
						ro := filepath.Join(top, first)
						if !strings.Contains(strings.Join(flags, " "), ro+" ") && !strings.HasSuffix(strings.Join(flags, " "), ro) {
							flags = append(flags, "--read-only", ro)
						}
					}
				}
				w.cwd = h
				r := w.run(append(append([]string{"run", "--backend", be}, flags...), "--", "true")...)
				expectCode(t, r, 0)
				expectNotContains(t, "stderr", r.stderr, "moved to")
				expectNotContains(t, "stderr", r.stderr, "created by the box")
				for _, e := range entries {
					got, err := os.ReadFile(filepath.Join(top, e))
					if err != nil || string(got) != "# the user's own "+e+"\n" {
						t.Errorf("%s: the user's file, there before the run, is not as it was after it: %q %v", e, got, err)
					}
				}
			})
		})
	}
}

// A full disk never starves the crash recovery: with the state folder on a
// full file system (a small tmpfs, in a mount namespace of the test's own),
// a run whose pending record cannot be written does not start, and says
// where and why.
func TestLaterPendingRecordFullDisk(t *testing.T) {
	rootOnly(t, "mounting a small tmpfs needs root")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		state := filepath.Join(w.home, ".local", "state")
		mkdir(t, state)
		// What agentbox keeps there besides the record is made by a first
		// run, copied onto the tmpfs, and the tmpfs filled.
		expectCode(t, w.run("run", "--backend", be, "--", "true"), 0)
		script := `set -e
keep=$(mktemp -d /var/tmp/abit-state-XXXXXX)
cp -a "$0"/. "$keep"/
mount -t tmpfs -o size=512k,mode=0755 tmpfs "$0"
cp -a "$keep"/. "$0"/
rm -rf "$keep"
dd if=/dev/zero of="$0/fill" bs=1k 2>/dev/null || true
exec "$@"`
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		c := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, state,
			bin, "run", "--backend", be, "--", "sh", "-c", "echo the box ran")
		c.Dir, c.Env = w.project, w.env
		proctest.Own(t, c)
		out, err := c.CombinedOutput()
		if err == nil || strings.Contains(string(out), "the box ran") {
			t.Fatalf("the run started although its pending record could not be written (%v):\n%s", err, out)
		}
		expectContains(t, "output", string(out), filepath.Join(state, "agentbox", "pending"))
		expectContains(t, "output", string(out), "free space")
	})
}

// A pending record that exists but cannot be read (cut short, as a full
// disk left it before) stops the next run with its path and what to do; it
// is never skipped and removed.
func TestLaterPendingRecordUnreadable(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		for _, content := range []string{"", `{"run":"dead","host_exec":{"roo`} {
			w := newWorld(t)
			w.repo(w.project)
			expectCode(t, w.run("run", "--backend", be, "--", "true"), 0)
			rec := filepath.Join(w.home, ".local", "state", "agentbox", "pending", "dead.json")
			write(t, rec, content)
			r := w.run("run", "--backend", be, "--", "sh", "-c", "echo the box ran")
			if r.code == 0 || strings.Contains(r.stdout, "the box ran") {
				t.Fatalf("a run started past an unreadable pending record %q:\n%s", content, r)
			}
			expectContains(t, "stderr", r.stderr, rec)
			expectContains(t, "stderr", r.stderr, "cannot be read")
			if !exists(rec) {
				t.Fatalf("the unreadable record %q was removed", content)
			}
			// Once the user has looked and removed it, runs start again.
			os.Remove(rec)
			r = w.run("run", "--backend", be, "--", "sh", "-c", "echo the box ran")
			expectCode(t, r, 0)
		}
	})
}

// forgeIndex is a python3 program the box runs: it rewrites the index
// entry of the file named by argv[1] (index version 2) with the file's
// present size and times, keeping the old object name, and makes the
// checksum anew — no mark, just cached stat data that hides the edit.
const forgeIndex = `import hashlib, os, struct, sys
name = sys.argv[1].encode()
data = bytearray(open(".git/index", "rb").read())
n = struct.unpack(">I", data[8:12])[0]
off = 12
st = os.stat(sys.argv[1])
for i in range(n):
    flags = struct.unpack(">H", data[off+60:off+62])[0]
    z = data.index(b"\0", off+62)
    if bytes(data[off+62:z]) == name:
        struct.pack_into(">IIII", data, off, int(st.st_ctime), st.st_ctime_ns % 10**9, int(st.st_mtime), st.st_mtime_ns % 10**9)
        struct.pack_into(">I", data, off+36, st.st_size)
    off = off + ((z - off) + 8) // 8 * 8
data[-20:] = hashlib.sha1(bytes(data[:-20])).digest()
open(".git/index.new", "wb").write(bytes(data))
os.rename(".git/index.new", ".git/index")
`

// The box edits a tracked Makefile, then rewrites its index entry with the
// old object name and the new file's size and times: git status and git
// diff are clean, no mark is set. The edit is named at the end of the run
// and shows in the host's git status afterwards.
func TestLaterForgedIndexEntry(t *testing.T) {
	needTool(t, "python3", "apt-get install python3")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		r := forgeMakefileEntry(t, w, be, "")
		expectCode(t, r, 0)
		expectContains(t, "stderr (the end-of-run report)", r.stderr, filepath.Join(w.project, "Makefile"))
		st := w.mustGit(w.project, "status", "--porcelain", "--untracked-files=no")
		expectContains(t, "host git status", st, "Makefile")
		diff := w.mustGit(w.project, "diff")
		expectContains(t, "host git diff", diff, "marks")
	})
}

// craftedIndex is a python3 program the box runs: it writes a version-4
// index whose second entry's name-prefix length is a varint past 2^63.
const craftedIndex = `import hashlib, struct
def entry(prefix, name):
    return bytes(40) + bytes(20) + struct.pack(">H", 0x8000 | len(name)) + prefix + name + b"\0"
body = b"DIRC" + struct.pack(">II", 4, 2) + entry(b"\0", b"Makefile") + entry(b"\xff" * 8 + b"\x7f", b"x")
open(".git/index.new", "wb").write(body + hashlib.sha1(body).digest())
import os; os.rename(".git/index.new", ".git/index")
`

// A crafted index (a version-4 name-prefix varint past 2^63) does not crash
// the supervisor: the run's check fails closed naming the index, the runs
// after it refuse to start with the same path, never a panic, until the
// index is rebuilt.
func TestLaterCraftedIndex(t *testing.T) {
	needTool(t, "python3", "apt-get install python3")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, "crafted.py"), craftedIndex)
		index := filepath.Join(w.project, ".git", "index")
		r := w.boxed(be, nil, `python3 crafted.py && echo done`)
		expectNotContains(t, "stderr", r.stderr, "panic")
		if r.code == 0 {
			t.Fatalf("the run ended as checked although its index could not be read:\n%s", r)
		}
		expectContains(t, "stderr", r.stderr, index)
		r = w.run("run", "--backend", be, "--", "sh", "-c", "echo the box ran")
		expectNotContains(t, "stderr", r.stderr, "panic")
		if r.code == 0 || strings.Contains(r.stdout, "the box ran") {
			t.Fatalf("a run started while the crafted index stands unchecked:\n%s", r)
		}
		expectContains(t, "stderr", r.stderr, index)
		// The user rebuilds the index: runs start again.
		os.Remove(index)
		w.mustGit(w.project, "read-tree", "HEAD")
		r = w.run("run", "--backend", be, "--", "sh", "-c", "echo the box ran")
		expectCode(t, r, 0)
	})
}

// forgeMakefileEntry commits a Makefile in a new repository of w's project,
// then has the box append to it, rewrite its index entry to match the new
// file (forgeIndex) and run after; it checks that git in the box no longer
// shows the edit (the premise of the tests that use it).
func forgeMakefileEntry(t *testing.T, w *world, be, after string) result {
	t.Helper()
	w.repo(w.project)
	write(t, filepath.Join(w.project, "Makefile"), "all:\n\t@echo ok\n")
	w.mustGit(w.project, "add", "Makefile")
	w.mustGit(w.project, "commit", "-q", "-m", "makefile")
	w.mustGit(w.project, "update-index", "--index-version", "2")
	write(t, filepath.Join(w.project, "forge.py"), forgeIndex)
	r := w.boxed(be, nil, `printf '\t@`+w.payload("make")+`\n' >> Makefile && sleep 1.1 && python3 forge.py Makefile`+after+` && git status --porcelain --untracked-files=no && echo done`)
	if strings.Contains(r.stdout, "Makefile") || !strings.Contains(r.stdout, "done") {
		t.Fatalf("the forged entry did not hide the edit inside the box (the test's premise):\n%s", r)
	}
	return r
}
