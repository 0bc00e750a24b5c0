package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/cache"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/provider"
)

// cacheMode returns the mode the layers choose for tool, and the rule
// that chose it: caches.<tool>, else caches.default, else private.
func (r *resolver) cacheMode(tool string) (string, plan.Origin) {
	if e, ok := r.m.scalars["caches."+tool]; ok {
		return e.Value, e.Origin
	}
	if e, ok := r.m.scalars["caches.default"]; ok {
		return e.Value, e.Origin
	}
	return cache.Private, plan.Origin{Key: "default caches"}
}

// cacheStage works out every tool's caches (package cache) and adds the
// folders the box writes for them, after the writable roots: the workspace's private cache
// folder, created 0700 under agentbox's state folder, and the host caches
// a policy makes writable. The tools are pointed at their folders by
// their own variables (environment), the same under every backend.
//
// The host's caches stay read-only unless a policy says host-writable: a
// build or module cache is used by the same tool outside the box later,
// so what the box left in it would run there.
func (r *resolver) cacheStage() error {
	var list []pathEntry
	add := func(p string, o plan.Origin, note string) {
		list = append(list, pathEntry{path: p, origin: o, note: note})
	}
	if err := r.caches(add); err != nil {
		return err
	}
	sortParentsFirst(list)
	for _, w := range list {
		r.add(plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Path: w.path, Access: plan.ReadWrite, Origin: w.origin, Note: w.note})
	}
	return nil
}

// caches fills the plan's caches, calling add for each folder to make
// writable.
func (r *resolver) caches(add func(p string, o plan.Origin, note string)) error {
	// On Windows the tools keep their caches in %LOCALAPPDATA% and the
	// profile (cache.Dir.Host says where), the sandbox users cannot read
	// the user's profile, and the backend grants the folders below by
	// ACL; %APPDATA% and %LOCALAPPDATA% get folders of their own too
	// (the "appdata" tool).
	key := r.workspaceKey()
	folder := r.realMaybe(cache.Folder(StateDir(r.env), key))
	private := false
	for _, t := range cache.ToolsFor(r.env.GOOS) {
		mode, origin := r.cacheMode(t.Name)
		if t.Name == "appdata" && mode == cache.HostWritable {
			// The Startup folder and every program's settings are there:
			// what the box left would run as the user at the next sign-in.
			return originError(origin, "cannot be host-writable: %APPDATA% holds the Startup folder and the settings programs run from outside the box; use private (the default), host-read-only or off")
		}
		c := plan.Cache{Tool: t.Name, Mode: mode, Origin: origin}
		for _, d := range t.Dirs {
			host := d.Host(r.env.GOOS, r.env.Home, r.toolGetenv)
			path := host
			switch mode {
			case cache.Off:
				continue
			case cache.Private:
				private = true
				path = filepath.Join(folder, d.Name)
			case cache.HostWritable:
				if real, err := r.real(host); err == nil {
					path = real
				} else {
					r.prepareChain(host, origin)
				}
				add(path, origin, "host cache of "+t.Name+", writable: what the box leaves there is used outside it later")
				r.p.Warnings = append(r.p.Warnings, fmt.Sprintf("CACHE %s is host-writable (%s): the box can change %s, which %s uses outside the box too; a poisoned cache runs there later",
					t.Name, origin, host, t.Name))
			}
			c.Dirs = append(c.Dirs, plan.CacheDir{Path: path, Host: host, Var: d.Setting(path, r.env.Getenv(d.Var)), Also: d.Also})
		}
		r.p.Caches = append(r.p.Caches, c)
	}
	if !private {
		return nil
	}
	if r.inHostWritable(StateDir(r.env)) {
		// agentbox's own state stays read-only in the box, and the
		// private caches would with it: the tools use their usual caches,
		// which lie in the writable home folder anyway.
		r.p.Skipped = append(r.p.Skipped, plan.Skip{Path: folder, Reason: "private caches not made: agentbox's state folder lies in a writable root (or the host's /tmp, shared) and stays read-only there", Origin: plan.Origin{Key: "default caches"}})
		for i := range r.p.Caches {
			if r.p.Caches[i].Mode == cache.Private {
				r.p.Caches[i].Dirs = nil
			}
		}
		return nil
	}
	// The folder is created (0700, and what is missing above it); each
	// tool creates its own folder in it, as it does at home.
	origin := plan.Origin{Key: "caches: private to workspace " + key}
	r.prepareChain(folder, origin)
	r.p.CacheDir = folder
	if !r.cachesMasked {
		add(folder, origin, "the workspace's own package and build caches")
	}
	return nil
}

