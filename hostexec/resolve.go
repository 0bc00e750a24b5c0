package hostexec

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/provider"
	"github.com/agentbox/agentbox/trace"
)

// FS is what the resolver reads. It never writes.
type FS interface {
	Lstat(name string) (fs.FileInfo, error)
	Stat(name string) (fs.FileInfo, error)
	ReadFile(name string) ([]byte, error)
	Readlink(name string) (string, error)
	EvalSymlinks(name string) (string, error)
	ReadDir(name string) ([]fs.DirEntry, error)
}

// Own is a path agentbox itself obeys (a loaded policy file, its
// configuration and trust store) that the caller keeps read-only.
type Own struct {
	Path string
	Rule string
}

// Input is the world the resolver looks at.
type Input struct {
	// GOOS decides what the after-run check can do: placeholders and the
	// watched folders (path dir, pth dir) are Linux only; on Windows the
	// backend decides how the rest is kept after the run.
	GOOS string
	Home string
	// Getenv reads the caller's environment (XDG_CONFIG_HOME,
	// GIT_CONFIG_GLOBAL, the agent CLIs' folder variables).
	Getenv func(string) string
	FS     FS
	// Regions are the folders the box can write (real paths).
	Regions []string
	// Skip are paths in Regions the box cannot write (denied or read-only
	// paths): not searched.
	Skip []string
	// Project is the folder the run was started for (the git top-level of
	// its working folder, real path): a missing .git/hooks is made for
	// good only in repositories in it, or the one holding it; "" for
	// every one.
	Project string
	// Projects are the Regions that are project folders: a missing
	// project control file at their top is blocked for the run.
	Projects []string
	// Providers are the agent CLIs agentbox knows, declared ones included.
	Providers []provider.Provider
	// ProviderHomes are the CLIs' own folders by name, where they differ
	// from the registry's (a HomeVar the user set); real paths.
	ProviderHomes map[string]string
	// Own are agentbox's own files within the Regions (loaded policy
	// files).
	Own []Own
	// Made are folders agentbox makes before the run: taken as existing.
	Made []string
	// MaxDirs bounds the folders the search keeps in memory; 0 means
	// DefaultMaxDirs.
	MaxDirs int
	// State is agentbox's state folder: the index of the last search of
	// each root is read from there (IndexFile); "" for none.
	State string
}

// Result is what the registry found within the box's reach.
type Result struct {
	// Guards are the guarded paths, parents before children.
	Guards []plan.Guard
	// Placeholders are the empty placeholders the blocked guards need.
	Placeholders []plan.Prepare
	// Create are missing .git/hooks folders: created empty, for real, so
	// they can be bound read-only (an empty hooks folder is what git init
	// makes anyway).
	Create []string
	// GitDirs are the git folders found (repositories, worktrees' and
	// submodules' folders).
	GitDirs []string
	// Metadata is the rule for each repository's metadata folder found
	// (plan.HostExec.Metadata).
	Metadata []plan.Metadata
	// Visited is how many files and folders the writable roots hold.
	Visited int64
	// Folders is how many folders they hold, Listed how many of those the
	// search listed (the others were unchanged since the last search).
	Folders, Listed int
	// Shared is how many regular files in them have more than one link
	// and could be written by the box (plan.Tree.Shared).
	Shared int
	// Noted are the names the search notes in every folder (besides
	// git's): the search after the run notes the same, so the trees
	// compare.
	Noted []string
	// Trees are what the search saw of each root, for the search after
	// the run.
	Trees map[string]*plan.Tree
	// Controls are the project control paths the search looks for.
	Controls []string
}

type resolver struct {
	in      Input
	guards  map[string]*plan.Guard
	order   []string
	holders map[string]bool // placeholders, by path
	res     Result
	cfgs    map[string][]ConfigVar // parsed global git configs by path
	gitSeen map[string]bool        // git folders looked at
	// nodeSeen are the node packages kept (real paths).
	nodeSeen map[string]bool
	// vcs are the metadata folders of version-control systems other
	// than git found by the search: path, tool.
	vcs [][2]string
	// pyTops are the work tree tops whose modules are kept for
	// pre-commit's hook.
	pyTops map[string]bool
	// unread is the first control file that could not be read through
	// (readControl): the run does not start.
	unread *ControlError
}

