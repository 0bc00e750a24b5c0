package hostexec

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWalk measures the search of a large tree: set
// AGENTBOX_BENCH_TREE to a folder (scripts/bench-scan.sh makes one of 100k
// files). It compares the getdents walk the search uses with a walk by
// os.ReadDir, and reports entries per walk.
func BenchmarkWalk(b *testing.B) {
	root := os.Getenv("AGENTBOX_BENCH_TREE")
	if root == "" {
		b.Skip("set AGENTBOX_BENCH_TREE to a folder to walk")
	}
	visit := func(rel string, entries []Entry) bool {
		for i := range entries {
			if entries[i].Name == ".git" {
				entries[i].Type = TypeOther
			}
		}
		return true
	}
	names := map[string]bool{".git": true, "HEAD": true, ".claude": true}
	b.Run("getdents", func(b *testing.B) {
		n := 0
		for i := 0; i < b.N; i++ {
			n, _ = (&Search{Limit: 10_000_000, Names: names, Visit: visit}).Walk(root)
		}
		b.ReportMetric(float64(n), "entries")
	})
	b.Run("resolve+indexed", func(b *testing.B) {
		in := Input{GOOS: "linux", Home: "/nonexistent", Getenv: func(string) string { return "" }, FS: osFS{},
			Regions: []string{root}}
		r, err := Resolve(in)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			(&Search{Limit: 10_000_000, Names: names, Visit: visit, Index: r.Index}).Walk(root)
		}
	})
	b.Run("readdir", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var walk func(string)
			walk = func(dir string) {
				es, err := os.ReadDir(dir)
				if err != nil {
					return
				}
				for _, e := range es {
					if e.IsDir() && e.Name() != ".git" {
						walk(filepath.Join(dir, e.Name()))
					}
				}
			}
			walk(root)
		}
	})
	b.Run("resolve", func(b *testing.B) {
		in := Input{GOOS: "linux", Home: "/nonexistent", Getenv: func(string) string { return "" }, FS: osFS{},
			Regions: []string{root}}
		for i := 0; i < b.N; i++ {
			if _, err := Resolve(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