// maskCaches hides every other workspace's private caches, as the
// workspace masking hides their folders, in every run (with --workspace
// or not: the caches of another project are another workspace's too): the
// caches folder is an empty read-only tmpfs but for this workspace's own
// caches, bound back writable. A cache holds what a workspace's agent
// fetched and built; another workspace's agent must not see it either.
func (r *resolver) maskCaches() {
	if r.env.GOOS == "windows" || r.opts.AllowBroad {
		return
	}
	private := false
	for _, t := range cache.ToolsFor(r.env.GOOS) {
		if mode, _ := r.cacheMode(t.Name); mode == cache.Private {
			private = true
		}
	}
	if !private {
		return
	}
	key := r.workspaceKey()
	folder := r.realMaybe(cache.Folder(StateDir(r.env), key))
	root := filepath.Dir(folder)
	if ws := r.p.Workspace.Root; ws != "" && (plan.Within(root, ws) || plan.Within(ws, root)) {
		return // a caches folder in (or around) the workspace root: the masking there decides
	}
	origin := plan.Origin{Key: "caches: private to workspace " + key}
	r.prepareChain(folder, origin)
	r.add(plan.Mount{Stage: plan.StageWorkspace, Op: plan.Tmpfs, Path: root, Access: plan.Hidden, Origin: origin, Note: "every other workspace's caches are hidden"})
	r.add(plan.Mount{Stage: plan.StageWorkspace, Op: plan.Bind, Path: folder, Access: plan.ReadWrite, Origin: origin, Note: "the workspace's own package and build caches"})
	r.add(plan.Mount{Stage: plan.StageWorkspace, Op: plan.RemountRO, Path: root, Access: plan.Hidden, Origin: origin, Note: "nothing can be written beside the workspace's caches"})
	r.cachesMasked = true
}

// prepareChain creates dir and every missing folder above it (0700),
// outermost first, so none can be made by someone else in between.
func (r *resolver) prepareChain(dir string, origin plan.Origin) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := r.env.FS.Lstat(d); err == nil {
			break
		}
		missing = append([]string{d}, missing...)
		if filepath.Dir(d) == d {
			break
		}
	}
	for _, d := range missing {
		r.p.Prepare = appendPrepare(r.p.Prepare, plan.Prepare{Path: d, Mode: 0o700, Origin: origin})
	}
}

func appendPrepare(list []plan.Prepare, d plan.Prepare) []plan.Prepare {
	for _, have := range list {
		if have.Path == d.Path {
			return list
		}
	}
	return append(list, d)
}

// cacheVars returns the variables the caches set, by name: they replace
// an inherited copy, and an env.set of the same name wins over them.
func (r *resolver) cacheVars() map[string]string {
	out := map[string]string{}
	for _, c := range r.p.Caches {
		for _, d := range c.Dirs {
			name, _, _ := cutEq(d.Var)
			out[name] = d.Var
		}
		for _, rd := range c.Reads {
			name, value, _ := cutEq(rd.Var)
			if rd.Prepend {
				value = prependList(value, r.toolDefault(name))
			}
			out[name] = name + "=" + value
		}
	}
	return out
}

// prependList puts first before the comma-separated list, once.
func prependList(first, list string) string {
	if list == "" || list == first {
		return first
	}
	if strings.HasPrefix(list, first+",") {
		return list
	}
	return first + "," + list
}

// toolDefault is the value a variable a cache read prepends to has for
// the tool without agentbox: its value in the environment or the tool's
// settings file, else the tool's default.
func (r *resolver) toolDefault(name string) string {
	if v := r.toolGetenv(name); v != "" {
		return v
	}
	if name == "GOPROXY" {
		return cache.GoProxyDefault
	}
	return ""
}

