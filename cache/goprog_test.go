package cache

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// progConn is a conversation with a GoProg, as the go command holds it:
// one request at a time, each answered before the next.
type progConn struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *json.Decoder
	done chan error
}

func startProg(t *testing.T, g *GoProg) *progConn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &progConn{t: t, in: inW, out: json.NewDecoder(bufio.NewReader(outR)), done: make(chan error, 1)}
	go func() {
		err := g.Serve(inR, outW)
		outW.Close()
		c.done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	first := c.read()
	if diff := cmp.Diff([]string{"get", "put", "close"}, first.KnownCommands); first.ID != 0 || diff != "" {
		t.Fatalf("first message: %+v", first)
	}
	return c
}

// read is the next response, within a deadline.
func (c *progConn) read() progResponse {
	c.t.Helper()
	got := make(chan progResponse, 1)
	errc := make(chan error, 1)
	go func() {
		var r progResponse
		if err := c.out.Decode(&r); err != nil {
			errc <- err
			return
		}
		got <- r
	}()
	select {
	case r := <-got:
		return r
	case err := <-errc:
		c.t.Fatalf("reading a response: %v", err)
	case <-time.After(10 * time.Second):
		c.t.Fatal("no response within 10s")
	}
	return progResponse{}
}

func (c *progConn) ask(req progRequest, body []byte) progResponse {
	c.t.Helper()
	line, _ := json.Marshal(req)
	msg := string(line) + "\n"
	if body != nil {
		msg += `"` + base64.StdEncoding.EncodeToString(body) + "\"\n"
	}
	go io.WriteString(c.in, msg)
	r := c.read()
	if r.ID != req.ID {
		c.t.Fatalf("response to %d answers %d", req.ID, r.ID)
	}
	return r
}

func id(s string) []byte { sum := sha256.Sum256([]byte(s)); return sum[:] }

