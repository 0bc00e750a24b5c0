// Package cache knows the package and build caches of everyday tools (npm,
// pnpm, yarn, pip, uv, go, cargo, maven, gradle and the ~/.cache folder
// itself): where each tool keeps them, which variable moves them, and how
// a box gets its own. It also lists and clears the private caches agentbox
// keeps for each workspace (`agentbox caches`).
//
// A box must not write the host's caches: a build or module cache is code
// or data that the same tool runs or trusts later, outside the box, so a
// poisoned one escapes it. By default each workspace gets caches of its
// own, private to the user (0700) under agentbox's state folder, and the
// tools are pointed at them through their own variables — the same way
// under every backend, since no backend has to remap a folder for it.
//
// What does not belong here: policy files (package policy reads the
// [caches] table and puts the result in the plan), mounts (the backends).
package cache

import (
	"net/url"
	"path/filepath"
	"strings"
)

// The modes a [caches] entry chooses.
const (
	// Private gives the workspace a cache of its own, persistent across
	// its runs and never used outside the box. The default.
	Private = "private"
	// HostReadOnly points the tool at the host's own cache, read-only:
	// what is cached can be used, nothing can be added.
	HostReadOnly = "host-read-only"
	// HostWritable lets the box write the host's own cache: fastest, and
	// what the box leaves there is used by the tool outside the box later.
	HostWritable = "host-writable"
	// Off leaves the tool alone: no folder, no variable; its usual cache
	// gets whatever the rest of the policy says (read-only, as a rule).
	Off = "off"
)

// Modes are the modes in the order help texts list them.
var Modes = []string{Private, HostReadOnly, HostWritable, Off}

// Getenv looks up a variable of the environment resolution runs in.
type Getenv func(string) string

// Dir is one cache folder of a tool.
type Dir struct {
	// Name is its folder in a workspace's private caches.
	Name string `json:"name"`
	// Var is the variable that points the tool at the folder.
	Var string `json:"var"`
	// Append is the option added to Var's existing value, "{}" standing
	// for the folder (maven reads -Dmaven.repo.local from MAVEN_OPTS); ""
	// means Var is the folder.
	Append string `json:"append,omitempty"`
	// Also says what else Var moves besides the cache, for the plan
	// (CARGO_HOME holds cargo's config and installed programs too).
	Also string `json:"also,omitempty"`
	// host returns where the tool keeps the folder on the host, given the
	// home folder and the environment.
	host func(home string, getenv Getenv) string
	// win is host on Windows, where the tools keep their caches in
	// %LOCALAPPDATA% or the profile; nil when the tool's default there is
	// host's with Windows separators.
	win func(home string, getenv Getenv) string
}

// Host returns where the tool keeps the folder outside the box on goos:
// Var's value when the user set it (and it is a plain path), else the
// tool's default. Windows paths are built as strings with backslashes,
// whatever the host resolving them, so a Windows plan made on Linux names
// the folders Windows would.
func (d Dir) Host(goos, home string, getenv Getenv) string {
	if goos == "windows" {
		return d.winHost(home, getenv)
	}
	if d.host == nil {
		return "" // a Windows-only folder
	}
	if d.Append == "" {
		// GOPATH is a list; its first entry is where go writes.
		v, _, _ := strings.Cut(getenv(d.Var), string(filepath.ListSeparator))
		if filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
	}
	return d.host(home, getenv)
}

// Setting is the variable, NAME=value, that points the tool at dir, given
// the value Var has in the environment the box starts from.
func (d Dir) Setting(dir, current string) string {
	if d.Append == "" {
		return d.Var + "=" + dir
	}
	opt := strings.ReplaceAll(d.Append, "{}", dir)
	if current == "" {
		return d.Var + "=" + opt
	}
	return d.Var + "=" + current + " " + opt
}

// Tool is a package manager or build tool whose caches agentbox knows.
type Tool struct {
	// Name is its key in the [caches] table.
	Name string `json:"name"`
	// Title says what it is, for listings.
	Title string `json:"title"`
	// OS is the only system the tool's folders are moved on ("" for
	// every one); elsewhere its [caches] key is accepted and does nothing.
	OS   string `json:"os,omitempty"`
	Dirs []Dir  `json:"dirs"`
}

