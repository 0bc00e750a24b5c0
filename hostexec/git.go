package hostexec

import (
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// HookNames are the hooks git runs (githooks(5)); a file of one of these
// names in a hooks folder is code git runs.
var HookNames = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
	"post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive",
	"post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
	"post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist",
	"p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit", "post-index-change",
}

// GitFiles are the files of a git folder that git obeys, besides config
// and hooks: each redirects git or adds configuration.
var GitFiles = []string{"commondir", "config.worktree"}

// ReadGitFile reads a ".git" file ("gitdir: PATH") and returns PATH as
// written, or "".
func ReadGitFile(data []byte) string {
	line, _, _ := strings.Cut(string(data), "\n")
	target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	return strings.TrimSpace(target)
}

// repo looks at the .git entry of the work tree top.
func (r *resolver) repo(top string) {
	entry := filepath.Join(top, ".git")
	fi, err := r.in.FS.Lstat(entry)
	if err != nil {
		return
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		r.add(entry, "git folder", "a symlink to the repository's folder: put back after the run if replaced")
		if t, err := r.in.FS.EvalSymlinks(entry); err == nil {
			r.gitDir(t, top, "")
		}
	case fi.IsDir():
		r.gitDir(entry, top, "")
	case fi.Mode().IsRegular():
		// A .git file names the repository's folder: kept, so the box
		// cannot point it at a folder of its own.
		r.add(entry, "git file", "gitdir: names the folder git uses for this work tree")
		data, ok := r.readControl(entry, "git")
		if !ok {
			return
		}
		t := ReadGitFile(data)
		if t == "" {
			return
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(top, t)
		}
		if real, err := r.in.FS.EvalSymlinks(t); err == nil {
			r.gitDir(real, top, entry)
		}
	}
}

// gitDir keeps what git obeys in the git folder g whose work tree top is
// top ("" for a bare repository): its config and its common folder's,
// config.worktree, commondir, the hooks wherever core.hooksPath leads and
// what the hooks run, and the same for its linked worktrees and
// submodules.
func (r *resolver) gitDir(g, top, file string) {
	g = filepath.Clean(g)
	if r.gitSeen[g] {
		return
	}
	r.gitSeen[g] = true
	if r.tooLong(g) {
		// Out of reach of every path-based step: the after-run check
		// finds it again and judges it as a repository the run made.
		return
	}
	if r.region(g) != "" {
		r.res.GitDirs = append(r.res.GitDirs, g)
	}
	common := g
	if data, ok := r.readControl(filepath.Join(g, "commondir"), "git"); ok {
		r.add(filepath.Join(g, "commondir"), "git commondir", "points git at another folder's config and hooks")
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(g, c)
		}
		if real, err := r.in.FS.EvalSymlinks(c); err == nil {
			common = real
		}
	}
	r.hooks(g, common, top)
	r.add(filepath.Join(common, "config"), "git config", "")
	r.configRefs(filepath.Join(common, "config"), 0)
	for _, d := range uniq(g, common) {
		if _, err := r.in.FS.Lstat(filepath.Join(d, "config.worktree")); err == nil {
			r.add(filepath.Join(d, "config.worktree"), "git config.worktree", "")
			r.configRefs(filepath.Join(d, "config.worktree"), 0)
		}
	}
	// What hides files or changes from git status and git diff: kept like
	// the config (one made during the run is moved away).
	for _, f := range []string{"info/exclude", "info/attributes"} {
		p := filepath.Join(common, filepath.FromSlash(f))
		if r.region(p) != "" {
			r.add(p, "git "+f, "hides files or changes from git status and git diff")
		}
	}
	if common != g {
		return // a linked worktree's folder: its worktrees and modules are the common folder's
	}
	if entries, err := r.readDir(filepath.Join(common, "worktrees")); err == nil {
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			admin := filepath.Join(common, "worktrees", e.Name())
			wtop := ""
			if data, err := r.in.FS.ReadFile(filepath.Join(admin, "gitdir")); err == nil {
				wtop = filepath.Dir(strings.TrimSpace(string(data)))
			}
			r.gitDir(admin, wtop, "")
		}
	}
	for _, m := range r.modules(filepath.Join(common, "modules"), 0) {
		mtop := ""
		if vars, err := r.config(filepath.Join(m, "config")); err == nil {
			if wt := Values(vars, "core", "worktree"); len(wt) > 0 {
				mtop = wt[len(wt)-1]
				if !filepath.IsAbs(mtop) {
					mtop = filepath.Join(m, mtop)
				}
			}
		}
		r.gitDir(m, filepath.Clean(mtop), "")
	}
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

func (r *resolver) readDir(dir string) ([]fs.DirEntry, error) { return r.in.FS.ReadDir(dir) }

// modules finds submodule git folders (those holding a config) under dir.
func (r *resolver) modules(dir string, depth int) []string {
	if depth > 8 {
		return nil
	}
	entries, err := r.readDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if _, err := r.in.FS.Lstat(filepath.Join(p, "config")); err == nil {
			out = append(out, p)
			out = append(out, r.modules(filepath.Join(p, "modules"), depth+1)...)
			continue
		}
		out = append(out, r.modules(p, depth+1)...)
	}
	return out
}