// Resolve finds every registry path within in.Regions and decides how each
// is kept safe. Its errors are a search that cannot finish: more folders
// than its bound (*LimitError), or a folder it could not look into for a
// reason other than permissions (*WalkError).
func Resolve(in Input) (res Result, err error) {
	// A reader that panics on what it found (a file the box crafted in an
	// earlier run) stops the run, never lets it start unchecked.
	defer func() {
		if v := recover(); v != nil {
			res, err = Result{}, fmt.Errorf("the search of the writable roots for what host programs run stopped on what it read (%v); the run cannot start before that file is looked at: agentbox plan shows the roots searched", v)
		}
	}()
	in.FS = withHeld(in.FS, in.State)
	r := &resolver{in: in, guards: map[string]*plan.Guard{}, holders: map[string]bool{}, cfgs: map[string][]ConfigVar{}, gitSeen: map[string]bool{}}
	r.res.Trees = map[string]*plan.Tree{}
	ph := trace.Begin("plan.search")
	err = r.search()
	ph.End()
	if err != nil {
		return Result{}, err
	}
	ph = trace.Begin("plan.registry")
	r.providers()
	r.home()
	for _, o := range in.Own {
		r.add(o.Path, "agentbox "+o.Rule, "")
	}
	r.finish()
	ph.End()
	if r.unread != nil {
		return Result{}, r.unread
	}
	return r.res, nil
}

// ControlError is a control file a host program reads that agentbox could
// not read through, so what it names (a script it runs, a file it loads)
// could not be kept from the box: the run does not start.
type ControlError struct {
	Path, Program string
	Err           error
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("%s, which %s reads, cannot be read through by agentbox (%v): what it names could not be kept from the box, so the run does not start", e.Path, e.Program, e.Err)
}

// Hints says what to do.
func (e *ControlError) Hints() []string {
	return []string{"make the file smaller or simpler, or move it out of the writable roots (agentbox plan lists them)"}
}

func (e *ControlError) Unwrap() error { return e.Err }

// errControlTooLarge is a control file over what agentbox reads.
var errControlTooLarge = errors.New("larger than the 1 MiB agentbox reads")

// readControl reads control file f, which program reads, to follow what it
// names. A file that is not there, or that the user cannot read either,
// names nothing a host program of the user's would follow; one too large
// or that fails otherwise stops the run (unreadable). A path longer than
// the kernel takes at once (PATH_MAX, a tree the box made) can be neither
// read nor bound here: the after-run check reaches it one folder at a
// time and judges what is there.
func (r *resolver) readControl(f, program string) ([]byte, bool) {
	data, err := r.in.FS.ReadFile(f)
	switch {
	case err == nil && len(data) > maxControl:
		r.unreadable(f, program, errControlTooLarge)
		return nil, false
	case err == nil:
		return data, true
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission),
		errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ENAMETOOLONG):
		return nil, false
	}
	if fi, serr := r.in.FS.Stat(f); serr == nil && fi.IsDir() {
		// A folder where the file would be (another run's placeholder
		// in a project) is read by no host program as this file.
		return nil, false
	}
	r.unreadable(f, program, err)
	return nil, false
}

// compiled reports whether f is a compiled program (ELF) the kernel runs
// here, which names no file the way a script does. A file that only
// starts like one (or an ELF for another machine) is refused by execve
// with ENOEXEC, and git then runs it with /bin/sh, line by line: it is
// read through like any hook.
func (r *resolver) compiled(f string) bool {
	data, err := r.in.FS.ReadFile(f)
	if err != nil || !bytes.HasPrefix(data, []byte("\x7fELF")) {
		return false
	}
	e, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return false
	}
	defer e.Close()
	if e.Type != elf.ET_EXEC && e.Type != elf.ET_DYN {
		return false
	}
	if len(e.Progs) == 0 {
		return false
	}
	return slices.Contains(machines[runtime.GOARCH], e.Machine)
}