// toolGetenv looks a variable up as the tools read it: in the
// environment, and for go's own variables then in the file `go env -w`
// writes, which the go command reads beneath the environment (where the
// host's go keeps its caches, which proxy it uses).
func (r *resolver) toolGetenv(name string) string {
	if v := r.env.Getenv(name); v != "" {
		return v
	}
	if !strings.HasPrefix(name, "GO") {
		return ""
	}
	if r.goEnv == nil {
		r.goEnv = readGoEnv(r.env)
	}
	return r.goEnv[name]
}

// readGoEnv reads the go command's settings file: $GOENV, else
// $XDG_CONFIG_HOME/go/env (~/.config/go/env), NAME=VALUE lines. A file
// that cannot be read holds nothing.
func readGoEnv(env Env) map[string]string {
	out := map[string]string{}
	file := env.Getenv("GOENV")
	if file == "off" {
		return out
	}
	if !filepath.IsAbs(file) {
		dir := env.Getenv("XDG_CONFIG_HOME")
		if env.GOOS == "windows" {
			// go's os.UserConfigDir there: %APPDATA%.
			if dir = env.Getenv("APPDATA"); !filepath.IsAbs(dir) {
				dir = filepath.Join(env.Home, "AppData", "Roaming")
			}
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(env.Home, ".config")
		}
		file = filepath.Join(dir, "go", "env")
	}
	data, err := env.FS.ReadFile(file)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k != "" && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}

// cacheReads lets the box's go read the host's caches beneath its private
// ones, read-only (plan.CacheRead): the build cache through agentbox's
// GOCACHEPROG (cache.GoProg), which runs in the box and writes the private
// cache only, and the module downloads as a file:// proxy ahead of the
// usual ones. A module from there is checked against go.sum and the
// checksum database as one from the network is; whatever the box's
// variables say about those checks, they decide only what enters its own
// private cache, since the host's folders are read-only to everything in
// the box.
//
// Each read needs what it reads to exist, to be visible in the box, and
// not to lie in a folder the box can write; the build cache needs
// agentbox's executable visible in the box too. Without that read,
// GOCACHEPROG is set empty: a program set for the host's builds would
// take the box's builds out of the private cache.
func (r *resolver) cacheReads() error {
	for i := range r.p.Caches {
		c := &r.p.Caches[i]
		if c.Tool != "go" || c.Mode != cache.Private || len(c.Dirs) == 0 {
			continue
		}
		if r.env.GOOS == "windows" {
			// A program set for the host's builds would take the box's
			// builds out of the private cache.
			c.Reads = append(c.Reads, plan.CacheRead{Var: "GOCACHEPROG=", How: "the host's build cache is not read on Windows: the sandbox users cannot read the profile it lies in"})
			continue
		}
		build, mod := cacheDirOf(c, "GOCACHE"), cacheDirOf(c, "GOMODCACHE")
		if build != nil {
			c.Reads = append(c.Reads, r.goBuildRead(build))
		}
		if mod != nil {
			if rd, ok := r.goModRead(mod); ok {
				c.Reads = append(c.Reads, rd)
			}
		}
	}
	return nil
}

func cacheDirOf(c *plan.Cache, name string) *plan.CacheDir {
	for i := range c.Dirs {
		if n, _, _ := cutEq(c.Dirs[i].Var); n == name {
			return &c.Dirs[i]
		}
	}
	return nil
}