// config parses a git config file and the files it includes.
func (r *resolver) config(file string) ([]ConfigVar, error) {
	if vars, ok := r.cfgs[file]; ok {
		return vars, nil
	}
	r.cfgs[file] = nil // includes that loop stop here
	data, ok := r.readControl(file, "git")
	if !ok {
		return nil, fs.ErrNotExist
	}
	vars := ParseConfig(data).Vars
	out := append([]ConfigVar(nil), vars...)
	for _, inc := range Includes(vars) {
		p := expandHome(inc, r.in.Home)
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		more, _ := r.config(p)
		out = append(out, more...)
	}
	r.cfgs[file] = out
	return out, nil
}

// globalConfigs are the config files git reads besides the repository's.
func (r *resolver) globalConfigs() []string {
	var out []string
	get := r.in.Getenv
	if get == nil {
		get = func(string) string { return "" }
	}
	if get("GIT_CONFIG_NOSYSTEM") == "" {
		sys := get("GIT_CONFIG_SYSTEM")
		if sys == "" {
			sys = "/etc/gitconfig"
		}
		out = append(out, sys)
	}
	if g := get("GIT_CONFIG_GLOBAL"); g != "" {
		return append(out, g)
	}
	xdg := get("XDG_CONFIG_HOME")
	if xdg == "" || !filepath.IsAbs(xdg) {
		xdg = filepath.Join(r.in.Home, ".config")
	}
	return append(out, filepath.Join(xdg, "git", "config"), filepath.Join(r.in.Home, ".gitconfig"))
}

// hooks keeps every folder git may run hooks from for git folder g: the
// common folder's hooks/, and wherever core.hooksPath leads in any config
// git reads (all of them: which one wins can change after the run); and
// what the hooks in them run.
func (r *resolver) hooks(g, common, top string) {
	var values []string
	files := append(r.globalConfigs(), filepath.Join(common, "config"), filepath.Join(g, "config.worktree"), filepath.Join(common, "config.worktree"))
	for _, f := range files {
		vars, _ := r.config(f)
		values = append(values, Values(vars, "core", "hookspath")...)
	}
	def := filepath.Join(common, "hooks")
	dirs := []string{def}
	for _, v := range values {
		p := expandHome(v, r.in.Home)
		if !filepath.IsAbs(p) {
			base := top
			if base == "" {
				base = g
			}
			p = filepath.Join(base, p)
		}
		dirs = append(dirs, filepath.Clean(p))
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		if r.tooLong(d) {
			continue
		}
		if _, err := r.in.FS.Lstat(d); err != nil {
			if d == def && !r.canCreate(filepath.Dir(d)) {
				// Not the user's to create, so not the box's either
				// (a repository of another user under a broad
				// writable root): nothing to make or mount.
				r.add(d, "git hooks", "does not exist, and you cannot create anything in "+filepath.Dir(d)+", so neither can the box; checked after the run")
				continue
			}
			if d == def && r.region(d) != "" && !InPackageTree(rel(r.region(d), d)) && !r.askedFor(top, g) {
				// A repository the run was not started in (under a broad
				// writable root): nothing is made in it for good, only
				// an empty placeholder for the time of the run.
				r.block(filepath.Dir(d), d, "git hooks", true)
				continue
			}
			if d == def && r.region(d) != "" && !InPackageTree(rel(r.region(d), d)) {
				// Created empty, for real, so it can be bound
				// read-only: what git init makes anyway.
				r.res.Create = append(r.res.Create, d)
				r.guards[d] = &plan.Guard{Path: d, Rule: "git hooks", Kind: plan.KindDir, Keep: plan.KeepReadOnly, Note: "created empty"}
				r.order = append(r.order, d)
				continue
			}
			r.add(d, "git hooks", "core.hooksPath leads here; it does not exist yet, so what is created there is checked after the run")
			r.husky(d)
			continue
		}
		r.add(d, "git hooks", "")
		r.husky(d)
		r.hookScripts(d, top)
	}
}

// husky keeps what husky's hooks run: husky points core.hooksPath at
// .husky/_, whose hooks run the same-named scripts in .husky.
func (r *resolver) husky(d string) {
	if filepath.Base(d) != "_" {
		return
	}
	parent := filepath.Dir(d)
	if _, err := r.in.FS.Lstat(parent); err != nil {
		return
	}
	r.add(parent, "git hooks (husky)", "the hooks in _/ run the scripts here: recorded, and what is added or changed is put back after the run")
	if g, ok := r.guards[parent]; ok && g.Keep == plan.KeepReadOnly {
		// The scripts are kept one by one; the folder stays writable
		// (husky's install rewrites _/), and is checked after the run.
		g.Keep = plan.KeepRestored
	}
	for _, n := range HookNames {
		p := filepath.Join(parent, n)
		if _, err := r.in.FS.Lstat(p); err == nil {
			r.add(p, "git hook script (husky)", "")
		}
	}
}