// machines are the ELF machines the kernel of each architecture runs
// natively.
var machines = map[string][]elf.Machine{
	"amd64":   {elf.EM_X86_64, elf.EM_386},
	"386":     {elf.EM_386},
	"arm64":   {elf.EM_AARCH64, elf.EM_ARM},
	"arm":     {elf.EM_ARM},
	"riscv64": {elf.EM_RISCV},
	"ppc64le": {elf.EM_PPC64},
	"ppc64":   {elf.EM_PPC64},
	"s390x":   {elf.EM_S390},
	"loong64": {elf.EM_LOONGARCH},
}

// maxControl is the largest control file agentbox reads through.
const maxControl = 1 << 20

// unreadable records the first control file the run cannot start with.
func (r *resolver) unreadable(f, program string, err error) {
	if r.unread == nil {
		r.unread = &ControlError{Path: f, Program: program, Err: err}
	}
}

// tooLong reports whether p is longer than the kernel takes in one path
// (PATH_MAX: 4096 bytes on Linux, 1024 on macOS), with room for a name
// below it. Such a path, in a tree the box made one folder at a time, can
// be neither read, bound nor given a placeholder before the run: the
// after-run check reaches it one folder at a time and judges what is
// there as the box's.
func (r *resolver) tooLong(p string) bool {
	switch r.in.GOOS {
	case "linux":
		return len(p) > 4096-256
	case "darwin":
		return len(p) > 1024-256
	}
	return false
}

// region returns the writable region holding p, or "".
func (r *resolver) region(p string) string {
	best := ""
	for _, w := range r.in.Regions {
		if plan.Within(p, w) && len(w) > len(best) {
			best = w
		}
	}
	return best
}

func (r *resolver) skipped(p string) bool {
	for _, s := range r.in.Skip {
		if plan.Within(p, s) {
			return true
		}
	}
	return false
}

// add records a guard for p (symlinks not followed) when p is within the
// box's reach: its kind as found, how it is kept, and for a symlink its
// target as well.
func (r *resolver) add(p, rule, note string) {
	p = filepath.Clean(p)
	w := r.region(p)
	if w == "" || r.skipped(p) || r.tooLong(p) {
		return
	}
	if g, ok := r.guards[p]; ok {
		if g.Note == "" {
			g.Note = note
		}
		return
	}
	g := &plan.Guard{Path: p, Rule: rule, Note: note}
	fi, err := r.in.FS.Lstat(p)
	switch {
	case err != nil:
		g.Kind = plan.KindMissing
	case fi.Mode()&fs.ModeSymlink != 0:
		g.Kind = plan.KindSymlink
		g.Target, _ = r.in.FS.Readlink(p)
	case fi.IsDir():
		g.Kind = plan.KindDir
	default:
		g.Kind = plan.KindFile
	}
	switch {
	case g.Kind == plan.KindMissing:
		g.Keep = plan.KeepChecked
	case g.Kind == plan.KindSymlink:
		// A mount cannot be put over a symlink (it lands on the target),
		// and the folder holding it stays writable: the link is recorded
		// and put back after the run; its target is kept read-only.
		g.Keep = plan.KeepRestored
		if g.Note == "" {
			g.Note = "a symlink: no mount can cover a link itself, so it is put back after the run; its target is kept read-only"
		}
	case InPackageTree(rel(w, p)):
		g.Keep = plan.KeepRestored
		if g.Note == "" {
			g.Note = "in a folder a package manager replaces wholesale, where a mount would stop it: recorded, and put back after the run"
		}
	default:
		g.Keep = plan.KeepReadOnly
	}
	r.guards[p] = g
	r.order = append(r.order, p)
	if g.Kind == plan.KindSymlink {
		if t, err := r.in.FS.EvalSymlinks(p); err == nil {
			r.add(t, rule, "the target of symlink "+p)
		}
	}
}

// block records a guard for the missing path p, kept by an empty
// read-only placeholder at its first missing component below base (which
// exists). dir says whether p itself is a folder.
func (r *resolver) block(base, p, rule string, dir bool) {
	r.blockAs(base, p, rule, dir, false)
}