// goBuildRead is the read of the host's go build cache, or GOCACHEPROG
// set empty with the reason.
func (r *resolver) goBuildRead(build *plan.CacheDir) plan.CacheRead {
	off := func(why string) plan.CacheRead {
		return plan.CacheRead{Var: "GOCACHEPROG=", How: "the host's build cache " + build.Host + " is not read: " + why}
	}
	host, why := r.hostCacheReadable(build.Host)
	switch {
	case why != "":
		return off(why)
	case r.env.Self == "":
		return off("agentbox's own executable was not found")
	case !r.visible(r.env.Self):
		return off("agentbox's executable " + r.env.Self + " is not visible in the box")
	}
	v, ok := cache.GoProgSetting(r.env.Self, host, build.Path)
	if !ok {
		return off("a folder's name holds both kinds of quote or a line break")
	}
	return plan.CacheRead{Host: host, Var: v, How: "GOCACHEPROG (go 1.24 and later): agentbox, run by go in the box, finds what the host built; what the box builds goes to the private cache"}
}

// goModRead is the read of the host's module downloads.
func (r *resolver) goModRead(mod *plan.CacheDir) (plan.CacheRead, bool) {
	host, why := r.hostCacheReadable(filepath.Join(mod.Host, "cache", "download"))
	if why != "" {
		return plan.CacheRead{}, false
	}
	v, ok := cache.GoProxySetting(host)
	if !ok {
		return plan.CacheRead{}, false
	}
	return plan.CacheRead{Host: host, Var: v, Prepend: true, How: "a file:// proxy ahead of the usual ones: each module is checked against go.sum and the checksum database, then copied into the private module cache"}, true
}

// hostCacheReadable resolves a host cache folder and says why the box
// cannot read it as a host cache ("" when it can).
func (r *resolver) hostCacheReadable(p string) (string, string) {
	real, err := r.real(p)
	if err != nil {
		return p, "it does not exist"
	}
	if fi, err := r.env.FS.Stat(real); err != nil || !fi.IsDir() {
		return real, "it is not a folder"
	}
	if r.inWritable(real) {
		return real, "it lies in a folder the box can write"
	}
	if !r.visible(real) {
		return real, "it is hidden in the box"
	}
	return real, ""
}

// visible reports whether the box sees the host's path p at p, as the
// mounts leave it: the last mount at or above p decides.
func (r *resolver) visible(p string) bool {
	seen := false
	for _, m := range r.p.Mounts {
		if !plan.Within(p, m.Path) {
			continue
		}
		switch m.Op {
		case plan.ROBind, plan.Bind, plan.Pin:
			seen = m.Access != plan.Hidden && m.Src() == m.Path
		case plan.RemountRO:
			// Read-only now: what is there stays.
		default:
			seen = false // a fresh /dev or /proc, a tmpfs, a hidden path
		}
	}
	return seen
}

func cutEq(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// providerState works out how the provider's user configuration reaches the
// box. With the folder variable agentbox sets (CLAUDE_CONFIG_DIR=~/.claude)
// the CLI reads a copy in its folder, which agentbox refreshes from the
// host's file before every confined run (provider.Sync, three-way, the
// base kept in agentbox's state folder); the host's file is never written.
// With a folder variable the user set, the configuration in that folder is
// the one used outside the box as well: it names the MCP servers the CLI
// starts and the projects it trusts, so it stays read-only (providerInfo),
// and the plan says that the box's changes to it are not kept.
func (r *resolver) providerState(pr provider.Provider) {
	if pr.Config == "" || r.providerHome == "" {
		return
	}
	if r.userHomeVar {
		r.p.Warnings = append(r.p.Warnings, fmt.Sprintf("%s is set: %s's configuration %s is also the one used outside the box, so it stays read-only inside; what %s changes in it there is not kept",
			pr.HomeVar, pr.Title, filepath.Join(r.providerHome, filepath.Base(pr.Config)), pr.Title))
		return
	}
	if r.homeVar == "" {
		return
	}
	host, err := r.expand(Entry{Value: pr.Config, Origin: plan.Origin{Key: "provider " + pr.Name}})
	if err != nil {
		return
	}
	home := r.providerHome
	if real, err := r.real(home); err == nil {
		home = real
	}
	sum := sha256.Sum256([]byte(host))
	r.p.Provider.State = &plan.ProviderState{
		Host: host,
		Box:  filepath.Join(home, filepath.Base(pr.Config)),
		Base: filepath.Join(StateDir(r.env), "providers", pr.Name+"-"+hex.EncodeToString(sum[:4])+".json"),
	}
}