// hookScripts keeps what the hooks in folder d name: files in the work
// tree they run, and the configuration of the hook manager they call.
func (r *resolver) hookScripts(d, top string) {
	entries, err := r.readDir(d)
	if err != nil {
		return
	}
	managers := map[int]bool{}
	var pythons []string // the interpreters pre-commit's hooks run
	module := false      // a hook imports pre_commit with the work tree top first on the module path
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sample") || e.IsDir() {
			continue
		}
		hook := filepath.Join(d, e.Name())
		if fi, err := r.in.FS.Stat(hook); err == nil && fi.Size() > maxControl && r.compiled(hook) {
			continue // a compiled hook names no script of a manager's
		}
		data, ok := r.readControl(hook, "git")
		if !ok {
			continue
		}
		for i, m := range hookManagers {
			if strings.Contains(string(data), m.Mark) {
				managers[i] = true
			}
		}
		for _, m := range installPython().FindAllStringSubmatch(string(data), -1) {
			pythons = append(pythons, m[1])
		}
		if preCommitModule().Match(data) {
			module = true
		}
		if top == "" {
			continue
		}
		r.npx(string(data), top, "git hook (named by "+filepath.Join(d, e.Name())+")")
		x := Expander{Home: r.in.Home, Dir: top}
		for _, w := range Words(string(data)) {
			q, ok := x.Path(w)
			if !ok {
				continue
			}
			if fi, err := r.in.FS.Stat(q); err == nil && fi.Mode().IsRegular() {
				r.add(q, "git hook script (named by "+filepath.Join(d, e.Name())+")", "")
			}
		}
	}
	for _, py := range pythons {
		r.interpreter(py)
	}
	if top == "" {
		return
	}
	if module {
		r.preCommitModules(top, pythons)
	}
	for i := range hookManagers {
		if !managers[i] {
			continue
		}
		for _, f := range hookManagers[i].Files {
			p := filepath.Join(top, filepath.FromSlash(f))
			if _, err := r.in.FS.Lstat(p); err == nil {
				r.add(p, "git hook manager "+hookManagers[i].Mark, "the installed hooks run what it says")
				r.follow(Spec{Program: hookManagers[i].Mark, Refs: RefsEntries}, p)
			} else if r.isProject(top) {
				r.blockAs(top, p, "git hook manager "+hookManagers[i].Mark, false, true)
			}
		}
	}
}

// installPython is the interpreter pre-commit's installed hook runs.
var installPython = lazyRegexp(`INSTALL_PYTHON=['"]?([^'"\s]+)`)

// preCommitModule matches a hook that imports pre_commit from an
// interpreter that puts its current folder first on the module path:
// pre-commit's installed hook ("$INSTALL_PYTHON" -mpre_commit), python -m
// pre_commit, python -c "import pre_commit…".
var preCommitModule = lazyRegexp(`-m\s*pre_commit\b|import\s+pre_commit\b|from\s+pre_commit\b`)

// interpreter keeps what a hook's interpreter runs at its start, when it
// lies within the box's reach: the interpreter itself, and for one in a
// virtual environment its pyvenv.cfg (which names the base interpreter)
// and the .pth files and sitecustomize/usercustomize modules of its
// site-packages, which run code in every start of it.
func (r *resolver) interpreter(py string) {
	if !filepath.IsAbs(py) {
		return
	}
	rule := "git hook interpreter (pre-commit)"
	r.reach(py, rule, "")
	venv := filepath.Dir(filepath.Dir(py))
	if _, err := r.in.FS.Lstat(filepath.Join(venv, "pyvenv.cfg")); err != nil {
		return
	}
	r.reach(filepath.Join(venv, "pyvenv.cfg"), rule, "names the interpreter the environment runs")
	lib, err := r.readDir(filepath.Join(venv, "lib"))
	if err != nil {
		return
	}
	for _, e := range lib {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "python") {
			continue
		}
		site := filepath.Join(venv, "lib", e.Name(), "site-packages")
		if _, err := r.in.FS.Lstat(site); err != nil || r.region(site) == "" {
			continue
		}
		if _, ok := r.guards[site]; !ok {
			r.guards[site] = &plan.Guard{Path: site, Rule: rule, Kind: plan.KindDir, Keep: plan.KeepPthDir,
				Note: "the site-packages of the interpreter the git hooks run: a .pth file or a sitecustomize/usercustomize module the box adds or changes here runs at every start of it, so it is moved away after the run"}
			r.order = append(r.order, site)
		}
	}
}

// askedFor reports whether the repository with work tree top (or, bare,
// git folder g) is one the run was started for: it lies in the project
// (nested ones too) or holds it. Without a project (Input.Project) every
// one counts.
func (r *resolver) askedFor(top, g string) bool {
	if r.in.Project == "" {
		return true
	}
	if top == "" {
		top = g
	}
	within := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)) }
	return within(top, r.in.Project) || within(r.in.Project, top)
}

func (r *resolver) isProject(dir string) bool {
	for _, p := range r.in.Projects {
		if p == dir {
			return true
		}
	}
	return false
}
