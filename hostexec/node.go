package hostexec

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// maxNodePackages bounds the packages kept for the node programs the
// host runs (npx prettier in a hook, and every package it depends on):
// beyond it, the whole node_modules folder the program lives in is kept
// instead, so a large tree is never cut short.
var maxNodePackages = 1000

// nodeProgram keeps the packages the node program bin (a file of a
// node_modules/.bin folder) loads: the package its file lies in, and the
// packages that one depends on (dependencies, optionalDependencies and
// peerDependencies), transitively, where node's require finds them. A
// package is kept as one folder guard; a dependency that is not
// installed is checked after the run at every place require would look
// for it, so the box cannot install one there.
func (r *resolver) nodeProgram(bin, rule string) {
	modules := filepath.Dir(filepath.Dir(bin))
	var start []string
	for _, t := range r.binTargets(bin) {
		if pkg := packageRoot(t); pkg != "" {
			start = append(start, pkg)
		}
	}
	if len(start) == 0 {
		return
	}
	if r.nodeSeen == nil {
		r.nodeSeen = map[string]bool{}
	}
	if !r.nodePackages(start, rule) {
		r.add(modules, rule, "a program the host runs from it loads more packages than agentbox follows, or one whose package.json it cannot read: the whole folder is recorded before the run and put back after it")
	}
}

// basedirRef is a path a package manager's shell shim for a bin runs
// relative to its own folder (pnpm, cmd-shim): "$basedir/../x/bin/x.js".
var basedirRef = lazyRegexp(`\$basedir/([^"'\s;|&)]+)`)

// binTargets are the files bin runs: what its symlink leads to, or, for a
// shim script, the files it names relative to its folder.
func (r *resolver) binTargets(bin string) []string {
	fi, err := r.in.FS.Lstat(bin)
	if err != nil {
		return nil
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := r.in.FS.EvalSymlinks(bin); err == nil {
			return []string{t}
		}
		return nil
	}
	if !fi.Mode().IsRegular() || fi.Size() > 64<<10 {
		return nil
	}
	data, err := r.in.FS.ReadFile(bin)
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range basedirRef().FindAllStringSubmatch(string(data), -1) {
		p := filepath.Join(filepath.Dir(bin), filepath.FromSlash(m[1]))
		if t, err := r.in.FS.EvalSymlinks(p); err == nil && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// packageRoot returns the package folder file f lies in: the folder just
// below the innermost node_modules above it (@scope/name for a scoped
// package), or "" for a file in no package of a node_modules folder.
func packageRoot(f string) string {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(f)), "/")
	for i := len(parts) - 2; i >= 0; i-- {
		if parts[i] != "node_modules" {
			continue
		}
		n := i + 2 // parts[:n] is the package folder
		if strings.HasPrefix(parts[i+1], "@") {
			n++
		}
		if n >= len(parts) || strings.HasPrefix(parts[i+1], ".") {
			return "" // the file is no package's (node_modules/.bin/x)
		}
		return filepath.FromSlash(strings.Join(parts[:n], "/"))
	}
	return ""
}

// nodePackages keeps the packages start (folders) and what they depend
// on, breadth first, each once. It returns false where it must give up:
// more than maxNodePackages, or a package.json it cannot read.
func (r *resolver) nodePackages(start []string, rule string) bool {
	queue := append([]string(nil), start...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		real, err := r.in.FS.EvalSymlinks(p)
		if err != nil || r.nodeSeen[real] {
			continue
		}
		if r.region(real) == "" {
			// Out of the box's reach, and so is every folder require
			// looks in from there.
			continue
		}
		if len(r.nodeSeen) >= maxNodePackages {
			return false
		}
		r.nodeSeen[real] = true
		r.add(real, rule, "a package a program the host runs loads: recorded before the run, and what the box adds or changes in it is put back after it")
		deps, ok := r.packageDeps(real)
		if !ok {
			return false
		}
		for _, d := range deps {
			if found := r.requirePackage(real, d, rule); found != "" {
				queue = append(queue, found)
			}
		}
	}
	return true
}

// packageDeps returns the names of the packages package folder pkg
// depends on, sorted; false when its package.json cannot be read (one
// that does not exist declares nothing).
func (r *resolver) packageDeps(pkg string) ([]string, bool) {
	f := filepath.Join(pkg, "package.json")
	data, err := r.in.FS.ReadFile(f)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true
	}
	if err != nil || len(data) > 1<<20 {
		return nil, false
	}
	return PackageDeps(data)
}

// PackageDeps returns the names in the dependencies, optionalDependencies
// and peerDependencies of package.json data, sorted, each once; false for
// data that is not a package.json node could load. A name that is no
// package name (a path, "..") is left out: require never looks it up in
// node_modules.
func PackageDeps(data []byte) ([]string, bool) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, false
	}
	seen := map[string]bool{}
	var out []string
	for _, k := range []string{"dependencies", "optionalDependencies", "peerDependencies"} {
		raw, ok := doc[k]
		if !ok || string(raw) == "null" {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, false
		}
		for name := range m {
			if packageName(name) && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out, true
}

// packageName reports whether s is a name require looks up in
// node_modules: "name" or "@scope/name", no "." or ".." element.
func packageName(s string) bool {
	if s == "" || strings.ContainsAny(s, `\`+"\x00") {
		return false
	}
	parts := strings.Split(s, "/")
	if len(parts) > 2 || len(parts) == 2 && !strings.HasPrefix(parts[0], "@") || len(parts) == 1 && strings.HasPrefix(s, "@") {
		return false
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || p == "@" {
			return false
		}
	}
	return true
}

// requirePackage finds package name as require does from package folder
// from: from/node_modules/name, then the node_modules of each folder
// above (none inside a node_modules folder itself). The first one that
// exists is kept (a symlink with what it leads to) and returned; each
// place before it, outside from, is checked after the run, since a
// package the box installs there would be found first. At each place
// require tries name.js, name.json and name.node before the folder: those
// are kept, or checked after the run, too.
func (r *resolver) requirePackage(from, name, rule string) string {
	for d := from; ; d = filepath.Dir(d) {
		if filepath.Base(d) != "node_modules" {
			c := filepath.Join(d, "node_modules", filepath.FromSlash(name))
			if d != from {
				for _, ext := range []string{".js", ".json", ".node"} {
					if _, err := r.in.FS.Lstat(c + ext); err == nil {
						r.reach(c+ext, rule, "a file require finds before the package folder of this name")
						return ""
					}
					r.add(c+ext, rule, "a file of this name would be what a program the host runs loads instead of the package: moved away after the run")
				}
			}
			if _, err := r.in.FS.Lstat(c); err == nil {
				r.reach(c, rule, "")
				return c
			}
			if d != from {
				r.add(c, rule, "not installed: a package of this name, which a program the host runs would load, is moved away after the run")
			}
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}
