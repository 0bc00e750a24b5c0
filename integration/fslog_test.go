//go:build linux

package integration

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
)

// The filesystem log: every operation the box is refused because of the
// policy is in the audit log with its process, path, errno and rule, under
// both Linux backends, as root and not; nothing the box does makes a
// record up, hides one, or floods the log.

// fsLogWorld is a world whose user configuration has the filesystem log
// watch reads too (by default it watches only the calls that may write).
func fsLogWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t)
	write(t, filepath.Join(w.home, ".config", "agentbox", "config.toml"), "version = 1\n\n[log]\nfilesystem_reads = true\n")
	return w
}

// denials returns the filesystem refusals the log holds for the last run.
func (w *world) denials() []event.Event {
	w.t.Helper()
	evs := w.logged()
	if len(evs) == 0 {
		w.t.Fatal("the log holds no run")
	}
	id := evs[len(evs)-1].Run
	return runEvents(evs, id)[event.Denied]
}

// find returns the refusal of op on path, failing the test when there is
// none.
func find(t *testing.T, evs []event.Event, op, path string) event.Event {
	t.Helper()
	for _, e := range evs {
		if e.Op == op && e.Path == path {
			return e
		}
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Op+" "+e.Path+" "+e.Errno+" "+e.Rule)
	}
	t.Fatalf("no refusal %s %s in the log; it holds:\n%s", op, path, strings.Join(got, "\n"))
	return event.Event{}
}

// processShape is the one shape of a refusal's process field, whichever
// source saw the refusal: "NAME (pid N, EXE)", EXE "as it says" where
// agentbox read no executable.
var processShape = regexp.MustCompile(`^.+ \(pid ([0-9]+|\?), (/.*|as it says)\)$`)

// mechanism is how the plan records filesystem refusals for the backend.
func (w *world) mechanism(backend string) string {
	w.t.Helper()
	r := w.run("plan", "--backend", backend, "--json", "--", "true")
	expectCode(w.t, r, 0)
	for _, m := range []string{"seccomp-notify", "landlock-audit"} {
		if strings.Contains(r.stdout, `"filesystem": "`+m+`"`) {
			return m
		}
	}
	w.t.Fatalf("plan --json names no filesystem log mechanism:\n%s", r.stdout)
	return ""
}

