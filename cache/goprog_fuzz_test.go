package cache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzGoProg feeds the build-cache program what a go command in the box
// may send it: any bytes on its standard input. Seeds: real traffic of a
// go build (testdata/goprog-traffic.jsonl, recorded through GOCACHEPROG),
// whole and cut at each line. Whatever comes, the program ends (no hang),
// never changes the host's cache, answers only paths inside the two
// caches, and the private cache holds only what go itself would store:
// every output is the SHA-256 its name says, every index entry parses.
func FuzzGoProg(f *testing.F) {
	traffic, err := os.ReadFile("testdata/goprog-traffic.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(traffic)
	lines := bytes.SplitAfter(traffic, []byte("\n"))
	for i := 1; i < len(lines); i++ {
		f.Add(bytes.Join(lines[:i], nil))
		f.Add(lines[i-1])
	}
	f.Add([]byte("not json\n"))
	f.Add([]byte(`{"ID":1,"Command":"put","ActionID":"` + strings.Repeat("A", 43) + `=","BodySize":-1}` + "\n"))
	host := f.TempDir()
	plantF(f, host, id("host action"), "host output")
	before := snapshotF(host)
	f.Fuzz(func(t *testing.T, in []byte) {
		private := t.TempDir()
		g := &GoProg{Read: host, Write: private, Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
		var out bytes.Buffer
		done := make(chan error, 1)
		go func() { done <- g.Serve(bytes.NewReader(in), &out) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("Serve did not end on a finite input")
		}
		dec := json.NewDecoder(bufio.NewReader(&out))
		for {
			var r progResponse
			if dec.Decode(&r) != nil {
				break
			}
			if r.DiskPath != "" && !strings.HasPrefix(r.DiskPath, private+"/") && !strings.HasPrefix(r.DiskPath, host+"/") {
				t.Fatalf("an answer names a path outside the caches: %+v", r)
			}
		}
		if after := snapshotF(host); after != before {
			t.Fatalf("the host's cache changed:\n%s\n%s", before, after)
		}
		filepath.WalkDir(private, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			name := d.Name()
			switch {
			case strings.HasSuffix(name, "-d"):
				b, _ := os.ReadFile(p)
				sum := sha256.Sum256(b)
				if filepath.Base(progFile(private, sum[:], "d")) != name {
					t.Fatalf("the private cache holds an output that is not what its name says: %s", p)
				}
			case strings.HasSuffix(name, "-a"):
				b, _ := os.ReadFile(p)
				action, _ := hex.DecodeString(strings.TrimSuffix(name, "-a"))
				if _, ok := parseProgEntry(b, action); !ok {
					t.Fatalf("the private cache holds an index entry go would not write: %s: %q", p, b)
				}
			case name == "trim.txt":
			default:
				t.Fatalf("the private cache holds a file go would not: %s", p)
			}
			return nil
		})
	})
}

// FuzzParseProgEntry: an index entry of the host's cache (or one the box
// left in the private one) is any bytes; it parses to an entry of the
// right shape, or to none.
func FuzzParseProgEntry(f *testing.F) {
	action := id("host action")
	f.Add([]byte("v1 "+strings.Repeat("ab", 32)+" "+strings.Repeat("cd", 32)+" "+strings.Repeat(" ", 17)+"123 "+strings.Repeat(" ", 1)+"1767323045000000000\n"), action)
	f.Add([]byte("v1 \n"), action)
	f.Fuzz(func(t *testing.T, b, id []byte) {
		e, ok := parseProgEntry(b, id)
		if ok && (len(e.output) != progHashSize || e.size < 0 || len(b) != progEntrySize) {
			t.Fatalf("parsed %q to %+v", b, e)
		}
	})
}

func plantF(f *testing.F, dir string, action []byte, body string) {
	out := id(body)
	d := progFile(dir, out, "d")
	os.MkdirAll(filepath.Dir(d), 0o755)
	if err := os.WriteFile(d, []byte(body), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := writeAtomic(progFile(dir, action, "a"), []byte(formatEntry(action, out, int64(len(body))))); err != nil {
		f.Fatal(err)
	}
}

func formatEntry(action, out []byte, size int64) string {
	var b strings.Builder
	b.WriteString("v1 ")
	for _, x := range [][]byte{action, out} {
		const hexd = "0123456789abcdef"
		for _, c := range x {
			b.WriteByte(hexd[c>>4])
			b.WriteByte(hexd[c&15])
		}
		b.WriteByte(' ')
	}
	b.WriteString(strings.Repeat(" ", 20-len("11")) + "11 " + strings.Repeat(" ", 1) + "1767323045000000000\n")
	return b.String()
}

func snapshotF(dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			fi, _ := d.Info()
			b.WriteString(p + " " + fi.Mode().String() + " " + fi.ModTime().String() + "\n")
		}
		return nil
	})
	return b.String()
}
