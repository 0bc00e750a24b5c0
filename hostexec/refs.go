package hostexec

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/plan"
)

// follow keeps what control file f (of spec s) names that a host program
// runs or reads with it (s.Refs): a file it loads is kept like f itself
// (one that does not exist yet is checked after the run), a folder it puts
// on PATH is watched for programs that would shadow the user's own.
func (r *resolver) follow(s Spec, f string) {
	if s.Refs == RefsNone {
		return
	}
	data, ok := r.readControl(f, s.Program)
	if !ok {
		return
	}
	dir := filepath.Dir(f)
	rule := s.Program + " (named by " + f + ")"
	tooComplex := func(err error) {
		if errors.Is(err, errTOMLTooComplex) {
			r.unreadable(f, s.Program, err)
		}
	}
	keep := func(p string) {
		if p = r.path(p, dir); p != "" && p != f && !r.isDir(p) {
			r.reach(p, rule, "")
		}
	}
	pathDir := func(p string) {
		if p = r.path(p, dir); p != "" {
			r.pathDir(p, rule)
		}
	}
	switch s.Refs {
	case RefsShell:
		r.sourced(f, 0)
	case RefsDirenv:
		r.direnv(data, dir, keep, pathDir)
		// direnv runs it as bash in its folder: what it names by any path,
		// bare names included, may be run or read.
		r.named(data, dir, true, keep)
	case RefsYarnrc:
		vals := yamlValues(data, "yarnPath", "yarn-path", "path")
		if strings.HasSuffix(f, ".yml") {
			vals = append(vals, yarnValues(data)...)
		}
		for _, v := range vals {
			keep(v)
		}
	case RefsRustup:
		if strings.HasSuffix(f, ".toml") {
			var doc struct {
				Toolchain struct{ Path string } `toml:"toolchain"`
			}
			if err := decodeTOML(string(data), &doc); err == nil && doc.Toolchain.Path != "" {
				keep(doc.Toolchain.Path)
			} else {
				tooComplex(err)
			}
		} else if line := strings.TrimSpace(string(data)); strings.ContainsAny(line, "/\\") {
			keep(line)
		} else {
			// rustup reads a legacy file of more than a channel name as
			// TOML.
			var doc struct {
				Toolchain struct{ Path string } `toml:"toolchain"`
			}
			if err := decodeTOML(string(data), &doc); err == nil && doc.Toolchain.Path != "" {
				keep(doc.Toolchain.Path)
			} else {
				tooComplex(err)
			}
		}
	case RefsBunfig:
		var doc map[string]any
		err := decodeTOML(string(data), &doc)
		tooComplex(err)
		if err == nil {
			for _, v := range tomlStrings(doc, "preload") {
				keep(v)
			}
			if t, ok := doc["test"].(map[string]any); ok {
				for _, v := range tomlStrings(t, "preload") {
					keep(v)
				}
			}
		}
	case RefsMise:
		tooComplex(r.mise(data, dir, keep, pathDir))
	case RefsHgrc:
		for _, v := range HgrcRefs(data) {
			keep(v)
		}
	case RefsToolVer:
		for _, w := range strings.Fields(string(data)) {
			if p, ok := strings.CutPrefix(w, "path:"); ok {
				keep(p)
			}
		}
	case RefsEntries:
		x := Expander{Home: r.in.Home, Dir: dir}
		for _, v := range yamlValues(data, "entry", "run") {
			for _, w := range Words(v) {
				if q, ok := x.Path(w); ok {
					r.reach(q, rule, "")
				}
			}
			r.npx(v, dir, rule)
		}
	}
}

// isDir reports whether p is a folder (symlinks followed). A reference
// to a folder keeps nothing by itself: a host program reads or runs the
// files in it it names, which the caller keeps; a folder kept as a whole
// would be a way for the box to make any folder, the project's own,
// read-only or checked in every later run.
func (r *resolver) isDir(p string) bool {
	fi, err := r.in.FS.Stat(p)
	return err == nil && fi.IsDir()
}

// named keeps every file that shell text (a file a host program runs as a
// script) names as a word: a script it runs by its path, a file it reads
// with cat or grep or exports from. What a script does with a file cannot
// be known from its text, so every file it names is kept; one that does
// not exist yet is kept too when the word is a path (it holds a slash or
// starts with a dot: `[ -x ./local.sh ] && ./local.sh`), since the box
// could make it. Bare names (no slash) count only when bare is set: the
// script runs in its own folder.
func (r *resolver) named(data []byte, dir string, bare bool, keep func(string)) {
	x := Expander{Home: r.in.Home, Dir: dir}
	sep := func(c rune) bool {
		return c == ' ' || c == '\t' || c == '\r' || strings.ContainsRune("|;&()<>`=,:{}", c)
	}
	for _, line := range strings.Split(string(data), "\n") {
		for _, w := range strings.FieldsFunc(line, sep) {
			w = strings.Trim(w, `"'`)
			if w == "" || w[0] == '-' || w == "." || w == ".." || strings.ContainsAny(w, "*?[") {
				continue
			}
			pathLike := strings.Contains(w, "/") || w[0] == '.'
			if !strings.Contains(w, "/") {
				if !bare {
					continue
				}
				w = "./" + w
			}
			q, ok := x.Path(w)
			if !ok {
				continue
			}
			fi, err := r.in.FS.Stat(q)
			switch {
			case err == nil && fi.Mode().IsRegular():
				keep(q)
			case pathLike && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)):
				keep(q) // missing: checked after the run
			}
		}
	}
}

