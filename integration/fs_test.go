//go:build linux

package integration

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Stage 1: the whole host is read-only, /dev and /proc are the box's own.
func TestRootIsReadOnly(t *testing.T) {
	w := newWorld(t)
	outside := filepath.Join(w.base, "outside")
	mkdir(t, outside)
	r := w.sh(nil, `touch /usr/agentbox-probe; touch `+outside+`/x; touch $HOME/x; echo done`)
	expectCode(t, r, 0)
	if n := strings.Count(r.stderr, "Read-only file system"); n != 3 {
		t.Fatalf("want 3 EROFS failures, got %d:\n%s", n, r)
	}
	for _, p := range []string{"/usr/agentbox-probe", filepath.Join(outside, "x"), filepath.Join(w.home, "x")} {
		if exists(p) {
			t.Errorf("%s was created on the host", p)
		}
	}
}

func TestOwnProcAndPIDNamespace(t *testing.T) {
	w := newWorld(t)
	r := w.sh(nil, `tr '\0' ' ' < /proc/1/cmdline; echo; ls /proc | grep -c '^[0-9]'`)
	expectCode(t, r, 0)
	expectContains(t, "pid 1", r.stdout, "__init")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || len(lines[1]) > 2 {
		t.Fatalf("want only a handful of processes visible, got %q", r.stdout)
	}
}

// As root, bwrap keeps every capability unless told otherwise, and
// `mount -o remount,rw /` would then make the host's / writable.
func TestRemountEscapeFails(t *testing.T) {
	w := newWorld(t)
	r := w.sh(nil, `mount -o remount,rw / 2>&1; echo remount=$?; touch /usr/agentbox-remount-probe 2>&1; grep CapEff /proc/self/status`)
	expectCode(t, r, 0)
	expectNotContains(t, "remount", r.stdout, "remount=0")
	expectContains(t, "write after remount", r.stdout, "Read-only file system")
	expectContains(t, "capabilities", r.stdout, "CapEff:\t0000000000000000")
	if exists("/usr/agentbox-remount-probe") {
		os.Remove("/usr/agentbox-remount-probe")
		t.Fatal("the remount escape wrote to the host's /usr")
	}
}

// Stage 4: a writable root is writable and what is written there is on the
// host afterwards.
func TestWritableRootPersists(t *testing.T) {
	w := newWorld(t)
	extra := filepath.Join(w.base, "extra")
	mkdir(t, extra)
	r := w.sh([]string{"--writable", extra}, `echo hi > made.txt && echo there > `+extra+`/e.txt && echo ok`)
	expectCode(t, r, 0)
	for p, want := range map[string]string{filepath.Join(w.project, "made.txt"): "hi\n", filepath.Join(extra, "e.txt"): "there\n"} {
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want {
			t.Errorf("%s on the host: %q, %v; want %q", p, got, err, want)
		}
	}
}