// One refusal of each kind, under each backend: a write to a read-only
// file, a create in a read-only folder, a read of a hidden file and of a
// file in a hidden folder, a write to an always-protected path (git hooks),
// a read of another workspace. Each is recorded with the rule that
// refused it and where that rule came from.
func TestFSLogRefusals(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := fsLogWorld(t)
			gitInit(t, w, w.project)
			write(t, filepath.Join(w.home, "notes.txt"), "host\n")
			mkdir(t, filepath.Join(w.home, "tools"))
			write(t, filepath.Join(w.home, "secret.txt"), "s3cret\n")
			write(t, filepath.Join(w.home, "vault", "key"), "k\n")
			root := filepath.Join(w.base, "work")
			write(t, filepath.Join(root, "other", "data.txt"), "theirs\n")
			mkdir(t, filepath.Join(root, "mine"))
			flags := []string{"--backend", backend, "--deny", filepath.Join(w.home, "secret.txt"), "--deny", filepath.Join(w.home, "vault"),
				"--workspace-root", root, "--workspace", "mine", "--writable", w.project}
			r := w.sh(flags, `cd `+w.project+`
echo x >> `+w.home+`/notes.txt
touch `+w.home+`/tools/new
cat `+w.home+`/secret.txt
cat `+w.home+`/vault/key
echo evil > .git/hooks/pre-commit
cat `+root+`/other/data.txt
exit 0`)
			expectCode(t, r, 0)
			expectNotContains(t, "stdout", r.stdout, "s3cret")
			expectContains(t, "stderr", r.stderr, "agentbox: the box was refused")
			erofs, hidden := "EROFS", "ENOENT"
			if backend == "landlock" {
				erofs, hidden = "EACCES", "EACCES"
			}
			evs := w.denials()
			audit := w.mechanism(backend) == "landlock-audit"
			for _, c := range []struct{ op, path, errno, rule string }{
				{"write", filepath.Join(w.home, "notes.txt"), erofs, "root / (default)"},
				{"create", filepath.Join(w.home, "tools", "new"), erofs, "root / (default)"},
				{"read", filepath.Join(w.home, "vault", "key"), hidden, "deny " + filepath.Join(w.home, "vault") + " (flag --deny)"},
				{"create", filepath.Join(w.project, ".git", "hooks", "pre-commit"), erofs, "read-only " + filepath.Join(w.project, ".git", "hooks") + " (always: git hooks)"},
				{"read", filepath.Join(root, "other", "data.txt"), hidden, "workspace " + root + " (flag --workspace)"},
			} {
				if backend == "landlock" && strings.Contains(c.path, ".git") {
					// Landlock keeps the hooks by restoring them after the
					// run, not by refusing: the write succeeds and the
					// after-run check moves the hook away.
					expectContains(t, "stderr", r.stderr, "pre-commit: was created by the box where git would run or obey it; moved to ")
					continue
				}
				if audit && c.op == "create" {
					// The kernel's record names the folder, not the entry.
					c.op, c.path = "create in", filepath.Dir(c.path)
				}
				e := find(t, evs, c.op, c.path)
				if e.Errno != c.errno || e.Rule != c.rule {
					t.Errorf("%s %s: errno %q rule %q, want %q %q", c.op, c.path, e.Errno, e.Rule, c.errno, c.rule)
				}
				if !processShape.MatchString(e.Process) || e.Detail == "" {
					t.Errorf("%s %s: process %q, advice %q: want both", c.op, c.path, e.Process, e.Detail)
				}
			}
			// A hidden file: bwrap shows an empty one, Landlock refuses it.
			e := find(t, evs, "read", filepath.Join(w.home, "secret.txt"))
			if want := map[string]string{"bwrap": "", "landlock": "EACCES"}[backend]; e.Errno != want {
				t.Errorf("read of a hidden file: errno %q, want %q", e.Errno, want)
			}
			if !strings.HasPrefix(e.Rule, "deny "+filepath.Join(w.home, "secret.txt")) || !strings.Contains(e.Process, "cat") {
				t.Errorf("read of a hidden file: rule %q process %q", e.Rule, e.Process)
			}
			// `agentbox log --denials` shows them with the rule.
			l := w.run("log", "--denials", "-n", "1")
			if !audit && backend != "landlock" {
				expectContains(t, "log --denials", l.stdout, "denied create "+filepath.Join(w.project, ".git", "hooks", "pre-commit"))
			}
			if backend != "landlock" {
				expectContains(t, "log --denials", l.stdout, "rule read-only "+filepath.Join(w.project, ".git", "hooks")+" (always: git hooks)")
			} else {
				expectContains(t, "log --denials", l.stdout, "rule deny "+filepath.Join(w.home, "vault")+" (flag --deny)")
			}
		})
	}
}