// blockAs is block; asDir makes the placeholder a folder even for a file:
// in a project, an empty folder shows in no git status and cannot be
// committed by mistake, and a program that opens it as a file fails as it
// would for a missing one.
func (r *resolver) blockAs(base, p, rule string, dir, asDir bool) {
	if r.region(p) == "" || r.skipped(p) {
		return
	}
	// The first missing component: up from p while folders are missing,
	// but never above a writable root (one that does not exist yet is
	// agentbox's to create, such as an agent CLI's own folder).
	first := p
	for d := filepath.Dir(p); d != "/" && r.region(d) != "" && !r.isRegionRoot(d); d = filepath.Dir(d) {
		if _, err := r.in.FS.Lstat(d); err != nil && !slices.Contains(r.in.Made, d) {
			first = d
		} else {
			break
		}
	}
	isDir := dir || first != p || asDir
	if _, ok := r.guards[first]; ok {
		return
	}
	if !r.canCreate(filepath.Dir(first)) {
		// The user cannot create it, so neither can the box (it runs
		// with the user's own rights on host files): no placeholder,
		// which agentbox could not make either.
		r.add(first, rule, "does not exist, and you cannot create anything in "+filepath.Dir(first)+", so neither can the box; checked after the run")
		return
	}
	what := "an empty read-only file"
	if isDir {
		what = "an empty read-only folder"
	}
	g := &plan.Guard{Path: first, Rule: rule, Kind: plan.KindMissing, Keep: plan.KeepBlocked,
		Note: "does not exist: " + what + " stands in its place during the run, so the box cannot create it"}
	r.guards[first] = g
	r.order = append(r.order, first)
	if !r.holders[first] {
		r.holders[first] = true
		kind, content := "file", placeholderContent(filepath.Base(first))
		if isDir {
			kind, content = "dir", ""
		}
		r.res.Placeholders = append(r.res.Placeholders, plan.Prepare{Path: first, Mode: 0o755, Placeholder: kind, Content: content,
			Origin: plan.Origin{Key: "always: " + rule}})
	}
}

// canCreate reports whether the user can create entries in dir, when the
// FS can tell (the real one asks the kernel: access(2) with W_OK, which
// counts ACLs, read-only mounts and root's rights); otherwise true.
// A folder that does not exist yet is one agentbox makes before the run
// (Made, a writable root it creates): the user's own.
func (r *resolver) canCreate(dir string) bool {
	if _, err := r.in.FS.Lstat(dir); err != nil || slices.Contains(r.in.Made, dir) {
		return true
	}
	if a, ok := r.in.FS.(interface{ CanCreate(string) bool }); ok {
		return a.CanCreate(dir)
	}
	return true
}

func rel(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil || r == "." {
		return ""
	}
	return filepath.ToSlash(r)
}

