//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/event"
)

// The audit log: every run recorded as JSON lines in
// $XDG_STATE_HOME/agentbox/log, shown by `agentbox log`, out of reach of
// the box, and never in the way of a run.

// linuxBackends are the two Linux backends every log test runs under.
var linuxBackends = []string{"bwrap", "landlock"}

// logDir is the world's audit log folder (newWorld sets XDG_STATE_HOME).
func (w *world) logDir() string {
	return filepath.Join(w.home, ".local", "state", "agentbox", "log")
}

// logged returns every event `agentbox log --json` prints, as stored.
func (w *world) logged(args ...string) []event.Event {
	w.t.Helper()
	r := w.run(append([]string{"log", "--json", "-n", "0"}, args...)...)
	expectCode(w.t, r, 0)
	var out []event.Event
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if line == "" {
			continue
		}
		var e event.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			w.t.Fatalf("log --json printed a line that is not an event: %v\n%s", err, line)
		}
		out = append(out, e)
	}
	return out
}

// lastRun returns the ID of the last run recorded.
func (w *world) lastRun() string {
	w.t.Helper()
	evs := w.logged()
	if len(evs) == 0 {
		w.t.Fatal("the log holds no run")
	}
	return evs[len(evs)-1].Run
}

// runEvents returns the events of run id, by kind.
func runEvents(evs []event.Event, id string) map[event.Kind][]event.Event {
	out := map[event.Kind][]event.Event{}
	for _, e := range evs {
		if e.Run == id {
			out[e.Kind] = append(out[e.Kind], e)
		}
	}
	return out
}

// `agentbox log` shows a bwrap run's start, its network denials and its
// end; --denials lists the denials, --run shows every event of the run.
func TestLogShowsRunBwrap(t *testing.T) {
	needCurl(t)
	netNames(t)
	srv := startWeb(t)
	w := newWorld(t)
	r := w.sh(netFlags(w, "--backend", "bwrap"), `curl -sS http://example.test:`+srv.port+`/ok >/dev/null; curl -sS http://other.test:`+srv.port+`/ >/dev/null; exit 3`)
	expectCode(t, r, 3)
	id := w.lastRun()
	evs := runEvents(w.logged(), id)
	if len(evs[event.RunStart]) != 1 || len(evs[event.RunEnd]) != 1 {
		t.Fatalf("want one start and one end, got %v", evs)
	}
	start, end := evs[event.RunStart][0], evs[event.RunEnd][0]
	if start.Backend != "bwrap" || start.Network != "allowlist" || start.Project != w.project || start.Command[0] != "sh" || len(start.Digest) != 64 {
		t.Errorf("run-start: %+v", start)
	}
	if end.Status == nil || *end.Status != 3 {
		t.Errorf("run-end: %+v", end)
	}
	var allowed, denied []string
	for _, e := range evs[event.Net] {
		if *e.Allowed {
			allowed = append(allowed, e.Target)
		} else {
			denied = append(denied, e.Target+" "+e.Reason)
		}
	}
	if fmt.Sprint(allowed) != "[example.test:"+srv.port+"]" || fmt.Sprint(denied) != "[other.test:"+srv.port+" no allow rule matches]" {
		t.Errorf("net events: allowed %q, denied %q", allowed, denied)
	}

	list := w.run("log")
	expectCode(t, list, 0)
	expectContains(t, "log", list.stdout, "STARTED")
	line := lineWith(t, list.stdout, id)
	for _, want := range []string{"exit 3", "bwrap", " 1 ", w.project, "sh -c"} {
		expectContains(t, "run line", line, want)
	}
	den := w.run("log", "--denials")
	expectCode(t, den, 0)
	expectContains(t, "log --denials", den.stdout, id)
	expectContains(t, "log --denials", den.stdout, "  network denied http other.test:"+srv.port+" (no allow rule matches)\n")
	expectNotContains(t, "log --denials", den.stdout, "network allowed")
	one := w.run("log", "--run", id[:6])
	expectCode(t, one, 0)
	for _, want := range []string{"run-start   backend bwrap, network allowlist, project " + w.project,
		"net         network allowed http example.test:" + srv.port,
		"net         network denied http other.test:" + srv.port + " (no allow rule matches)",
		"run-end     exit 3 after "} {
		expectContains(t, "log --run", one.stdout, want)
	}
}

