//go:build !windows

// The bubblewrap half of the examples test: every example resolved for a
// Linux host and rendered as bwrap arguments. The Windows half
// (examples_windows_test.go) resolves every example on Windows (or Wine).

package examples

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/policy"
)

// world is the fixed host the examples are resolved in.
func world(t *testing.T) (string, policy.Env) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"home/u/.aws", "home/u/.ssh", "home/u/.claude", "home/u/.codex", "home/u/.docker", "home/u/proj/.git/hooks", "tmp", "state"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"home/u/.claude.json", "home/u/.netrc", "home/u/proj/.git/config"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(root, "home/u")
	return root, policy.Env{
		GOOS: "linux", UID: 1000, GID: 1000, Home: home,
		Cwd: filepath.Join(home, "proj"), TempDir: filepath.Join(root, "tmp"),
		Environ: []string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_STATE_HOME=" + filepath.Join(root, "state"),
			"GITHUB_TOKEN=ghp_x", "ANTHROPIC_API_KEY=sk-x", "AWS_SECRET_ACCESS_KEY=x", "CI=true", "TERM=xterm"},
		FS: policy.OSFS{},
	}
}

var tmpHash = regexp.MustCompile(`\b(proj)-[0-9a-f]{8}\b`)

func normalize(root, s string) string {
	return tmpHash.ReplaceAllString(strings.ReplaceAll(s, root, "$ROOT"), "$1-HASH")
}

func TestExamples(t *testing.T) {
	files, err := filepath.Glob("*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(file, ".toml")
		t.Run(name, func(t *testing.T) {
			root, env := world(t)
			abs, _ := filepath.Abs(file)
			layers, err := policy.Load(env, policy.Flags{Policy: []string{abs}, Workspace: workspaceOf(name), Task: taskOf(name)})
			if err != nil {
				t.Fatal(err)
			}
			cmd := commands[name]
			if cmd == nil {
				cmd = []string{"sh"}
			}
			p, err := policy.Resolve(layers, env, cmd, policy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// The example file itself lives in this repository, not in the world.
			repo := filepath.Dir(abs)
			var b strings.Builder
			bw := &mount.Bwrap{Path: "/usr/bin/bwrap", LandlockABI: func() int { return 6 }, Cgroups: func() cgroup.Availability {
				no := cgroup.Controller{Reason: "not in this test"}
				return cgroup.Availability{Pids: no, Memory: no}
			}}
			if err := bw.Complete(p); err != nil {
				t.Fatal(err)
			}
			d, err := mount.DetailOf(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range d.Args {
				b.WriteString(normalize(root, strings.ReplaceAll(a, repo, "$EXAMPLES")) + "\n")
			}
			check(t, name+".bwrap.golden", b.String())
		})
	}
}
