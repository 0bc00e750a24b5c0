package policy

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

const (
	userConfig  = "/home/u/.config/agentbox/config.toml"
	projectFile = "/home/u/proj/.agentbox.toml"
)

// layerSummary is what a test compares of the loaded layers.
type layerSummary struct {
	Name, File, Status string
}

func summarize(layers []*Layer) []layerSummary {
	var out []layerSummary
	for _, l := range layers {
		out = append(out, layerSummary{l.Name, l.File, l.Status})
	}
	return out
}

func TestLoadLayers(t *testing.T) {
	tests := []struct {
		name    string
		files   mapFS
		environ []string
		flags   Flags
		want    []layerSummary
	}{
		{
			name: "nothing but defaults",
			want: []layerSummary{
				{"defaults", "", "built in"},
				{"user", userConfig, "absent"},
				{"project", "", "absent"},
				{"env", "", "absent"},
				{"flags", "", "absent"},
			},
		},
		{
			name:  "user config",
			files: mapFS{userConfig: "version = 1\n"},
			want: []layerSummary{
				{"defaults", "", "built in"},
				{"user", userConfig, "loaded"},
				{"project", "", "absent"},
				{"env", "", "absent"},
				{"flags", "", "absent"},
			},
		},
		{
			name:    "XDG_CONFIG_HOME moves the user config",
			files:   mapFS{"/xdg/agentbox/config.toml": "version = 1\n"},
			environ: []string{"XDG_CONFIG_HOME=/xdg"},
			want: []layerSummary{
				{"defaults", "", "built in"},
				{"user", "/xdg/agentbox/config.toml", "loaded"},
				{"project", "", "absent"},
				{"env", "", "absent"},
				{"flags", "", "absent"},
			},
		},
		{
			name:    "a relative XDG_CONFIG_HOME is ignored",
			environ: []string{"XDG_CONFIG_HOME=xdg"},
			want: []layerSummary{
				{"defaults", "", "built in"},
				{"user", userConfig, "absent"},
				{"project", "", "absent"},
				{"env", "", "absent"},
				{"flags", "", "absent"},
			},
		},
		{
			name: "AGENTBOX_POLICY, env values and --policy files in order",
			files: mapFS{
				"/etc/extra.toml":        "version = 1\n",
				"/home/u/proj/a.toml":    "version = 1\n",
				"/home/u/other/b.toml":   "version = 1\n",
				"/home/u/proj/sub/x.txt": "",
			},
			environ: []string{"AGENTBOX_POLICY=/etc/extra.toml", "AGENTBOX_NETWORK=none"},
			flags:   Flags{Policy: []string{"a.toml", "/home/u/other/b.toml"}, Network: "open"},
			want: []layerSummary{
				{"defaults", "", "built in"},
				{"user", userConfig, "absent"},
				{"project", "", "absent"},
				{"policy", "/etc/extra.toml", "loaded"},
				{"env", "", "set"},
				{"policy", "/home/u/proj/a.toml", "loaded"},
				{"policy", "/home/u/other/b.toml", "loaded"},
				{"flags", "", "set"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			layers, err := Load(fakeEnv(tc.files, tc.environ...), tc.flags)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(layers)); diff != "" {
				t.Errorf("layers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLayering checks SPEC's rule: later layers win for single values, lists
// are unioned, and a later layer can never remove an earlier deny.
func TestLayering(t *testing.T) {
	files := mapFS{
		userConfig: `version = 1
[network]
mode = "none"
[tmp]
mode = "private"
[filesystem]
deny = ["~/.user-secret"]
read_only = ["/home/u/proj/docs"]
`,
		"/home/u/p1.toml": `[tmp]
mode = "host"
[filesystem]
deny = []
read_only = []
`,
		"/home/u/p2.toml": `[filesystem]
deny = ["~/.p2-secret", "~/.user-secret"]
`,
	}
	env := fakeEnv(files, "AGENTBOX_NETWORK=open", "AGENTBOX_DENY=/env/a, /env/b,,")
	layers, err := Load(env, Flags{Policy: []string{"/home/u/p1.toml", "/home/u/p2.toml"}, Deny: []string{"/flag/c"}, Tmp: "private"})
	if err != nil {
		t.Fatal(err)
	}
	m := merge(layers)

	type scalar struct{ Value, Origin string }
	gotScalars := map[string]scalar{}
	for _, k := range []string{"network.mode", "tmp.mode", "sandbox.enforce", "env.mode"} {
		gotScalars[k] = scalar{m.scalars[k].Value, m.scalars[k].Origin.String()}
	}
	wantScalars := map[string]scalar{
		"network.mode":    {"open", "env AGENTBOX_NETWORK"},
		"tmp.mode":        {"private", "flag --tmp"},
		"sandbox.enforce": {"require", "default"},
		"env.mode":        {"inherit", "default"},
	}
	if diff := cmp.Diff(wantScalars, gotScalars); diff != "" {
		t.Errorf("scalars (-want +got):\n%s", diff)
	}

	var gotDeny []string
	for _, e := range m.lists["filesystem.deny"] {
		gotDeny = append(gotDeny, e.Value+" ("+e.Origin.String()+")")
	}
	wantDeny := []string{
		"~/.user-secret (" + userConfig + ":7 filesystem.deny[0])",
		"/env/a (env AGENTBOX_DENY)",
		"/env/b (env AGENTBOX_DENY)",
		"~/.p2-secret (/home/u/p2.toml:2 filesystem.deny[0])",
		"~/.user-secret (/home/u/p2.toml:2 filesystem.deny[1])",
		"/flag/c (flag --deny)",
	}
	if diff := cmp.Diff(wantDeny, gotDeny); diff != "" {
		t.Errorf("deny (-want +got):\n%s", diff)
	}
	if got := len(m.lists["filesystem.read_only"]); got != 1 {
		t.Errorf("read_only has %d entries, want the user's 1: an empty later list removes nothing", got)
	}
}

func TestEnvLayer(t *testing.T) {
	def := func(key string) plan.Origin { return plan.Origin{Key: "env " + key} }
	tests := []struct {
		name        string
		environ     []string
		wantScalars map[string]Entry
		wantLists   map[string][]Entry
		wantStatus  string
	}{
		{
			name:        "none set",
			environ:     []string{"AGENTBOX_UNRELATED=x", "AGENTBOX_DENY="},
			wantScalars: map[string]Entry{},
			wantLists:   map[string][]Entry{},
			wantStatus:  "absent",
		},
		{
			name: "every variable",
			environ: []string{
				"AGENTBOX_NETWORK=none", "AGENTBOX_WORKSPACE=w1", "AGENTBOX_ENFORCE=best-effort",
				"AGENTBOX_BACKEND=bwrap", "AGENTBOX_DENY=/a, ~/b ,,/c",
			},
			wantScalars: map[string]Entry{
				"network.mode":    {Value: "none", Origin: def("AGENTBOX_NETWORK")},
				"workspace.id":    {Value: "w1", Origin: def("AGENTBOX_WORKSPACE")},
				"sandbox.enforce": {Value: "best-effort", Origin: def("AGENTBOX_ENFORCE")},
				"sandbox.backend": {Value: "bwrap", Origin: def("AGENTBOX_BACKEND")},
			},
			wantLists: map[string][]Entry{"filesystem.deny": {
				{Value: "/a", Origin: def("AGENTBOX_DENY")},
				{Value: "~/b", Origin: def("AGENTBOX_DENY")},
				{Value: "/c", Origin: def("AGENTBOX_DENY")},
			}},
			wantStatus: "set",
		},
		{
			name:        "the last copy of a variable wins",
			environ:     []string{"AGENTBOX_NETWORK=none", "AGENTBOX_NETWORK=open"},
			wantScalars: map[string]Entry{"network.mode": {Value: "open", Origin: def("AGENTBOX_NETWORK")}},
			wantLists:   map[string][]Entry{},
			wantStatus:  "set",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := envLayer(fakeEnv(nil, tc.environ...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantScalars, l.Scalars); diff != "" {
				t.Errorf("scalars (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLists, l.Lists); diff != "" {
				t.Errorf("lists (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStatus, l.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlagLayer(t *testing.T) {
	flag := func(name string) plan.Origin { return plan.Origin{Key: "flag --" + name} }
	f := Flags{
		Writable:      []string{"/w1", "/w2"},
		ReadOnly:      []string{"/r"},
		Deny:          []string{"/d1", "/d2"},
		Network:       "none",
		Allow:         []string{"example.com"},
		Workspace:     "w1",
		WorkspaceRoot: "/work",
		Task:          "t1",
		Tmp:           "private",
		EnvMode:       "clean",
		PassEnv:       []string{"GOPATH"},
		DenyEnv:       []string{"*_TOKEN"},
		Provider:      "none",
		Backend:       "bwrap",
		BestEffort:    true,
	}
	l, err := flagLayer(f)
	if err != nil {
		t.Fatal(err)
	}
	wantScalars := map[string]Entry{
		"sandbox.enforce": {Value: "best-effort", Origin: flag("best-effort")},
		"sandbox.backend": {Value: "bwrap", Origin: flag("backend")},
		"network.mode":    {Value: "none", Origin: flag("network")},
		"workspace.id":    {Value: "w1", Origin: flag("workspace")},
		"workspace.root":  {Value: "/work", Origin: flag("workspace-root")},
		"workspace.task":  {Value: "t1", Origin: flag("task")},
		"tmp.mode":        {Value: "private", Origin: flag("tmp")},
		"env.mode":        {Value: "clean", Origin: flag("env-mode")},
		"provider.name":   {Value: "none", Origin: flag("provider")},
	}
	if diff := cmp.Diff(wantScalars, l.Scalars); diff != "" {
		t.Errorf("scalars (-want +got):\n%s", diff)
	}
	wantLists := map[string][]Entry{
		"filesystem.writable":  {{Value: "/w1", Origin: flag("writable")}, {Value: "/w2", Origin: flag("writable")}},
		"filesystem.read_only": {{Value: "/r", Origin: flag("read-only")}},
		"filesystem.deny":      {{Value: "/d1", Origin: flag("deny")}, {Value: "/d2", Origin: flag("deny")}},
		"network.allow":        {{Value: "example.com", Origin: flag("allow")}},
		"env.pass":             {{Value: "GOPATH", Origin: flag("pass-env")}},
		"env.deny":             {{Value: "*_TOKEN", Origin: flag("deny-env")}},
	}
	if diff := cmp.Diff(wantLists, l.Lists); diff != "" {
		t.Errorf("lists (-want +got):\n%s", diff)
	}
	if l.Status != "set" {
		t.Errorf("status %q, want set", l.Status)
	}

	l, err = flagLayer(Flags{Require: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]Entry{"sandbox.enforce": {Value: "require", Origin: flag("require")}}, l.Scalars); diff != "" {
		t.Errorf("--require (-want +got):\n%s", diff)
	}

	l, err = flagLayer(Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Status != "absent" || len(l.Scalars)+len(l.Lists) != 0 {
		t.Errorf("no flags gave status %q and %v %v, want absent and nothing", l.Status, l.Scalars, l.Lists)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		files   mapFS
		environ []string
		flags   Flags
		want    string
	}{
		{"--best-effort with --require", nil, nil, Flags{BestEffort: true, Require: true},
			"flags: --best-effort and --require contradict each other"},
		{"bad --network", nil, nil, Flags{Network: "off"},
			`flag --network: "off" is not one of open, none, allowlist`},
		{"bad --tmp", nil, nil, Flags{Tmp: "shared"},
			`flag --tmp: "shared" is not one of workspace, private, host`},
		{"bad --env-mode", nil, nil, Flags{EnvMode: "empty"},
			`flag --env-mode: "empty" is not one of inherit, clean`},
		{"bad --backend", nil, nil, Flags{Backend: "docker"},
			`flag --backend: "docker" is not one of auto, bwrap, landlock, windows, seatbelt`},
		{"bad --workspace", nil, nil, Flags{Workspace: "../up"},
			`flag --workspace: "../up": an id cannot start with a dot`},
		{"bad --task", nil, nil, Flags{Workspace: "w", Task: "a/b"},
			`flag --task: "a/b": an id may hold only letters, digits, '-', '_' and '.'`},
		{"missing --policy", nil, nil, Flags{Policy: []string{"nope.toml"}},
			"flag --policy: nope.toml: no such file"},
		{"bad --policy file", mapFS{"/home/u/proj/bad.toml": "[filesystem]\nwriteable = []\n"}, nil, Flags{Policy: []string{"bad.toml"}},
			"/home/u/proj/bad.toml:2: filesystem.writeable: unknown key"},
		{"relative AGENTBOX_POLICY", nil, []string{"AGENTBOX_POLICY=extra.toml"}, Flags{},
			`env AGENTBOX_POLICY: "extra.toml": want an absolute path`},
		{"missing AGENTBOX_POLICY", nil, []string{"AGENTBOX_POLICY=/etc/nope.toml"}, Flags{},
			"env AGENTBOX_POLICY: /etc/nope.toml: no such file"},
		{"bad AGENTBOX_NETWORK", nil, []string{"AGENTBOX_NETWORK=off"}, Flags{},
			`env AGENTBOX_NETWORK: "off" is not one of open, none, allowlist`},
		{"bad AGENTBOX_ENFORCE", nil, []string{"AGENTBOX_ENFORCE=strict"}, Flags{},
			`env AGENTBOX_ENFORCE: "strict" is not one of require, best-effort`},
		{"bad AGENTBOX_BACKEND", nil, []string{"AGENTBOX_BACKEND=docker"}, Flags{},
			`env AGENTBOX_BACKEND: "docker" is not one of auto, bwrap, landlock, windows, seatbelt`},
		{"bad AGENTBOX_WORKSPACE", nil, []string{"AGENTBOX_WORKSPACE=a/b"}, Flags{},
			`env AGENTBOX_WORKSPACE: "a/b": an id may hold only letters, digits, '-', '_' and '.'`},
		{"bad user config", mapFS{userConfig: "[sandbox]\nenforce = \"maybe\"\n"}, nil, Flags{},
			userConfig + `:2: sandbox.enforce: "maybe" is not one of require, best-effort`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(fakeEnv(tc.files, tc.environ...), tc.flags)
			if err == nil {
				t.Fatalf("Load succeeded, want error %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !errors.Is(err, ErrPolicy) {
				t.Errorf("error %v is not ErrPolicy", err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	got := map[string]string{}
	for k, e := range Defaults().Scalars {
		if e.Origin.Key != "default" {
			t.Errorf("%s has origin %v, want default", k, e.Origin)
		}
		got[k] = e.Value
	}
	want := map[string]string{
		"sandbox.enforce":       "require",
		"sandbox.backend":       "auto",
		"filesystem.scan_limit": "8000000",
		"filesystem.ssh_keys":   "hidden",
		"tmp.mode":              "workspace",
		"network.mode":          "open",
		"env.mode":              "inherit",
		"provider.name":         "auto",
		"log.enabled":           "true",
		"log.filesystem":        "true",
		"log.filesystem_reads":  "false",
		"notice.backend":        "once",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestEnvHelpers(t *testing.T) {
	env := fakeEnv(mapFS{
		"/home/u/.agentbox.toml":            "",
		"/home/u/proj/sub/.agentbox.toml":   "",
		"/home/u/proj/dir/.agentbox.toml/x": "",
	}, "A=1", "B=x=y", "A=2", "NOEQUALS")
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"last copy wins", env.Getenv("A"), "2"},
		{"value holding =", env.Getenv("B"), "x=y"},
		{"unset", env.Getenv("C"), ""},
		{"entry without =", env.Getenv("NOEQUALS"), ""},
		{"config path", ConfigPath(env), userConfig},
		{"store path", StorePath(env), "/nonexistent/state/agentbox/trusted"},
		{"store path without XDG_STATE_HOME", StorePath(fakeEnv(nil, "XDG_STATE_HOME=")), "/home/u/.local/state/agentbox/trusted"},
		{"store path with a relative XDG_STATE_HOME", StorePath(fakeEnv(nil, "XDG_STATE_HOME=rel")), "/home/u/.local/state/agentbox/trusted"},
		{"nearest project file", FindProject(env, "/home/u/proj/sub/deeper"), "/home/u/proj/sub/.agentbox.toml"},
		{"project file further up", FindProject(env, "/home/u/proj"), "/home/u/.agentbox.toml"},
		// Found, so that loading it is an error rather than a parent's
		// policy silently taking its place.
		{"a folder named .agentbox.toml is found", FindProject(env, "/home/u/proj/dir"), "/home/u/proj/dir/.agentbox.toml"},
		{"none", FindProject(env, "/srv"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// [notice] backend chooses how often the backend notice is shown; --quiet
// is "never" for one command, and wins over every file. A value outside
// the three is an error naming the file, line and key.
func TestNoticeSetting(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		quiet  bool
		want   plan.Notice
		err    string
	}{
		{name: "default", want: plan.Notice{Backend: "once", Origin: plan.Origin{Key: "default"}}},
		{name: "always", policy: "[notice]\nbackend = \"always\"\n", want: plan.Notice{Backend: "always", Origin: plan.Origin{File: "$ROOT/p.toml", Line: 2, Key: "notice.backend"}}},
		{name: "never", policy: "[notice]\nbackend = \"never\"\n", want: plan.Notice{Backend: "never", Origin: plan.Origin{File: "$ROOT/p.toml", Line: 2, Key: "notice.backend"}}},
		{name: "--quiet wins", policy: "[notice]\nbackend = \"always\"\n", quiet: true, want: plan.Notice{Backend: "never", Origin: plan.Origin{Key: "flag --quiet"}}},
		{name: "bad value", policy: "[notice]\nbackend = \"sometimes\"\n", err: `$ROOT/p.toml:2: notice.backend: "sometimes" is not one of once, always, never`},
		{name: "unknown key", policy: "[notice]\nfallback = false\n", err: "$ROOT/p.toml:2: notice.fallback: unknown key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			flags := Flags{Quiet: tc.quiet}
			if tc.policy != "" {
				w.write("p.toml", tc.policy)
				flags.Policy = []string{w.path("p.toml")}
			}
			p, err := w.resolve(flags, Options{}, "true")
			if tc.err != "" {
				if err == nil || w.norm(err.Error()) != tc.err {
					t.Fatalf("got %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := p.Notice
			got.Origin.File = w.norm(got.Origin.File)
			wantDir := ""
			if tc.want.Backend == "once" {
				wantDir = w.path("state/agentbox/notices")
			}
			tc.want.Dir = wantDir
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("notice (-want +got):\n%s", diff)
			}
		})
	}
}
