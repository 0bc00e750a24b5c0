package hostexec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The marks git's own update-index sets are read back, in index versions
// 2, 3 and 4, and cleared in a form git reads (git ls-files -v shows the
// entries unmarked, git status works).
func TestIndexFlagsWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			dir := t.TempDir()
			run := func(args ...string) string {
				t.Helper()
				c := exec.Command("git", append([]string{"-C", dir}, args...)...)
				c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
				out, err := c.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			run("init", "-q")
			for _, f := range []string{"Makefile", "a/long/path/name.go", "a/long/path/other.go", "z"} {
				os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
				os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644)
			}
			run("add", "-A")
			run("commit", "-q", "-m", "x")
			run("update-index", "--index-version", version)
			run("update-index", "--assume-unchanged", "Makefile")
			if version != "2" {
				run("update-index", "--skip-worktree", "a/long/path/other.go")
			}
			index := filepath.Join(dir, ".git", "index")
			data, err := os.ReadFile(index)
			if err != nil {
				t.Fatal(err)
			}
			flags, err := IndexFlags(data, 20)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range flags {
				got = append(got, f.Path)
			}
			want := []string{"Makefile"}
			if version != "2" {
				want = []string{"Makefile", "a/long/path/other.go"}
				slices.Sort(want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("marked entries (-want +got):\n%s", diff)
			}
			clear := map[string]bool{"Makefile": true, "a/long/path/other.go": true}
			out, err := ClearIndexFlags(data, 20, clear, true)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(index, out, 0o644); err != nil {
				t.Fatal(err)
			}
			ls := run("ls-files", "-v")
			for _, line := range strings.Split(strings.TrimSpace(ls), "\n") {
				if !strings.HasPrefix(line, "H ") {
					t.Errorf("an entry is still marked after clearing: %q\n%s", line, ls)
				}
			}
			os.WriteFile(filepath.Join(dir, "Makefile"), []byte("changed"), 0o644)
			if st := run("status", "--porcelain"); !strings.Contains(st, "Makefile") {
				t.Errorf("git status does not show the changed Makefile: %q", st)
			}
		})
	}
	if _, err := IndexFlags([]byte("DIRC\x00\x00\x00\x09"), 20); err == nil {
		t.Error("a cut-short index was read")
	}
}

// v4Index is a version-4 index of n entries whose names each keep the
// whole previous name and add one byte ("a", "aa", "aaa", …): small on
// disk, each name as long as its position. marked says which entries carry
// the assume-unchanged mark. The checksum is zeros (index.skipHash).
func v4Index(n int, marked func(int) bool) []byte {
	out := []byte("DIRC\x00\x00\x00\x04")
	out = binary.BigEndian.AppendUint32(out, uint32(n))
	for i := 0; i < n; i++ {
		out = append(out, make([]byte, 40+20)...)
		flags := uint16(0)
		if marked != nil && marked(i) {
			flags |= 0x8000
		}
		out = binary.BigEndian.AppendUint16(out, flags)
		out = append(out, 0, 'a', 0) // drop nothing, add "a"
	}
	return append(out, make([]byte, 20)...)
}

// A crafted version-4 index: a name-prefix varint past 2^63, past the
// previous name, past the data, entry counts past the data, names whose
// marked total outgrows the file. Each is an error, never a panic.
func TestIndexFlagsCrafted(t *testing.T) {
	entry := func(varint []byte, name string) []byte {
		b := append(make([]byte, 40+20), 0x80, 0) // assume-unchanged
		b = append(b, varint...)
		return append(append(b, name...), 0)
	}
	index := func(n uint32, entries ...[]byte) []byte {
		out := []byte("DIRC\x00\x00\x00\x04")
		out = binary.BigEndian.AppendUint32(out, n)
		for _, e := range entries {
			out = append(out, e...)
		}
		return append(out, make([]byte, 20)...)
	}
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f} // > 2^63 in git's varint
	cases := map[string][]byte{
		"varint past 2^63":        index(2, entry([]byte{0}, "abc"), entry(huge, "x")),
		"varint past 2^64":        index(2, entry([]byte{0}, "abc"), entry([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "x")),
		"drop past previous name": index(2, entry([]byte{0}, "abc"), entry([]byte{4}, "x")),
		"no NUL":                  index(1, append(make([]byte, 40+20), 0, 0, 0, 'a', 'b')),
		"more entries than data":  index(1000, entry([]byte{0}, "a")),
		"names past the budget":   v4Index(20000, func(int) bool { return true }),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if flags, err := IndexFlags(data, 20); err == nil {
				t.Fatalf("read without an error: %d marks", len(flags))
			}
			if _, err := ClearIndexFlags(data, 20, map[string]bool{"x": true}, true); err == nil {
				t.Fatal("cleared without an error")
			}
		})
	}
	// A long shared-prefix index with a few marks is read whole.
	data := v4Index(5000, func(i int) bool { return i%1000 == 999 })
	flags, err := IndexFlags(data, 20)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, f := range flags {
		got = append(got, len(f.Path))
	}
	if diff := cmp.Diff([]int{1000, 2000, 3000, 4000, 5000}, got); diff != "" {
		t.Fatalf("marked names' lengths (-want +got):\n%s", diff)
	}
}

