package examples

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// commands are what each example is meant to run.
var commands = map[string][]string{
	"claude":    {"claude", "-p", "fix the tests"},
	"codex":     {"codex", "exec", "fix the tests"},
	"ci":        {"make", "test"},
	"workspace": {"claude"},
}

func workspaceOf(name string) string {
	if name == "workspace" {
		return "finance"
	}
	return ""
}

func taskOf(name string) string {
	if name == "workspace" {
		return "q3"
	}
	return ""
}

func check(t *testing.T, golden, got string) {
	t.Helper()
	path := filepath.Join("testdata", golden)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./examples -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}
