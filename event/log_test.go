//go:build unix

package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// logDir is a fresh log folder path (not created) in a fresh state folder.
func logDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "state", "agentbox", "log")
}

func mustOpen(t *testing.T, dir string, opts LogOptions) *Log {
	t.Helper()
	l, err := OpenLog(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// lines returns the stored events of every file of the log, oldest first.
func stored(t *testing.T, dir string) []Event {
	t.Helper()
	c, err := ReadLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Skipped) > 0 {
		t.Fatalf("skipped: %q", c.Skipped)
	}
	var out []Event
	for _, r := range c.Runs {
		out = append(out, r.Events...)
	}
	return out
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func start(run string) Event {
	return Event{Time: t0, Run: run, Kind: RunStart, Backend: "bwrap", Command: []string{"sh", "-c", "true"}, Cwd: "/p", Project: "/p", Network: "allowlist"}
}

func netEvent(run string, allowed bool, target string) Event {
	e := Event{Time: t0, Run: run, Kind: Net, Allowed: Bool(allowed), Proto: "http", Target: target}
	if !allowed {
		e.Reason = "no allow rule matches"
	}
	return e
}

func end(run string, status int) Event {
	return Event{Time: t0.Add(1500 * time.Millisecond), Run: run, Kind: RunEnd, Status: Int(status), DurationMS: 1500}
}

// One JSON object per line, in a 0600 file in a 0700 folder; text the box
// chose is stored escaped, so not even a reader that decodes the JSON
// strings (jq -r) gets a control character.
func TestLogWrites(t *testing.T) {
	dir := logDir(t)
	l := mustOpen(t, dir, LogOptions{})
	l.Emit(start("r1"))
	l.Emit(netEvent("r1", false, "\x1b]52;c;aGk=\x07evil.test:80"))
	l.Emit(Event{Time: t0, Run: "r1", Kind: Quarantine, Path: "/p/.git/commondir\r\n\u202eexe.txt", Action: "moved", Detail: "moved away"})
	l.Emit(end("r1", 3))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, Current))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 4 {
		t.Fatalf("want 4 lines, got %d:\n%s", n, data)
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, line)
		}
		for _, v := range m {
			if s, ok := v.(string); ok && Escape(s) != s {
				t.Errorf("line %d holds unescaped text %q", i+1, s)
			}
		}
	}
	got := stored(t, dir)
	want := []string{`\x1b]52;c;aGk=\aevil.test:80`, `/p/.git/commondir\r\n\u202eexe.txt`}
	if diff := cmp.Diff(want, []string{got[1].Target, got[2].Path}); diff != "" {
		t.Errorf("stored text (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Int(3), got[3].Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, Current): 0o600} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
		}
	}
}

// Permissions a folder or file of the log has are tightened, never kept.
func TestLogTightens(t *testing.T) {
	dir := logDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	if err := os.WriteFile(filepath.Join(dir, Current), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, Current), 0o666)
	mustOpen(t, dir, LogOptions{}).Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, Current): 0o600} {
		info, _ := os.Stat(path)
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
		}
	}
}

