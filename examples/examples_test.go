package examples

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/winsandbox"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

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

// commands are what each example is meant to run.
var commands = map[string][]string{
	"claude":    {"claude", "-p", "fix the tests"},
	"codex":     {"codex", "exec", "fix the tests"},
	"ci":        {"make", "test"},
	"workspace": {"claude"},
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
			wp := windowsPlan(p.Clone(), root)
			var b strings.Builder
			bw := &mount.Bwrap{Path: "/usr/bin/bwrap", Cgroups: func() cgroup.Availability {
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

			got := ""
			spec, err := winsandbox.Build(wp, winsandbox.Options{Environ: wp.Environ, Exists: func(string) bool { return true }})
			if err != nil {
				// Some rules have no Windows form; the golden records the
				// error the user gets.
				got = "error: " + err.Error() + "\n"
			} else {
				got = spec.Render()
			}
			got = strings.ReplaceAll(strings.ReplaceAll(got, winPath(repo, root), "$EXAMPLES"), repo, "$EXAMPLES")
			check(t, name+".windows.golden", tmpHash.ReplaceAllString(got, "$1-HASH"))
		})
	}
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

// winPath maps a path of the Linux test world onto a Windows machine:
// the home folder to C:\Users\u, anything else under the world to C:\.
func winPath(p, root string) string {
	switch {
	case plan.Within(p, filepath.Join(root, "home/u")):
		p = `C:\Users\u` + strings.TrimPrefix(p, filepath.Join(root, "home/u"))
	case plan.Within(p, root):
		p = `C:` + strings.TrimPrefix(p, root)
	default:
		p = `C:\agentbox` + p
	}
	// The per-folder tmp id hashes the world's temporary path; fix it so
	// the capability SIDs derived from paths are stable.
	return tmpHash.ReplaceAllString(strings.ReplaceAll(p, "/", `\`), "$1-HASH")
}

// windowsPlan is the same plan as Windows resolution makes it: the same
// rules at the Windows paths of the same folders. (Windows resolution runs
// the same code with Windows paths; here the paths are mapped so one Linux
// test can show both backends' renderings of every example.)
func windowsPlan(p *plan.Plan, root string) *plan.Plan {
	w := *p
	w.GOOS = "windows"
	w.Cwd = winPath(p.Cwd, root)
	w.Mounts = nil
	for _, m := range p.Mounts {
		if m.Stage != plan.StageRoot && m.Path != "/tmp" {
			m.Path = winPath(m.Path, root)
		}
		if m.Source != "" {
			m.Source = winPath(m.Source, root)
		}
		w.Mounts = append(w.Mounts, m)
	}
	if w.Tmp.HostDir != "" {
		w.Tmp.HostDir = winPath(w.Tmp.HostDir, root)
	}
	w.Identity.Home = winPath(p.Identity.Home, root)
	ws := &w.Workspace
	for _, s := range []*string{&ws.Root, &ws.Dir, &ws.RepoDir, &ws.TaskDir} {
		if *s != "" {
			*s = winPath(*s, root)
		}
	}
	w.Environ = []string{`USERPROFILE=C:\Users\u`, `PATH=C:\Windows\system32`, "TERM=xterm"}
	return &w
}