// The same for Landlock. A run refused before it starts (here: an agent
// CLI agentbox has not verified) records nothing; what the box does that
// agentbox sees (here a new submodule folder whose config the after-run
// check rewrites) is recorded between the run's start and end.
func TestLogShowsRunLandlock(t *testing.T) {
	w := newWorld(t)
	gitInit(t, w, w.project)
	mkdir(t, filepath.Join(w.project, ".git", "modules"))
	r := w.run("run", "--backend", "landlock", "--provider", "kimi", "--", "true")
	expectCode(t, r, 125)
	if evs := w.logged(); len(evs) != 0 {
		t.Fatalf("a refused run was recorded: %+v", evs)
	}
	r = w.sh([]string{"--backend", "landlock", "--network", "none"}, `mkdir .git/modules/m && printf '[core]\n\tpager = evil\n' > .git/modules/m/config; exit 5`)
	expectCode(t, r, 5)
	id := w.lastRun()
	evs := runEvents(w.logged(), id)
	if len(evs[event.RunStart]) != 1 || evs[event.RunStart][0].Backend != "landlock" || evs[event.RunStart][0].Network != "none" {
		t.Fatalf("run-start: %+v", evs[event.RunStart])
	}
	if len(evs[event.RunEnd]) != 1 || *evs[event.RunEnd][0].Status != 5 {
		t.Fatalf("run-end: %+v", evs[event.RunEnd])
	}
	if q := evs[event.Quarantine]; len(q) != 1 || q[0].Path != filepath.Join(w.project, ".git", "modules", "m", "config") || q[0].Action != "rewritten" {
		t.Fatalf("quarantine: %+v", q)
	}
	list := w.run("log")
	line := lineWith(t, list.stdout, id)
	for _, want := range []string{"exit 5", "landlock", w.project} {
		expectContains(t, "run line", line, want)
	}
	one := w.run("log", "--run", id)
	expectContains(t, "log --run", one.stdout, "quarantine  rewritten "+filepath.Join(w.project, ".git", "modules", "m", "config"))
}

// lineWith returns the line of out that holds s.
func lineWith(t *testing.T, out, s string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line with %q in:\n%s", s, out)
	return ""
}

// Nothing a boxed process does changes what the log recorded: appending,
// truncating, replacing the file, replacing the folder with a symlink,
// pre-creating the next rotated name, loosening permissions. Under both
// backends, with the state folder outside the writable roots, inside one
// (--writable ~/.local/state), and with the whole home writable.
func TestLogProtected(t *testing.T) {
	attack := `L=$1; S=$(dirname "$L"); out=
try() { if sh -c "$2" >/dev/null 2>&1; then out="$out $1"; fi; }
try append "echo EVIL >> $L/events.jsonl"
try truncate ": > $L/events.jsonl"
try ftruncate "python3 -c 'import os,sys; os.truncate(sys.argv[1], 0)' $L/events.jsonl"
try replace "echo EVIL > $L/new && mv -f $L/new $L/events.jsonl"
try remove "rm -f $L/events.jsonl"
try link "ln -sf /dev/null $L/events.jsonl"
try hardlink "ln $L/events.jsonl $L/hard"
try move-folder "mv $L $L.old"
try replace-folder "rm -rf $L && ln -s /var/tmp $L"
try move-state "mv $S $S.old"
try replace-state "mv $S $S.old; mkdir -p $S; ln -s /var/tmp $L"
try precreate "touch $L/events-20990101T000000.000000000Z.jsonl"
try precreate-link "ln -s /dev/null $L/events-20990101T000000.000000001Z.jsonl"
try chmod "chmod 777 $L"
try chmod-file "chmod 666 $L/events.jsonl"
try touch-time "touch -d 2000-01-01 $L/events.jsonl"
try inherited-fd "ls -l /proc/self/fd/ | grep events.jsonl"
echo "succeeded:$out"
`
	for _, backend := range linuxBackends {
		for _, setup := range []string{"default", "--writable ~/.local/state", "--writable ~"} {
			t.Run(backend+"/"+setup, func(t *testing.T) {
				w := newWorld(t)
				r := w.run("run", "--backend", backend, "--", "true")
				expectCode(t, r, 0)
				file := filepath.Join(w.logDir(), event.Current)
				before, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				flags := []string{"--backend", backend}
				switch setup {
				case "--writable ~/.local/state":
					flags = append(flags, "--writable", filepath.Join(w.home, ".local", "state"))
				case "--writable ~":
					flags = append(flags, "--writable", w.home, "--allow-broad-writable")
				}
				args := append([]string{"run"}, flags...)
				r = w.run(append(args, "--", "sh", "-c", attack, "sh", w.logDir())...)
				expectCode(t, r, 0)
				// Under Landlock too: its metadata calls go to agentbox,
				// which performs them only inside the write grant.
				want := "succeeded:"
				if got := strings.TrimSpace(r.stdout); got != want {
					t.Errorf("attacks that succeeded in the box: %q, want %q\nstderr: %s", got, want, r.stderr)
				}
				info, err := os.Lstat(w.logDir())
				if err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
					t.Fatalf("the log folder is no longer a 0700 folder: %v %v", info, err)
				}
				after, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(after, before) {
					t.Fatalf("what the log held before changed:\nbefore:\n%s\nafter:\n%s", before, after)
				}
				for _, l := range strings.Split(strings.TrimSuffix(string(after), "\n"), "\n") {
					var e event.Event
					if err := json.Unmarshal([]byte(l), &e); err != nil || e.Run == "" {
						t.Fatalf("the box wrote into the log: %q", l)
					}
				}
				entries, _ := os.ReadDir(w.logDir())
				if len(entries) != 1 || entries[0].Name() != event.Current {
					t.Fatalf("the log folder holds more than the log: %v", entries)
				}
				// Besides the log: the after-run check's own records
				// (index, pending, placeholders.lock), the workspace's
				// private package caches, agentbox's own folder for
				// temporary folders, the kept copy of the filesystem
				// log's preloaded libraries (made by agentbox, not the
				// box), and what the Landlock notice said last, per
				// project.
				if entries, _ := os.ReadDir(filepath.Dir(w.logDir())); len(entries) > 8 {
					t.Fatalf("the state folder holds more than agentbox's own: %v", entries)
				} else {
					for _, e := range entries {
						switch e.Name() {
						case "log", "index", "pending", "placeholders.lock", "caches", "tmp", "notices", "preload-libraries":
						default:
							t.Fatalf("the state folder holds %s", e.Name())
						}
					}
				}
				if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
					t.Errorf("log file mode %v", fi.Mode().Perm())
				}
				// The attack run itself is recorded, start and end.
				evs := runEvents(w.logged(), w.lastRun())
				if len(evs[event.RunStart]) != 1 || len(evs[event.RunEnd]) != 1 {
					t.Errorf("the attacking run is not recorded whole: %v", evs)
				}
			})
		}
	}
}