// A symlink in a writable root that points at a read-only place does not
// make that place writable.
func TestSymlinkOutOfWritableRoot(t *testing.T) {
	w := newWorld(t)
	target := filepath.Join(w.base, "target")
	mkdir(t, target)
	if err := os.Symlink(target, filepath.Join(w.project, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(w.project, "etc")); err != nil {
		t.Fatal(err)
	}
	r := w.sh(nil, `touch link/x; touch etc/agentbox-probe; echo done`)
	expectCode(t, r, 0)
	if n := strings.Count(r.stderr, "Read-only file system"); n != 2 {
		t.Fatalf("want 2 EROFS failures, got:\n%s", r)
	}
	if exists(filepath.Join(target, "x")) || exists("/etc/agentbox-probe") {
		t.Fatal("a write through a symlink escaped the writable root")
	}
}

// A writable root given as a symlink is resolved: the real folder is bound.
func TestSymlinkedWritableRoot(t *testing.T) {
	w := newWorld(t)
	real := filepath.Join(w.base, "real")
	mkdir(t, real)
	link := filepath.Join(w.base, "alias")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	r := w.sh([]string{"--writable", link}, `echo x > `+link+`/f && echo ok`)
	expectCode(t, r, 0)
	if !exists(filepath.Join(real, "f")) {
		t.Fatal("write through the symlinked writable root did not land in its target")
	}
}

func gitInit(t *testing.T, w *world, dir string) {
	t.Helper()
	c := w.cmdRaw("git", "init", "-q", dir)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
}

// Stage 5: .git/hooks and .git/config of the top repository and of nested
// ones stay read-only; the rest of .git is writable so commits work.
func TestGitHooksAndConfigReadOnly(t *testing.T) {
	w := newWorld(t)
	gitInit(t, w, w.project)
	gitInit(t, w, filepath.Join(w.project, "sub", "nested"))
	gitInit(t, w, filepath.Join(w.project, "node_modules", "pkg"))
	// A repository whose hooks folder is missing gets an empty one, for real.
	os.RemoveAll(filepath.Join(w.project, "sub", "nested", ".git", "hooks"))
	w.env = append(w.env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")

	r := w.sh(nil, `
erofs() { if ( "$@" ) 2>&1 | grep -q 'Read-only file system'; then echo EROFS; else echo WRITTEN; fi; }
echo hooks=$(erofs sh -c 'echo evil > .git/hooks/pre-commit')
echo config=$(erofs sh -c "echo '[core]' >> .git/config")
echo nested=$(erofs sh -c 'echo evil > sub/nested/.git/hooks/post-checkout')
echo nestedconfig=$(erofs sh -c "echo '[x]' >> sub/nested/.git/config")
mkdir -p node_modules/pkg/.git/hooks && echo fine > node_modules/pkg/.git/hooks/x; echo package-tree=$?
mv .git .git-moved 2>/dev/null && echo moved=yes || echo moved=refused
mv sub/nested/.git sub/nested/.git-moved 2>/dev/null && echo nestedmoved=yes || echo nestedmoved=refused
mv .git/hooks .git/hooks-moved 2>/dev/null && echo hooksmoved=yes || echo hooksmoved=refused
echo content > file.txt && git add file.txt && git -c user.name=t -c user.email=t@example.invalid commit -qm first; echo commit=$?
`)
	expectCode(t, r, 0)
	for _, want := range []string{"hooks=EROFS", "config=EROFS", "nested=EROFS", "nestedconfig=EROFS", "package-tree=0", "commit=0", "moved=refused", "nestedmoved=refused", "hooksmoved=refused"} {
		expectContains(t, "git protection", r.stdout, want)
	}
	// In a package tree (node_modules) a mount would stop npm from
	// replacing the tree: the repository's hooks are writable during the
	// run and what the box put there is moved away after it.
	if exists(filepath.Join(w.project, "node_modules", "pkg", ".git", "hooks", "x")) {
		t.Fatal("a file planted in a package tree's hooks is still there after the run")
	}
	if exists(filepath.Join(w.project, ".git", "hooks", "pre-commit")) {
		t.Fatal("a hook was planted on the host")
	}
	if fi, err := os.Stat(filepath.Join(w.project, "sub", "nested", ".git", "hooks")); err != nil || !fi.IsDir() {
		t.Fatalf("the missing hooks folder was not created for real: %v", err)
	}
	log := w.cmdRaw("git", "-C", w.project, "log", "--oneline")
	if out, err := log.CombinedOutput(); err != nil || !strings.Contains(string(out), "first") {
		t.Fatalf("the commit made in the box is not on the host: %v %s", err, out)
	}
}

// Stage 6: a denied folder is an empty read-only folder, a denied file an
// empty read-only file, and deny wins over writable.
func TestDeny(t *testing.T) {
	w := newWorld(t)
	secretDir := filepath.Join(w.project, "secrets")
	write(t, filepath.Join(secretDir, "key.pem"), "PRIVATE")
	secretFile := filepath.Join(w.project, ".env")
	write(t, secretFile, "TOKEN=abc")
	r := w.sh([]string{"--deny", secretDir, "--deny", secretFile}, `
ls -A secrets | wc -l
cat .env | wc -c
touch secrets/new 2>&1 | grep -q 'Read-only' && echo dirwrite=EROFS
(echo x > .env) 2>&1 | grep -q 'Read-only' && echo filewrite=EROFS
`)
	expectCode(t, r, 0)
	expectContains(t, "deny", r.stdout, "0\n0\n")
	expectContains(t, "deny", r.stdout, "dirwrite=EROFS")
	expectContains(t, "deny", r.stdout, "filewrite=EROFS")
	if got, _ := os.ReadFile(secretFile); string(got) != "TOKEN=abc" {
		t.Fatalf("the denied file changed on the host: %q", got)
	}
	plan := w.run("plan", "--deny", w.project, "--", "true")
	expectCode(t, plan, 0)
	expectContains(t, "plan", plan.stdout, "deny wins over writable "+w.project)
}

// With no policy, the credential stores that exist are denied.
func TestDefaultCredentialStoresDenied(t *testing.T) {
	w := newWorld(t)
	write(t, filepath.Join(w.home, ".aws", "credentials"), "[default]\naws_secret_access_key=x\n")
	write(t, filepath.Join(w.home, ".netrc"), "machine x password y\n")
	r := w.sh(nil, `ls -A $HOME/.aws | wc -l; wc -c < $HOME/.netrc; echo $AGENTBOX_DENY`)
	expectCode(t, r, 0)
	expectContains(t, "defaults", r.stdout, "0\n0\n")
	expectContains(t, "AGENTBOX_DENY", r.stdout, filepath.Join(w.home, ".aws"))
}

// A missing deny path is skipped and reported, not an error.
func TestMissingDenyReported(t *testing.T) {
	w := newWorld(t)
	r := w.run("plan", "--deny", filepath.Join(w.base, "nope"), "--", "true")
	expectCode(t, r, 0)
	expectContains(t, "plan", r.stdout, "deny path does not exist")
}

func (w *world) cmdRaw(name string, args ...string) *execCmd {
	c := newExecCmd(name, args...)
	c.Env = w.env
	return c
}

// The kernel's tunables are read-only in the box, also for root (a root box
// that could write /proc/sys/kernel/core_pattern would have the host run its
// program as root at the next crash).
func TestProcSysReadOnly(t *testing.T) {
	w := newWorld(t)
	before, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
	r := w.sh(nil, `(echo '|/bin/false' > /proc/sys/kernel/core_pattern) 2>&1 | grep -q 'Read-only file system' && echo core=EROFS; cat /proc/sys/kernel/pid_max >/dev/null && echo readable`)
	expectCode(t, r, 0)
	expectContains(t, "sysctl", r.stdout, "core=EROFS\nreadable")
	if after, _ := os.ReadFile("/proc/sys/kernel/core_pattern"); string(after) != string(before) {
		os.WriteFile("/proc/sys/kernel/core_pattern", before, 0o644)
		t.Fatalf("the box changed the host's core_pattern to %q", after)
	}
}

// The old entries of /proc whose files root owns (an interrupt's CPUs, the
// PCI bus's configuration, the magic SysRq key) cannot be opened for
// writing in the box, also by root. Under bubblewrap agentbox leaves their
// read-only binds to bwrap, which makes them for whatever the box could
// write, and the init refuses to start a root box where one is writable.
// Opening for writing writes nothing.
func TestProcOldEntriesReadOnly(t *testing.T) {
	var files []string
	for _, dir := range []string{"/proc/irq", "/proc/bus"} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && len(files) < 8 {
				if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o200 != 0 {
					files = append(files, p)
					return fs.SkipDir
				}
			}
			return nil
		})
	}
	if _, err := os.Stat("/proc/sysrq-trigger"); err == nil {
		files = append(files, "/proc/sysrq-trigger")
	}
	if len(files) == 0 {
		need(t, false, "no file under /proc/irq, /proc/bus or /proc/sysrq-trigger that root can write")
	}
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		script := ""
		for _, f := range files {
			script += fmt.Sprintf("if (exec 3>>%q) 2>/dev/null; then echo %q=writable; else echo %q=refused; fi\n", f, f, f)
		}
		r := w.sh(be, script)
		expectCode(t, r, 0)
		for _, f := range files {
			expectContains(t, f, r.stdout, f+"=refused")
		}
	})
}

