package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
	"github.com/google/go-cmp/cmp"
)

// TestResolveCachesWindows: a Windows plan (resolved here on Linux, as
// plain data) gives the workspace private caches as on Linux, %APPDATA%
// and %LOCALAPPDATA% included, one writable folder for them all, and
// names each tool's Windows host cache with backslashes; an inherited
// copy of a cache variable goes whatever its case; go reads no host
// cache there; and %APPDATA% cannot be made host-writable.
func TestResolveCachesWindows(t *testing.T) {
	// Not t.TempDir: under Wine os.RemoveAll cannot remove folders the
	// way it asks (see newWinWorld).
	dir, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w := newWorldIn(t, dir)
	w.env.GOOS, w.env.UID, w.env.GID, w.env.User = "windows", -1, -1, "S-1-5-21-1-2-3-1001"
	w.env.Environ = append(w.env.Environ, `USERPROFILE=C:\Users\u`, `LOCALAPPDATA=C:\Users\u\AppData\Local`,
		`AppData=C:\Users\u\AppData\Roaming`, `NPM_CONFIG_CACHE=C:\Users\u\AppData\Local\npm-cache`)
	p := winCacheStep(t, w, Flags{Tmp: "private"})
	priv := w.path("state/agentbox/caches")
	sep := string(filepath.Separator)
	var got []string
	hosts := map[string]string{}
	for _, c := range p.Caches {
		for _, d := range c.Dirs {
			got = append(got, c.Tool+" "+c.Mode+" "+strings.Replace(d.Var, priv, "$PRIV", 1))
			name, _, _ := strings.Cut(d.Var, "=")
			hosts[name] = d.Host
		}
		for _, rd := range c.Reads {
			got = append(got, c.Tool+" reads "+rd.Var)
		}
	}
	ws := "$PRIV" + sep + p.Workspace.ID + sep
	want := []string{
		"npm private npm_config_cache=" + ws + "npm",
		"pnpm private PNPM_HOME=" + ws + "pnpm",
		"yarn private YARN_CACHE_FOLDER=" + ws + "yarn",
		"yarn private YARN_GLOBAL_FOLDER=" + ws + "yarn-berry",
		"pip private PIP_CACHE_DIR=" + ws + "pip",
		"uv private UV_CACHE_DIR=" + ws + "uv",
		"go private GOPATH=" + ws + "go-path",
		"go private GOMODCACHE=" + ws + "go-mod",
		"go private GOCACHE=" + ws + "go-build",
		"go reads GOCACHEPROG=",
		"cargo private CARGO_HOME=" + ws + "cargo",
		"maven private MAVEN_OPTS=-Dmaven.repo.local=" + ws + "maven",
		"gradle private GRADLE_USER_HOME=" + ws + "gradle",
		"cache private XDG_CACHE_HOME=" + ws + "cache",
		"appdata private APPDATA=" + ws + "appdata-roaming",
		"appdata private LOCALAPPDATA=" + ws + "appdata-local",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("caches (-want +got):\n%s", diff)
	}
	wantHosts := map[string]string{
		"npm_config_cache":   `C:\Users\u\AppData\Local\npm-cache`,
		"PNPM_HOME":          `C:\Users\u\AppData\Local\pnpm`,
		"YARN_CACHE_FOLDER":  `C:\Users\u\AppData\Local\Yarn\Cache`,
		"YARN_GLOBAL_FOLDER": `C:\Users\u\AppData\Local\Yarn\Berry`,
		"PIP_CACHE_DIR":      `C:\Users\u\AppData\Local\pip\Cache`,
		"UV_CACHE_DIR":       `C:\Users\u\AppData\Local\uv\cache`,
		"GOCACHE":            `C:\Users\u\AppData\Local\go-build`,
		"APPDATA":            `C:\Users\u\AppData\Roaming`,
		"LOCALAPPDATA":       `C:\Users\u\AppData\Local`,
	}
	for name, want := range wantHosts {
		if hosts[name] != want {
			t.Errorf("%s: host cache %q, want %q", name, hosts[name], want)
		}
	}
	var writable []string
	for _, m := range p.Mounts {
		if m.Stage == plan.StageWritable && plan.Within(m.Path, priv) {
			writable = append(writable, strings.Replace(m.Path, priv, "$PRIV", 1)+" "+string(m.Access))
		}
	}
	if diff := cmp.Diff([]string{strings.TrimSuffix(ws, sep) + " " + string(plan.ReadWrite)}, writable); diff != "" {
		t.Errorf("writable cache folders (-want +got):\n%s", diff)
	}
	// Windows names are case-insensitive: the inherited NPM_CONFIG_CACHE
	// and AppData go, and the box has one of each.
	count := map[string]int{}
	for _, kv := range p.Environ {
		name, _, _ := strings.Cut(kv, "=")
		count[strings.ToUpper(name)]++
	}
	for _, name := range []string{"NPM_CONFIG_CACHE", "APPDATA", "LOCALAPPDATA"} {
		if count[name] != 1 {
			t.Errorf("%s is in the box's environment %d times, want once: %q", name, count[name], p.Environ)
		}
	}

	w.write("p.toml", "[caches]\nappdata = \"host-writable\"\n")
	layers, err := Load(w.env, Flags{Policy: []string{w.path("p.toml")}})
	if err != nil {
		t.Fatal(err)
	}
	r := &resolver{env: w.env, m: merge(layers), p: &plan.Plan{GOOS: "windows"}}
	if err = r.cacheStage(); err == nil || !strings.Contains(w.norm(err.Error()), filepath.Join("$ROOT", "p.toml")+":2: caches.appdata: cannot be host-writable") {
		t.Errorf("appdata host-writable: got %v, want the refusal naming the file and line", err)
	}
}

// winCacheStep runs the cache and environment steps of resolution for a
// Linux world that says windows (a whole Windows plan is valid only with
// Windows paths, which a Linux file system does not have): the caches,
// their writable folders, the reads and the box's environment.
func winCacheStep(t *testing.T, w *world, flags Flags) *plan.Plan {
	t.Helper()
	layers, err := Load(w.env, flags)
	if err != nil {
		t.Fatal(err)
	}
	r := &resolver{env: w.env, m: merge(layers), p: &plan.Plan{GOOS: "windows", Workspace: plan.Workspace{ID: "ws"}}}
	for _, step := range []func() error{r.cacheStage, r.cacheReads, r.environment} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return r.p
}
