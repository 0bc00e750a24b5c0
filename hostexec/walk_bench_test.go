package hostexec

import (
	"os"
	"testing"
)

// BenchmarkWalk measures the search of a large tree: set
// AGENTBOX_BENCH_TREE to a folder (scripts/bench-scan.sh makes trees of
// 100,000 and 1,000,000 files). "first" lists every folder (no earlier
// tree); "unchanged" checks each folder against the tree of an earlier
// search (an hour old, so none counts as recently changed) — what every
// later search of an unchanged tree does; "first-shared" and
// "unchanged-shared" are the same with the look at every regular file's
// links (WalkOptions.Shared, what agentbox's searches do), so the
// difference is what that look costs; "encode" and "decode" are the
// tree's file form.
func BenchmarkWalk(b *testing.B) {
	root := os.Getenv("AGENTBOX_BENCH_TREE")
	if root == "" {
		b.Skip("set AGENTBOX_BENCH_TREE to a folder to walk")
	}
	names := []string{".claude", ".vscode", ".idea", ".mcp.json", ".codex", ".agents"}
	first, err := Walk(root, WalkOptions{Names: names})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(first.Len()), "folders")
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Walk(root, WalkOptions{Names: names}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first-shared", func(b *testing.B) {
		for b.Loop() {
			if _, err := Walk(root, WalkOptions{Names: names, Shared: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	old := *first
	old.Taken += 3600e9
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t, err := Walk(root, WalkOptions{Names: names, Old: &old})
			if err != nil || t.Listed() != 0 {
				b.Fatalf("listed %d folders: %v", t.Listed(), err)
			}
		}
	})
	b.Run("unchanged-shared", func(b *testing.B) {
		for b.Loop() {
			t, err := Walk(root, WalkOptions{Names: names, Old: &old, Shared: true})
			if err != nil || t.Listed() != 0 {
				b.Fatalf("listed %d folders: %v", t.Listed(), err)
			}
		}
	})
	for _, w := range []int{1, 2, 4} {
		b.Run("unchanged-workers-"+string(rune('0'+w)), func(b *testing.B) {
			for b.Loop() {
				Walk(root, WalkOptions{Names: names, Old: &old, Workers: w})
			}
		})
	}
	data := EncodeIndex(first)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			EncodeIndex(first)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.ReportMetric(float64(len(data)), "bytes")
		for b.Loop() {
			if DecodeIndex(data, root) == nil {
				b.Fatal("no tree")
			}
		}
	})
}