// In the complete mode ([log] filesystem = "complete") the log watches the
// calls that may write: a write to a read-only file, a create in a
// read-only folder and a removal there are recorded with their rule, under each backend; a read of a hidden
// file is not (no open for reading reaches agentbox), unless the kernel's
// own Landlock audit records it, and the plan says which.
//
// It runs with the C init and C Landlock child (the default) and with the
// Go ones (AGENTBOX_INIT=go): each arms the log its own way.
func TestFSLogWatchesWrites(t *testing.T) {
	for _, tc := range fslogInitCases() {
		backend := tc.backend
		t.Run(tc.name, func(t *testing.T) {
			w := initWorld(t, tc.env)
			write(t, filepath.Join(w.home, ".config", "agentbox", "config.toml"), "version = 1\n\n[log]\nfilesystem = \"complete\"\n")
			write(t, filepath.Join(w.home, "notes.txt"), "host\n")
			mkdir(t, filepath.Join(w.home, "tools"))
			write(t, filepath.Join(w.home, "tools", "old"), "old\n")
			write(t, filepath.Join(w.home, "secret.txt"), "s3cret\n")
			mech := w.mechanism(backend)
			pl := w.run("plan", "--backend", backend, "--", "true")
			expectCode(t, pl, 0)
			if mech == "seccomp-notify" {
				expectContains(t, "plan", pl.stdout, "each call that may write is judged")
				expectContains(t, "plan", pl.stdout, "reads of hidden paths are not recorded ([log] filesystem_reads = true")
			}
			r := w.sh([]string{"--backend", backend, "--deny", filepath.Join(w.home, "secret.txt"), "--writable", w.project}, `cd `+w.project+`
echo x >> `+w.home+`/notes.txt
touch `+w.home+`/tools/new
rm -f `+w.home+`/tools/old
cat `+w.home+`/secret.txt
echo ok > done.txt
exit 0`)
			expectCode(t, r, 0)
			expectNotContains(t, "stdout", r.stdout, "s3cret")
			expectContains(t, "stderr", r.stderr, "agentbox: the box was refused")
			if got, err := os.ReadFile(filepath.Join(w.project, "done.txt")); err != nil || string(got) != "ok\n" {
				t.Errorf("a write in the writable root: %q, %v", got, err)
			}
			evs := w.denials()
			audit := mech == "landlock-audit"
			create, remove := filepath.Join(w.home, "tools", "new"), filepath.Join(w.home, "tools", "old")
			createOp, removeOp := "create", "remove"
			if audit {
				createOp, create = "create in", filepath.Dir(create)
				removeOp, remove = "remove in", filepath.Dir(remove)
			}
			for _, c := range [][2]string{{"write", filepath.Join(w.home, "notes.txt")}, {createOp, create}, {removeOp, remove}} {
				e := find(t, evs, c[0], c[1])
				if e.Rule != "root / (default)" || !strings.Contains(e.Process, "(pid ") {
					t.Errorf("%s %s: rule %q process %q", c[0], c[1], e.Rule, e.Process)
				}
			}
			for _, e := range evs {
				if e.Path == filepath.Join(w.project, "done.txt") {
					t.Errorf("an allowed write was recorded as refused: %+v", e)
				}
				if e.Op == "read" && !audit {
					t.Errorf("a read was recorded though reads are not watched by default: %+v", e)
				}
			}
			if audit {
				find(t, evs, "read", filepath.Join(w.home, "secret.txt"))
			}
			if _, err := os.Stat(filepath.Join(w.home, "tools", "old")); err != nil {
				t.Errorf("the refused removal happened: %v", err)
			}
		})
	}
}

// fslogInitCases are the Linux backends, each with the C and the Go init
// (or Landlock child).
func fslogInitCases() []struct{ name, backend, env string } {
	var out []struct{ name, backend, env string }
	for _, b := range linuxBackends {
		for _, in := range inits {
			out = append(out, struct{ name, backend, env string }{b + "/" + in.name, b, in.env})
		}
	}
	return out
}

