package winsandbox

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.windows.golden")

const home = `C:\Users\me`

// environ is a fixed caller environment, as a Windows user would have it.
var environ = []string{
	`=C:=C:\Users\me\proj`,
	`ALLUSERSPROFILE=C:\ProgramData`,
	`APPDATA=C:\Users\me\AppData\Roaming`,
	`AGENTBOX_DEGRADED=stale`,
	`AWS_SECRET_ACCESS_KEY=hunter2`,
	`ComSpec=C:\Windows\system32\cmd.exe`,
	`GITHUB_TOKEN=ghp_x`,
	`LOCALAPPDATA=C:\Users\me\AppData\Local`,
	`Path=C:\Windows\system32;C:\Windows;C:\Program Files\Git\cmd;C:\Users\me\AppData\Roaming\npm`,
	`PATHEXT=.COM;.EXE;.BAT;.CMD`,
	`SystemDrive=C:`,
	`SystemRoot=C:\Windows`,
	`TEMP=C:\Users\me\AppData\Local\Temp`,
	`TMP=C:\Users\me\AppData\Local\Temp`,
	`USERPROFILE=C:\Users\me`,
	`windir=C:\Windows`,
}

// files is the fake file system commands are resolved against.
var files = map[string]bool{
	`C:\Windows\system32\cmd.exe`:                  true,
	`C:\Windows\system32\where.exe`:                true,
	`C:\Program Files\Git\cmd\git.exe`:             true,
	`C:\Users\me\AppData\Roaming\npm\claude.cmd`:   true,
	`C:\Users\me\AppData\Roaming\npm\codex.cmd`:    true,
	`C:\Users\me\AppData\Roaming\npm\node_modules`: true,
}

func exists(p string) bool { return files[p] || files[strings.ToLower(p)] }

func origin(key string) plan.Origin { return plan.Origin{Key: key} }

func tmpBind(dir string) plan.Mount {
	return plan.Mount{Stage: plan.StageTmp, Op: plan.Bind, Source: dir, Path: "/tmp", Access: plan.ReadWrite, Origin: origin("tmp.mode workspace")}
}

// base is a plan as policy resolution would make it for GOOS=windows: the
// project writable, its git hooks and config read-only, the workspace tmp.
func base() *plan.Plan {
	tmp := `C:\Users\me\AppData\Local\Temp\agentbox-me\proj`
	return &plan.Plan{
		Enforce:  plan.Require,
		Backend:  "windows",
		Command:  []string{"git", "status"},
		Cwd:      `C:\Users\me\proj`,
		Identity: plan.Identity{Home: home},
		Mounts: []plan.Mount{
			{Stage: plan.StageRoot, Op: plan.ROBind, Path: "/", Access: plan.ReadOnly, Origin: origin("default")},
			tmpBind(tmp),
			{Stage: plan.StageWritable, Op: plan.Bind, Path: `C:\Users\me\proj`, Access: plan.ReadWrite, Origin: origin("default (git top-level)")},
			{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\proj\.git\hooks`, Access: plan.ReadOnly, Origin: origin("always read-only: .git/hooks")},
			{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\proj\.git\config`, Access: plan.ReadOnly, Origin: origin("always read-only: .git/config")},
			{Stage: plan.StageDeny, Op: plan.HideDir, Path: `C:\Users\me\.aws`, Access: plan.Hidden, Origin: origin("default deny")},
		},
		Tmp:     plan.Tmp{Mode: plan.TmpWorkspace, HostDir: tmp},
		Network: plan.Network{Mode: plan.NetOpen},
		Env:     plan.Env{Mode: "inherit"},
	}
}

