package policy

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// An allow entry means allowlist: with no mode chosen it turns allowlist
// on, with "open" or "none" chosen it is an error naming both, wherever
// each was set. Ignoring it would leave the network open while the user
// believes it filtered.
func TestResolveAllowNeedsAllowlist(t *testing.T) {
	tests := []struct {
		name        string
		policy      string // written to etc/p.toml and loaded with --policy
		environ     []string
		flags       Flags
		wantMode    string
		wantImplied string
		wantErr     string
	}{
		{name: "no allow, default open", wantMode: "open"},
		{name: "--allow alone turns allowlist on", flags: Flags{Allow: []string{"example.com"}},
			wantMode: "allowlist", wantImplied: `allowlist because flag --allow allows example.com`},
		{name: "--allow with --network allowlist", flags: Flags{Allow: []string{"example.com"}, Network: "allowlist"},
			wantMode: "allowlist"},
		{name: "--allow with --network open", flags: Flags{Allow: []string{"example.com"}, Network: "open"},
			wantErr: `flag --allow: "example.com": allowing a host needs network mode allowlist, but --network sets the network to "open"; drop one of them, or use allowlist`},
		{name: "--allow with --network none", flags: Flags{Allow: []string{"a.test", "b.test"}, Network: "none"},
			wantErr: `flag --allow: "a.test": allowing a host needs network mode allowlist, but --network sets the network to "none"; drop one of them, or use allowlist`},
		{name: "--allow with AGENTBOX_NETWORK=open", environ: []string{"AGENTBOX_NETWORK=open"}, flags: Flags{Allow: []string{"example.com"}},
			wantErr: `flag --allow: "example.com": allowing a host needs network mode allowlist, but AGENTBOX_NETWORK sets the network to "open"; drop one of them, or use allowlist`},
		{name: "policy allow alone", policy: "[network]\nallow = [\"api.example.com\"]\n",
			wantMode: "allowlist", wantImplied: `allowlist because $ROOT/etc/p.toml:2 network.allow[0] allows api.example.com`},
		{name: "policy allow with mode open", policy: "[network]\nmode = \"open\"\nallow = [\"api.example.com\"]\n",
			wantErr: `$ROOT/etc/p.toml:3: network.allow[0]: "api.example.com": allowing a host needs network mode allowlist, but $ROOT/etc/p.toml:2 network.mode sets the network to "open"; drop one of them, or use allowlist`},
		{name: "policy allow, --network none", policy: "[network]\nallow = [\"api.example.com\"]\n", flags: Flags{Network: "none"},
			wantErr: `$ROOT/etc/p.toml:2: network.allow[0]: "api.example.com": allowing a host needs network mode allowlist, but --network sets the network to "none"; drop one of them, or use allowlist`},
		{name: "policy mode allowlist, --allow adds", policy: "[network]\nmode = \"allowlist\"\n", flags: Flags{Allow: []string{"example.com"}},
			wantMode: "allowlist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.setenv(tc.environ...)
			if tc.policy != "" {
				w.write("etc/p.toml", tc.policy)
				tc.flags.Policy = []string{w.path("etc/p.toml")}
			}
			p, err := w.resolve(tc.flags, Options{}, "true")
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("resolved with network %+v, want error %q", p.Network, tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, w.norm(err.Error())); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if !errors.Is(err, ErrPolicy) {
					t.Errorf("error %v is not ErrPolicy", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantMode, p.Network.Mode); diff != "" {
				t.Errorf("mode (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantImplied, w.norm(p.Network.Implied)); diff != "" {
				t.Errorf("implied (-want +got):\n%s", diff)
			}
		})
	}
}

// Inside a box, the variables the box sets to describe itself are not read
// back as settings by an agentbox started there; the others still are.
func TestEnvLayerInsideABox(t *testing.T) {
	outer := []string{"AGENTBOX=1", "AGENTBOX_BACKEND=bwrap", "AGENTBOX_NETWORK=none", "AGENTBOX_DENY=/root/.aws",
		"AGENTBOX_WRITABLE=/p", "AGENTBOX_DEPTH=1"}
	l, err := envLayer(fakeEnv(nil, append(outer, "AGENTBOX_WORKSPACE=w1", "AGENTBOX_ENFORCE=best-effort")...))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Entry{
		"workspace.id":    {Value: "w1", Origin: plan.Origin{Key: "env AGENTBOX_WORKSPACE"}},
		"sandbox.enforce": {Value: "best-effort", Origin: plan.Origin{Key: "env AGENTBOX_ENFORCE"}},
	}
	if diff := cmp.Diff(want, l.Scalars); diff != "" {
		t.Errorf("scalars (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]Entry{}, l.Lists); diff != "" {
		t.Errorf("lists (-want +got):\n%s", diff)
	}
	wantNote := "inside a box: AGENTBOX_BACKEND, AGENTBOX_DENY, AGENTBOX_NETWORK describe the outer box and are not read as settings"
	if diff := cmp.Diff(wantNote, l.Note); diff != "" {
		t.Errorf("note (-want +got):\n%s", diff)
	}

	// Only the outer box's variables: nothing set, but the note says why.
	l, err = envLayer(fakeEnv(nil, outer...))
	if err != nil {
		t.Fatal(err)
	}
	if l.Status != "absent" || len(l.Scalars) != 0 || l.Note != wantNote {
		t.Errorf("got status %q scalars %v note %q", l.Status, l.Scalars, l.Note)
	}

	// Outside a box they are settings, as before.
	l, err = envLayer(fakeEnv(nil, "AGENTBOX_BACKEND=landlock"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Scalars["sandbox.backend"].Value != "landlock" || l.Note != "" {
		t.Errorf("outside a box: got scalars %v note %q", l.Scalars, l.Note)
	}
}

// The plan of a box started inside a box says so in the layers, picks the
// backend by itself, and counts the depth.
func TestResolveInsideABox(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    int
	}{
		{"outside any box", nil, 1},
		{"in a box that counts", []string{"AGENTBOX=1", "AGENTBOX_DEPTH=2"}, 3},
		{"in a box that does not count", []string{"AGENTBOX=1"}, 2},
		{"a forged count is bounded", []string{"AGENTBOX=1", "AGENTBOX_DEPTH=99999999"}, 2},
		{"a count without a box is ignored", []string{"AGENTBOX_DEPTH=5"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.setenv(tc.environ...)
			w.setenv("AGENTBOX_BACKEND=bwrap", "AGENTBOX_NETWORK=none")
			p := w.mustResolve(Flags{}, Options{}, "true")
			if p.Depth != tc.want {
				t.Errorf("depth: want %d, got %d", tc.want, p.Depth)
			}
			inBox := len(tc.environ) > 0 && tc.environ[0] == "AGENTBOX=1"
			if inBox && (p.Backend != "auto" || p.Network.Mode != "open") {
				t.Errorf("inside a box the outer box's variables became settings: backend %q network %q", p.Backend, p.Network.Mode)
			}
			for _, kv := range p.Environ {
				if strings.HasPrefix(kv, "AGENTBOX") {
					t.Errorf("an inherited %s reaches the command", kv)
				}
			}
		})
	}
}

// withoutCacheVars is the plan's environment without the variables the
// caches set (TestResolveCaches checks those).
func withoutCacheVars(p *plan.Plan) []string {
	set := map[string]bool{}
	for _, c := range p.Caches {
		for _, d := range c.Dirs {
			set[d.Var] = true
		}
		for _, rd := range c.Reads {
			name, _, _ := strings.Cut(rd.Var, "=")
			set[name] = true
		}
	}
	var out []string
	for _, kv := range p.Environ {
		if name, _, _ := strings.Cut(kv, "="); !set[kv] && !set[name] {
			out = append(out, kv)
		}
	}
	return out
}

// caches shows the plan's caches, one line per folder: "tool mode
// VAR=value (origin)", with the world's root as $ROOT.
func (w *world) caches(p *plan.Plan) []string {
	var out []string
	for _, c := range p.Caches {
		if len(c.Dirs) == 0 {
			out = append(out, w.norm(c.Tool+" "+c.Mode+" ("+c.Origin.String()+")"))
		}
		for _, d := range c.Dirs {
			out = append(out, w.norm(c.Tool+" "+c.Mode+" "+d.Var+" ("+c.Origin.String()+")"))
		}
	}
	return out
}

// cacheMounts are the plan's mounts for the caches.
func (w *world) cacheMounts(p *plan.Plan) []string {
	var out []string
	for _, m := range p.Mounts {
		if isCache(m.Origin) {
			out = append(out, w.norm(m.Stage.String()+" "+string(m.Op)+" "+m.Path+" ("+m.Origin.String()+")"))
		}
	}
	return out
}

// By default every tool gets a cache of its own, private to the workspace
// and never the host's: one writable folder under agentbox's state folder,
// created 0700, and each tool pointed at its part by its own variable,
// replacing what the host set.
func TestResolveCachesDefault(t *testing.T) {
	w := newWorld(t)
	w.setenv("GOCACHE=/host/go-build", "MAVEN_OPTS=-Xmx1g", "GOPATH=/gopath:/other")
	p := w.mustResolve(Flags{}, Options{}, "true")
	key := strings.TrimPrefix(p.CacheDir, w.path("state/agentbox/caches")+"/")
	if !regexpMatch(`^proj-[0-9a-f]{8}$`, key) {
		t.Fatalf("cache folder %s: want state/agentbox/caches/proj-HASH", p.CacheDir)
	}
	dir := "$ROOT/state/agentbox/caches/proj-HASH"
	d := "(default caches)"
	want := []string{
		"npm private npm_config_cache=" + dir + "/npm " + d,
		"pnpm private PNPM_HOME=" + dir + "/pnpm " + d,
		"yarn private YARN_CACHE_FOLDER=" + dir + "/yarn " + d,
		"yarn private YARN_GLOBAL_FOLDER=" + dir + "/yarn-berry " + d,
		"pip private PIP_CACHE_DIR=" + dir + "/pip " + d,
		"uv private UV_CACHE_DIR=" + dir + "/uv " + d,
		"go private GOPATH=" + dir + "/go-path " + d,
		"go private GOMODCACHE=" + dir + "/go-mod " + d,
		"go private GOCACHE=" + dir + "/go-build " + d,
		"cargo private CARGO_HOME=" + dir + "/cargo " + d,
		"maven private MAVEN_OPTS=-Xmx1g -Dmaven.repo.local=" + dir + "/maven " + d,
		"gradle private GRADLE_USER_HOME=" + dir + "/gradle " + d,
		"cache private XDG_CACHE_HOME=" + dir + "/cache " + d,
	}
	if diff := cmp.Diff(want, w.caches(p)); diff != "" {
		t.Errorf("caches (-want +got):\n%s", diff)
	}
	wantHosts := map[string]string{"npm": "$ROOT/home/u/.npm", "go": "/gopath", "pip": "$ROOT/home/u/.cache/pip", "cargo": "$ROOT/home/u/.cargo"}
	for _, c := range p.Caches {
		if h, ok := wantHosts[c.Tool]; ok && w.norm(c.Dirs[0].Host) != h {
			t.Errorf("%s: host cache %s, want %s", c.Tool, w.norm(c.Dirs[0].Host), h)
		}
	}
	// Every other workspace's caches are hidden, as with --workspace.
	if diff := cmp.Diff([]string{
		"workspace tmpfs $ROOT/state/agentbox/caches (caches: private to workspace proj-HASH)",
		"workspace bind " + dir + " (caches: private to workspace proj-HASH)",
		"workspace remount-ro $ROOT/state/agentbox/caches (caches: private to workspace proj-HASH)",
	}, w.cacheMounts(p)); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	var prep []string
	for _, d := range p.Prepare {
		if isCache(d.Origin) {
			prep = append(prep, w.norm(d.Path)+" "+strconvOctal(d.Mode))
		}
	}
	wantPrep := []string{"$ROOT/state/agentbox/caches 700", dir + " 700"}
	if diff := cmp.Diff(wantPrep, prep); diff != "" {
		t.Errorf("prepare (-want +got):\n%s", diff)
	}
	env := strings.Join(p.Environ, "\n")
	for _, v := range []string{"GOCACHE=/host/go-build", "MAVEN_OPTS=-Xmx1g\n"} {
		if strings.Contains(env+"\n", v) {
			t.Errorf("the host's %q reaches the box", v)
		}
	}
	// The host's own caches are not writable: no mount names them.
	for _, m := range p.Writable() {
		if plan.Within(m, w.path("home/u/.npm")) || plan.Within(m, w.path("home/u/.cache")) || plan.Within(m, "/gopath") {
			t.Errorf("host cache %s is writable", m)
		}
	}
	// A workspace has one folder, named after it, and the other
	// workspaces' caches are hidden as their folders are.
	p = w.mustResolve(Flags{Workspace: "web", WorkspaceRoot: w.path("work")}, Options{}, "true")
	if p.CacheDir != w.path("state/agentbox/caches/web") {
		t.Errorf("workspace web: cache folder %s", p.CacheDir)
	}
	o := " (caches: private to workspace web)"
	wantMounts := []string{
		"workspace tmpfs $ROOT/state/agentbox/caches" + o,
		"workspace bind $ROOT/state/agentbox/caches/web" + o,
		"workspace remount-ro $ROOT/state/agentbox/caches" + o,
	}
	if diff := cmp.Diff(wantMounts, w.cacheMounts(p)); diff != "" {
		t.Errorf("workspace mounts (-want +got):\n%s", diff)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// [caches] chooses per tool, with default for the rest; host-writable is
// warned; env.set wins over a cache variable.
func TestResolveCachesModes(t *testing.T) {
	w := newWorld(t)
	w.write("etc/p.toml", `[caches]
default = "off"
npm = "host-writable"
go = "host-read-only"
pip = "private"
[env.set]
PIP_CACHE_DIR = "/mine"
`)
	p := w.mustResolve(Flags{Policy: []string{w.path("etc/p.toml")}}, Options{}, "true")
	o := func(line int, key string) string {
		return "($ROOT/etc/p.toml:" + strconv.Itoa(line) + " caches." + key + ")"
	}
	want := []string{
		"npm host-writable npm_config_cache=$ROOT/home/u/.npm " + o(3, "npm"),
		"pnpm off " + o(2, "default"),
		"yarn off " + o(2, "default"),
		"pip private PIP_CACHE_DIR=$ROOT/state/agentbox/caches/proj-HASH/pip " + o(5, "pip"),
		"uv off " + o(2, "default"),
		"go host-read-only GOPATH=$ROOT/home/u/go " + o(4, "go"),
		"go host-read-only GOMODCACHE=$ROOT/home/u/go/pkg/mod " + o(4, "go"),
		"go host-read-only GOCACHE=$ROOT/home/u/.cache/go-build " + o(4, "go"),
		"cargo off " + o(2, "default"),
		"maven off " + o(2, "default"),
		"gradle off " + o(2, "default"),
		"cache off " + o(2, "default"),
	}
	if diff := cmp.Diff(want, w.caches(p)); diff != "" {
		t.Errorf("caches (-want +got):\n%s", diff)
	}
	wantMounts := []string{
		"workspace tmpfs $ROOT/state/agentbox/caches (caches: private to workspace proj-HASH)",
		"workspace bind $ROOT/state/agentbox/caches/proj-HASH (caches: private to workspace proj-HASH)",
		"workspace remount-ro $ROOT/state/agentbox/caches (caches: private to workspace proj-HASH)",
		"writable bind $ROOT/home/u/.npm " + o(3, "npm"),
	}
	if diff := cmp.Diff(wantMounts, w.cacheMounts(p)); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	// ~/.npm does not exist: it is created, as npm would.
	found := false
	for _, d := range p.Prepare {
		found = found || d.Path == w.path("home/u/.npm")
	}
	if !found {
		t.Error("the host-writable ~/.npm is not created")
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "CACHE npm is host-writable") {
		t.Errorf("warnings: %q", p.Warnings)
	}
	env := strings.Join(p.Environ, "\n")
	if !strings.Contains(env, "PIP_CACHE_DIR=/mine") || strings.Contains(env, "PIP_CACHE_DIR=$") || strings.Count(env, "PIP_CACHE_DIR=") != 1 {
		t.Errorf("env.set must win over the cache variable:\n%s", env)
	}
	for _, name := range []string{"YARN_CACHE_FOLDER", "CARGO_HOME", "XDG_CACHE_HOME"} {
		if strings.Contains(env, name+"=") {
			t.Errorf("%s is set for a tool whose cache is off", name)
		}
	}
}

// A bad [caches] entry is one line naming the file, line and key.
func TestCachesBadInput(t *testing.T) {
	tests := []struct{ body, want string }{
		{"[caches]\nnpm = \"shared\"\n", `$ROOT/p.toml:2: caches.npm: "shared" is not one of private, host-read-only, host-writable, off`},
		{"[caches]\nbower = \"off\"\n", "$ROOT/p.toml:2: caches.bower: unknown tool (known: npm, pnpm, yarn, pip, uv, go, cargo, maven, gradle, cache, appdata, and default for the others)"},
		{"[caches]\nnpm = true\n", "$ROOT/p.toml:2: caches.npm: wrong type: "},
		{"caches = [\"npm\"]\n", "$ROOT/p.toml:1: caches: wrong type"},
	}
	for _, tc := range tests {
		w := newWorld(t)
		w.write("p.toml", tc.body)
		_, err := w.resolve(Flags{Policy: []string{w.path("p.toml")}}, Options{}, "true")
		if err == nil || !strings.HasPrefix(w.norm(err.Error()), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.body, err, tc.want)
		}
	}
}

// Where agentbox's state folder is writable (a writable home folder) it
// stays read-only in the box, so no private caches are made, and the plan
// says so. Windows plans have none yet.
func TestResolveCachesNotMade(t *testing.T) {
	w := newWorld(t)
	w.env.Environ = []string{"HOME=" + w.path("home/u"), "PATH=/usr/bin"}
	p := w.mustResolve(Flags{Writable: []string{"~"}}, Options{AllowBroad: true}, "true")
	if p.CacheDir != "" || len(w.cacheMounts(p)) != 0 {
		t.Errorf("private caches made inside a writable home: %s %v", p.CacheDir, w.cacheMounts(p))
	}
	if !strings.Contains(strings.Join(w.skips(p), "\n"), "private caches not made: agentbox's state folder lies in a writable root") {
		t.Errorf("skips: %v", w.skips(p))
	}
}

// Claude Code's state reaches the box as a merged copy of ~/.claude.json
// in ~/.claude; its own folder's variable and IS_SANDBOX=1 are set only
// for a confined run (box.Complete applies them). With CLAUDE_CONFIG_DIR
// set by the user, the configuration in that folder is also the host's:
// read-only, and the plan says so.
func TestResolveProviderState(t *testing.T) {
	w := newWorld(t)
	w.mkdir("home/u/.claude")
	p := w.mustResolve(Flags{}, Options{}, "claude", "-p", "hi")
	want := &plan.ProviderState{
		Host: w.path("home/u/.claude.json"),
		Box:  w.path("home/u/.claude/.claude.json"),
	}
	if p.Provider.State == nil {
		t.Fatal("no state")
	}
	want.Base = p.Provider.State.Base
	if diff := cmp.Diff(want, p.Provider.State); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if !plan.Within(want.Base, w.path("state/agentbox/providers")) {
		t.Errorf("the merge base %s is not in agentbox's state folder", want.Base)
	}
	if diff := cmp.Diff([]string{"CLAUDE_CONFIG_DIR=" + w.path("home/u/.claude"), "IS_SANDBOX=1"}, p.Provider.ConfinedEnv); diff != "" {
		t.Errorf("confined env (-want +got):\n%s", diff)
	}
	for _, kv := range p.Environ {
		if strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") || strings.HasPrefix(kv, "IS_SANDBOX=") {
			t.Errorf("%s is in the environment of every run, confined or not", kv)
		}
	}
	for _, m := range p.Mounts {
		if m.Path == want.Box && m.Access == plan.ReadOnly {
			t.Error("the box's copy is read-only")
		}
	}

	// CLAUDE_CONFIG_DIR of the user's: that folder's .claude.json is the
	// host's configuration.
	w.mkdir("cfg")
	w.write("cfg/.claude.json", "{}")
	w.setenv("CLAUDE_CONFIG_DIR=" + w.path("cfg"))
	p = w.mustResolve(Flags{}, Options{}, "claude")
	if p.Provider.State != nil {
		t.Errorf("a state copy with the user's own CLAUDE_CONFIG_DIR: %+v", p.Provider.State)
	}
	ro := false
	for _, m := range p.Mounts {
		ro = ro || (m.Path == w.path("cfg/.claude.json") && m.Access == plan.ReadOnly)
	}
	if !ro {
		t.Errorf("the user's %s is not read-only:\n%s", w.path("cfg/.claude.json"), strings.Join(w.mounts(p), "\n"))
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "CLAUDE_CONFIG_DIR is set: Claude Code's configuration") {
		t.Errorf("warnings: %q", p.Warnings)
	}
	if diff := cmp.Diff([]string{"IS_SANDBOX=1"}, p.Provider.ConfinedEnv); diff != "" {
		t.Errorf("confined env (-want +got):\n%s", diff)
	}
}

// Clean mode keeps the agent CLI's own key (the agent cannot work without
// it) and says so; only an exact deny removes it; other secrets go.
func TestResolveCleanKeepsProviderKey(t *testing.T) {
	w := newWorld(t)
	w.setenv("ANTHROPIC_API_KEY=sk-x", "OPENAI_API_KEY=sk-o", "GITHUB_TOKEN=ghp")
	p := w.mustResolve(Flags{EnvMode: "clean"}, Options{}, "claude", "-p", "hi")
	env := strings.Join(p.Environ, "\n")
	if !strings.Contains(env, "ANTHROPIC_API_KEY=sk-x") {
		t.Errorf("clean mode removed claude's own key:\n%s", env)
	}
	for _, gone := range []string{"OPENAI_API_KEY", "GITHUB_TOKEN"} {
		if strings.Contains(env, gone+"=") {
			t.Errorf("clean mode kept %s", gone)
		}
	}
	if diff := cmp.Diff([]string{"ANTHROPIC_API_KEY"}, p.Env.Kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	p = w.mustResolve(Flags{EnvMode: "clean", DenyEnv: []string{"ANTHROPIC_API_KEY"}}, Options{}, "claude")
	if strings.Contains(strings.Join(p.Environ, "\n"), "ANTHROPIC_API_KEY") {
		t.Error("an exact deny did not remove the key")
	}
	p = w.mustResolve(Flags{EnvMode: "clean"}, Options{}, "make")
	if strings.Contains(strings.Join(p.Environ, "\n"), "ANTHROPIC_API_KEY") {
		t.Error("a command that is no agent CLI kept an agent's key")
	}
}