// gitIndexes are indexes real git writes, in versions 2, 3 and 4, with
// marks set: the fuzz target's seeds.
func gitIndexes(tb testing.TB) [][]byte {
	if _, err := exec.LookPath("git"); err != nil {
		return nil
	}
	var out [][]byte
	for _, version := range []string{"2", "3", "4"} {
		dir := tb.TempDir()
		ok := true
		run := func(args ...string) {
			c := exec.Command("git", append([]string{"-C", dir}, args...)...)
			c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
			if c.Run() != nil {
				ok = false
			}
		}
		run("init", "-q")
		for _, f := range []string{"Makefile", "a/long/path/name.go", "a/long/path/other.go", "a/long/x", "b", "z"} {
			os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
			os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644)
		}
		run("add", "-A")
		run("update-index", "--index-version", version)
		run("update-index", "--assume-unchanged", "Makefile")
		if version != "2" {
			run("update-index", "--skip-worktree", "a/long/path/other.go")
		}
		if data, err := os.ReadFile(filepath.Join(dir, ".git", "index")); err == nil && ok {
			out = append(out, data)
		}
	}
	return out
}

// FuzzIndexFlags: whatever the index holds, the readers return or fail,
// never panic, and what they return can be cleared (marks, cached stat
// data); the marks read are within the entries and their names within the
// linear budget.
func FuzzIndexFlags(f *testing.F) {
	for _, d := range gitIndexes(f) {
		f.Add(d)
	}
	f.Add(v4Index(50, func(i int) bool { return i%7 == 0 }))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, eerr := IndexEntriesSince(data, 20, 0)
		if eerr == nil {
			stale := map[string]bool{}
			for _, e := range entries {
				stale[e.Path] = true
			}
			out, err := ClearIndexStat(data, 20, stale)
			if err != nil {
				t.Fatalf("entries read, but their stat data not cleared: %v", err)
			}
			if again, err := IndexEntriesSince(out, 20, 1); err != nil || len(again) != 0 {
				t.Fatalf("after clearing, entries still carry times (%v): %d", err, len(again))
			}
		}
		flags, err := IndexFlags(data, 20)
		if err != nil {
			return
		}
		total := 0
		clear := map[string]bool{}
		for _, fl := range flags {
			total += len(fl.Path)
			clear[fl.Path] = true
			if fl.flagsOff < 12 || fl.flagsOff+2 > len(data)-20 {
				t.Fatalf("a mark's flags outside the entries: %d of %d", fl.flagsOff, len(data))
			}
		}
		if total > 4*len(data)+1<<20 {
			t.Fatalf("marked names add up to %d bytes from %d", total, len(data))
		}
		out, err := ClearIndexFlags(data, 20, clear, true)
		if err != nil {
			t.Fatalf("read, but not cleared: %v", err)
		}
		again, err := IndexFlags(out, 20)
		if err != nil {
			t.Fatalf("the cleared index is not read: %v", err)
		}
		for _, fl := range again {
			if fl.AssumeValid {
				t.Fatalf("%q still marked assume-unchanged after clearing", fl.Path)
			}
		}
	})
}

// BenchmarkIndexFlagsV4 reads version-4 indexes of 4, 16 and 64 MiB whose
// names grow by one byte an entry (the shape that made the reader take
// time quadratic in the size): the time per byte stays the same.
func BenchmarkIndexFlagsV4(b *testing.B) {
	for _, mib := range []int{4, 16, 64} {
		n := mib << 20 / 65
		data := v4Index(n, func(i int) bool { return i%(n/4) == 0 })
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := IndexFlags(data, 20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestIndexExtensionsWithGit: the extensions of indexes git itself wrote,
// a split one (its "link" to the shared part) among them.
func TestIndexExtensionsWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", dir}, args...)...)
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("echo safe\n"), 0o644)
	run("add", "-A")
	run("commit", "-q", "-m", "x")
	exts := func() []string {
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := IndexExtensions(data, 20)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := exts(); slices.Contains(got, "link") {
		t.Errorf("a whole index has extensions %q", got)
	}
	run("update-index", "--split-index")
	if got := exts(); !slices.Contains(got, "link") {
		t.Errorf("a split index has extensions %q, want a link", got)
	}
	data, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))
	// An extension whose size runs past the end is an error.
	bad := bytes.Clone(data)
	if i := bytes.Index(bad, []byte("link")); i > 0 {
		bad[i+4] = 0x7f
		if _, err := IndexExtensions(bad, 20); err == nil {
			t.Error("an extension past the end was read")
		}
	}
}