// With [log] enabled = false nothing is recorded and plan says so; a later
// layer turns it on again.
func TestLogPolicySwitch(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			write(t, filepath.Join(w.home, ".config", "agentbox", "config.toml"), "version = 1\n[log]\nenabled = false\n")
			r := w.run("run", "--backend", backend, "--", "true")
			expectCode(t, r, 0)
			if exists(w.logDir()) {
				t.Fatal("the log folder was made with the log turned off")
			}
			p := w.run("plan", "--backend", backend, "--", "true")
			expectContains(t, "plan", p.stdout, "log:       off ("+filepath.Join(w.home, ".config", "agentbox", "config.toml")+":3 log.enabled)\n")
			pj := w.run("plan", "--json", "--backend", backend, "--", "true")
			expectContains(t, "plan --json", pj.stdout, `"log": {
    "enabled": false,`)

			on := filepath.Join(w.base, "on.toml")
			write(t, on, "[log]\nenabled = true\n")
			r = w.run("run", "--backend", backend, "--policy", on, "--", "true")
			expectCode(t, r, 0)
			if evs := w.logged(); len(evs) != 2 {
				t.Fatalf("want the run's start and end, got %+v", evs)
			}
			p = w.run("plan", "--backend", backend, "--policy", on, "--", "true")
			expectContains(t, "plan", p.stdout, "log:       recorded in "+w.logDir()+" ("+on+":2 log.enabled)\n")
		})
	}
}

