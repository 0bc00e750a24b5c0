package plan

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// good returns a plan that passes Validate; each test breaks one thing.
func good() *Plan {
	def := Origin{Key: "default"}
	return &Plan{
		Layers:   []Layer{{Name: "defaults", Status: "built in"}, {Name: "user", File: "/home/u/.config/agentbox/config.toml", Status: "loaded"}},
		Enforce:  Require,
		Backend:  "auto",
		Identity: Identity{UID: 1000, GID: 1000, Home: "/home/u"},
		Command:  []string{"make", "test"},
		Args:     []string{"make", "test"},
		Cwd:      "/home/u/proj",
		Mounts: []Mount{
			{Stage: StageRoot, Op: ROBind, Path: "/", Access: ReadOnly, Origin: def},
			{Stage: StageRoot, Op: Dev, Path: "/dev", Access: ReadWrite, Origin: def},
			{Stage: StageRoot, Op: Proc, Path: "/proc", Access: ReadWrite, Origin: def},
			{Stage: StageTmp, Op: Bind, Source: "/tmp/agentbox-1000/proj", Path: "/tmp", Access: ReadWrite, Origin: def, Note: "shared by workspace proj"},
			{Stage: StageWritable, Op: Bind, Path: "/home/u/proj", Access: ReadWrite, Origin: Origin{Key: "default: git top-level of the working directory"}},
			{Stage: StageReadOnly, Op: ROBind, Path: "/home/u/proj/.git/hooks", Access: ReadOnly, Origin: Origin{Key: "always: git hooks"}},
			{Stage: StageDeny, Op: HideDir, Path: "/home/u/.aws", Access: Hidden, Origin: Origin{File: "/home/u/.config/agentbox/config.toml", Line: 7, Key: "filesystem.deny[1]"}},
			{Stage: StageDeny, Op: HideFile, Path: "/home/u/.netrc", Access: Hidden, Origin: Origin{Key: "default: credential store"}},
		},
		Tmp:     Tmp{Mode: TmpWorkspace, HostDir: "/tmp/agentbox-1000/proj"},
		Network: Network{Mode: NetOpen},
		Env:     Env{Mode: "inherit", Removed: []string{"GITHUB_TOKEN"}, Set: map[string]string{"B": "2", "A": "1"}},
	}
}