// search walks every writable region once, noting repositories, git
// folders and project control files at any depth.
func (r *resolver) search() error {
	specs := projectSpecs(r.in.Providers)
	for _, s := range specs {
		if !s.Watch {
			r.res.Controls = append(r.res.Controls, s.Path)
		}
	}
	firsts := map[string]bool{}
	for _, s := range specs {
		first, _, _ := strings.Cut(s.Path, "/")
		firsts[first] = true
	}
	var names []string
	for f := range firsts {
		names = append(names, f)
	}
	sort.Strings(names)
	r.res.Noted = names
	var repos, gitDirs, unlisted []string
	controls := map[string][]string{} // folder -> control names in it
	real := false
	if x, ok := r.in.FS.(interface{ Real() bool }); ok {
		real = x.Real()
	}
	for _, root := range plan.Outermost(r.in.Regions) {
		o := WalkOptions{Names: names, Skip: r.in.Skip, MaxDirs: r.in.MaxDirs}
		var t *plan.Tree
		var err error
		if real {
			// What the last search of this root saw, to list again only
			// what changed since.
			o.Old = ReadIndex(r.in.State, root)
			o.Shared = true
			t, err = Walk(root, o)
		} else {
			t, err = WalkFS(r.in.FS, root, o)
		}
		if err != nil {
			return err
		}
		r.res.Trees[root] = t
		r.res.Visited += t.Entries
		r.res.Folders += t.Len()
		r.res.Listed += t.Listed()
		r.res.Shared += len(t.Shared)
		for _, i := range t.Noted() {
			dir := t.Path(i)
			d := t.Dirs[i]
			if d.Flags&plan.DirUnlisted != 0 {
				unlisted = append(unlisted, dir)
			}
			if d.Flags&plan.DirGit != 0 {
				gitDirs = append(gitDirs, dir)
			}
			for _, n := range t.NotesOf(i) {
				switch {
				case n == ".git":
					repos = append(repos, dir)
				case firsts[n]:
					controls[dir] = append(controls[dir], n)
				}
			}
		}
	}
	// In path order, whatever order the file system listed them in, so a
	// plan is the same on every machine.
	sort.Strings(repos)
	sort.Strings(gitDirs)
	for _, d := range unlisted {
		r.unlisted(d)
	}
	for _, top := range repos {
		r.repo(top)
	}
	for _, g := range gitDirs {
		r.gitDir(g, g, "")
	}
	dirs := make([]string, 0, len(controls))
	for d := range controls {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		r.controls(d, specs, controls[d])
	}
	for _, p := range r.in.Projects {
		r.projectTop(p, specs)
	}
	return nil
}

// unlisted keeps folder d, which the search could not list, from the box:
// what is in it is unknown, so nothing may be written there.
func (r *resolver) unlisted(d string) {
	if r.region(d) == "" || r.skipped(d) {
		return
	}
	if g, ok := r.guards[d]; ok {
		g.Keep, g.Kind = plan.KeepReadOnly, plan.KindDir
		return
	}
	r.guards[d] = &plan.Guard{Path: d, Rule: plan.RuleUnlisted, Kind: plan.KindDir, Keep: plan.KeepReadOnly,
		Note: "agentbox cannot list it, so it cannot tell what a host program would run there: kept read-only for the run; to let the box write in it, make it readable (chmod u+rx " + d + ")"}
	r.order = append(r.order, d)
}

// controls records the project control files in folder dir, whose
// entries named names match the first element of a spec.
func (r *resolver) controls(dir string, specs []Spec, names []string) {
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	for _, s := range specs {
		first, _, _ := strings.Cut(s.Path, "/")
		if !has[first] {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(s.Path))
		if q := r.inTheWay(dir, s.Path); q != "" {
			// A part on the way that is a symlink or not a folder stands
			// in the control file's place: kept like it (a symlink is put
			// back after the run, its target kept read-only).
			r.add(q, s.Rule(), "")
			continue
		}
		if _, err := r.in.FS.Lstat(p); err == nil {
			if !s.Watch {
				r.add(p, s.Rule(), "")
			}
			r.follow(s, p)
		}
	}
	r.commandFiles(dir, false, "")
	for _, n := range names {
		if tool, ok := vcsFolders[n]; ok && r.region(filepath.Join(dir, n)) != "" {
			r.vcs = append(r.vcs, [2]string{filepath.Join(dir, n), tool})
		}
	}
}

// inTheWay returns the first part of rel below dir, short of its last,
// that exists and is not a folder (a symlink included), or "": the host
// program follows such a part to wherever it leads.
func (r *resolver) inTheWay(dir, rel string) string {
	parts := strings.Split(rel, "/")
	q := dir
	for _, part := range parts[:len(parts)-1] {
		q = filepath.Join(q, part)
		fi, err := r.in.FS.Lstat(q)
		if err != nil {
			return ""
		}
		if !fi.IsDir() {
			return q
		}
	}
	return ""
}

// projectTop blocks the project control files missing at the top of a
// project folder, so a host program started there finds nothing planted
// even while the box runs.
func (r *resolver) projectTop(dir string, specs []Spec) {
	if fi, err := r.in.FS.Stat(dir); err != nil || !fi.IsDir() {
		return
	}
	for _, s := range specs {
		p := filepath.Join(dir, filepath.FromSlash(s.Path))
		if _, err := r.in.FS.Lstat(p); err == nil {
			continue
		}
		if r.coveredByParent(p) {
			continue
		}
		if !s.Block || s.Watch {
			continue // the after-run check moves away what the box made there
		}
		r.blockAs(dir, p, s.Rule(), s.Dir, true)
	}
}