// A run whose log cannot be written runs all the same, with exactly one
// warning line; nothing the log folder points at is touched.
func TestLogUnwritable(t *testing.T) {
	elsewhere := func(w *world) string { return filepath.Join(w.base, "elsewhere") }
	tests := []struct {
		name  string
		setup func(t *testing.T, w *world)
		want  string
	}{
		{"folder is a symlink", func(t *testing.T, w *world) {
			mkdir(t, elsewhere(w))
			mkdir(t, filepath.Dir(w.logDir()))
			os.Symlink(elsewhere(w), w.logDir())
		}, "is not a folder (a symbolic link or a file): refused"},
		{"folder is a file", func(t *testing.T, w *world) {
			write(t, w.logDir(), "")
		}, "is not a folder (a symbolic link or a file): refused"},
		{"file is a symlink", func(t *testing.T, w *world) {
			mkdir(t, elsewhere(w))
			mkdir(t, w.logDir())
			os.Symlink(filepath.Join(elsewhere(w), "f"), filepath.Join(w.logDir(), event.Current))
		}, "events.jsonl is a symbolic link: refused"},
		{"folder not writable or not the user's", func(t *testing.T, w *world) {
			mkdir(t, w.logDir())
			if isRoot() {
				// Root writes anywhere; a folder of another user is refused.
				os.Chown(w.logDir(), 65534, 65534)
			} else {
				os.Chmod(w.logDir(), 0o500)
				t.Cleanup(func() { os.Chmod(w.logDir(), 0o700) })
			}
		}, map[bool]string{true: "belongs to uid 65534, not to this user (uid 0): refused", false: "permission denied"}[isRoot()]},
	}
	for _, backend := range linuxBackends {
		for _, tc := range tests {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t)
				tc.setup(t, w)
				r := w.sh([]string{"--backend", backend}, `echo out; echo err >&2; exit 7`)
				expectCode(t, r, 7)
				if r.stdout != "out\n" {
					t.Errorf("stdout %q", r.stdout)
				}
				lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
				var warnings []string
				for _, l := range lines {
					if strings.HasPrefix(l, "agentbox: warning: audit log:") {
						warnings = append(warnings, l)
					}
				}
				if len(warnings) != 1 || !strings.Contains(warnings[0], tc.want) || !strings.HasSuffix(warnings[0], "; this run is not recorded") {
					t.Fatalf("want one warning with %q, got stderr:\n%s", tc.want, r.stderr)
				}
				if entries, err := os.ReadDir(elsewhere(w)); err == nil && len(entries) > 0 {
					t.Fatalf("the log wrote where its folder pointed: %v", entries)
				}
			})
		}
	}
}

// Past the cap (1000 events of one run besides its start and end) the log
// records one event counting what it left out; `agentbox log` counts them
// all. The box opens 1100 connections the proxy denies.
func TestLogCap(t *testing.T) {
	w := newWorld(t)
	script := `import socket
for i in range(1100):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"GET http://other.test:9/%d HTTP/1.0\r\n\r\n" % i)
    while s.recv(4096): pass
    s.close()
print("done")
`
	write(t, filepath.Join(w.project, "flood.py"), script)
	r := w.run(append(append([]string{"run"}, netFlags(w)...), "--", "python3", "flood.py")...)
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "done")
	id := w.lastRun()
	evs := runEvents(w.logged(), id)
	if n := len(evs[event.Net]); n != event.DefaultCap {
		t.Errorf("%d net events recorded, want %d", n, event.DefaultCap)
	}
	d := evs[event.Dropped]
	if len(d) != 1 || d[0].Counts["net-denied"] != 100 || len(evs[event.RunEnd]) != 1 {
		t.Fatalf("want one dropped event counting 100 denials and the run's end, got %+v %+v", d, evs[event.RunEnd])
	}
	list := w.run("log")
	expectContains(t, "run line", lineWith(t, list.stdout, id), " 1100 ")
	den := w.run("log", "--denials")
	expectContains(t, "log --denials", den.stdout, "… and 100 more denials that were not recorded")
	if info, _ := os.Stat(filepath.Join(w.logDir(), event.Current)); info.Size() > 1<<20 {
		t.Errorf("the log grew to %d bytes for one run", info.Size())
	}
}