func TestValidateGood(t *testing.T) {
	if err := Validate(good()); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}
	for _, mode := range []string{TmpPrivate, TmpHost} {
		p := good()
		p.Tmp = Tmp{Mode: mode}
		if err := Validate(p); err != nil {
			t.Errorf("tmp mode %s without a host folder: %v", mode, err)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Plan)
		want   string
	}{
		{"no command", func(p *Plan) { p.Command = nil }, "empty command"},
		{"empty command name", func(p *Plan) { p.Command = []string{"", "x"} }, "empty command"},
		{"relative cwd", func(p *Plan) { p.Cwd = "proj" }, `working directory "proj" is not a clean absolute path`},
		{"empty cwd", func(p *Plan) { p.Cwd = "" }, `working directory "" is not a clean absolute path`},
		{"unclean cwd", func(p *Plan) { p.Cwd = "/home/u/../u/proj" }, `working directory "/home/u/../u/proj" is not a clean absolute path`},
		{"relative mount path", func(p *Plan) { p.Mounts[4].Path = "home/u/proj" },
			`mount 4 (bind): path "home/u/proj" is not a clean absolute path`},
		{"trailing slash", func(p *Plan) { p.Mounts[4].Path = "/home/u/proj/" },
			`mount 4 (bind): path "/home/u/proj/" is not a clean absolute path`},
		{"relative source", func(p *Plan) { p.Mounts[3].Source = "tmp/x" },
			`mount 3 (bind): source "tmp/x" is not a clean absolute path`},
		{"missing origin", func(p *Plan) { p.Mounts[5].Origin = Origin{File: "/x.toml", Line: 3} },
			"mount 5 (ro-bind /home/u/proj/.git/hooks): no origin"},
		{"stage going backwards", func(p *Plan) { p.Mounts[5].Stage = StageTmp },
			"mount 5 (ro-bind /home/u/proj/.git/hooks): stage tmp after stage writable"},
		{"writable after deny", func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Stage: StageWritable, Op: Bind, Path: "/x", Access: ReadWrite, Origin: Origin{Key: "k"}})
		}, "mount 8 (bind /x): stage writable after stage deny"},
		{"stage zero", func(p *Plan) { p.Mounts[1].Stage = 0 }, "mount 1 (dev /dev): bad stage 0"},
		{"chdir is not a mount stage", func(p *Plan) { p.Mounts[7].Stage = StageChdir }, "mount 7 (hide-file /home/u/.netrc): bad stage 7"},
		{"no mounts", func(p *Plan) { p.Mounts = nil }, "no mounts: the root must be bound read-only first"},
		{"first mount writable", func(p *Plan) { p.Mounts[0].Op = Bind }, "first mount is bind /, want ro-bind /"},
		{"first mount elsewhere", func(p *Plan) { p.Mounts = p.Mounts[1:] }, "first mount is dev /dev, want ro-bind /"},
		{"root bound from elsewhere", func(p *Plan) { p.Mounts[0].Source = "/home/u" }, "first mount is ro-bind /, want ro-bind /"},
		{"bad enforce", func(p *Plan) { p.Enforce = "" }, `enforce "": want "require" or "best-effort"`},
		{"bad network", func(p *Plan) { p.Network.Mode = "closed" }, `network mode "closed": want open, none or allowlist`},
		{"bad tmp mode", func(p *Plan) { p.Tmp.Mode = "shared" }, `tmp mode "shared": want workspace, private or host`},
		{"workspace tmp without a host folder", func(p *Plan) { p.Tmp.HostDir = "" },
			`tmp mode workspace: host folder "" is not a clean absolute path`},
		{"workspace tmp with a relative host folder", func(p *Plan) { p.Tmp.HostDir = "agentbox-1000/proj" },
			`tmp mode workspace: host folder "agentbox-1000/proj" is not a clean absolute path`},
		{"every problem at once", func(p *Plan) {
			p.Command = nil
			p.Cwd = "."
			p.Mounts[0].Op = Tmpfs
			p.Enforce = "x"
		}, "empty command\nworking directory \".\" is not a clean absolute path\nfirst mount is tmpfs /, want ro-bind /\nenforce \"x\": want \"require\" or \"best-effort\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := good()
			tc.change(p)
			err := Validate(p)
			if err == nil {
				t.Fatalf("Validate succeeded, want %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		path, dir string
		want      bool
	}{
		{"/a/b", "/a", true},
		{"/a", "/a", true},
		{"/ab", "/a", false},
		{"/a", "/a/b", false},
		{"/", "/", true},
		{"/x/y", "/", true},
		{"/a/b/c", "/a/b", true},
		{"/a/bc", "/a/b", false},
	}
	for _, tc := range tests {
		t.Run(tc.path+" in "+tc.dir, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Within(tc.path, tc.dir)); diff != "" {
				t.Errorf("Within(%q, %q) (-want +got):\n%s", tc.path, tc.dir, diff)
			}
		})
	}
}