// path makes p (as a file names it) absolute: ~ and $HOME expand, a
// relative path is taken from dir; "" for anything else with a variable.
func (r *resolver) path(p, dir string) string {
	p = strings.Trim(strings.TrimSpace(p), `"'`)
	if p == "" {
		return ""
	}
	x := Expander{Home: r.in.Home, Dir: dir, Vars: map[string]string{"PWD": dir}}
	if !strings.Contains(p, "/") {
		p = "./" + p
	}
	q, ok := x.Path(p)
	if !ok {
		return ""
	}
	return q
}

// pathDir watches folder d, which a host program puts on PATH: after the
// run, a program the box added or changed there under the name of a
// command on the user's PATH is moved away (plan.KeepPathDir).
func (r *resolver) pathDir(d, rule string) {
	d = filepath.Clean(d)
	if r.region(d) == "" || r.skipped(d) {
		return
	}
	if _, ok := r.guards[d]; ok {
		return
	}
	r.guards[d] = &plan.Guard{Path: d, Rule: rule, Kind: plan.KindDir, Keep: plan.KeepPathDir,
		Note: "on PATH in the folder's shell: a program the box adds or changes here under the name of a command on your PATH (git, ls, make …) is moved away after the run"}
	if _, err := r.in.FS.Lstat(d); err != nil {
		r.guards[d].Kind = plan.KindMissing
	}
	r.order = append(r.order, d)
}

// direnv keeps what an .envrc loads (direnv's stdlib: source_env,
// source_env_if_exists, source_up, dotenv, dotenv_if_exists, use nix,
// use flake, and ". FILE") and watches what it puts on PATH (PATH_add,
// path_add, load_prefix, layout node and python).
func (r *resolver) direnv(data []byte, dir string, keep, pathDir func(string)) {
	for _, src := range Sourced(data) {
		keep(src)
	}
	for _, line := range strings.Split(string(data), "\n") {
		words := Words(line)
		for i, w := range words {
			args := words[i+1:]
			arg := func(n int, def string) string {
				if n < len(args) && !strings.HasPrefix(args[n], "-") {
					return args[n]
				}
				return def
			}
			switch w {
			case "source_env", "source_env_if_exists":
				p := arg(0, "")
				if p == "" {
					continue
				}
				keep(p)
				// A folder means its .envrc.
				keep(filepath.Join(p, ".envrc"))
			case "source_up", "source_up_if_exists":
				name := arg(0, ".envrc")
				for d := filepath.Dir(dir); d != filepath.Dir(d); d = filepath.Dir(d) {
					keep(filepath.Join(d, name))
				}
			case "dotenv", "dotenv_if_exists":
				keep(arg(0, ".env"))
			case "PATH_add", "MANPATH_add":
				for _, a := range args {
					if a == "&&" || a == "||" {
						break
					}
					pathDir(a)
				}
			case "path_add":
				pathDir(arg(1, ""))
			case "load_prefix":
				if p := arg(0, ""); p != "" {
					pathDir(filepath.Join(p, "bin"))
					pathDir(filepath.Join(p, "sbin"))
				}
			case "layout":
				switch arg(0, "") {
				case "node":
					pathDir("node_modules/.bin")
				case "python", "python2", "python3", "pipenv", "anaconda", "pyenv", "uv":
					pathDir(".direnv")
					pathDir(".venv/bin")
				case "go":
					pathDir(".direnv/bin")
				case "ruby", "perl":
					pathDir(".direnv/bin")
				}
			case "use":
				switch arg(0, "") {
				case "nix":
					keep("shell.nix")
					keep("default.nix")
				case "flake":
					keep("flake.nix")
					keep("flake.lock")
				}
			case "use_nix":
				keep("shell.nix")
				keep("default.nix")
			case "use_flake":
				keep("flake.nix")
				keep("flake.lock")
			case "watch_file", "watch_dir":
				// Only makes direnv reload.
			}
		}
	}
}

// mise keeps what a mise configuration loads on cd ([env] _.source and
// _.file), the scripts its [hooks] name, and watches [env] _.path.
func (r *resolver) mise(data []byte, dir string, keep, pathDir func(string)) error {
	var doc map[string]any
	if err := decodeTOML(string(data), &doc); err != nil {
		return err
	}
	if env, ok := doc["env"].(map[string]any); ok {
		if under, ok := env["_"].(map[string]any); ok {
			for _, v := range tomlStrings(under, "source") {
				keep(v)
			}
			for _, v := range tomlStrings(under, "file") {
				keep(v)
			}
			for _, v := range tomlStrings(under, "path") {
				pathDir(v)
			}
		}
	}
	if hooks, ok := doc["hooks"].(map[string]any); ok {
		x := Expander{Home: r.in.Home, Dir: dir}
		for k := range hooks {
			for _, v := range tomlStrings(hooks, k) {
				for _, w := range Words(v) {
					if q, ok := x.Path(w); ok {
						keep(q)
					}
				}
			}
		}
	}
	return nil
}

