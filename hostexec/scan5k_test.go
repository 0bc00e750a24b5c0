package hostexec

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentbox/agentbox/provider"
)

// gen5k makes a repository-like tree of 5,000 files in 50 folders (ten
// top-level folders of four subfolders each, and the root), with a nested
// repository, a package tree holding one more, and a control folder:
// the size of a mid-sized project.
func gen5k(tb testing.TB) string {
	tb.Helper()
	root, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	var dirs []string
	for i := range 10 {
		top := filepath.Join(root, fmt.Sprintf("pkg%d", i))
		dirs = append(dirs, top)
		for j := range 4 {
			dirs = append(dirs, filepath.Join(top, fmt.Sprintf("sub%d", j)))
		}
	}
	dirs = append(dirs, root) // 51 folders, 5,000 files between them
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for n := range 5000 {
		f := filepath.Join(dirs[n%len(dirs)], fmt.Sprintf("f%d.go", n))
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for _, rel := range []string{".git", "pkg3/sub1/vendored/.git", "pkg7/node_modules/dep/.git"} {
		for _, d := range []string{"hooks", "objects", "refs"} {
			if err := os.MkdirAll(filepath.Join(root, rel, d), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, rel, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel, "config"), []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "pkg2", ".claude"), 0o755); err != nil {
		tb.Fatal(err)
	}
	return root
}

func input5k(root string, fs FS) Input {
	env := map[string]string{"HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1"}
	return Input{GOOS: "linux", Home: "/nonexistent", Getenv: func(k string) string { return env[k] }, FS: fs,
		Regions: []string{root}, Projects: []string{root}, Providers: provider.Builtin()}
}

// The getdents walk and the ReadDir walk find the same in the 5k tree:
// the same guards in the same order, the same git folders, the same
// count of entries.
func TestWalk5kSameAsReadDir(t *testing.T) {
	root := gen5k(t)
	fast, err := Resolve(input5k(root, osFS{}))
	if err != nil {
		t.Fatal(err)
	}
	slow, err := Resolve(input5k(root, slowFS{}))
	if err != nil {
		t.Fatal(err)
	}
	if fast.Visited < 5000 || len(fast.GitDirs) != 3 {
		t.Fatalf("the getdents walk saw %d entries and git folders %v; want over 5000 and 3", fast.Visited, fast.GitDirs)
	}
	if diff := cmp.Diff(slow, fast, cmpopts.IgnoreFields(Result{}, "Trees"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("getdents walk against ReadDir walk (-readdir +getdents):\n%s", diff)
	}
}

// BenchmarkWalk5k compares, on the generated 5k tree, the search before a
// run through the getdents walk (what agentbox does on Linux) with the same
// search by os.ReadDir (the portable walk, and what the Linux walk was).
// The index of an earlier search is left out: it skips only folders that
// changed more than half a second before it was taken, and this tree is
// new (BenchmarkWalk measures it on a tree of your own).
func BenchmarkWalk5k(b *testing.B) {
	root := gen5k(b)
	b.Run("getdents", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Resolve(input5k(root, osFS{})); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("readdir", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Resolve(input5k(root, slowFS{})); err != nil {
				b.Fatal(err)
			}
		}
	})
}