// What the log refuses to open, each with one clear error; nothing the
// refused path points at is touched.
func TestLogRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, target string)
		owner int // -1: the test's own uid
		want  string
	}{
		{"folder is a symlink", func(t *testing.T, dir, target string) {
			os.MkdirAll(filepath.Dir(dir), 0o700)
			os.Mkdir(target, 0o700)
			os.Symlink(target, dir)
		}, -1, "is not a folder (a symbolic link or a file): refused"},
		{"state folder is a symlink", func(t *testing.T, dir, target string) {
			os.MkdirAll(filepath.Dir(filepath.Dir(dir)), 0o700)
			os.Mkdir(target, 0o700)
			os.Symlink(target, filepath.Dir(dir))
		}, -1, "agentbox is not a folder (a symbolic link or a file): refused"},
		{"folder is a file", func(t *testing.T, dir, target string) {
			os.MkdirAll(filepath.Dir(dir), 0o700)
			os.WriteFile(dir, nil, 0o600)
		}, -1, "is not a folder"},
		{"file is a symlink", func(t *testing.T, dir, target string) {
			os.MkdirAll(dir, 0o700)
			os.WriteFile(target, []byte("keep"), 0o600)
			os.Symlink(target, filepath.Join(dir, Current))
		}, -1, "events.jsonl is a symbolic link: refused"},
		{"file is a dangling symlink", func(t *testing.T, dir, target string) {
			os.MkdirAll(dir, 0o700)
			os.Symlink(target, filepath.Join(dir, Current))
		}, -1, "events.jsonl is a symbolic link: refused"},
		{"file has a second hard link", func(t *testing.T, dir, target string) {
			os.MkdirAll(dir, 0o700)
			os.WriteFile(target, []byte("keep"), 0o600)
			os.Link(target, filepath.Join(dir, Current))
		}, -1, "has 2 hard links: refused"},
		{"file is a FIFO", func(t *testing.T, dir, target string) {
			os.MkdirAll(dir, 0o700)
			if err := syscall.Mkfifo(filepath.Join(dir, Current), 0o600); err != nil {
				t.Fatal(err)
			}
		}, -1, "opening"},
		{"file is a folder", func(t *testing.T, dir, target string) {
			os.MkdirAll(filepath.Join(dir, Current), 0o700)
		}, -1, "events.jsonl"},
		{"folder of another user", func(t *testing.T, dir, target string) {}, os.Geteuid() + 1, "not to this user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := logDir(t)
			target := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(dir))), "target")
			tc.setup(t, dir, target)
			owner := tc.owner
			if owner < 0 {
				owner = os.Geteuid()
			}
			_, err := openLog(dir, LogOptions{}, owner)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error on more than one line: %q", err)
			}
			if data, err := os.ReadFile(target); err == nil && string(data) != "keep" {
				t.Errorf("the target was written: %q", data)
			}
			if entries, err := os.ReadDir(target); err == nil && len(entries) > 0 {
				t.Errorf("something was created in the target folder: %v", entries)
			}
		})
	}
}