func TestOriginString(t *testing.T) {
	tests := []struct {
		o    Origin
		want string
	}{
		{Origin{Key: "default"}, "default"},
		{Origin{File: "/p/.agentbox.toml", Line: 4, Key: "filesystem.deny[1]"}, "/p/.agentbox.toml:4 filesystem.deny[1]"},
		{Origin{File: "/p/.agentbox.toml", Key: "env.set.X"}, "/p/.agentbox.toml env.set.X"},
		{Origin{Key: "flag --writable"}, "flag --writable"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.o.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStageString(t *testing.T) {
	var got []string
	for s := Stage(0); s <= 8; s++ {
		got = append(got, s.String())
	}
	want := []string{"stage(0)", "root", "tmp", "workspace", "writable", "read-only", "deny", "chdir", "stage(8)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPlanHelpers(t *testing.T) {
	p := good()
	if diff := cmp.Diff([]string{"/tmp", "/home/u/proj"}, p.Writable()); diff != "" {
		t.Errorf("Writable (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/home/u/.aws", "/home/u/.netrc"}, p.Denied()); diff != "" {
		t.Errorf("Denied (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("/tmp/agentbox-1000/proj", p.Mounts[3].Src()); diff != "" {
		t.Errorf("Src with a source (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("/home/u/proj", p.Mounts[4].Src()); diff != "" {
		t.Errorf("Src without a source (-want +got):\n%s", diff)
	}
	if (Identity{UID: 0}).Root() != true || (Identity{UID: 1000}).Root() != false {
		t.Error("Identity.Root is wrong")
	}
}

// TestWriteText compares the readable plan with testdata/<case>.golden;
// go test ./plan -update rewrites them.
func TestWriteText(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Plan)
	}{
		{"text", func(p *Plan) {}},
		{"text-full", func(p *Plan) {
			p.Identity = Identity{UID: 0, GID: 0, Home: "/root"}
			p.Command = []string{"codex", "--sandbox", "danger-full-access"}
			p.Args = []string{"codex"}
			p.Provider = Provider{Name: "codex", Reason: "detected from command codex"}
			p.Workspace = Workspace{Root: "/root/agent-work", ID: "w1", Task: "t1"}
			p.Network = Network{Mode: NetNone, Allow: []string{"a.com"}, Deny: []string{"b.com"}}
			p.Limits = Limits{Processes: 10, Memory: 1 << 30}
			p.Box.Rules = []RuleStatus{{Rule: "network", Level: Enforced, How: "own network namespace, loopback only; unix sockets on the filesystem stay reachable"},
				{Rule: "limits", Path: "processes", Level: Weaker, How: "RLIMIT_NPROC on CMD"},
				{Rule: "limits", Path: "memory", Level: Enforced, How: "the box's own cgroup"}}
			p.Box.Passed = []string{"x: not here"}
			p.Skipped = []Skip{{Path: "/root/missing", Reason: "deny path does not exist", Origin: Origin{Key: "flag --deny"}}}
			p.Warnings = []string{"WRITABLE / (flag --writable): allowed by --allow-broad-writable"}
			p.Log = Log{Enabled: true, Dir: "/root/.local/state/agentbox/log", Origin: Origin{Key: "default"}}
		}},
	}
	for _, tc := range tests {
		for _, width := range []int{0, 80} {
			name := tc.name
			if width > 0 {
				name += "-" + strconv.Itoa(width)
			}
			t.Run(name, func(t *testing.T) {
				p := good()
				p.RunID = "0123456789ab"
				p.Box = Box{Backend: "bwrap", Tmpdir: "/tmp", Rules: []RuleStatus{{Rule: "network", Level: Enforced, How: "the box shares the host's network"}}}
				tc.change(p)
				var b bytes.Buffer
				p.WriteText(&b, width)
				if width > 0 {
					checkWidth(t, b.String(), width)
				}
				golden(t, name, b.String())
			})
		}
	}
}

// checkWidth fails for a line wider than width that is more than one
// word (a path longer than a line is never cut).
func checkWidth(t *testing.T, text string, width int) {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if utf8.RuneCountInString(l) > width && len(strings.Fields(l)) > 1 {
			t.Errorf("%d columns, want at most %d: %q", utf8.RuneCountInString(l), width, l)
		}
	}
}

// golden compares got with testdata/<name>.golden; -update rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
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
		t.Fatalf("%v (run go test ./plan -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func TestOutermost(t *testing.T) {
	tests := []struct{ in, want []string }{
		{nil, nil},
		{[]string{"/a"}, []string{"/a"}},
		{[]string{"/a/b", "/a", "/c"}, []string{"/a", "/c"}},
		{[]string{"/a", "/a", "/ab"}, []string{"/a", "/ab"}},
		{[]string{"/", "/home/u"}, []string{"/"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, Outermost(tc.in)); diff != "" {
			t.Errorf("Outermost(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// Names reach the readable plan escaped: a folder named with a tab, a line
// break or a terminal escape shows as text and cannot split a row.
// Before, the plan printed them raw.
func TestWriteTextEscapes(t *testing.T) {
	p := good()
	evil := "/home/u/a\tb\n\x1b[2Jc"
	p.Mounts = append(p.Mounts, Mount{Stage: StageDeny, Op: HideDir, Path: evil, Access: Hidden, Origin: Origin{Key: "flag --deny"}, Note: "x\x1b]0;title\x07"})
	p.Cwd = evil
	for _, width := range []int{0, 60} {
		var b bytes.Buffer
		p.WriteText(&b, width)
		out := b.String()
		if strings.ContainsAny(out, "\t\x1b\x07\v") {
			t.Errorf("width %d: a control character reached the output:\n%q", width, out)
		}
		if !strings.Contains(out, `/home/u/a\tb\n\x1b[2Jc`) {
			t.Errorf("width %d: the name is not shown escaped:\n%s", width, out)
		}
	}
}