// A current file past its size is rotated by the next run; the oldest
// rotated files beyond four are removed; `agentbox log` reads across them.
func TestLogRotation(t *testing.T) {
	w := newWorld(t)
	mkdir(t, w.logDir())
	os.Chmod(w.logDir(), 0o700)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	line := func(run string, kind event.Kind, i int) string {
		data, _ := json.Marshal(event.Event{Time: old.Add(time.Duration(i) * time.Second), Run: run, Kind: kind, Backend: "bwrap", Project: "/seeded", Command: []string{"seeded"}})
		return string(data) + "\n"
	}
	for i := 0; i < 5; i++ {
		name := event.RotatedName(old.Add(time.Duration(i) * time.Hour))
		os.WriteFile(filepath.Join(w.logDir(), name), []byte(line(fmt.Sprintf("rot%d", i), event.RunStart, i)), 0o600)
	}
	var big bytes.Buffer
	for i := 0; big.Len() <= event.DefaultMaxSize; i++ {
		big.WriteString(line(fmt.Sprintf("big%06d", i), event.RunStart, i))
	}
	os.WriteFile(filepath.Join(w.logDir(), event.Current), big.Bytes(), 0o600)

	r := w.run("run", "--", "true")
	expectCode(t, r, 0)
	entries, _ := os.ReadDir(w.logDir())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	rotated := event.RotatedNames(names)
	if len(rotated) != event.DefaultKeep || len(names) != event.DefaultKeep+1 {
		t.Fatalf("want %d rotated files and the current one, got %v", event.DefaultKeep, names)
	}
	if rotated[0] != event.RotatedName(old.Add(2*time.Hour)) {
		t.Errorf("the oldest files were not the ones removed: %v", rotated)
	}
	cur, _ := os.ReadFile(filepath.Join(w.logDir(), event.Current))
	if bytes.Contains(cur, []byte("big")) || !bytes.Contains(cur, []byte(`"kind":"run-end"`)) {
		t.Fatalf("the new current file: %s", cur)
	}
	list := w.run("log", "-n", "0")
	expectCode(t, list, 0)
	for _, want := range []string{"rot2", "rot4", "big000000", w.project} {
		expectContains(t, "log", list.stdout, want)
	}
	expectNotContains(t, "log", list.stdout, "rot1")
}

// Filters: --project (the folder or below), --workspace; and the run of
// an unconfined (best-effort) command is recorded as such.
func TestLogFilters(t *testing.T) {
	w := newWorld(t)
	other := filepath.Join(w.base, "other")
	mkdir(t, other)
	expectCode(t, w.run("run", "--", "true"), 0)
	wsRoot := filepath.Join(w.base, "work")
	expectCode(t, w.run("run", "--workspace", "web", "--workspace-root", wsRoot, "--", "true"), 0)
	w.cwd = other
	expectCode(t, w.run("run", "--", "true"), 0)
	// No backend can run: bwrap is asked for and is not on PATH.
	bin := filepath.Join(w.base, "bin")
	mkdir(t, bin)
	for _, tool := range []string{"true"} {
		p, _ := exec.LookPath(tool)
		os.Symlink(p, filepath.Join(bin, tool))
	}
	env := w.env
	w.env = append(append([]string(nil), w.env...), "PATH="+bin)
	r := w.run("run", "--best-effort", "--backend", "bwrap", "--", "true")
	expectCode(t, r, 0)
	expectContains(t, "stderr", r.stderr, "UNCONFINED")
	w.env = env
	w.cwd = w.project

	count := func(args ...string) int {
		r := w.run(append([]string{"log"}, args...)...)
		expectCode(t, r, 0)
		return strings.Count(r.stdout, "\n") - 1
	}
	if n := count(); n != 4 {
		t.Errorf("all: %d runs, want 4", n)
	}
	if n := count("--project", other); n != 2 {
		t.Errorf("--project %s: %d runs, want 2 (one confined, one not)", other, n)
	}
	if n := count("--project", "."); n != 1 {
		t.Errorf("--project .: %d runs, want 1", n)
	}
	if n := count("--project", w.base); n != 4 {
		t.Errorf("--project %s: %d runs, want all 4 below it", w.base, n)
	}
	if n := count("--workspace", "web"); n != 1 {
		t.Errorf("--workspace web: %d runs, want 1", n)
	}
	if n := count("-n", "2"); n != 2 {
		t.Errorf("-n 2: %d runs", n)
	}
	list := w.run("log", "--project", other)
	expectContains(t, "unconfined run", list.stdout, "unconfined")
	expectContains(t, "unconfined run", list.stdout, "UNCONFINED")
	none := w.run("log", "--workspace", "nope")
	expectCode(t, none, 0)
	expectContains(t, "no match", none.stdout, "no runs recorded in "+w.logDir()+" match")
}

