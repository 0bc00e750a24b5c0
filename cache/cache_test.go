package cache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHost(t *testing.T) {
	env := func(kv ...string) Getenv {
		return func(name string) string {
			for _, s := range kv {
				if k, v, _ := strings.Cut(s, "="); k == name {
					return v
				}
			}
			return ""
		}
	}
	tests := []struct {
		tool string
		env  Getenv
		want []string
		goos string // "" is linux
	}{
		{"npm", env(), []string{"/h/.npm"}, ""},
		{"npm", env("npm_config_cache=/c/npm"), []string{"/c/npm"}, ""},
		{"npm", env("npm_config_cache=relative"), []string{"/h/.npm"}, ""},
		{"go", env(), []string{"/h/go", "/h/go/pkg/mod", "/h/.cache/go-build"}, ""},
		{"go", env("GOPATH=/gp:/other", "XDG_CACHE_HOME=/xc"), []string{"/gp", "/gp/pkg/mod", "/xc/go-build"}, ""},
		{"go", env("GOMODCACHE=/m", "GOCACHE=/b/"), []string{"/h/go", "/m", "/b"}, ""},
		{"pip", env("XDG_CACHE_HOME=/xc"), []string{"/xc/pip"}, ""},
		{"pnpm", env("XDG_DATA_HOME=/xd"), []string{"/xd/pnpm"}, ""},
		{"cargo", env("CARGO_HOME=/ch"), []string{"/ch"}, ""},
		{"maven", env("MAVEN_OPTS=-Dx=/y"), []string{"/h/.m2/repository"}, ""},
		{"gradle", env(), []string{"/h/.gradle"}, ""},
		{"cache", env("XDG_CACHE_HOME=/xc"), []string{"/xc"}, ""},
		// Windows: the tools' own defaults there, built with backslashes
		// whatever the host resolving the plan; a variable counts when it
		// is an absolute Windows path.
		{"npm", env(), []string{`C:\Users\u\AppData\Local\npm-cache`}, "windows"},
		{"npm", env(`LOCALAPPDATA=D:\Local\`), []string{`D:\Local\npm-cache`}, "windows"},
		{"npm", env(`LOCALAPPDATA=relative`), []string{`C:\Users\u\AppData\Local\npm-cache`}, "windows"},
		{"npm", env(`npm_config_cache=E:/npm/`), []string{`E:\npm`}, "windows"},
		{"npm", env(`npm_config_cache=/npm`), []string{`C:\Users\u\AppData\Local\npm-cache`}, "windows"},
		{"pip", env(), []string{`C:\Users\u\AppData\Local\pip\Cache`}, "windows"},
		{"uv", env(), []string{`C:\Users\u\AppData\Local\uv\cache`}, "windows"},
		{"pnpm", env(), []string{`C:\Users\u\AppData\Local\pnpm`}, "windows"},
		{"yarn", env(), []string{`C:\Users\u\AppData\Local\Yarn\Cache`, `C:\Users\u\AppData\Local\Yarn\Berry`}, "windows"},
		{"go", env(), []string{`C:\Users\u\go`, `C:\Users\u\go\pkg\mod`, `C:\Users\u\AppData\Local\go-build`}, "windows"},
		{"go", env(`GOPATH=D:\gp;E:\other`, `XDG_CACHE_HOME=D:\xc`), []string{`D:\gp`, `D:\gp\pkg\mod`, `C:\Users\u\AppData\Local\go-build`}, "windows"},
		{"go", env(`GOPATH=D:\gp:E:\other`), []string{`C:\Users\u\go`, `C:\Users\u\go\pkg\mod`, `C:\Users\u\AppData\Local\go-build`}, "windows"},
		{"cargo", env(), []string{`C:\Users\u\.cargo`}, "windows"},
		{"cargo", env(`CARGO_HOME=\\srv\share\cargo`), []string{`\\srv\share\cargo`}, "windows"},
		{"maven", env(), []string{`C:\Users\u\.m2\repository`}, "windows"},
		{"gradle", env(), []string{`C:\Users\u\.gradle`}, "windows"},
		{"cache", env(), []string{`C:\Users\u\.cache`}, "windows"},
		{"appdata", env(), []string{`C:\Users\u\AppData\Roaming`, `C:\Users\u\AppData\Local`}, "windows"},
		{"appdata", env(`APPDATA=D:\R`, `LOCALAPPDATA=D:\L`), []string{`D:\R`, `D:\L`}, "windows"},
		{"appdata", env(), []string{"", ""}, ""},
	}
	for _, tc := range tests {
		tool, ok := Lookup(tc.tool)
		if !ok {
			t.Fatalf("no tool %s", tc.tool)
		}
		var got []string
		for _, d := range tool.Dirs {
			if tc.goos == "windows" {
				got = append(got, d.Host("windows", `C:\Users\u`, tc.env))
			} else {
				got = append(got, d.Host("linux", "/h", tc.env))
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %s: host folders (-want +got):\n%s", tc.goos, tc.tool, diff)
		}
	}
}

// TestToolsFor: the Windows-only folders (%APPDATA%, %LOCALAPPDATA%) are
// moved on Windows alone; their key is known everywhere.
func TestToolsFor(t *testing.T) {
	names := func(list []Tool) []string {
		var out []string
		for _, t := range list {
			out = append(out, t.Name)
		}
		return out
	}
	all := Names()
	if diff := cmp.Diff(all, names(ToolsFor("windows"))); diff != "" {
		t.Errorf("windows (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(all[:len(all)-1], names(ToolsFor("linux"))); diff != "" || all[len(all)-1] != "appdata" {
		t.Errorf("linux (-want +got):\n%s", diff)
	}
}

func TestSetting(t *testing.T) {
	npm, _ := Lookup("npm")
	maven, _ := Lookup("maven")
	for _, tc := range []struct {
		d            Dir
		dir, current string
		want         string
	}{
		{npm.Dirs[0], "/p/npm", "/old", "npm_config_cache=/p/npm"},
		{maven.Dirs[0], "/p/m2", "", "MAVEN_OPTS=-Dmaven.repo.local=/p/m2"},
		{maven.Dirs[0], "/p/m2", "-Xmx1g", "MAVEN_OPTS=-Xmx1g -Dmaven.repo.local=/p/m2"},
	} {
		if got := tc.d.Setting(tc.dir, tc.current); got != tc.want {
			t.Errorf("Setting(%q, %q) = %q, want %q", tc.dir, tc.current, got, tc.want)
		}
	}
}

// The registry's folder names are unique, so clearing one tool never
// touches another's folder.
func TestRegistry(t *testing.T) {
	seen := map[string]string{}
	for _, tool := range Tools() {
		if len(tool.Dirs) == 0 || tool.Title == "" {
			t.Errorf("%s: no folders or title", tool.Name)
		}
		for _, d := range tool.Dirs {
			if other, ok := seen[d.Name]; ok {
				t.Errorf("folder %s of %s is also %s's", d.Name, tool.Name, other)
			}
			seen[d.Name] = tool.Name
			if d.Var == "" || d.win == nil || (d.host == nil && tool.OS == "") {
				t.Errorf("%s/%s: no variable or host folder", tool.Name, d.Name)
			}
		}
	}
}

func writeFile(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

// Clear removes read-only trees (go's module cache is 0555/0444) and a
// box's links without following them: a link to a file outside, or to a
// folder outside, leaves its target as it was.
func TestClear(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	writeFile(t, filepath.Join(outside, "keep"), "host", 0o400)
	os.Chmod(outside, 0o500)
	t.Cleanup(func() { os.Chmod(outside, 0o700) })

	ws := filepath.Join(base, "caches", "proj-1")
	writeFile(t, filepath.Join(ws, "go-mod", "m@v1", "a.go"), "package a", 0o444)
	os.Chmod(filepath.Join(ws, "go-mod", "m@v1"), 0o555)
	os.Chmod(filepath.Join(ws, "go-mod"), 0o555)
	writeFile(t, filepath.Join(ws, "npm", "_cacache", "x"), "npm", 0o644)
	os.Symlink(outside, filepath.Join(ws, "npm", "dirlink"))
	os.Symlink(filepath.Join(outside, "keep"), filepath.Join(ws, "npm", "filelink"))
	writeFile(t, filepath.Join(ws, "pip", "p"), "pip", 0o644)

	entries, err := List(filepath.Join(base, "caches"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Workspace+" "+e.Tool+" "+filepath.Base(e.Path))
	}
	if diff := cmp.Diff([]string{"proj-1 npm npm", "proj-1 pip pip", "proj-1 go go-mod"}, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if entries[0].Files != 1 || entries[0].Bytes != 3 {
		t.Errorf("npm: %d files, %d bytes; links must not count", entries[0].Files, entries[0].Bytes)
	}

	if err := Clear(ws, []string{"go", "npm"}); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(ws)
	if len(left) != 1 || left[0].Name() != "pip" {
		t.Errorf("left after clearing go and npm: %v", left)
	}
	fi, err := os.Stat(filepath.Join(outside, "keep"))
	if err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("the file outside was changed: %v %v", fi, err)
	}
	di, _ := os.Stat(outside)
	if di.Mode().Perm() != 0o500 {
		t.Errorf("the folder outside was made writable: %v", di.Mode())
	}
	if err := Clear(ws, nil); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(ws); len(left) != 0 {
		t.Errorf("left after clearing everything: %v", left)
	}
	if err := Clear(filepath.Join(base, "nope"), nil); err != nil {
		t.Errorf("clearing a missing folder: %v", err)
	}
}