// coveredByParent reports whether a guard kept read-only (or blocked)
// covers p already.
func (r *resolver) coveredByParent(p string) bool {
	for d := filepath.Dir(p); d != filepath.Dir(d); d = filepath.Dir(d) {
		if g, ok := r.guards[d]; ok && (g.Keep == plan.KeepReadOnly && g.Kind == plan.KindDir || g.Keep == plan.KeepBlocked) {
			return true
		}
	}
	return false
}

// commandFiles keeps the files that the command files of every agent CLI
// name: in project folder dir (user false) or in a CLI's own folder dir
// (user true, for CLI name).
func (r *resolver) commandFiles(dir string, user bool, name string) {
	for _, p := range r.in.Providers {
		if user && p.Name != name {
			continue
		}
		for _, cf := range p.CommandFiles {
			if cf.User != user {
				continue
			}
			file := filepath.Join(dir, filepath.FromSlash(cf.Path))
			data, ok := r.readControl(file, p.Name)
			if !ok {
				continue
			}
			strs, err := CommandStrings(data, cf.Format, cf.Keys)
			if err != nil {
				r.unreadable(file, p.Name, err)
				continue
			}
			e := Expander{Home: r.in.Home, Vars: map[string]string{}}
			if !user {
				e.Dir = dir
				e.Vars["CLAUDE_PROJECT_DIR"] = dir
			}
			for _, s := range strs {
				if !user {
					r.npx(s, dir, p.Name+" command (named by "+file+")")
				}
				for _, w := range Words(s) {
					q, ok := e.Path(w)
					if !ok {
						continue
					}
					if fi, err := r.in.FS.Stat(q); err == nil && !fi.IsDir() {
						r.add(q, p.Name+" command (named by "+file+")", "")
					}
				}
			}
		}
	}
}

// providers keeps each agent CLI's own control files where its folder is
// within the box's reach.
func (r *resolver) providers() {
	for _, p := range r.in.Providers {
		home := r.in.ProviderHomes[p.Name]
		if home == "" {
			if p.Home == "" {
				continue
			}
			home = expandHome(p.Home, r.in.Home)
			if r.region(home) == "" && !r.holdsRegion(home) {
				// Out of reach, unless it is a symlink into a writable root.
				fi, err := r.in.FS.Lstat(home)
				if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					continue
				}
			}
			if real, err := r.in.FS.EvalSymlinks(home); err == nil {
				home = real
			}
		}
		if r.region(home) == "" && !r.holdsRegion(home) {
			continue
		}
		for _, s := range userSpecs(p) {
			q := filepath.Join(home, filepath.FromSlash(s.Path))
			switch _, err := r.in.FS.Lstat(q); {
			case err == nil:
				r.add(q, s.Rule(), "")
			case r.region(q) == "":
			case s.Managed:
				r.add(q, s.Rule(), p.Title+" makes it on its first start: what the box makes here is moved away after the run")
			default:
				r.block(home, q, s.Rule(), s.Dir)
			}
		}
		r.commandFiles(home, true, p.Name)
		r.agentDir(p, home)
	}
}

// agentDir keeps the entries of an agent CLI's folder that are not on its
// allow list: those that exist read-only, and a watch on the folder that
// moves away, after the run, what the box adds there or changes.
func (r *resolver) agentDir(p provider.Provider, home string) {
	if len(p.Allow) == 0 || r.region(home) == "" || r.skipped(home) {
		return
	}
	g := &plan.Guard{Path: home, Rule: p.Name + " folder", Kind: plan.KindDir, Keep: plan.KeepAgentDir, Allow: p.Allow,
		Note: "the box may write only what " + p.Title + " writes there in its work (" + strings.Join(p.Allow, ", ") + "); anything else it adds or changes is moved away after the run"}
	if fi, err := r.in.FS.Lstat(home); err != nil || !fi.IsDir() {
		g.Kind = plan.KindMissing
	}
	if old, ok := r.guards[home]; ok {
		// The folder is kept as a whole already.
		_ = old
		return
	}
	r.guards[home] = g
	r.order = append(r.order, home)
	entries, err := r.in.FS.ReadDir(home)
	if err != nil {
		return
	}
	for _, e := range entries {
		if g.Allows(e.Name()) {
			continue
		}
		r.add(filepath.Join(home, e.Name()), p.Name+" folder", p.Title+" does not write it in its work, so the box may not either")
	}
}

