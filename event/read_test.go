//go:build unix

package event

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// writeLines writes events (as stored) and raw lines into file name of dir.
func writeFile(t *testing.T, dir, name string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

func line(e Event) string {
	data, err := json.Marshal(Stored(e))
	if err != nil {
		panic(err)
	}
	return string(data) + "\n"
}

// sample is a log of four runs over a rotated file and the current one:
// one with denials and a quarantined item, one that hit a limit and
// dropped events, one that never ended, one unconfined.
func sample(t *testing.T) string {
	dir := logDir(t)
	a, b := start("aaaa11112222"), start("bbbb33334444")
	b.Project, b.Workspace, b.Command = "/home/u/agent-work/web", "web", []string{"claude", "-p", "fix the \x1b[31mbug"}
	writeFile(t, dir, RotatedName(t0), line(a),
		line(netEvent("aaaa11112222", true, "example.test:443")),
		line(netEvent("aaaa11112222", false, "other.test:80")),
		line(b))
	c := start("cccc55556666")
	c.Backend, c.Project = "landlock", "/srv/other"
	d := Event{Time: t0.Add(time.Hour), Run: "dddd77778888", Kind: RunStart, Command: []string{"make"}, Project: "/p/sub",
		Reason: "running unconfined (best-effort): bwrap-missing"}
	writeFile(t, dir, Current,
		line(Event{Time: t0, Run: "aaaa11112222", Kind: Quarantine, Action: "moved", Path: "/p/.git/commondir", Detail: "moved away"}),
		line(Event{Time: t0, Run: "aaaa11112222", Kind: Denied, Op: "create", Path: "/home/u/.npm/_cacache/x", Errno: "EROFS",
			Process: "npm (pid 12, /usr/bin/node)", Rule: "root / (default)", Detail: "--writable ~/.npm (safe: npm's package cache)"}),
		line(end("aaaa11112222", 0)),
		line(Event{Time: t0, Run: "bbbb33334444", Kind: Limit, Limit: "memory", Detail: "the box reached 1GiB"}),
		line(Event{Time: t0, Run: "bbbb33334444", Kind: Dropped, Counts: map[string]int{"net-denied": 40, "net-allowed": 2}, Detail: "42 events of this run were not recorded"}),
		line(Event{Time: t0.Add(3 * time.Minute), Run: "bbbb33334444", Kind: RunEnd, Status: Int(137), DurationMS: 184000}),
		line(c), line(d))
	return dir
}

func TestReadLogAndFilter(t *testing.T) {
	dir := sample(t)
	c, err := ReadLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Skipped) != 0 {
		t.Fatalf("skipped %q", c.Skipped)
	}
	ids := func(runs []*Run) []string {
		var out []string
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	tests := []struct {
		name string
		f    Filter
		want []string
		err  string
	}{
		{"all", Filter{}, []string{"aaaa11112222", "bbbb33334444", "cccc55556666", "dddd77778888"}, ""},
		{"last 2", Filter{Last: 2}, []string{"cccc55556666", "dddd77778888"}, ""},
		{"run by ID", Filter{Run: "bbbb33334444"}, []string{"bbbb33334444"}, ""},
		{"run by prefix", Filter{Run: "ccc"}, []string{"cccc55556666"}, ""},
		{"run unknown", Filter{Run: "ffff"}, nil, "no run ffff in the audit log"},
		{"run with escape", Filter{Run: "\x1b"}, nil, `no run \x1b in the audit log`},
		{"project and below", Filter{Project: "/p"}, []string{"aaaa11112222", "dddd77778888"}, ""},
		{"project exact", Filter{Project: "/p/sub"}, []string{"dddd77778888"}, ""},
		{"project is not a prefix of a name", Filter{Project: "/sr"}, nil, ""},
		{"workspace", Filter{Workspace: "web"}, []string{"bbbb33334444"}, ""},
		{"denials, dropped ones counted", Filter{Denials: true}, []string{"aaaa11112222", "bbbb33334444"}, ""},
		{"denials in a project", Filter{Denials: true, Project: "/home/u"}, []string{"bbbb33334444"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.Select(c.Runs)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("want error %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := (Filter{Run: "aaaa1111"}).Select(append(c.Runs, &Run{ID: "aaaa1111zzzz"})); err == nil || !strings.Contains(err.Error(), "2 runs start with aaaa1111") {
		t.Errorf("ambiguous prefix: got %v", err)
	}
}

// The text of `agentbox log`, against golden files: the runs table, with
// denials, and one run's events.
func TestWriteText(t *testing.T) {
	c, err := ReadLog(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	var runs, denials, events bytes.Buffer
	WriteRuns(&runs, c.Runs, false, time.UTC)
	sel, _ := Filter{Denials: true}.Select(c.Runs)
	WriteRuns(&denials, sel, true, time.UTC)
	for _, r := range c.Runs[:2] {
		for _, e := range r.Events {
			WriteEvent(&events, e, time.UTC)
		}
	}
	for name, got := range map[string][]byte{"runs": runs.Bytes(), "runs-denials": denials.Bytes(), "events": events.Bytes()} {
		golden := filepath.Join("testdata", name+".golden")
		if *update {
			os.MkdirAll("testdata", 0o755)
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", golden, diff)
		}
		if bytes.ContainsAny(got, "\x1b\r\u202e") {
			t.Errorf("%s: a control character reached the output", name)
		}
	}
}

// Bad input: lines that are not events, a line too long, a last line not
// ended, a file that is a symlink; each is skipped and said, the rest read.
func TestReadLogBadInput(t *testing.T) {
	dir := logDir(t)
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte(line(start("zzzz"))), 0o600)
	writeFile(t, dir, RotatedName(t0), "not json\n", `{"kind":"run-start"}`+"\n", strings.Repeat("x", maxLine+10)+"\n", line(start("r1")))
	os.Symlink(target, filepath.Join(dir, RotatedName(t0.Add(time.Second))))
	writeFile(t, dir, Current, line(end("r1", 0)), `{"run":"r1","kind":"run-end"`)
	c, err := ReadLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Runs) != 1 || c.Runs[0].ID != "r1" || c.Runs[0].End == nil || len(c.Runs[0].Events) != 2 {
		t.Fatalf("want run r1 with start and end, got %+v", c.Runs)
	}
	want := []string{
		RotatedName(t0) + ": 3 lines that are not events",
		filepath.Join(dir, RotatedName(t0.Add(time.Second))) + " is a symbolic link: refused",
	}
	if diff := cmp.Diff(want, c.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

// A log folder that does not exist is an empty log; one that is a symlink
// is refused.
func TestReadLogFolder(t *testing.T) {
	c, err := ReadLog(logDir(t))
	if err != nil || len(c.Runs) != 0 {
		t.Fatalf("missing folder: %v %v", c, err)
	}
	dir := logDir(t)
	os.MkdirAll(filepath.Dir(dir), 0o700)
	os.Symlink(t.TempDir(), dir)
	if _, err := ReadLog(dir); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("symlinked folder: want a refusal, got %v", err)
	}
}

// Follow sees every event written after it started, across rotations, and
// none written before.
func TestFollow(t *testing.T) {
	dir := logDir(t)
	l := mustOpen(t, dir, LogOptions{MaxSize: 1500, Keep: 100, Cap: 100000})
	l.Emit(Event{Time: t0, Run: "old", Kind: Warning, Detail: "before"})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 1000)
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, dir, func(e Event, line []byte) { got <- e.Detail })
	}()
	// Follow seeks to the end once it has opened the file; an event it
	// sees tells that it has.
	deadline := time.After(30 * time.Second)
	seen := false
	for !seen {
		l.Emit(Event{Time: t0, Run: "r", Kind: Warning, Detail: "ready"})
		select {
		case d := <-got:
			seen = d == "ready"
			if d == "before" {
				t.Fatal("Follow showed an event from before it started")
			}
		case <-time.After(FollowPoll):
		case <-deadline:
			t.Fatal("Follow never started")
		}
	}
	const n = 200
	for i := 0; i < n; i++ {
		l.Emit(Event{Time: t0, Run: "r", Kind: Warning, Detail: strconv.Itoa(i)})
	}
	l.Close()
	for i := 0; i < n; {
		select {
		case d := <-got:
			if d == "ready" {
				continue
			}
			if d != strconv.Itoa(i) {
				t.Fatalf("event %d: got %q: lost or out of order", i, d)
			}
			i++
		case <-deadline:
			t.Fatalf("only %d of %d events followed", i, n)
		}
	}
	names, _ := os.ReadDir(dir)
	if len(names) < 3 {
		t.Errorf("the test did not rotate: %d files", len(names))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
