package buildinfo

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func settings(kv ...string) []debug.BuildSetting {
	var out []debug.BuildSetting
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func TestFrom(t *testing.T) {
	const rev = "41929c7a0f5e8d3b2c1a09f8e7d6c5b4a3928171"
	tests := []struct {
		name    string
		bi      *debug.BuildInfo
		release string
		want    Info
	}{
		{"checkout with changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20251202171900-41929c7a0f5e+dirty"},
			Settings: settings("vcs.revision", rev, "vcs.time", "2025-12-02T17:19:00Z", "vcs.modified", "true")},
			"", Info{Schema: 1, Version: "v0.0.0-20251202171900-41929c7a0f5e+dirty", Commit: rev, CommitTime: "2025-12-02T17:19:00Z", Modified: true, Go: "go1.26.8", Platform: "linux/amd64"}},
		{"go install at a tag", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.0.0"}},
			"", Info{Schema: 1, Version: "v1.0.0", Go: "go1.26.8", Platform: "linux/amd64"}},
		{"release build", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.revision", rev, "vcs.time", "2025-12-02T17:19:00Z", "vcs.modified", "false")},
			"1.0.0", Info{Schema: 1, Version: "1.0.0", Commit: rev, CommitTime: "2025-12-02T17:19:00Z", Go: "go1.26.8", Platform: "linux/amd64"}},
		{"-buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"dev", Info{Schema: 1, Version: "dev", Go: "go1.26.8", Platform: "linux/amd64"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := From(tc.bi, tc.release, "linux/amd64")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("From (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGolden pins the text and the JSON contract of `agentbox version`.
func TestGolden(t *testing.T) {
	i := From(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.0.0"},
		Settings: settings("vcs.revision", "41929c7a0f5e8d3b2c1a09f8e7d6c5b4a3928171", "vcs.time", "2025-12-02T17:19:00Z", "vcs.modified", "true")},
		"", "linux/amd64")
	var text, js bytes.Buffer
	if err := i.Text(&text); err != nil {
		t.Fatal(err)
	}
	if err := i.JSON(&js); err != nil {
		t.Fatal(err)
	}
	check(t, "version.txt.golden", text.String())
	check(t, "version.json.golden", js.String())
}

func check(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}
