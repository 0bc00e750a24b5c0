package winsandbox

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite testdata/*.windows.golden")

const home = `C:\Users\me`

// environ is a fixed environment as resolution leaves it for a Windows
// user with `agentbox init`'s deny list: the provider's own key kept,
// the agent's config folder set, nothing of agentbox's own.
var environ = []string{
	`ALLUSERSPROFILE=C:\ProgramData`,
	`ANTHROPIC_API_KEY=sk-kept`,
	`APPDATA=C:\Users\me\AppData\Roaming`,
	`CLAUDE_CONFIG_DIR=C:\Users\me\.claude`,
	`ComSpec=C:\Windows\system32\cmd.exe`,
	`GIT_CONFIG_COUNT=1`,
	`GIT_CONFIG_KEY_0=core.autocrlf`,
	`GIT_CONFIG_VALUE_0=false`,
	`LOCALAPPDATA=C:\Users\me\AppData\Local`,
	`Path=C:\Windows\system32;C:\Windows;C:\Program Files\Git\cmd;C:\Users\me\AppData\Roaming\npm;C:\Users\me\AppData\Local\Microsoft\WindowsApps`,
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
	`C:\Windows\system32\cmd.exe`:                                true,
	`C:\Windows\system32\where.exe`:                              true,
	`C:\Program Files\Git\cmd\git.exe`:                           true,
	`C:\Users\me\AppData\Roaming\npm\claude.cmd`:                 true,
	`C:\Users\me\AppData\Roaming\npm\codex.cmd`:                  true,
	`C:\Users\me\AppData\Roaming\npm\node_modules`:               true,
	`C:\Users\me\AppData\Local\Microsoft\WindowsApps\python.exe`: true,
}

func exists(p string) bool { return files[p] || files[strings.ToLower(p)] }

func origin(key string) plan.Origin { return plan.Origin{Key: key} }

func tmpBind(dir string) plan.Mount {
	return plan.Mount{Stage: plan.StageTmp, Op: plan.Bind, Source: dir, Path: "/tmp", Access: plan.ReadWrite, Origin: origin("tmp.mode workspace")}
}

// base is a plan as policy resolution makes it for GOOS=windows: the
// project writable, its .git pinned, git hooks and config read-only, the
// workspace tmp.
func base() *plan.Plan {
	tmp := `C:\Users\me\AppData\Local\Temp\agentbox-S-1-5-21-1-2-3-1001\proj-1a2b3c4d`
	return &plan.Plan{
		GOOS:     "windows",
		Enforce:  plan.Require,
		Backend:  "windows",
		Command:  []string{"git", "status"},
		Cwd:      `C:\Users\me\proj`,
		Identity: plan.Identity{UID: -1, GID: -1, Home: home},
		Mounts: []plan.Mount{
			{Stage: plan.StageRoot, Op: plan.ROBind, Path: "/", Access: plan.ReadOnly, Origin: origin("default")},
			tmpBind(tmp),
			{Stage: plan.StageWritable, Op: plan.Bind, Path: `C:\Users\me\proj`, Access: plan.ReadWrite, Origin: origin("default (git top-level)")},
			{Stage: plan.StageReadOnly, Op: plan.Pin, Path: `C:\Users\me\proj\.git`, Access: plan.ReadWrite, Origin: origin("always: git folder")},
			{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\proj\.git\hooks`, Access: plan.ReadOnly, Origin: origin("always: git hooks")},
			{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\proj\.git\config`, Access: plan.ReadOnly, Origin: origin("always: git config")},
			{Stage: plan.StageDeny, Op: plan.HideDir, Path: `C:\Users\me\.aws`, Access: plan.Hidden, Origin: origin("default deny")},
		},
		Tmp:      plan.Tmp{Mode: plan.TmpWorkspace, HostDir: tmp},
		Network:  plan.Network{Mode: plan.NetOpen},
		Env:      plan.Env{Mode: "inherit"},
		Environ:  append([]string(nil), environ...),
		HostExec: plan.HostExec{GitDirs: []string{`C:\Users\me\proj\.git`}},
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
		p.Network = plan.Network{Mode: plan.NetAllowlist, Allow: []string{"api.anthropic.com", "localhost:3000"}}
		p.Env = plan.Env{Mode: "inherit", Deny: []string{"*_TOKEN", "*_KEY", "AWS_*"}, Set: map[string]string{"NO_COLOR": "1"},
			Kept: []string{"ANTHROPIC_API_KEY"}, Provider: `CLAUDE_CONFIG_DIR=C:\Users\me\.claude`}
		p.Environ = append(p.Environ, "NO_COLOR=1")
		p.Mounts = append(p.Mounts[:3:3],
			plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Path: `C:\Users\me\.claude`, Access: plan.ReadWrite, Origin: origin("provider claude")},
			plan.Mount{Stage: plan.StageReadOnly, Op: plan.Pin, Path: `C:\Users\me\proj\.claude`, Access: plan.ReadWrite, Origin: origin("always: folder holding a read-only path")},
			plan.Mount{Stage: plan.StageReadOnly, Op: plan.Pin, Path: `C:\Users\me\proj\.git`, Access: plan.ReadWrite, Origin: origin("always: git folder")},
			plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\proj\.claude\settings.json`, Access: plan.ReadOnly, Origin: origin("always: provider claude control file")},
			plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\proj\.git\hooks`, Access: plan.ReadOnly, Origin: origin("always: git hooks")},
			plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: `C:\Users\me\.config\agentbox\config.toml`, Access: plan.ReadOnly, Origin: origin("always: loaded policy file")},
			plan.Mount{Stage: plan.StageDeny, Op: plan.HideDir, Path: `C:\Users\me\.aws`, Access: plan.Hidden, Origin: origin("default deny")},
			plan.Mount{Stage: plan.StageDeny, Op: plan.HideFile, Path: `C:\Users\me\.git-credentials`, Access: plan.Hidden, Origin: origin("default deny")},
		)
		return p
	}, opts: Options{ProxyPorts: PortRange{First: 3120, Count: 16}, ProxyPort: 3128, Runner: `C:\Program Files\agentbox\agentbox.exe`,
		Git: &GitFacts{Vars: hostexec.ParseConfig([]byte("[user]\n\tname = Me\n\temail = me@example.com\n[credential]\n\thelper = manager\n")).Vars, Ignore: ".env\n"}}},
	{name: "workspace-clean-env", plan: func() *plan.Plan {
		p := base()
		root := `C:\Users\me\agent-work`
		p.Workspace = plan.Workspace{Root: root, ID: "finance", Task: "t1", Dir: root + `\finance`, RepoDir: root + `\.repos\finance`, TaskDir: root + `\finance\t1`}
		p.Cwd = p.Workspace.TaskDir
		p.Command = []string{"where", "git"}
		p.Env = plan.Env{Mode: "clean", Pass: []string{"PATH", "USERPROFILE"}}
		p.Environ = []string{`Path=C:\Windows\system32`, `SystemRoot=C:\Windows`, `USERPROFILE=C:\Users\me`}
		p.HostExec.GitDirs = []string{root + `\finance\t1\repo\.git`}
		p.Limits = plan.Limits{Processes: 64, Memory: 8 << 30, CPUTime: 7200}
		p.Mounts = []plan.Mount{
			p.Mounts[0], p.Mounts[1],
			{Stage: plan.StageWorkspace, Op: plan.Tmpfs, Path: root, Access: plan.Hidden, Origin: origin("workspace.id")},
			{Stage: plan.StageWorkspace, Op: plan.Bind, Path: p.Workspace.Dir, Access: plan.ReadWrite, Origin: origin("workspace.id")},
			{Stage: plan.StageWorkspace, Op: plan.Bind, Path: p.Workspace.RepoDir, Access: plan.ReadWrite, Origin: origin("workspace.id")},
			{Stage: plan.StageWorkspace, Op: plan.RemountRO, Path: root, Access: plan.Hidden, Origin: origin("workspace.id")},
			{Stage: plan.StageReadOnly, Op: plan.Pin, Path: root + `\finance\t1\repo\.git`, Access: plan.ReadWrite, Origin: origin("always: git folder")},
			{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: root + `\finance\t1\repo\.git\hooks`, Access: plan.ReadOnly, Origin: origin("always: git hooks")},
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
	{name: "not-found", plan: func() *plan.Plan {
		p := base()
		p.Command = []string{"nosuch", "arg"}
		return p
	}},
}

func TestBuildGolden(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
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

// aceKey is an ACE without its origin, for comparisons.
type aceKey struct {
	Path    string
	Deny    bool
	Trustee string
	Rights  Rights
	Inherit bool
}

func acesOn(s *Spec, path string) []aceKey {
	var out []aceKey
	for _, a := range s.ACEs {
		if winKey(a.Path) == winKey(path) {
			out = append(out, aceKey{a.Path, a.Deny, a.Trustee, a.Rights, a.Inherit})
		}
	}
	return out
}

// TestPinIsDenyDelete is the attack of a prompt-injected agent on a pinned
// folder: `ren .git x`, `mkdir .git`, plant hooks, and the user's own git
// runs them. A pin must be a deny-DELETE ACE on the folder alone, never a
// writable root with its own modify ACEs and capability.
func TestPinIsDenyDelete(t *testing.T) {
	s, err := Build(base(), Options{Exists: exists})
	if err != nil {
		t.Fatal(err)
	}
	git := `C:\Users\me\proj\.git`
	want := []aceKey{{Path: git, Deny: true, Trustee: GroupName, Rights: RightsDelete}}
	if diff := cmp.Diff(want, acesOn(s, git)); diff != "" {
		t.Errorf("ACEs on the pinned .git (-want +got):\n%s", diff)
	}
	for _, c := range s.Capabilities {
		if winKey(c.Root) == winKey(git) {
			t.Errorf("the pinned .git is a writable root with capability %s", c.SID)
		}
	}
	for _, w := range boxOf(base(), s).Writable {
		if winKey(w) == winKey(git) {
			t.Errorf("AGENTBOX_WRITABLE lists the pinned %s", w)
		}
	}
	if FileRights(RightsDelete) != accessDelete {
		t.Errorf("deny-delete mask %#x holds more than DELETE", FileRights(RightsDelete))
	}
	// RightsModify must not give FILE_DELETE_CHILD: with it, the parent's
	// allow would let the child be removed past the child's own deny.
	if FileRights(RightsModify)&fileDeleteChild != 0 {
		t.Error("modify grants FILE_DELETE_CHILD, which beats a child's deny-DELETE")
	}
}

// TestWorkspaceFoldersStayWritable: the workspace root is hidden and then
// remounted read-only; the current workspace's folders, bound in between,
// stay writable (a non-recursive remount does not cover them).
func TestWorkspaceFoldersStayWritable(t *testing.T) {
	for _, tc := range cases {
		if tc.name != "workspace-clean-env" {
			continue
		}
		p := tc.plan()
		s, err := Build(p, Options{Exists: exists})
		if err != nil {
			t.Fatal(err)
		}
		var roots []string
		for _, c := range s.Capabilities {
			roots = append(roots, c.Root)
		}
		want := []string{p.Tmp.HostDir, p.Workspace.Dir, p.Workspace.RepoDir}
		if diff := cmp.Diff(want, roots); diff != "" {
			t.Errorf("writable roots (-want +got):\n%s", diff)
		}
	}
}

func TestBuildEnv(t *testing.T) {
	for _, tc := range cases {
		if tc.name != "claude-allowlist" {
			continue
		}
		p := tc.plan()
		s, err := Build(p, Options{Exists: exists, ProxyPorts: PortRange{First: 3128, Count: 1}, ProxyPort: 3128})
		if err != nil {
			t.Fatal(err)
		}
		env := s.Spawn.Env
		for name, want := range map[string]string{
			// The plan's resolved environment is the one source: the
			// provider's own key that resolution kept stays.
			"ANTHROPIC_API_KEY": "sk-kept",
			"CLAUDE_CONFIG_DIR": `C:\Users\me\.claude`,
			"NO_COLOR":          "1",
			"TEMP":              p.Tmp.HostDir,
			"TMP":               p.Tmp.HostDir,
			"TMPDIR":            p.Tmp.HostDir,
			"HTTPS_PROXY":       "http://127.0.0.1:3128",
			"ALL_PROXY":         "socks5h://127.0.0.1:3128",
			"AGENTBOX":          "1",
			"AGENTBOX_BACKEND":  "windows",
			"AGENTBOX_NETWORK":  "allowlist",
			"AGENTBOX_WRITABLE": p.Tmp.HostDir + `;C:\Users\me\proj;C:\Users\me\.claude`,
			"AGENTBOX_DENY":     `C:\Users\me\.aws;C:\Users\me\.git-credentials`,
			// The caller's own git config entries come first, then one
			// safe.directory per writable root (and its repositories).
			"GIT_CONFIG_COUNT":   "7",
			"GIT_CONFIG_KEY_0":   "core.autocrlf",
			"GIT_CONFIG_KEY_1":   "safe.directory",
			"GIT_CONFIG_VALUE_3": "C:/Users/me/proj",
			"GIT_CONFIG_VALUE_4": "C:/Users/me/proj/*",
		} {
			if got := envGet(env, name); got != want {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		}
		// Windows names are case-insensitive: each appears once.
		seen := map[string]string{}
		for _, kv := range env {
			k := strings.ToUpper(envName(kv))
			if seen[k] != "" {
				t.Errorf("%s appears twice: %q and %q", k, seen[k], kv)
			}
			seen[k] = kv
		}
	}
}

func TestBuildFacts(t *testing.T) {
	s, err := Build(base(), Options{Exists: exists})
	if err != nil {
		t.Fatal(err)
	}
	if s.User != OnlineUser {
		t.Errorf("open network runs as %s, want %s", s.User, OnlineUser)
	}
	// Every writable root's capability SID is a restricting SID.
	if diff := cmp.Diff([]string{CapabilitySID(base().Tmp.HostDir), CapabilitySID(`C:\Users\me\proj`)}, s.Spawn.RestrictingSIDs); diff != "" {
		t.Errorf("restricting SIDs (-want +got):\n%s", diff)
	}
	p := base()
	p.Network.Mode = plan.NetNone
	s, _ = Build(p, Options{})
	if s.User != OfflineUser {
		t.Errorf("network none runs as %s, want %s", s.User, OfflineUser)
	}
	if s.Spawn.Application != "" || s.Spawn.CommandLine != "git status" {
		t.Errorf("without Exists: application %q, command line %q", s.Spawn.Application, s.Spawn.CommandLine)
	}
	if s.ProxyPort != 0 {
		t.Errorf("network none has proxy port %d", s.ProxyPort)
	}
}

// TestRefusals: a command that cannot be started is the run's exit status
// (127, 126), never an error that makes the backend look unusable (which
// would be 125).
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command []string
		status  int
		reason  string
	}{
		{"not found", []string{"nosuch"}, 127, "nosuch: command not found in the sandbox's PATH"},
		{"quote in program", []string{`C:\a"b\git.exe`}, 127, "command not found"},
		{"store alias", []string{"python"}, 126, "App Execution Alias"},
		{"batch with percent", []string{"claude", "100%"}, 126, "cannot be passed safely"},
		{"found", []string{"git", "log"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			p.Command = tc.command
			s, err := Build(p, Options{Exists: exists})
			if err != nil {
				t.Fatalf("Build: %v (a command that cannot start must not fail the spec)", err)
			}
			got := Refusal{}
			if s.Refuse != nil {
				got = *s.Refuse
			}
			if got.Status != tc.status || !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("refusal = %+v, want status %d with %q", got, tc.status, tc.reason)
			}
		})
	}
	// Without a file lookup, a program name Windows cannot pass is 126.
	p := base()
	p.Command = []string{`C:\a"b\git.exe`}
	s, err := Build(p, Options{})
	if err != nil || s.Refuse == nil || s.Refuse.Status != 126 {
		t.Errorf("quote in program without lookup: refuse %+v, err %v; want 126", s.Refuse, err)
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
		{"private tmp without a folder", func(p *plan.Plan) {
			p.Tmp = plan.Tmp{Mode: plan.TmpPrivate}
			p.Mounts[1] = plan.Mount{Stage: plan.StageTmp, Op: plan.Tmpfs, Path: "/tmp", Access: plan.ReadWrite, Origin: origin("tmp.mode private")}
		}, "Windows has no tmpfs"},
		{"unc writable root", func(p *plan.Plan) { p.Mounts[2].Path = `\\server\share\proj` }, `\\server\share\proj is a network path`},
		{"unc deny", func(p *plan.Plan) { p.Mounts[6].Path = `//server/share/secret` }, "is a network path"},
		{"tmp host without TEMP", func(p *plan.Plan) {
			p.Tmp = plan.Tmp{Mode: plan.TmpHost}
			p.Mounts[1] = plan.Mount{Stage: plan.StageTmp, Op: plan.Bind, Path: "/tmp", Access: plan.ReadWrite, Origin: origin("tmp.mode host")}
		}, "needs the caller's TEMP folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.edit(p)
			_, err := Build(p, Options{Exists: exists})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
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

// fixedFacts are the machine facts of the test machine, with the proxy
// port Complete would otherwise reserve on Windows (a free one, which
// differs from run to run).
func fixedFacts(*plan.Plan) Options {
	return Options{Exists: exists, Runner: `C:\Program Files\agentbox\agentbox.exe`, TempDir: `C:\Users\me\AppData\Local\Temp`, User: "S-1-5-21-1-2-3-1001",
		ProxyPort: DefaultProxyPort}
}

// TestCompleteRefusalIsNotUnusable: a command that is not found completes
// (the backend stays usable, so the run is not 125) and the run's status is
// the refusal's 127.
func TestCompleteRefusalIsNotUnusable(t *testing.T) {
	w := &Windows{Facts: fixedFacts}
	p := base()
	p.Command = []string{"nosuch"}
	if err := w.Complete(p); err != nil {
		t.Fatalf("Complete with a missing command: %v", err)
	}
	s, err := SpecOf(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Refuse == nil || s.Refuse.Status != 127 {
		t.Fatalf("refuse = %+v, want 127", s.Refuse)
	}
	if len(p.Box.NotEnforced()) != 0 {
		t.Errorf("not enforced: %+v", p.Box.NotEnforced())
	}
}

// TestDetailIsWhatRuns: Run reads nothing but the plan's detail, so the
// spec `agentbox plan --json` shows is the spec that runs. The plan goes
// through JSON (as plan --json prints it and a frozen plan is kept) and
// the spec read back is the spec Complete built, down to the spawn request.
func TestDetailIsWhatRuns(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.plan()
			p.RunID = "RUN"
			w := &Windows{Facts: fixedFacts}
			if err := w.Complete(p); err != nil {
				t.Fatal(err)
			}
			want, err := Build(p, fixedFacts(p))
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var frozen plan.Plan
			if err := json.Unmarshal(data, &frozen); err != nil {
				t.Fatal(err)
			}
			got, err := SpecOf(&frozen)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Spec{}, "Rules")); diff != "" {
				t.Errorf("spec run from the JSON plan (-built +run):\n%s", diff)
			}
			// The environment the command gets is the plan's, with the
			// backend's variables and the truthful ones: BoxEnviron.
			if diff := cmp.Diff(sortEnv(p.BoxEnviron()), got.Spawn.Env); diff != "" {
				t.Errorf("spawn env is not the plan's box environment (-plan +spawn):\n%s", diff)
			}
		})
	}
}

// TestCompletePrivateTmp: a private tmp becomes this run's own folder in
// agentbox's per-user folder, created fresh and removed after the run.
func TestCompletePrivateTmp(t *testing.T) {
	p := base()
	p.RunID = "abc123"
	p.Tmp = plan.Tmp{Mode: plan.TmpPrivate}
	p.Mounts[1] = plan.Mount{Stage: plan.StageTmp, Op: plan.Tmpfs, Path: "/tmp", Access: plan.ReadWrite, Origin: origin("tmp.mode private")}
	if err := (&Windows{Facts: fixedFacts}).Complete(p); err != nil {
		t.Fatal(err)
	}
	dir := `C:\Users\me\AppData\Local\Temp\agentbox-S-1-5-21-1-2-3-1001\run-abc123`
	if p.Tmp.HostDir != dir || p.Box.Tmpdir != dir {
		t.Errorf("tmp folder %q, TMPDIR %q; want %q", p.Tmp.HostDir, p.Box.Tmpdir, dir)
	}
	want := []plan.Prepare{
		{Path: `C:\Users\me\AppData\Local\Temp\agentbox-S-1-5-21-1-2-3-1001`, Mode: 0o700, Origin: origin("tmp.mode private (windows: a fresh folder per run)")},
		{Path: dir, Mode: 0o700, Origin: origin("tmp.mode private (windows: a fresh folder per run)"), Fresh: true},
	}
	if diff := cmp.Diff(want, p.Prepare); diff != "" {
		t.Errorf("prepare (-want +got):\n%s", diff)
	}
}

// TestKeepAfterRun: the guards the registry could not keep with ACEs on
// Windows (plan.KeepNone) are marked as what the Windows after-run check
// does with them, so `agentbox plan` never says "not covered" for them.
func TestKeepAfterRun(t *testing.T) {
	p := base()
	p.HostExec.Guards = []plan.Guard{
		{Path: `C:\Users\me\proj\.git\hooks`, Kind: plan.KindDir, Keep: plan.KeepReadOnly},
		{Path: `C:\Users\me\proj\.claude`, Kind: plan.KindMissing, Keep: plan.KeepNone},
		{Path: `C:\Users\me\proj\node_modules\.bin\x`, Kind: plan.KindFile, Keep: plan.KeepNone},
	}
	before := p.HostExec.Guards
	if err := (&Windows{Facts: fixedFacts}).Complete(p); err != nil {
		t.Fatal(err)
	}
	var got []plan.Keep
	for _, g := range p.HostExec.Guards {
		got = append(got, g.Keep)
	}
	// Then the git folder's missing commondir and config.worktree
	// (gitfiles.go).
	if diff := cmp.Diff([]plan.Keep{plan.KeepReadOnly, plan.KeepChecked, plan.KeepRestored, plan.KeepChecked, plan.KeepChecked}, got); diff != "" {
		t.Errorf("keeps (-want +got):\n%s", diff)
	}
	if before[1].Keep != plan.KeepNone {
		t.Error("Complete changed the guards' list in place (backend selection could not undo it)")
	}
}

// TestPublishNotOnWindows: the Windows backend publishes nothing, so a
// published port is a rule it does not enforce, and the box's status is
// not told of one.
func TestPublishNotOnWindows(t *testing.T) {
	p := base()
	p.Network.Mode = plan.NetNone
	p.Network.Publish = []plan.Publish{{Addr: "127.0.0.1", Port: 3000, BoxPort: 3000, Origin: origin("flag --publish")}}
	s, err := Build(p, Options{Exists: exists})
	if err != nil {
		t.Fatal(err)
	}
	var got []plan.RuleStatus
	for _, r := range s.Rules {
		if r.Rule == "publish" {
			got = append(got, r)
		}
	}
	want := []plan.RuleStatus{{Rule: "publish", Path: "127.0.0.1:3000 -> 3000", Origin: "flag --publish", Level: plan.NotEnforced,
		How: "published ports are not available on Windows: nothing listens on the host's port"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("publish rules (-want +got):\n%s", diff)
	}
	if v := envGet(s.Spawn.Env, plan.VarPublish); v != "" {
		t.Errorf("%s = %q in the box, which has no published port", plan.VarPublish, v)
	}
}

// TestInterceptNotOnWindows: the box on Windows does not trust the run's
// authority, so the plan says the intercepted hosts fail there.
func TestInterceptNotOnWindows(t *testing.T) {
	p := base()
	p.Network = plan.Network{Mode: plan.NetAllowlist, Allow: []string{"api.anthropic.com"}, Intercept: []string{"api.anthropic.com"}}
	s, err := Build(p, Options{Exists: exists, ProxyPorts: PortRange{First: 3128, Count: 1}, ProxyPort: 3128})
	if err != nil {
		t.Fatal(err)
	}
	want := "the box is not given the run's certificate authority on Windows: TLS to the hosts the proxy reads (api.anthropic.com: secrets, request rules) fails in the box"
	if !slices.Contains(s.Notes, want) {
		t.Errorf("notes %q, want %q", s.Notes, want)
	}
}