// The folders holding read-only paths are pinned too: the agent cannot move
// .claude (or a nested repository's folder) away and put an unprotected one
// in its place; a control file that does not exist is reported in plan.
func TestProtectedParentsPinned(t *testing.T) {
	w := newWorld(t)
	write(t, filepath.Join(w.project, ".claude", "settings.json"), "{}\n")
	gitInit(t, w, filepath.Join(w.project, "sub", "nested"))
	r := w.sh([]string{"--provider", "claude"}, `
mv .claude .claude.old 2>/dev/null && echo claude=moved || echo claude=refused
mv sub sub.old 2>/dev/null && echo sub=moved || echo sub=refused
(echo '{"hooks":1}' > .claude/settings.json) 2>&1 | grep -q Read-only && echo settings=EROFS
`)
	expectCode(t, r, 0)
	expectContains(t, "pins", r.stdout, "claude=refused\nsub=refused\nsettings=EROFS")
	if got, _ := os.ReadFile(filepath.Join(w.project, ".claude", "settings.json")); string(got) != "{}\n" {
		t.Fatalf("settings.json changed on the host: %q", got)
	}
	// A control file that does not exist is blocked for the run: an empty
	// read-only placeholder stands in its place.
	p := w.run("plan", "--provider", "claude", "--", "true")
	expectContains(t, "plan", p.stdout, "blocked    "+filepath.Join(w.project, ".mcp.json"))
	r = w.sh([]string{"--provider", "claude"}, `echo '{}' > .mcp.json 2>/dev/null && echo written || echo refused`)
	expectContains(t, "missing control file", r.stdout, "refused")
	if exists(filepath.Join(w.project, ".mcp.json")) {
		t.Fatal("the placeholder was left behind")
	}
}