var cases = []struct {
	name string
	plan func() *plan.Plan
	opts Options
}{
	{name: "default", plan: base},
	{name: "offline", plan: func() *plan.Plan {
		p := base()
		p.Network.Mode = plan.NetNone
		return p
	}},
	{name: "claude-allowlist", plan: func() *plan.Plan {
		p := base()
		p.Command = []string{"claude", "--print", `say hi & exit | more <x`, `C:\dir with space\`}
		p.Network = plan.Network{Mode: plan.NetAllowlist, Allow: []string{"api.anthropic.com"}}
		p.Env = plan.Env{Mode: "inherit", Deny: []string{"*_TOKEN", "AWS_*"}, Set: map[string]string{"NO_COLOR": "1"}}
		p.Mounts = append(p.Mounts[:3:3],
			plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Path: `C:\Users\me\.claude`, Access: plan.ReadWrite, Origin: origin("provider claude")},
			plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\proj\.claude\settings.json`, Access: plan.ReadOnly, Origin: origin("provider claude control file")},
			plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\proj\.git\hooks`, Access: plan.ReadOnly, Origin: origin("always read-only: .git/hooks")},
			plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\.config\agentbox\config.toml`, Access: plan.ReadOnly, Origin: origin("policy file")},
			plan.Mount{Stage: plan.StageDeny, Op: plan.HideDir, Path: `C:\Users\me\.aws`, Access: plan.Hidden, Origin: origin("default deny")},
			plan.Mount{Stage: plan.StageDeny, Op: plan.HideFile, Path: `C:\Users\me\.git-credentials`, Access: plan.Hidden, Origin: origin("default deny")},
		)
		return p
	}, opts: Options{ProxyPort: 3128, ReadRoots: []string{`C:\Program Files\agentbox`, `C:\Users\me\AppData\Roaming\npm`}}},
	{name: "workspace-clean-env", plan: func() *plan.Plan {
		p := base()
		root := `C:\Users\me\agent-work`
		p.Workspace = plan.Workspace{Root: root, ID: "finance", Task: "t1", Dir: root + `\finance`, RepoDir: root + `\.repos\finance`, TaskDir: root + `\finance\t1`}
		p.Cwd = p.Workspace.TaskDir
		p.Command = []string{"where", "git"}
		p.Env = plan.Env{Mode: "clean", Pass: []string{"PATH", "USERPROFILE"}}
		p.Limits = plan.Limits{Processes: 64, Memory: 8 << 30, CPUTime: 7200, OpenFiles: 1024}
		p.Mounts = []plan.Mount{
			p.Mounts[0], p.Mounts[1],
			{Stage: plan.StageWorkspace, Op: plan.Tmpfs, Path: root, Access: plan.Hidden, Origin: origin("workspace.root")},
			{Stage: plan.StageWorkspace, Op: plan.Bind, Path: p.Workspace.Dir, Access: plan.ReadWrite, Origin: origin("workspace.id")},
			{Stage: plan.StageWorkspace, Op: plan.Bind, Path: p.Workspace.RepoDir, Access: plan.ReadWrite, Origin: origin("workspace.id (repo cache)")},
			{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: root + `\finance\t1\repo\.git\hooks`, Access: plan.ReadOnly, Origin: origin("always read-only: .git/hooks")},
			{Stage: plan.StageDeny, Op: plan.HideDir, Path: root + `\finance\secrets`, Access: plan.Hidden, Origin: origin("filesystem.deny[0]")},
		}
		return p
	}},
	{name: "deny-covers-writable", plan: func() *plan.Plan {
		p := base()
		p.Command = []string{`C:\Program Files\Git\cmd\git.exe`, "log", ""}
		p.Mounts = append(p.Mounts[:3:3],
			plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Path: `C:\Users\me\.aws\cli\cache`, Access: plan.ReadWrite, Origin: origin("flag --writable")},
			plan.Mount{Stage: plan.StageDeny, Op: plan.HideDir, Path: `C:\Users\me\.aws`, Access: plan.Hidden, Origin: origin("default deny")},
		)
		return p
	}},
}

func TestBuildGolden(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Environ = environ
			opts.Exists = exists
			s, err := Build(tc.plan(), opts)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Render()
			file := filepath.Join("testdata", tc.name+".windows.golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./winsandbox -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", file, diff)
			}
		})
	}
}