// winHost is Host on Windows: a set variable that is an absolute Windows
// path (its first entry for GOPATH, a ;-separated list there), else the
// tool's Windows default.
func (d Dir) winHost(home string, getenv Getenv) string {
	if d.Append == "" {
		v, _, _ := strings.Cut(getenv(d.Var), ";")
		if WinAbs(v) {
			return WinClean(v)
		}
	}
	return d.win(home, getenv)
}

// WinAbs reports whether p is an absolute Windows path: a drive letter,
// a colon and a separator, or a UNC path. A further colon names a file's
// stream, not a folder: such a value is not a path.
func WinAbs(p string) bool {
	if len(p) >= 3 && ('a' <= p[0]|0x20 && p[0]|0x20 <= 'z') && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		return !strings.Contains(p[2:], ":")
	}
	return strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, "//")
}

// WinClean is p with backslashes and no trailing separator (but a drive
// root's).
func WinClean(p string) string {
	p = strings.ReplaceAll(p, "/", `\`)
	for len(p) > 3 && strings.HasSuffix(p, `\`) {
		p = p[:len(p)-1]
	}
	return p
}

// WinJoin joins a Windows folder and a relative path (either separator)
// with backslashes.
func WinJoin(dir, rel string) string {
	return strings.TrimRight(WinClean(dir), `\`) + `\` + strings.Trim(WinClean(rel), `\`)
}

// winUnder is under on Windows: a folder below the profile.
func winUnder(rel string) func(string, Getenv) string {
	return func(home string, _ Getenv) string { return WinJoin(home, rel) }
}

// winKnown returns the Windows known folder a variable names (APPDATA,
// LOCALAPPDATA) when it is an absolute path, else its default below the
// profile.
func winKnown(name, rel string) func(string, Getenv) string {
	return func(home string, getenv Getenv) string {
		if v := getenv(name); WinAbs(v) {
			return WinClean(v)
		}
		return WinJoin(home, rel)
	}
}

// localAppData returns a Windows host function for a folder in
// %LOCALAPPDATA% (the profile's AppData\Local by default).
func localAppData(rel string) func(string, Getenv) string {
	return func(home string, getenv Getenv) string {
		return WinJoin(winKnown("LOCALAPPDATA", `AppData\Local`)(home, getenv), rel)
	}
}

// winGoPath is goPath on Windows: GOPATH's first entry (a ;-separated
// list), %USERPROFILE%\go by default.
func winGoPath(home string, getenv Getenv) string {
	if v, _, _ := strings.Cut(getenv("GOPATH"), ";"); WinAbs(v) {
		return WinClean(v)
	}
	return WinJoin(home, "go")
}

// under returns a host function for a folder below the home folder.
func under(rel string) func(string, Getenv) string {
	return func(home string, _ Getenv) string { return filepath.Join(home, rel) }
}

// xdgCache returns a host function for a folder in $XDG_CACHE_HOME
// (~/.cache by default), as the XDG base directory rules say.
func xdgCache(rel string) func(string, Getenv) string {
	return func(home string, getenv Getenv) string {
		base := getenv("XDG_CACHE_HOME")
		if !filepath.IsAbs(base) {
			base = filepath.Join(home, ".cache")
		}
		return filepath.Join(base, rel)
	}
}

// xdgData is xdgCache for $XDG_DATA_HOME (~/.local/share).
func xdgData(rel string) func(string, Getenv) string {
	return func(home string, getenv Getenv) string {
		base := getenv("XDG_DATA_HOME")
		if !filepath.IsAbs(base) {
			base = filepath.Join(home, ".local", "share")
		}
		return filepath.Join(base, rel)
	}
}

// goPath is where go writes in GOPATH: its first entry, ~/go by default.
func goPath(home string, getenv Getenv) string {
	gopath, _, _ := strings.Cut(getenv("GOPATH"), string(filepath.ListSeparator))
	if !filepath.IsAbs(gopath) {
		gopath = filepath.Join(home, "go")
	}
	return filepath.Clean(gopath)
}

// goModCache is go's default module cache: $GOPATH/pkg/mod.
func goModCache(home string, getenv Getenv) string {
	return filepath.Join(goPath(home, getenv), "pkg", "mod")
}

// cargoHome is cargo's home: $CARGO_HOME, ~/.cargo by default.
func cargoHome(home string, getenv Getenv) string {
	if v := getenv("CARGO_HOME"); filepath.IsAbs(v) {
		return filepath.Clean(v)
	}
	return filepath.Join(home, ".cargo")
}

// gradleHome is gradle's user home: $GRADLE_USER_HOME, ~/.gradle by default.
func gradleHome(home string, getenv Getenv) string {
	if v := getenv("GRADLE_USER_HOME"); filepath.IsAbs(v) {
		return filepath.Clean(v)
	}
	return filepath.Join(home, ".gradle")
}

// tools is the registry, in the order plans list it. The variables are the
// tools' documented ones; each was checked against the tool's own lookup
// (npm config, pip's locations, go env, cargo's home, maven's settings).
var tools = []Tool{
	{Name: "npm", Title: "npm (and npx)", Dirs: []Dir{
		{Name: "npm", Var: "npm_config_cache", host: under(".npm"), win: localAppData("npm-cache")},
	}},
	// pnpm keeps its store in $PNPM_HOME/store, else in
	// $XDG_DATA_HOME/pnpm/store. npm_config_store_dir would move the store
	// alone, but npm warns about it on every command; pnpm's metadata
	// cache is in $XDG_CACHE_HOME/pnpm, with the "cache" tool.
	{Name: "pnpm", Title: "pnpm's package store", Dirs: []Dir{
		{Name: "pnpm", Var: "PNPM_HOME", Also: "the packages pnpm add --global installs", host: xdgData("pnpm"), win: localAppData("pnpm")},
	}},
	{Name: "yarn", Title: "yarn", Dirs: []Dir{
		{Name: "yarn", Var: "YARN_CACHE_FOLDER", host: xdgCache("yarn"), win: localAppData(`Yarn\Cache`)},
		{Name: "yarn-berry", Var: "YARN_GLOBAL_FOLDER", host: under(".yarn/berry"), win: localAppData(`Yarn\Berry`)},
	}},
	{Name: "pip", Title: "pip", Dirs: []Dir{
		{Name: "pip", Var: "PIP_CACHE_DIR", host: xdgCache("pip"), win: localAppData(`pip\Cache`)},
	}},
	{Name: "uv", Title: "uv", Dirs: []Dir{
		{Name: "uv", Var: "UV_CACHE_DIR", host: xdgCache("uv"), win: localAppData(`uv\cache`)},
	}},
	// go also writes the checksum database's signed tree head to
	// $GOPATH/pkg/sumdb when it verifies a new module, so GOPATH moves too.
	{Name: "go", Title: "go modules, checksum database state and build cache", Dirs: []Dir{
		{Name: "go-path", Var: "GOPATH", Also: "where go install puts programs ($GOPATH/bin)", host: goPath, win: winGoPath},
		{Name: "go-mod", Var: "GOMODCACHE", host: goModCache, win: func(home string, getenv Getenv) string { return WinJoin(winGoPath(home, getenv), `pkg\mod`) }},
		{Name: "go-build", Var: "GOCACHE", host: xdgCache("go-build"), win: localAppData("go-build")},
	}},
	{Name: "cargo", Title: "cargo registry and git checkouts", Dirs: []Dir{
		{Name: "cargo", Var: "CARGO_HOME", Also: "cargo's config.toml and the programs cargo install puts in bin", host: cargoHome, win: winUnder(".cargo")},
	}},
	{Name: "maven", Title: "maven's local repository", Dirs: []Dir{
		{Name: "maven", Var: "MAVEN_OPTS", Append: "-Dmaven.repo.local={}", host: under(".m2/repository"), win: winUnder(`.m2\repository`)},
	}},
	{Name: "gradle", Title: "gradle's caches and wrapper distributions", Dirs: []Dir{
		{Name: "gradle", Var: "GRADLE_USER_HOME", Also: "gradle.properties and init scripts", host: gradleHome, win: winUnder(".gradle")},
	}},
	{Name: "cache", Title: "the cache folder every other tool uses (~/.cache)", Dirs: []Dir{
		{Name: "cache", Var: "XDG_CACHE_HOME", host: func(home string, _ Getenv) string { return filepath.Join(home, ".cache") }, win: winUnder(".cache")},
	}},
	// On Windows the box runs as a sandbox user, who cannot read the
	// user's profile: a tool that keeps its settings or data in %APPDATA%
	// or %LOCALAPPDATA% (npm's global folder and config, pip --user,
	// Python's and PowerShell's data, anything without a variable above)
	// fails there. The workspace gets folders of its own for both.
	{Name: "appdata", Title: "%APPDATA% and %LOCALAPPDATA% (Windows only)", OS: "windows", Dirs: []Dir{
		{Name: "appdata-roaming", Var: "APPDATA", Also: "every program's roaming settings and data: the user's own are not read in the box", win: winKnown("APPDATA", `AppData\Roaming`)},
		{Name: "appdata-local", Var: "LOCALAPPDATA", Also: "every program's local data and caches: the user's own are not read in the box", win: winKnown("LOCALAPPDATA", `AppData\Local`)},
	}},
}

// Tools returns the registry, in order.
func Tools() []Tool {
	out := make([]Tool, len(tools))
	copy(out, tools)
	return out
}

// ToolsFor returns the tools whose caches agentbox moves on goos, in
// order.
func ToolsFor(goos string) []Tool {
	var out []Tool
	for _, t := range tools {
		if t.OS == "" || t.OS == goos {
			out = append(out, t)
		}
	}
	return out
}

// Lookup finds a tool by its [caches] key.
func Lookup(name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Names returns the [caches] keys, in order.
func Names() []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// Root is the folder holding every workspace's private caches:
// <state>/caches, state being agentbox's state folder.
func Root(state string) string { return filepath.Join(state, "caches") }

// Folder is the folder of one workspace's private caches.
func Folder(state, workspace string) string { return filepath.Join(Root(state), workspace) }

// GoProxyDefault is the go command's GOPROXY when nothing sets it.
const GoProxyDefault = "https://proxy.golang.org,direct"

// GoProgSetting is GOCACHEPROG=…, which makes the go command run agentbox
// (self) as its build cache program, reading the host's build cache and
// writing the private one (see GoProg). ok is false when a path cannot be
// written in GOCACHEPROG's quoting: fields split at white space, each
// optionally in single or double quotes, with no escapes.
func GoProgSetting(self, host, private string) (setting string, ok bool) {
	fields := []string{self, GoProgCommand, "--read", host, "--write", private}
	for i, f := range fields {
		q, ok := quoteField(f)
		if !ok {
			return "", false
		}
		fields[i] = q
	}
	return "GOCACHEPROG=" + strings.Join(fields, " "), true
}

// quoteField quotes s for GOCACHEPROG when it holds white space or a quote.
func quoteField(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	if !strings.ContainsAny(s, " \t\n\r'\"") {
		return s, true
	}
	if strings.ContainsAny(s, "\n\r") {
		return "", false
	}
	if !strings.Contains(s, "'") {
		return "'" + s + "'", true
	}
	if !strings.Contains(s, `"`) {
		return `"` + s + `"`, true
	}
	return "", false
}

// GoProxySetting is GOPROXY=file://download, the host's module download
// cache (which has the module proxy's own layout) as a proxy; the proxies
// the box would use otherwise follow it, after a comma. ok is false when
// the folder's name would end a GOPROXY entry (a comma or a bar).
func GoProxySetting(download string) (setting string, ok bool) {
	if !filepath.IsAbs(download) || strings.ContainsAny(download, ",|") {
		return "", false
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(download)}
	return "GOPROXY=" + u.String(), true
}