// The file of another user in the log folder is refused too.
func TestLogRefusesFileOfAnotherUser(t *testing.T) {
	dir := logDir(t)
	mustOpen(t, dir, LogOptions{}).Close()
	d, err := openFolder(dir, os.Geteuid(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.owner = os.Geteuid() + 1 // as if the file were someone else's
	if _, err := d.create(Current); err == nil || !strings.Contains(err.Error(), "not to this user") {
		t.Fatalf("want a refusal, got %v", err)
	}
}

// Past the cap only the start and the end are recorded, with one Dropped
// event counting what was left out, by kind; the reader's counts include
// what was dropped.
func TestLogCap(t *testing.T) {
	dir := logDir(t)
	l := mustOpen(t, dir, LogOptions{Cap: 3})
	l.Emit(start("r1"))
	for i := 0; i < 10; i++ {
		l.Emit(netEvent("r1", i%4 == 0, fmt.Sprintf("h%d.test:80", i)))
	}
	l.Emit(Event{Time: t0, Run: "r1", Kind: Quarantine, Path: "/p/x"})
	l.Emit(end("r1", 0))
	l.Close()
	var kinds []Kind
	got := stored(t, dir)
	for _, e := range got {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]Kind{RunStart, Net, Net, Net, Dropped, RunEnd}, kinds); diff != "" {
		t.Fatalf("kinds (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"net-denied": 5, "net-allowed": 2, "quarantine": 1}, got[4].Counts); diff != "" {
		t.Errorf("dropped counts (-want +got):\n%s", diff)
	}
	c, _ := ReadLog(dir)
	r := c.Runs[0]
	if r.Denied != 7 || r.Quarantined != 1 || r.Dropped != 8 {
		t.Errorf("denied %d quarantined %d dropped %d, want 7 1 8", r.Denied, r.Quarantined, r.Dropped)
	}
}

// A run that never ends (agentbox killed) still records what it dropped.
func TestLogCapWithoutEnd(t *testing.T) {
	dir := logDir(t)
	l := mustOpen(t, dir, LogOptions{Cap: 1})
	l.Emit(start("r1"))
	l.Emit(netEvent("r1", false, "a.test:80"))
	l.Emit(netEvent("r1", false, "b.test:80"))
	l.Close()
	got := stored(t, dir)
	if len(got) != 3 || got[2].Kind != Dropped || got[2].Counts["net-denied"] != 1 {
		t.Fatalf("want start, net, dropped(1), got %+v", got)
	}
}

// Rotation keeps Keep rotated files and the current one, each about
// MaxSize; the newest events are all there, in order.
func TestLogRotation(t *testing.T) {
	dir := logDir(t)
	const maxSize = 2000
	l := mustOpen(t, dir, LogOptions{MaxSize: maxSize, Keep: 2, Cap: 100000})
	const n = 300
	l.Emit(start("r1"))
	for i := 0; i < n; i++ {
		l.Emit(Event{Time: t0, Run: "r1", Kind: Warning, Detail: strconv.Itoa(i)})
	}
	l.Close()
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		info, _ := e.Info()
		if info.Size() > maxSize+200 {
			t.Errorf("%s: %d bytes, more than the maximum and one line", e.Name(), info.Size())
		}
	}
	if len(names) != 3 || len(RotatedNames(names)) != 2 {
		t.Fatalf("want the current file and 2 rotated ones, got %v", names)
	}
	got := stored(t, dir)
	if len(got) < 20 {
		t.Fatalf("only %d events kept", len(got))
	}
	last, _ := strconv.Atoi(got[len(got)-1].Detail)
	if last != n-1 {
		t.Fatalf("last event %d, want %d", last, n-1)
	}
	first, _ := strconv.Atoi(got[0].Detail)
	for i, e := range got {
		if e.Detail != strconv.Itoa(first+i) {
			t.Fatalf("event %d is %q, want %d: lost or out of order", i, e.Detail, first+i)
		}
	}
}

// Several runs writing and rotating at once (each with its own descriptors,
// as separate processes have) lose no event and tear no line.
func TestLogConcurrent(t *testing.T) {
	dir := logDir(t)
	const writers, each = 4, 300
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			l := mustOpen(t, dir, LogOptions{MaxSize: 8000, Keep: 1000, Cap: 100000})
			defer l.Close()
			run := fmt.Sprintf("w%d", w)
			for i := 0; i < each; i++ {
				l.Emit(Event{Time: t0, Run: run, Kind: Warning, Detail: strconv.Itoa(i)})
			}
		}(w)
	}
	wg.Wait()
	c, err := ReadLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Skipped) > 0 {
		t.Fatalf("torn or unreadable lines: %q", c.Skipped)
	}
	if len(c.Runs) != writers {
		t.Fatalf("want %d runs, got %d", writers, len(c.Runs))
	}
	for _, r := range c.Runs {
		var got []int
		for _, e := range r.Events {
			n, _ := strconv.Atoi(e.Detail)
			got = append(got, n)
		}
		sort.Ints(got)
		for i := range got {
			if got[i] != i {
				t.Fatalf("run %s: event %d missing or doubled (have %d events)", r.ID, i, len(got))
			}
		}
		if len(got) != each {
			t.Fatalf("run %s: %d events, want %d", r.ID, len(got), each)
		}
	}
}