func (r *resolver) isRegionRoot(d string) bool {
	for _, w := range r.in.Regions {
		if w == d {
			return true
		}
	}
	return false
}

// holdsRegion reports whether a region lies inside p.
func (r *resolver) holdsRegion(p string) bool {
	for _, w := range r.in.Regions {
		if plan.Within(w, p) {
			return true
		}
	}
	return false
}

func expandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(home, p[2:])
	}
	return p
}

// home keeps the home folder's autostart files that lie within the box's
// reach, and what the shell startup files source. A file of the home
// folder outside the writable roots counts too when it leads into one: a
// symlink into a dotfiles repository, a shell file that sources a file
// of it, an ssh config that includes one.
func (r *resolver) home() {
	writable := r.region(r.in.Home) != "" || r.holdsRegion(r.in.Home)
	var refs []string // the startup files whose references are followed
	// Most of these names are missing: one listing of each folder that
	// would hold them says so, on the real file system (listed).
	var ls *listed
	if x, ok := r.in.FS.(interface{ Real() bool }); ok && x.Real() {
		ls = newListed()
	}
	for _, s := range homeSpecs {
		p := filepath.Join(r.in.Home, filepath.FromSlash(s.Path))
		var err error = fs.ErrNotExist
		if !ls.missing(p) {
			_, err = r.in.FS.Lstat(p)
		}
		switch {
		case writable && r.region(p) != "" && err != nil:
			if !r.coveredByParent(p) {
				r.block(r.in.Home, p, s.Rule(), s.Dir)
			}
			continue
		case writable && r.region(p) != "":
			r.add(p, s.Rule(), "")
		case err != nil:
			continue
		default:
			r.reach(p, s.Rule(), "")
		}
		if s.Sources || s.Program == "ssh" && s.Path == ".ssh/config" {
			refs = append(refs, s.Path)
		}
	}
	// What they source or include, once every startup file of their own
	// is kept (a missing one blocked, not merely checked).
	for _, rel := range refs {
		p := filepath.Join(r.in.Home, filepath.FromSlash(rel))
		if rel == ".ssh/config" {
			r.sshIncludes(p)
			continue
		}
		r.sourced(p, 0)
	}
	// git's own configuration files and what they include, wherever they
	// are (GIT_CONFIG_GLOBAL, /etc/gitconfig).
	for _, f := range r.globalConfigs() {
		r.reach(f, "git config", "")
		r.configRefs(f, 0)
	}
}

// reach keeps p, and what p leads to when it, or a folder above it, is a
// symlink: where either lies within the box's reach, it is kept as a
// guard (p missing: checked after the run).
func (r *resolver) reach(p, rule, note string) {
	p = filepath.Clean(p)
	r.add(p, rule, note)
	if real, err := r.in.FS.EvalSymlinks(p); err == nil {
		if real != p {
			r.add(real, rule, "reached through "+p)
		}
		return
	}
	// Missing: the folder it would be made in may lie elsewhere.
	if d, err := r.in.FS.EvalSymlinks(filepath.Dir(p)); err == nil && d != filepath.Dir(p) {
		r.add(filepath.Join(d, filepath.Base(p)), rule, "reached through "+p)
	}
}