// tomlStrings returns the strings of doc[key], a string or a list of
// strings (or of tables with a "path" or "run"), at one level.
func tomlStrings(doc map[string]any, key string) []string {
	var out []string
	var add func(v any)
	add = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				add(e)
			}
		case []map[string]any:
			for _, e := range x {
				add(map[string]any(e))
			}
		case map[string]any:
			for _, k := range []string{"path", "run", "script", "value"} {
				if s, ok := x[k].(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	add(doc[key])
	return out
}

// yamlKey matches "key: value" or "- key: value" in a YAML line, and a
// Yarn 1 "key value" line.
var yamlKey = lazyRegexp(`^\s*(?:-\s+)?["']?([A-Za-z][A-Za-z0-9_-]*)["']?\s*[:=]?\s+(.+?)\s*$`)

// yamlValues returns the values of the keys named in a YAML (or .yarnrc)
// file, at any depth, as written (quotes removed); a list item under a
// "plugins:" key counts as a path. It reads lines, not YAML: what it
// misses is a value spread over several lines, which none of the keys it
// is asked for uses in practice.
func yamlValues(data []byte, keys ...string) []string {
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	var out []string
	inPlugins := false
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "#") {
			continue
		}
		if !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "-") {
			inPlugins = strings.HasPrefix(trim, "plugins:")
		}
		if inPlugins && strings.HasPrefix(trim, "- ") && !strings.Contains(trim, ":") {
			out = append(out, strings.Trim(strings.TrimSpace(trim[2:]), `"'`))
			continue
		}
		m := yamlKey().FindStringSubmatch(line)
		if m == nil || !want[m[1]] {
			continue
		}
		v := strings.TrimSpace(m[2])
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		if v != "" && v != "|" && v != ">" {
			out = append(out, v)
		}
	}
	return out
}

// npxTools are the words after which a command line names a program of
// the project's node_modules/.bin.
var npxTools = map[string]int{"npx": 1, "bunx": 1, "pnpx": 1, "pnpm": 2, "yarn": 2, "npm": 2}

// npx keeps the programs a command line runs from the project's
// node_modules/.bin (npx prettier, pnpm exec eslint, yarn dlx x, …), what
// they link to, and the packages they load (nodeProgram): a program there
// is replaced by any install, so the box can rewrite it.
func (r *resolver) npx(cmd, dir, rule string) {
	words := Words(cmd)
	for i, w := range words {
		n, ok := npxTools[filepath.Base(w)]
		if !ok {
			continue
		}
		j := i + 1
		if n == 2 {
			// pnpm exec X, yarn dlx X, npm exec X, yarn X (a bin of the
			// project's).
			if j < len(words) && (words[j] == "exec" || words[j] == "dlx" || words[j] == "x") {
				j++
			} else if filepath.Base(w) != "yarn" {
				continue
			}
		}
		for j < len(words) && strings.HasPrefix(words[j], "-") {
			j++
		}
		if j >= len(words) {
			continue
		}
		name := words[j]
		if at := strings.LastIndex(name, "@"); at > 0 {
			name = name[:at] // prettier@3 -> prettier
		}
		if k := strings.LastIndex(name, "/"); k >= 0 {
			name = name[k+1:] // @scope/tool -> tool
		}
		if name == "" || name == "." || name == ".." {
			continue
		}
		bin := filepath.Join(dir, "node_modules", ".bin", name)
		r.reach(bin, rule, "run by npx and the like: a program there is rewritten by any install")
		r.nodeProgram(bin, rule)
	}
}

// versionLine is one line a version pin may hold: a version or a name, no
// path.
var versionLine = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9._+*~^<>=@-]*(\s+[A-Za-z0-9][A-Za-z0-9._+*~^<>=@:-]*)*$`)

// IsHarmless reports whether data, the content of a new control file of
// spec path rel (relative, as plan.HostExec.Controls lists it), makes its
// program run nothing: such a file may stay after the run.
func IsHarmless(rel string, data []byte) bool {
	var kind Harmless
	for _, s := range projectRegistry {
		if s.Path == rel {
			kind = s.Harmless
		}
	}
	if kind == HarmlessNever || len(data) > 64<<10 {
		return false
	}
	text := string(data)
	switch kind {
	case HarmlessVersion:
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if !versionLine().MatchString(line) || strings.Contains(line, "path:") || strings.Contains(line, "..") {
				return false
			}
		}
		return true
	case HarmlessRustup:
		return RustToolchainHarmless(data, strings.HasSuffix(rel, ".toml"))
	case HarmlessYarnrc:
		if strings.HasSuffix(rel, ".yml") {
			return YarnrcYMLHarmless(data)
		}
		return YarnrcHarmless(data)
	}
	return false
}
