package hostexec

import (
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// ruleModuleTop is the rule of the guards for the modules pre-commit's
// hook would import from the top of the work tree.
const ruleModuleTop = "pre-commit hook module (python -m, run at the work tree top)"

// preCommitModules keeps the top of work tree top free of modules
// pre-commit's installed hook would import instead of its own: the hook
// runs "$INSTALL_PYTHON -mpre_commit" there, and python -m puts the
// current folder first on the module path (PYTHONSAFEPATH would stop that,
// but the hook runs with the user's environment, not agentbox's). The
// names are pre_commit, every standard library module, and every
// top-level module of the site-packages of the interpreters the hooks
// name (pre-commit's own dependencies among them); each as a source,
// bytecode or extension module, or a package folder. One that does not
// exist is checked after the run (what the box makes there is moved
// away); one that does, or a package's __init__, is kept like any other
// guard. A folder of such a name without an __init__ (a namespace
// portion, such as a folder of tests) shadows nothing: only its __init__
// is checked.
func (r *resolver) preCommitModules(top string, pythons []string) {
	if r.region(top) == "" || r.pyTops[top] {
		return
	}
	if r.pyTops == nil {
		r.pyTops = map[string]bool{}
	}
	r.pyTops[top] = true
	suffixes := moduleSuffixes(r.in.GOOS, r.pythonVersions(pythons))
	// What is at the top, listed once: a name not there is a missing
	// guard without a look of its own (thousands of names). A top that
	// cannot be listed is looked at name by name.
	var there map[string]bool
	if entries, err := r.in.FS.ReadDir(top); err == nil {
		there = map[string]bool{}
		for _, e := range entries {
			there[e.Name()] = true
		}
	}
	keep := func(name string) {
		p := filepath.Join(top, name)
		if there == nil || there[name] {
			r.add(p, ruleModuleTop, "")
		} else if _, ok := r.guards[p]; !ok && !r.skipped(p) {
			r.guards[p] = &plan.Guard{Path: p, Rule: ruleModuleTop, Kind: plan.KindMissing, Keep: plan.KeepChecked}
			r.order = append(r.order, p)
		}
	}
	for _, name := range r.moduleNames(pythons) {
		for _, s := range suffixes {
			keep(name + s)
		}
		dir := filepath.Join(top, name)
		if there != nil && !there[name] {
			keep(name)
			continue
		}
		fi, err := r.in.FS.Stat(dir)
		if err != nil {
			r.add(dir, ruleModuleTop, "")
			continue
		}
		if !fi.IsDir() {
			continue // a file without an ending is no module
		}
		regular := false
		for _, s := range suffixes {
			if _, err := r.in.FS.Lstat(filepath.Join(dir, "__init__"+s)); err == nil {
				regular = true
			}
		}
		if regular {
			// A package of the project's under a name the hook imports:
			// its every module runs in the hook.
			r.add(dir, ruleModuleTop, "a package of this name here is what pre-commit's hook imports")
			continue
		}
		for _, s := range suffixes {
			r.add(filepath.Join(dir, "__init__"+s), ruleModuleTop, "")
		}
	}
	// The notes add leaves empty.
	for _, p := range r.order {
		g := r.guards[p]
		if g.Rule != ruleModuleTop || g.Note != "" {
			continue
		}
		g.Note = "pre-commit's hook would import a module of this name from the top of the work tree before its own or the standard library's"
		if g.Kind == plan.KindMissing {
			g.Note += ": what the box makes here is moved away after the run"
		}
	}
}

// moduleNames are the top-level module names the hook's interpreter
// imports: pre_commit, the standard library's, and those of the
// site-packages the interpreters pythons may read; sorted.
func (r *resolver) moduleNames(pythons []string) []string {
	seen := map[string]bool{"pre_commit": true}
	for _, n := range pythonStdlib {
		seen[n] = true
	}
	for _, site := range r.siteDirs(pythons) {
		entries, err := r.in.FS.ReadDir(site)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if n := moduleName(e.Name(), e.IsDir()); n != "" {
				seen[n] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// moduleName is the module an entry of a site-packages folder provides
// (a package folder, x.py, x.pyc, x.cpython-311-x86_64-linux-gnu.so), or
// "" for none (metadata, .pth files, caches).
func moduleName(entry string, dir bool) string {
	n := entry
	if !dir {
		i := strings.IndexByte(entry, '.')
		if i < 0 {
			return ""
		}
		n = entry[:i]
		switch ext := entry[strings.LastIndexByte(entry, '.'):]; ext {
		case ".py", ".pyc", ".so", ".pyd":
		default:
			return ""
		}
	}
	if n == "" || n == "__pycache__" || !identifier(n) {
		return ""
	}
	return n
}

// identifier reports whether s is an ASCII Python identifier.
func identifier(s string) bool {
	for i, c := range s {
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// siteDirs are the site-packages folders the interpreters pythons may
// read: a virtual environment's own, and the system's and the user's (a
// system interpreter, or a virtual environment made with
// --system-site-packages; read for every version installed, which is
// more than one interpreter reads, never less).
func (r *resolver) siteDirs(pythons []string) []string {
	var bases []string
	system := len(pythons) == 0
	for _, py := range pythons {
		if !filepath.IsAbs(py) {
			system = true
			continue
		}
		venv := filepath.Dir(filepath.Dir(py))
		data, err := r.in.FS.ReadFile(filepath.Join(venv, "pyvenv.cfg"))
		if err != nil {
			system = true
			continue
		}
		bases = append(bases, filepath.Join(venv, "lib"))
		if !strings.Contains(strings.ReplaceAll(string(data), " ", ""), "include-system-site-packages=false") {
			system = true
		}
	}
	if system {
		bases = append(bases, "/usr/lib", "/usr/local/lib", filepath.Join(r.in.Home, ".local", "lib"))
	}
	var out []string
	for _, b := range bases {
		entries, err := r.in.FS.ReadDir(b)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "python") {
				continue
			}
			for _, s := range []string{"site-packages", "dist-packages"} {
				out = append(out, filepath.Join(b, e.Name(), s))
			}
		}
	}
	return out
}

// pythonVersions are the versions ("3.11") of the interpreters pythons,
// as their file names (after symlinks) or their environments' lib
// folders say.
func (r *resolver) pythonVersions(pythons []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		v, ok := strings.CutPrefix(name, "python")
		if ok && strings.Count(v, ".") == 1 && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, py := range pythons {
		if real, err := r.in.FS.EvalSymlinks(py); err == nil {
			add(filepath.Base(real))
		}
		if entries, err := r.in.FS.ReadDir(filepath.Join(filepath.Dir(filepath.Dir(py)), "lib")); err == nil {
			for _, e := range entries {
				add(e.Name())
			}
		}
	}
	sort.Strings(out)
	return out
}

// moduleSuffixes are the file name endings under which an interpreter
// imports a module from a folder (importlib.machinery's
// EXTENSION_SUFFIXES, SOURCE_SUFFIXES and BYTECODE_SUFFIXES), with the
// tagged extension suffix of each version given (for the processor
// agentbox runs on).
func moduleSuffixes(goos string, versions []string) []string {
	if goos == "windows" {
		out := []string{".py", ".pyc", ".pyd"}
		for _, v := range versions {
			out = append(out, ".cp"+strings.ReplaceAll(v, ".", "")+"-win_amd64.pyd")
		}
		return out
	}
	out := []string{".py", ".pyc", ".so", ".abi3.so"}
	triplet := map[string]string{
		"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "386": "i386-linux-gnu",
		"arm": "arm-linux-gnueabihf", "riscv64": "riscv64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu",
		"s390x": "s390x-linux-gnu", "loong64": "loongarch64-linux-gnu",
	}[runtime.GOARCH]
	for _, v := range versions {
		tag := "cpython-" + strings.ReplaceAll(v, ".", "")
		if goos == "darwin" {
			out = append(out, "."+tag+"-darwin.so")
		} else if triplet != "" {
			out = append(out, "."+tag+"-"+triplet+".so")
		}
	}
	return out
}