func TestBuildFacts(t *testing.T) {
	s, err := Build(base(), Options{Environ: environ, Exists: exists})
	if err != nil {
		t.Fatal(err)
	}
	if s.User != OnlineUser {
		t.Errorf("open network runs as %s, want %s", s.User, OnlineUser)
	}
	for _, kv := range s.Spawn.Env {
		if strings.HasPrefix(kv, "AGENTBOX_DEGRADED=") {
			t.Errorf("caller's %s leaked into the sandbox", kv)
		}
	}
	if got, want := envGet(s.Spawn.Env, "TEMP"), `C:\Users\me\AppData\Local\Temp\agentbox-me\proj`; got != want {
		t.Errorf("TEMP = %q, want %q", got, want)
	}
	// Every writable root's capability SID is a restricting SID.
	if diff := cmp.Diff([]string{CapabilitySID(`C:\Users\me\AppData\Local\Temp\agentbox-me\proj`), CapabilitySID(`C:\Users\me\proj`)}, s.Spawn.RestrictingSIDs); diff != "" {
		t.Errorf("restricting SIDs (-want +got):\n%s", diff)
	}
	p := base()
	p.Network.Mode = plan.NetNone
	s, _ = Build(p, Options{Environ: environ})
	if s.User != OfflineUser {
		t.Errorf("network none runs as %s, want %s", s.User, OfflineUser)
	}
	if s.Spawn.Application != "" || s.Spawn.CommandLine != "git status" {
		t.Errorf("without Exists: application %q, command line %q", s.Spawn.Application, s.Spawn.CommandLine)
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*plan.Plan)
		want string
	}{
		{"empty command", func(p *plan.Plan) { p.Command = nil }, "empty command"},
		{"slash cwd", func(p *plan.Plan) { p.Cwd = "/home/me/proj" }, "not an absolute Windows path"},
		{"slash mount", func(p *plan.Plan) { p.Mounts[2].Path = "/home/me/proj" }, `"/home/me/proj" is not an absolute Windows path`},
		{"private tmp", func(p *plan.Plan) {
			p.Mounts[1] = plan.Mount{Stage: plan.StageTmp, Op: plan.Tmpfs, Path: "/tmp", Access: plan.ReadWrite, Origin: origin("tmp.mode private")}
		}, "Windows has no tmpfs"},
		{"not found", func(p *plan.Plan) { p.Command = []string{"nosuch"} }, "command not found"},
		{"batch with percent", func(p *plan.Plan) { p.Command = []string{"claude", "100%"} }, "cannot be passed safely"},
		{"quote in program", func(p *plan.Plan) { p.Command = []string{`C:\a"b\git.exe`} }, "command not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.edit(p)
			_, err := Build(p, Options{Environ: environ, Exists: exists})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if tc.name == "not found" && !errors.Is(err, ErrCommandNotFound) {
				t.Errorf("err = %v, want ErrCommandNotFound", err)
			}
		})
	}
}

func TestCapabilitySID(t *testing.T) {
	a := CapabilitySID(`C:\Users\me\proj`)
	for _, same := range []string{`c:\users\ME\proj`, `C:\Users\me\proj\`, `C:/Users/me/proj`} {
		if got := CapabilitySID(same); got != a {
			t.Errorf("CapabilitySID(%q) = %s, want %s (same folder)", same, got, a)
		}
	}
	if b := CapabilitySID(`C:\Users\me\proj2`); b == a {
		t.Errorf("two roots share %s", a)
	}
	if !strings.HasPrefix(a, "S-1-5-21-") || strings.Count(a, "-") != 7 {
		t.Errorf("CapabilitySID = %s, want S-1-5-21-a-b-c-d", a)
	}
}

func TestFileRights(t *testing.T) {
	for _, tc := range []struct {
		r    Rights
		want uint32
	}{
		{RightsModify, 0x1301bf}, // the "Modify" of the Explorer security tab
		{RightsRead, 0x1200a9},   // "Read & execute"
		{RightsWrite, 0xd0156},
		{RightsDelete, 0x10000},
		{RightsAll, 0xf01ff}, // FILE_ALL_ACCESS without SYNCHRONIZE
	} {
		if got := FileRights(tc.r); got != tc.want {
			t.Errorf("FileRights(%s) = %#x, want %#x", tc.r, got, tc.want)
		}
	}
	if FileRights(RightsWrite)&synchronize != 0 || FileRights(RightsAll)&synchronize != 0 {
		t.Error("a deny mask holds SYNCHRONIZE, which breaks reads")
	}
}

func TestWinPath(t *testing.T) {
	if !winWithin(`C:\Users\me\proj\.git`, `c:\users\me\PROJ`) || winWithin(`C:\Users\me\proj2`, `C:\Users\me\proj`) {
		t.Error("winWithin")
	}
	if !winWithin(`C:\x`, `C:\`) {
		t.Error(`winWithin(C:\x, C:\)`)
	}
	got := winBetween(`C:\p`, `C:\p\.git\hooks\x`)
	if diff := cmp.Diff([]string{`C:\p\.git`, `C:\p\.git\hooks`}, got); diff != "" {
		t.Errorf("winBetween (-want +got):\n%s", diff)
	}
	for p, want := range map[string]bool{`C:\x`: true, `c:/x`: true, `\\srv\share`: true, `/x`: false, `C:x`: false, ``: false} {
		if winAbs(p) != want {
			t.Errorf("winAbs(%q) = %v", p, !want)
		}
	}
}
