package examples

// The Windows half of the examples test: every example is loaded and
// resolved on Windows (real resolution: GOOS=windows, Windows paths, the
// user's SID, Windows environment names), completed by the Windows backend
// and rendered as `agentbox plan` shows it: each rule's level, then the
// spec (users, ACEs, firewall rules, WFP filters, the command). It runs on
// Windows and under Wine (scripts/test-windows.sh); `-update` rewrites
// testdata/*.windows.golden there.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/winsandbox"
)

// sid is the test user's SID: names the per-user tmp folder.
const sid = "S-1-5-21-1000-2000-3000-1001"

// winFiles are the programs of the test machine, for resolving commands.
var winFiles = map[string]bool{
	`c:\users\u\appdata\roaming\npm\claude.cmd`:   true,
	`c:\users\u\appdata\roaming\npm\codex.cmd`:    true,
	`c:\programdata\chocolatey\bin\make.exe`:      true,
	`c:\windows\system32\cmd.exe`:                 true,
	`c:\program files\git\cmd\git.exe`:            true,
	`c:\users\u\appdata\roaming\npm\node_modules`: true,
}

// winWorld is the fixed Windows host the examples are resolved in, built
// in a temporary folder (root), which the golden files show as C:.
func winWorld(t *testing.T) (string, policy.Env) {
	t.Helper()
	root, err := filepath.EvalSymlinks(tempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{`home\u\.aws`, `home\u\.ssh`, `home\u\.claude`, `home\u\.codex`, `home\u\.docker`, `home\u\proj\.git\hooks`, `tmp`} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{`home\u\.claude.json`, `home\u\.netrc`, `home\u\proj\.git\config`} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(root, `home\u`)
	return root, policy.Env{
		GOOS: "windows", UID: -1, GID: -1, User: sid, Home: home,
		Cwd: filepath.Join(home, "proj"), TempDir: filepath.Join(root, "tmp"),
		Environ: []string{
			`ALLUSERSPROFILE=C:\ProgramData`, "ANTHROPIC_API_KEY=sk-x", `APPDATA=` + home + `\AppData\Roaming`,
			"AWS_SECRET_ACCESS_KEY=x", "CI=true", `ComSpec=C:\Windows\system32\cmd.exe`, "GITHUB_TOKEN=ghp_x",
			`Path=C:\Windows\system32;C:\Windows;C:\Program Files\Git\cmd;C:\ProgramData\chocolatey\bin;C:\Users\u\AppData\Roaming\npm`,
			"PATHEXT=.COM;.EXE;.BAT;.CMD", "SystemDrive=C:", `SystemRoot=C:\Windows`, "TEMP=" + filepath.Join(root, "tmp"),
			"TERM=xterm", "USERPROFILE=" + home, `windir=C:\Windows`,
		},
		FS: policy.OSFS{},
	}
}

// tempDir is t.TempDir, except that a folder that cannot be removed
// afterwards is left behind: Wine cannot delete a folder the way Go's
// os.RemoveAll asks (FILE_DISPOSITION_POSIX_SEMANTICS), which would fail
// the test for nothing it tests.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

var winTmpHash = regexp.MustCompile(`\b(proj)-[0-9a-f]{8}\b`)

// onMachine moves a path of the test world to where it would be on the
// test machine: the home folder to C:\Users\u, the rest of the world to C:.
func onMachine(s, root string) string {
	s = strings.ReplaceAll(s, filepath.Join(root, `home\u`), `C:\Users\u`)
	s = strings.ReplaceAll(s, root, `C:`)
	// The per-folder tmp id hashes where the world is; fix it so the
	// capability SIDs derived from paths are stable.
	return winTmpHash.ReplaceAllString(s, "$1-HASH")
}

// moved is p with every path of the test world moved by onMachine, before
// the backend derives anything (capability SIDs) from them.
func moved(p *plan.Plan, root string) *plan.Plan {
	m := func(s string) string { return onMachine(s, root) }
	q := p.Clone()
	q.Cwd = m(q.Cwd)
	q.Identity.Home = m(q.Identity.Home)
	for i := range q.Mounts {
		q.Mounts[i].Path, q.Mounts[i].Source = m(q.Mounts[i].Path), m(q.Mounts[i].Source)
	}
	q.Tmp.HostDir = m(q.Tmp.HostDir)
	q.CacheDir = m(q.CacheDir)
	q.Caches = slices.Clone(q.Caches)
	for i := range q.Caches {
		q.Caches[i].Dirs = slices.Clone(q.Caches[i].Dirs)
		for j := range q.Caches[i].Dirs {
			d := &q.Caches[i].Dirs[j]
			d.Path, d.Host, d.Var = m(d.Path), m(d.Host), m(d.Var)
		}
	}
	for _, s := range []*string{&q.Workspace.Root, &q.Workspace.Dir, &q.Workspace.RepoDir, &q.Workspace.TaskDir} {
		*s = m(*s)
	}
	for i := range q.Prepare {
		q.Prepare[i].Path = m(q.Prepare[i].Path)
	}
	for i := range q.HostExec.GitDirs {
		q.HostExec.GitDirs[i] = m(q.HostExec.GitDirs[i])
	}
	q.HostExec.Guards = slices.Clone(q.HostExec.Guards)
	for i := range q.HostExec.Guards {
		q.HostExec.Guards[i].Path = m(q.HostExec.Guards[i].Path)
	}
	for i := range q.Environ {
		q.Environ[i] = m(q.Environ[i])
	}
	return q
}

func TestExamplesWindows(t *testing.T) {
	files, err := filepath.Glob("*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(file, ".toml")
		t.Run(name, func(t *testing.T) {
			root, env := winWorld(t)
			abs, _ := filepath.Abs(file)
			layers, err := policy.Load(env, policy.Flags{Policy: []string{abs}, Workspace: workspaceOf(name), Task: taskOf(name)})
			if err != nil {
				t.Fatal(err)
			}
			cmd := commands[name]
			if cmd == nil {
				cmd = []string{"cmd"}
			}
			p, err := policy.Resolve(layers, env, cmd, policy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p = moved(p, root)
			p.RunID = "RUN"
			w := &winsandbox.Windows{Facts: func(*plan.Plan) winsandbox.Options {
				return winsandbox.Options{
					Runner: `C:\Program Files\agentbox\agentbox.exe`,
					// The port Complete would reserve for an allowlist run.
					ProxyPort: winsandbox.DefaultProxyPort,
					Exists:    func(path string) bool { return winFiles[strings.ToLower(path)] },
					TempDir:   `C:\tmp`,
					User:      sid,
				}
			}}
			var got string
			if err := w.Complete(p); err != nil {
				// Some rules have no Windows form; the golden records the
				// error the user gets.
				got = "error: " + err.Error() + "\n"
			} else {
				var b strings.Builder
				w.Describe(p, &b)
				got = b.String()
			}
			repo := filepath.Dir(abs)
			got = strings.ReplaceAll(got, repo+`\`, "$EXAMPLES/")
			// Origins name the workspace too (the private caches').
			got = winTmpHash.ReplaceAllString(got, "$1-HASH")
			check(t, name+".windows.golden", got)
		})
	}
}