// A .git/commondir made in the box would point host git at a config and
// hooks of the agent's choosing; mounts cannot stop it being created, so
// agentbox moves it out of git's way after the run and says so.
func TestGitCommondirQuarantined(t *testing.T) {
	w := newWorld(t)
	gitInit(t, w, w.project)
	r := w.sh(nil, `echo $PWD/evil > .git/commondir && mkdir -p .git/modules/m && printf '[core]\n\tpager = evil\n' > .git/modules/m/config && echo made`)
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "made")
	expectContains(t, "stderr", r.stderr, filepath.Join(w.project, ".git", "commondir")+": points host git at another folder's config and hooks; moved to ")
	expectContains(t, "stderr", r.stderr, filepath.Join(w.project, ".git", "modules", "m", "config")+": a git config made during the run: removed core.pager")
	if exists(filepath.Join(w.project, ".git", "commondir")) {
		t.Fatal(".git/commondir is still where git reads it")
	}
	// Kept whole, out of the box's reach, in agentbox's state folder.
	moved, _ := filepath.Glob(filepath.Join(w.home, ".local", "state", "agentbox", "quarantine", "*", "*-commondir"))
	if len(moved) != 1 {
		t.Fatalf("the quarantined commondir is not in the state folder: %v", moved)
	}
	if got, _ := os.ReadFile(moved[0]); string(got) != w.project+"/evil\n" {
		t.Fatalf("the quarantined commondir: %q", got)
	}
}