// Text the box chose (a host name, a request) is stored escaped: the log
// file holds no control or bidirectional character, and neither does what
// `agentbox log` prints, as text or JSON.
func TestLogEscapesBoxText(t *testing.T) {
	w := newWorld(t)
	script := `import socket, struct
reqs = [b"CONNECT \x1b]52;c;aGk=\x07x.test:80 HTTP/1.1\r\n\r\n", b"GET http://a\xe2\x80\xaeb.test/ HTTP/1.0\r\n\r\n"]
for r in reqs:
    s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(r); s.recv(4096); s.close()
# SOCKS5 with a domain name of the box's choosing
name = b"\x1b[2J\xe2\x80\xaeevil.test"
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"\x05\x01\x00"); s.recv(2)
s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack(">H", 80)); s.recv(64); s.close()
print("sent")
`
	write(t, filepath.Join(w.project, "odd.py"), script)
	r := w.run("run", "--network", "allowlist", "--", "python3", "odd.py")
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "sent")
	data, err := os.ReadFile(filepath.Join(w.logDir(), event.Current))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(data, []byte(`"kind":"net"`)) != 3 {
		t.Fatalf("want 3 net events:\n%s", data)
	}
	for _, out := range []result{{stdout: string(data)}, w.run("log", "--run", w.lastRun()), w.run("log", "--json"), w.run("log", "--denials")} {
		if strings.ContainsAny(out.stdout, "\x1b\x07\u202e") {
			t.Errorf("a control character reached the output:\n%q", out.stdout)
		}
	}
	expectContains(t, "log --denials", w.run("log", "--denials").stdout, `\x1b[2J\u202eevil.test`)
}

// --follow prints the events of runs as they are recorded, with the
// filters, until interrupted (then it exits 0).
func TestLogFollow(t *testing.T) {
	needCurl(t)
	netNames(t)
	srv := startWeb(t)
	w := newWorld(t)
	expectCode(t, w.run("run", "--", "true"), 0)
	c := w.cmd("log", "--follow", "--denials")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Follow shows only what is recorded after it started: runs go on
	// until one of their denials shows (each denial names its run's try).
	deadline := time.After(60 * time.Second)
	for try := 0; ; try++ {
		r := w.sh(netFlags(w), fmt.Sprintf(`curl -sS http://other.test:%s/try%d >/dev/null; curl -sS http://example.test:%s/ >/dev/null`, srv.port, try, srv.port))
		expectCode(t, r, 0)
		select {
		case l := <-lines:
			expectContains(t, "follow --denials", l, "net         network denied http other.test:"+srv.port+" (no allow rule matches)")
			if err := c.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if err := waitCmd(t, c); err != nil {
				t.Fatalf("follow did not end cleanly on SIGINT: %v\n%s", err, stderr.String())
			}
			return
		case <-time.After(time.Second):
		case <-deadline:
			t.Fatalf("follow printed nothing; stderr: %s", stderr.String())
		}
	}
}

// Bad input to `agentbox log`: one clear line each, exit 125; a damaged
// log is read around the damage, which one warning line names.
func TestLogBadInput(t *testing.T) {
	w := newWorld(t)
	expectCode(t, w.run("run", "--", "true"), 0)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"log", "extra"}, `agentbox: error: log takes no arguments, got "extra"`},
		{[]string{"log", "--run", "nosuchrun"}, "agentbox: error: no run nosuchrun in the audit log"},
		{[]string{"log", "-n", "-1"}, "agentbox: error: log: -n -1: want a number of runs, 0 for all"},
		{[]string{"log", "--run", "\x1b[2J"}, `agentbox: error: no run \x1b[2J in the audit log`},
	} {
		r := w.run(tc.args...)
		expectCode(t, r, 125)
		if first := strings.SplitN(r.stderr, "\n", 2)[0]; first != tc.want {
			t.Errorf("%q: first line %q, want %q", tc.args, first, tc.want)
		}
	}
	f, err := os.OpenFile(filepath.Join(w.logDir(), event.Current), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{not json\n" + `{"run":"x","kind":"run-start","backend":"\u001b[31m"}` + "\n")
	f.Close()
	r := w.run("log")
	expectCode(t, r, 0)
	if r.stderr != "agentbox: warning: audit log: events.jsonl: 1 line that is not an event\n" {
		t.Errorf("stderr %q", r.stderr)
	}
	if strings.Count(r.stdout, "\n") != 3 || strings.Contains(r.stdout, "\x1b") || !strings.Contains(r.stdout, `\x1b[31m`) {
		t.Errorf("want the header, the real run and the hand-written one escaped, got:\n%s", r.stdout)
	}
	// The log folder as a symlink: refused, not followed.
	os.Rename(w.logDir(), w.logDir()+".real")
	os.Symlink(w.logDir()+".real", w.logDir())
	r = w.run("log")
	expectCode(t, r, 125)
	expectContains(t, "symlinked folder", r.stderr, "agentbox: error: reading the audit log: "+w.logDir()+" is not a folder (a symbolic link or a file): refused")
}