// The summary at the end names the smallest change for each refused path,
// marked safe or risky; a clean run says nothing.
func TestFSLogSummary(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := fsLogWorld(t)
			gitInit(t, w, w.project)
			mkdir(t, filepath.Join(w.home, ".npm", "_cacache"))
			r := w.sh([]string{"--backend", backend}, `for i in 1 2 3; do touch ~/.npm/_cacache/f$i; done 2>/dev/null
echo evil 2>/dev/null > .git/hooks/post-checkout; exit 0`)
			expectCode(t, r, 0)
			expectContains(t, "summary", r.stderr, "3×, first create ~/.npm/_cacache/f1")
			expectContains(t, "summary", r.stderr, "--writable ~/.npm (safe: npm's package cache")
			if backend == "landlock" {
				// The hook is not refused under Landlock: restored after
				// the run (the after-run check says so instead).
				expectContains(t, "summary", r.stderr, "agentbox: the box was refused 3 filesystem operations")
				expectContains(t, "after-run check", r.stderr, "post-checkout: was created by the box where git would run or obey it; moved to ")
			} else {
				expectContains(t, "summary", r.stderr, "agentbox: the box was refused 4 filesystem operations")
				expectContains(t, "summary", r.stderr, "nothing a policy adds allows it (risky): always protected (git hooks)")
			}
			mkdir(t, filepath.Join(w.project, "src"))
			r = w.sh([]string{"--backend", backend}, `echo ok > src/ok.txt`)
			expectCode(t, r, 0)
			expectNotContains(t, "clean run", r.stderr, "refused")
		})
	}
}

// Landlock run as root reads the kernel's own records of its denials when
// the kernel's audit is on; run as anyone else, the log is seccomp
// notification, and the same refusal is recorded either way.
func TestFSLogLandlockMechanism(t *testing.T) {
	w := fsLogWorld(t)
	want := "seccomp-notify"
	if isRoot() {
		was, err := auditEnabled()
		need(t, err == nil, fmt.Sprintf("the kernel's audit cannot be read here: %v", err))
		if !was {
			need(t, setAudit(true) == nil, "the kernel's audit cannot be turned on here")
			t.Cleanup(func() { setAudit(false) })
		}
		want = "landlock-audit"
	}
	if got := w.mechanism("landlock"); got != want {
		t.Fatalf("landlock records refusals by %s, want %s", got, want)
	}
	if got := w.mechanism("bwrap"); got != "seccomp-notify" {
		t.Fatalf("bwrap records refusals by %s, want seccomp-notify", got)
	}
	write(t, filepath.Join(w.home, "notes.txt"), "host\n")
	mkdir(t, filepath.Join(w.home, "tools"))
	r := w.sh([]string{"--backend", "landlock"}, `echo x >> ~/notes.txt; touch ~/tools/new; exit 0`)
	expectCode(t, r, 0)
	evs := w.denials()
	e := find(t, evs, "write", filepath.Join(w.home, "notes.txt"))
	if e.Errno != "EACCES" || e.Rule != "root / (default)" || !strings.Contains(e.Process, "sh (pid ") {
		t.Errorf("write: %+v", e)
	}
	create, path := "create", filepath.Join(w.home, "tools", "new")
	if want == "landlock-audit" {
		// The kernel's record names the folder, not the new entry.
		create, path = "create in", filepath.Join(w.home, "tools")
	}
	if e := find(t, evs, create, path); e.Errno != "EACCES" || !strings.Contains(e.Process, "touch (pid ") {
		t.Errorf("create: %+v", e)
	}
}

// Nothing the box does makes up a record or changes one: it cannot write
// the log, a path it chooses is stored escaped as one field of one event,
// and a process cannot pass for another (the executable is the kernel's).
func TestFSLogCannotBeFaked(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := fsLogWorld(t)
			w.sh(nil, "true") // the log exists
			events := filepath.Join(w.logDir(), event.Current)
			forged := `{"time":"2030-01-01T00:00:00Z","run":"forged","kind":"denied","path":"/forged"}`
			name := "x\n" + forged + "\x1b[2J"
			mkdir(t, filepath.Join(w.home, "ro"))
			// A copy of touch named agentbox, run from the project.
			tool := filepath.Join(w.project, "agentbox")
			data, err := os.ReadFile("/usr/bin/touch")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(tool, data, 0o755); err != nil {
				t.Fatal(err)
			}
			r := w.sh([]string{"--backend", backend}, `printf '%s\n' '`+forged+`' >> `+events+` 2>/dev/null && echo APPENDED
touch ~/ro/"$(printf '`+strings.ReplaceAll(name, "\n", `\n`)+`')" 2>/dev/null
cd ~/ro && `+tool+` made-by-agentbox 2>/dev/null; exit 0`)
			expectCode(t, r, 0)
			expectNotContains(t, "stdout", r.stdout, "APPENDED")
			data, err = os.ReadFile(events)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), `"run":"forged"`) {
				t.Fatal("the box wrote a line into the audit log")
			}
			evs := w.denials()
			find(t, evs, "write", events) // its own attempt is recorded
			for _, e := range evs {
				if e.Path == "/forged" || e.Run == "forged" {
					t.Errorf("a forged event was recorded: %+v", e)
				}
				if strings.ContainsAny(e.Path, "\n\x1b") {
					t.Errorf("a path was stored unescaped: %q", e.Path)
				}
			}
			e := find(t, evs, "create", filepath.Join(w.home, "ro", "made-by-agentbox"))
			if !strings.Contains(e.Process, ", "+tool+")") {
				t.Errorf("process %q: want the executable the kernel ran, %s", e.Process, tool)
			}
		})
	}
}