// A rename for rotation never replaces what is at the new name, a file or
// a symbolic link.
func TestRotationNeverReplaces(t *testing.T) {
	dir := logDir(t)
	mustOpen(t, dir, LogOptions{}).Close()
	d, err := openFolder(dir, os.Geteuid(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	target := filepath.Join(filepath.Dir(dir), "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	os.Symlink(target, filepath.Join(dir, "taken-link"))
	os.WriteFile(filepath.Join(dir, "taken-file"), []byte("keep"), 0o600)
	for _, to := range []string{"taken-link", "taken-file"} {
		if err := d.rename(Current, to); !errors.Is(err, os.ErrExist) {
			t.Errorf("rename onto %s: want os.ErrExist, got %v", to, err)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "keep" {
		t.Errorf("target changed: %q", data)
	}
	if _, err := os.Lstat(filepath.Join(dir, Current)); err != nil {
		t.Errorf("the current file moved: %v", err)
	}
}

// A write that fails is said once; nothing more is written for the run.
func TestLogWarnsOnce(t *testing.T) {
	dir := logDir(t)
	var warned []string
	l := mustOpen(t, dir, LogOptions{Warn: func(err error) { warned = append(warned, err.Error()) }})
	l.Emit(start("r1"))
	// The same file, opened read-only: every write fails.
	ro, err := os.Open(filepath.Join(dir, Current))
	if err != nil {
		t.Fatal(err)
	}
	l.f.Close()
	l.f = ro
	for i := 0; i < 5; i++ {
		l.Emit(netEvent("r1", false, "a.test:80"))
	}
	l.Emit(end("r1", 0))
	l.Close()
	if len(warned) != 1 || !strings.Contains(warned[0], "writing events.jsonl") {
		t.Fatalf("want one warning about the write, got %q", warned)
	}
	if got := stored(t, dir); len(got) != 1 {
		t.Fatalf("want only the start recorded, got %d events", len(got))
	}
}

// Stored escapes every string an event carries and bounds its size.
func TestStored(t *testing.T) {
	long := strings.Repeat("a", 5000)
	args := make([]string, 40)
	for i := range args {
		args[i] = strings.Repeat("b", 500)
	}
	tests := []struct {
		name string
		in   Event
		want Event
	}{
		{"escape sequence", Event{Target: "\x1b[2Jx"}, Event{Target: `\x1b[2Jx`}},
		{"bidi override and zero width", Event{Path: "a\u202eb\u200bc"}, Event{Path: `a\u202eb\u200bc`}},
		{"line separator", Event{Detail: "a\u2028b"}, Event{Detail: `a\u2028b`}},
		{"invalid utf-8", Event{Reason: "a\xffb"}, Event{Reason: `a\xffb`}},
		{"C1 control", Event{Process: "a\u009bb"}, Event{Process: `a\u009bb`}},
		{"plain text kept", Event{Target: "例え.test:443", Path: "/p/a b"}, Event{Target: "例え.test:443", Path: "/p/a b"}},
		{"long text clipped", Event{Detail: long}, Event{Detail: long[:maxText-len("…")] + "…"}},
		{"command escaped", Event{Command: []string{"sh", "-c", "echo \x1b"}}, Event{Command: []string{"sh", "-c", `echo \x1b`}}},
		{"count keys escaped", Event{Counts: map[string]int{"\x1b": 1}}, Event{Counts: map[string]int{`\x1b`: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Stored(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	got := Stored(Event{Command: args})
	total := 0
	for _, a := range got.Command {
		total += len(a)
	}
	if total > maxCommand+100 || got.Command[len(got.Command)-1] != "…(32 more arguments)" {
		t.Errorf("command not bounded: %d bytes, ends %q", total, got.Command[len(got.Command)-1])
	}
	line, _ := json.Marshal(Stored(Event{Target: long, Path: long, Detail: long, Reason: long, Command: args}))
	if len(line) > 12<<10 {
		t.Errorf("one event stored as %d bytes", len(line))
	}
}

func TestEscape(t *testing.T) {
	for _, s := range []string{"\x1b[31m", "a\u202e", "\xff", "plain", `a\x1b`, "tab\there"} {
		e := Escape(s)
		if Escape(e) != e {
			t.Errorf("Escape(%q) = %q is escaped again as %q", s, e, Escape(e))
		}
	}
}