// plant writes an entry into dir as the go command does.
func plant(t *testing.T, dir string, action []byte, body string, size int) {
	t.Helper()
	out := id(body)
	d := progFile(dir, out, "d")
	os.MkdirAll(filepath.Dir(d), 0o755)
	if err := os.WriteFile(d, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	a := progFile(dir, action, "a")
	os.MkdirAll(filepath.Dir(a), 0o755)
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", action, out, size, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	if err := os.WriteFile(a, []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every file under dir with its size, mode and time.
func snapshot(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			fi, _ := d.Info()
			fmt.Fprintf(&b, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}

// A lookup finds the private cache's entry, else the host's, else
// misses; what is put goes to the private cache, in the go command's own
// layout, and only when the body is what its output ID says. The host's
// cache is never changed, not even an entry's time.
func TestGoProg(t *testing.T) {
	host, private := t.TempDir(), t.TempDir()
	plant(t, host, id("host action"), "host output", len("host output"))
	plant(t, host, id("short"), "short output", 999) // its output is not the size the entry says
	plant(t, host, id("shadowed"), "the host's", len("the host's"))
	plant(t, private, id("shadowed"), "the box's", len("the box's"))
	before := snapshot(t, host)
	c := startProg(t, &GoProg{Read: host, Write: private})

	r := c.ask(progRequest{ID: 1, Command: "get", ActionID: id("nothing")}, nil)
	if !r.Miss {
		t.Errorf("unknown action: %+v, want a miss", r)
	}
	r = c.ask(progRequest{ID: 2, Command: "get", ActionID: id("host action")}, nil)
	if r.Miss || r.DiskPath != progFile(host, id("host output"), "d") || r.Size != int64(len("host output")) || string(r.OutputID) != string(id("host output")) {
		t.Errorf("host entry: %+v", r)
	}
	if r.Time == nil || !r.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("host entry's time: %v", r.Time)
	}
	if r = c.ask(progRequest{ID: 3, Command: "get", ActionID: id("short")}, nil); !r.Miss {
		t.Errorf("an output of the wrong size: %+v, want a miss", r)
	}
	if r = c.ask(progRequest{ID: 4, Command: "get", ActionID: id("shadowed")}, nil); r.DiskPath != progFile(private, id("the box's"), "d") {
		t.Errorf("the private entry must win: %+v", r)
	}

	body := []byte("built in the box")
	r = c.ask(progRequest{ID: 5, Command: "put", ActionID: id("box action"), OutputID: id(string(body)), BodySize: int64(len(body))}, body)
	want := progFile(private, id(string(body)), "d")
	if r.Err != "" || r.DiskPath != want {
		t.Fatalf("put: %+v, want DiskPath %s", r, want)
	}
	if got, _ := os.ReadFile(want); string(got) != string(body) {
		t.Errorf("the output holds %q", got)
	}
	entry, _ := os.ReadFile(progFile(private, id("box action"), "a"))
	if e, ok := parseProgEntry(entry, id("box action")); !ok || string(e.output) != string(id(string(body))) || e.size != int64(len(body)) {
		t.Errorf("index entry %q", entry)
	}
	if r = c.ask(progRequest{ID: 6, Command: "get", ActionID: id("box action")}, nil); r.DiskPath != want {
		t.Errorf("get after put: %+v", r)
	}

	// A body that is not what its output ID says is refused.
	r = c.ask(progRequest{ID: 7, Command: "put", ActionID: id("forged"), OutputID: id("host output"), BodySize: 6}, []byte("forged"))
	if r.Err == "" {
		t.Errorf("forged put accepted: %+v", r)
	}
	if _, err := os.Stat(progFile(private, id("forged"), "a")); err == nil {
		t.Error("the forged put left an index entry")
	}
	// An empty output has no body line.
	r = c.ask(progRequest{ID: 8, Command: "put", ActionID: id("empty"), OutputID: id("")}, nil)
	if r.Err != "" || r.DiskPath != progFile(private, id(""), "d") {
		t.Errorf("empty put: %+v", r)
	}

	if r = c.ask(progRequest{ID: 9, Command: "close"}, nil); r.Err != "" {
		t.Errorf("close: %+v", r)
	}
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after close")
	}
	if after := snapshot(t, host); after != before {
		t.Errorf("the host's cache changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// Serve ends without an error when go closes its end without a close
// request, and with one on a request that is not JSON.
func TestGoProgEnd(t *testing.T) {
	g := &GoProg{Write: t.TempDir()}
	if err := g.Serve(strings.NewReader(""), io.Discard); err != nil {
		t.Errorf("end of input: %v", err)
	}
	if err := g.Serve(strings.NewReader("{not json\n"), io.Discard); err == nil {
		t.Error("a broken request: no error")
	}
}

// The trim removes private entries unused for five days, at most once a
// day, as the go command trims its own cache.
func TestGoProgTrim(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	plant(t, dir, id("old"), "old output", len("old output"))
	plant(t, dir, id("new"), "new output", len("new output"))
	old := now.Add(-6 * 24 * time.Hour)
	for _, p := range []string{progFile(dir, id("old"), "a"), progFile(dir, id("old output"), "d")} {
		os.Chtimes(p, old, old)
	}
	for _, p := range []string{progFile(dir, id("new"), "a"), progFile(dir, id("new output"), "d")} {
		os.Chtimes(p, now, now)
	}
	g := &GoProg{Write: dir, Now: func() time.Time { return now }}
	g.trim()
	if _, ok := readProgEntry(dir, id("old")); ok {
		t.Error("an entry unused for six days survived the trim")
	}
	if _, ok := readProgEntry(dir, id("new")); !ok {
		t.Error("a fresh entry was trimmed")
	}
	// Within a day, no second trim.
	plant(t, dir, id("old2"), "old2 output", len("old2 output"))
	os.Chtimes(progFile(dir, id("old2"), "a"), old, old)
	now = now.Add(time.Hour)
	g.trim()
	if _, ok := readProgEntry(dir, id("old2")); !ok {
		t.Error("trimmed twice within a day")
	}
}

// GOCACHEPROG's fields are quoted as the go command splits them.
func TestGoProgSetting(t *testing.T) {
	tests := []struct {
		self, host, private string
		want                string
		ok                  bool
	}{
		{"/usr/bin/agentbox", "/h/.cache/go-build", "/s/go-build", "GOCACHEPROG=/usr/bin/agentbox __gocache --read /h/.cache/go-build --write /s/go-build", true},
		{"/opt/my tools/agentbox", "/h/it's", "/s/go-build", `GOCACHEPROG='/opt/my tools/agentbox' __gocache --read "/h/it's" --write /s/go-build`, true},
		{"/usr/bin/agentbox", `/h/both'"`, "/s", "", false},
		{"/usr/bin/agentbox", "/h/line\nbreak", "/s", "", false},
	}
	for _, tc := range tests {
		got, ok := GoProgSetting(tc.self, tc.host, tc.private)
		if got != tc.want || ok != tc.ok {
			t.Errorf("GoProgSetting(%q, %q, %q) = %q, %v; want %q, %v", tc.self, tc.host, tc.private, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		dir, want string
		ok        bool
	}{
		{"/h/go/pkg/mod/cache/download", "GOPROXY=file:///h/go/pkg/mod/cache/download", true},
		{"/h/with space/download", "GOPROXY=file:///h/with%20space/download", true},
		{"/h/a,b/download", "", false},
		{"/h/a|b/download", "", false},
		{"relative", "", false},
	} {
		got, ok := GoProxySetting(tc.dir)
		if got != tc.want || ok != tc.ok {
			t.Errorf("GoProxySetting(%q) = %q, %v; want %q, %v", tc.dir, got, ok, tc.want, tc.ok)
		}
	}
}