// A box that is refused endlessly floods nothing: the run ends, the log
// keeps at most its cap of this run's events and counts the rest, and the
// summary stays a few lines.
func TestFSLogFloodBounded(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := fsLogWorld(t)
			mkdir(t, filepath.Join(w.home, "ro"))
			r := w.sh([]string{"--backend", backend}, `i=0; while [ $i -lt 3000 ]; do true > ~/ro/f$i; i=$((i+1)); done 2>/dev/null; exit 0`)
			expectCode(t, r, 0)
			if lines := strings.Count(r.stderr, "\n"); lines > 8 {
				t.Errorf("the summary has %d lines, want a few:\n%s", lines, r.stderr)
			}
			expectContains(t, "summary", r.stderr, "refused 3000 filesystem operations")
			evs := w.logged()
			id := evs[len(evs)-1].Run
			kinds := runEvents(evs, id)
			if n := len(kinds[event.Denied]); n > event.DefaultCap {
				t.Errorf("%d refusals recorded, want at most the cap %d", n, event.DefaultCap)
			}
			dropped := 0
			for _, e := range kinds[event.Dropped] {
				dropped += e.Counts[string(event.Denied)]
			}
			if got := len(kinds[event.Denied]) + dropped; got != 3000 {
				t.Errorf("%d refusals recorded or counted, want 3000", got)
			}
			if len(kinds[event.RunEnd]) != 1 {
				t.Error("the run's end was not recorded")
			}
		})
	}
}

// Nothing the box does hides a refusal from the log: not a link that
// leads the write elsewhere, not a path relative to a descriptor, not a
// notification listener of its own (refused), not making itself
// non-dumpable (then the log says it cannot look, instead of staying
// silent), not signalling agentbox; and no process in the box holds the
// log's listener.
func TestFSLogCannotBeSuppressed(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		need(t, false, "python3 is not installed")
	}
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := fsLogWorld(t)
			write(t, filepath.Join(w.home, ".bashrc"), "# host\n")
			mkdir(t, filepath.Join(w.home, "ro"))
			helper := filepath.Join(w.project, "evade.py")
			write(t, helper, evadePy)
			r := w.sh([]string{"--backend", backend}, `cd `+w.project+`
ln -s ~/.bashrc innocent && echo pwned >> innocent 2>/dev/null
/usr/bin/python3 evade.py `+w.home+`/ro
kill -9 $PPID 2>/dev/null; echo still-here`)
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "still-here")
			expectContains(t, "own listener", r.stdout, "listener: refused (EPERM)")
			expectContains(t, "listener", r.stdout, "no notify listener in the box")
			evs := w.logged()
			id := evs[len(evs)-1].Run
			kinds := runEvents(evs, id)
			den := kinds[event.Denied]
			find(t, den, "write", filepath.Join(w.home, ".bashrc"))
			find(t, den, "create", filepath.Join(w.home, "ro", "by-dirfd"))
			find(t, den, "create", filepath.Join(w.home, "ro", "after-own-filter"))
			// Made non-dumpable: recorded, or the gap is said.
			recorded := false
			for _, e := range den {
				recorded = recorded || e.Path == filepath.Join(w.home, "ro", "non-dumpable")
			}
			said := false
			for _, e := range kinds[event.Warning] {
				said = said || strings.Contains(e.Detail, "agentbox may not look at")
			}
			if !recorded && !said {
				t.Error("a non-dumpable process's refusal was neither recorded nor said to be missing")
			}
			if !recorded && (isRoot() || backend == "bwrap") {
				t.Error("agentbox has CAP_SYS_PTRACE over this box (root, or bwrap's user namespace) and still did not record the non-dumpable process")
			}
		})
	}
}

