package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"

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
	if r.env.GOOS == "windows" {
		// The tools keep their caches elsewhere there (%LOCALAPPDATA%),
		// and the Windows backend grants folders by ACL; not done yet.
		return nil
	}
	key := r.workspaceKey()
	folder := r.realMaybe(cache.Folder(StateDir(r.env), key))
	private := false
	for _, t := range cache.Tools() {
		mode, origin := r.cacheMode(t.Name)
		c := plan.Cache{Tool: t.Name, Mode: mode, Origin: origin}
		for _, d := range t.Dirs {
			host := d.Host(r.env.Home, r.env.Getenv)
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
	for _, t := range cache.Tools() {
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
	}
	return out
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