// configRefs keeps the files git config file f includes (include.path,
// includeIf.*.path, whatever the condition), and what those include,
// wherever they lie within the box's reach; one that does not exist yet
// is checked after the run. A relative path is taken from the folder of f
// as named, and, when f is a symlink, of what it leads to as well.
func (r *resolver) configRefs(f string, depth int) {
	if depth > 8 {
		return
	}
	data, ok := r.readControl(f, "git")
	if !ok {
		return
	}
	bases := []string{filepath.Dir(f)}
	if real, err := r.in.FS.EvalSymlinks(f); err == nil && filepath.Dir(real) != bases[0] {
		bases = append(bases, filepath.Dir(real))
	}
	for _, inc := range Includes(ParseConfig(data).Vars) {
		p := expandHome(inc, r.in.Home)
		for _, b := range bases {
			q := p
			if !filepath.IsAbs(q) {
				q = filepath.Join(b, q)
			}
			r.reach(q, "git config (included by "+f+")", "")
			r.configRefs(filepath.Clean(q), depth+1)
			if filepath.IsAbs(p) {
				break
			}
		}
	}
}

// sshIncludes keeps what an ssh config includes (Include, with ~ and
// paths relative to ~/.ssh; a pattern keeps the folder it matches in).
func (r *resolver) sshIncludes(p string) {
	data, ok := r.readControl(p, "ssh")
	if !ok {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := Words(strings.TrimSpace(line))
		if len(f) < 2 || !strings.EqualFold(f[0], "include") {
			continue
		}
		for _, w := range f[1:] {
			q := expandHome(w, r.in.Home)
			if !filepath.IsAbs(q) {
				q = filepath.Join(r.in.Home, ".ssh", q)
			}
			if strings.ContainsAny(q, "*?[") {
				q = filepath.Dir(q)
			}
			r.reach(q, "ssh (included by "+p+")", "")
		}
	}
}

// sourced keeps the files shell file f sources, and what those source,
// wherever they lie within the box's reach; one that does not exist yet
// is checked after the run.
func (r *resolver) sourced(f string, depth int) {
	if depth > 4 {
		return
	}
	data, ok := r.readControl(f, "the shell")
	if !ok {
		return
	}
	e := Expander{Home: r.in.Home, Dir: filepath.Dir(f)}
	for _, w := range Sourced(data) {
		q, ok := e.Path(w)
		if !ok {
			continue
		}
		if _, seen := r.guards[q]; seen {
			continue
		}
		if fi, err := r.in.FS.Stat(q); err == nil && fi.IsDir() {
			continue
		}
		r.reach(q, "shell (sourced by "+f+")", "")
		if _, err := r.in.FS.Lstat(q); err == nil {
			r.sourced(q, depth+1)
		}
	}
	// What it runs or reads by a path (a relative one means the shell's
	// folder, unknown here).
	r.named(data, filepath.Dir(f), false, func(q string) {
		if q != f {
			r.reach(q, "shell (named by "+f+")", "")
		}
	})
}

// finish orders the guards parents first, drops those inside a folder
// kept read-only or blocked as a whole, and fixes what the after-run check
// cannot do off Linux.
func (r *resolver) finish() {
	sort.SliceStable(r.order, func(i, j int) bool {
		return strings.Count(r.order[i], "/") < strings.Count(r.order[j], "/")
	})
	for _, p := range r.order {
		g := r.guards[p]
		if r.coveredByParent(p) && g.Keep != plan.KeepRestored {
			continue
		}
		if r.in.GOOS != "linux" && (g.Keep == plan.KeepPathDir || g.Keep == plan.KeepPthDir || g.Keep == plan.KeepAgentDir) {
			continue // watched by the Linux after-run check only
		}
		if r.in.GOOS != "linux" && g.Keep != plan.KeepReadOnly {
			g.Keep = plan.KeepNone
			g.Note = "no placeholder or read-only mount here: the backend says how it is kept"
		}
		r.res.Guards = append(r.res.Guards, *g)
	}
	if r.in.GOOS != "linux" {
		r.res.Placeholders = nil
	}
	sort.Strings(r.res.GitDirs)
	r.metadata()
}

// String is a guard as a line of plan output.
func String(g plan.Guard) string {
	s := fmt.Sprintf("%s %s (%s, %s)", g.Keep, g.Path, g.Rule, g.Kind)
	if g.Note != "" {
		s += ": " + g.Note
	}
	return s
}