// evadePy tries, from inside the box, what a process would try to keep its
// refusals out of the log.
const evadePy = `import ctypes, os, struct, sys
ro = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
# A path relative to a descriptor of the read-only folder.
d = os.open(ro, os.O_RDONLY)
try:
    os.open("by-dirfd", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=d)
except OSError:
    pass
# A seccomp filter with a notification listener of its own, which would
# take the log's notifications: an allow-all program.
prog = (ctypes.c_ubyte * 8)(*struct.pack("<HBBI", 0x06, 0, 0, 0x7fff0000))
fprog = struct.pack("<HxxxxxxQ", 1, ctypes.addressof(prog))
buf = ctypes.create_string_buffer(fprog)
libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
r = libc.syscall(317 if os.uname().machine == "x86_64" else 277, 1, 8, buf)  # seccomp(SET_MODE_FILTER, NEW_LISTENER)
err = ctypes.get_errno()
if r >= 0:
    print("listener: installed", flush=True)
elif err == 1:
    print("listener: refused (EPERM)", flush=True)
else:
    print("listener: failed with errno", err, flush=True)
try:
    open(os.path.join(ro, "after-own-filter"), "w")
except OSError:
    pass
# No process of the box holds a seccomp notification listener.
found = []
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        for fd in os.listdir("/proc/%s/fd" % pid):
            if "seccomp" in os.readlink("/proc/%s/fd/%s" % (pid, fd)):
                found.append(pid)
    except OSError:
        pass
print("notify listener in the box: " + ",".join(found) if found else "no notify listener in the box", flush=True)
# Non-dumpable: agentbox may then be refused this process's memory.
libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
try:
    open(os.path.join(ro, "non-dumpable"), "w")
except OSError:
    pass
`

// auditEnabled asks the kernel whether its audit is on (AUDIT_GET).
func auditEnabled() (bool, error) {
	st, err := auditRequest(1000, nil)
	if err != nil {
		return false, err
	}
	return binary.LittleEndian.Uint32(st[4:]) != 0, nil
}

// setAudit turns the kernel's audit on or off (AUDIT_SET, root only).
func setAudit(on bool) error {
	payload := make([]byte, 40)
	binary.LittleEndian.PutUint32(payload[0:], 1) // AUDIT_STATUS_ENABLED
	if on {
		binary.LittleEndian.PutUint32(payload[4:], 1)
	}
	_, err := auditRequest(1001, payload)
	return err
}

// auditRequest sends one request to the kernel's audit and returns the
// payload of its answer (for AUDIT_GET) or nil after its acknowledgement.
func auditRequest(typ uint16, payload []byte) ([]byte, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	msg := make([]byte, 16+len(payload))
	binary.LittleEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.LittleEndian.PutUint16(msg[4:], typ)
	binary.LittleEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	copy(msg[16:], payload)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1})
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, err
		}
		switch binary.LittleEndian.Uint16(buf[4:]) {
		case unix.NLMSG_ERROR:
			if e := int32(binary.LittleEndian.Uint32(buf[16:])); e != 0 {
				return nil, unix.Errno(-e)
			}
			if typ != 1000 {
				return nil, nil
			}
		case typ:
			return append([]byte(nil), buf[16:n]...), nil
		}
	}
}
