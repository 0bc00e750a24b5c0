package supervise

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
)

// checker is the after-run check of one run on Windows (see
// guard_windows.go). It works by path: another box of the same user may
// still run in the same tree, and could swap a folder on the way for a
// junction between a look and a move; what it can gain is to have one of
// its own files moved into quarantine, or renamed in place.
type checker struct {
	h        *plan.HostExec
	run      string
	ev       event.Emitter
	guards   map[string]plan.Guard // by winKey
	known    map[string]bool       // git folders before the run, by winKey
	seen     map[string]bool       // git folders checked, by winKey
	reported map[string]bool
	q        string // the run's quarantine folder, made on first use
	n        int
	failures []string // what stopped the check from finishing
}

// key is the comparison form of a Windows path: NTFS compares names
// case-insensitively.
func key(p string) string { return strings.ToLower(filepath.Clean(p)) }

// check runs the after-run check of a run whose plan's registry part is h,
// with recs the guards and ex the files Explorer follows recorded before
// it. An error is a check that could not finish (*CheckError).
func check(h *plan.HostExec, run string, recs []guardRecord, ex explorerRecord, ev event.Emitter) error {
	if len(h.Roots) == 0 {
		return nil
	}
	c := &checker{h: h, run: run, ev: ev, guards: map[string]plan.Guard{}, known: map[string]bool{}, seen: map[string]bool{}, reported: map[string]bool{}}
	for _, g := range h.Guards {
		c.guards[key(g.Path)] = g
	}
	for _, d := range h.GitDirs {
		c.known[key(d)] = true
	}
	c.restore(recs)
	c.created()
	c.search()
	c.explorer(ex)
	if len(c.failures) > 0 {
		return &CheckError{Run: run, Failures: c.failures, State: h.State}
	}
	return nil
}

// note reports something the check did, once per path and action.
func (c *checker) note(p, rule, action, detail string) {
	if c.reported[action+"\x00"+key(p)] {
		return
	}
	c.reported[action+"\x00"+key(p)] = true
	c.ev.Emit(event.Event{Kind: event.Quarantine, Path: p, Rule: "always: " + rule, Action: action,
		Reason: "a host program would run or obey it outside the box", Detail: detail})
}

// warn reports something the check could not do.
func (c *checker) warn(p, rule, detail string) {
	c.note(p, rule, "failed", detail+"; do not run "+program(rule)+" there before you have looked")
}

// fail reports something the check could not do that may leave what the
// box planted where a host program finds it: the check has not finished.
func (c *checker) fail(p, rule, detail string) {
	c.warn(p, rule, detail)
	c.failures = append(c.failures, event.Escape(p)+": "+detail)
}

// program is the host program a rule is about ("git", "claude").
func program(rule string) string {
	if p, _, ok := strings.Cut(rule, " "); ok {
		return p
	}
	return "host programs"
}

// moveAway neutralises p: renamed in place to a name no host program reads
// (so it is harmless even when it cannot go further), then moved into the
// run's quarantine folder in agentbox's state folder when that is on the
// same volume. It reports where it went.
func (c *checker) moveAway(p, rule, why string) bool {
	if _, err := os.Lstat(p); err != nil {
		return false
	}
	here := filepath.Join(filepath.Dir(p), ".agentbox-quarantine-"+randomHex())
	if err := os.Rename(p, here); err != nil {
		c.warn(p, rule, why+"; it could not be moved out of the way: "+err.Error())
		return false
	}
	where := here
	if q, err := c.quarantine(); err == nil {
		c.n++
		dest := filepath.Join(q, fmt.Sprintf("%03d-%s", c.n, filepath.Base(p)))
		if os.Rename(here, dest) == nil {
			where = dest
		}
	}
	c.note(p, rule, "moved", why+"; moved to "+event.Escape(where))
	return true
}

// quarantine makes the run's quarantine folder: <state>\quarantine\<run>.
func (c *checker) quarantine() (string, error) {
	if c.q != "" {
		return c.q, nil
	}
	if c.h.State == "" {
		return "", errors.New("no state folder")
	}
	q := filepath.Join(c.h.State, "quarantine", safeRun(c.run))
	if err := os.MkdirAll(q, 0o700); err != nil {
		return "", err
	}
	c.q = q
	return q, nil
}

func randomHex() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// guarded reports whether p, or a folder above it, is a guard from before
// the run that existed then: what is there is not new (its guard keeps
// it).
func (c *checker) guarded(p string) bool {
	for q := filepath.Clean(p); ; q = filepath.Dir(q) {
		if g, ok := c.guards[key(q)]; ok && g.Kind != plan.KindMissing {
			return true
		}
		if filepath.Dir(q) == q {
			return false
		}
	}
}

// inRoots reports whether p lies in a root of the search.
func (c *checker) inRoots(p string) bool {
	for _, r := range c.h.Roots {
		if within(p, r) {
			return true
		}
	}
	return false
}

// within reports whether p is dir or lies below it, case-insensitively.
func within(p, dir string) bool {
	p, dir = key(p), key(dir)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, `\`)+`\`)
}

// created moves away what appeared where a guard found nothing before the
// run: on Windows no placeholder stands there during the run.
func (c *checker) created() {
	for _, g := range c.h.Guards {
		if g.Kind != plan.KindMissing || g.Keep == plan.KeepReadOnly {
			continue
		}
		if _, err := os.Lstat(g.Path); err == nil {
			c.moveAway(g.Path, g.Rule, "did not exist before the run; "+program(g.Rule)+" would run or obey it")
		}
	}
}

// found is what the search after the run noted.
type found struct {
	repos    []string            // work tree tops holding a .git
	bare     []string            // folders git takes for repositories
	controls map[string][]string // folder -> control names in it
	links    []string            // links (symbolic links, junctions)
}

// search walks every root for repositories, control files and links, at
// any depth, and neutralises what is new. Links are never followed.
func (c *checker) search() {
	firsts := map[string]bool{}
	for _, s := range c.h.Controls {
		first, _, _ := strings.Cut(s, "/")
		firsts[strings.ToLower(first)] = true
	}
	f := found{controls: map[string][]string{}}
	// No shortcut concludes "nothing here": a folder shaped like a git
	// folder is searched too, there is no bound on the number of files,
	// and a folder that cannot be listed makes the check fail. Depth is
	// bounded only by what a path can hold.
	for _, root := range plan.Outermost(c.h.Roots) {
		var walk func(dir string, depth int) error
		walk = func(dir string, depth int) error {
			if depth > 4096 {
				return fmt.Errorf("%s is more than 4096 folders deep", dir)
			}
			list, err := os.ReadDir(dir)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return fmt.Errorf("listing %s: %w", dir, err)
			}
			has := map[string]bool{}
			var sub []string
			for _, e := range list {
				name := strings.ToLower(e.Name())
				has[name] = true
				k := kindOf(e.Type())
				switch {
				case name == ".git":
					f.repos = append(f.repos, dir)
				case firsts[name]:
					f.controls[dir] = append(f.controls[dir], e.Name())
				}
				switch k {
				case plan.KindSymlink:
					f.links = append(f.links, filepath.Join(dir, e.Name()))
				case plan.KindDir:
					sub = append(sub, filepath.Join(dir, e.Name()))
				}
			}
			if dir != root && has["head"] && (has["objects"] && has["refs"] || has["commondir"]) {
				f.bare = append(f.bare, dir)
			}
			for _, s := range sub {
				if err := walk(s, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		if err := walk(root, 0); err != nil {
			c.fail(root, "git repositories and control files", "not searched to the end: "+err.Error())
		}
	}
	for _, l := range f.links {
		c.outsideLink(l)
	}
	sort.Strings(f.repos)
	sort.Strings(f.bare)
	for _, top := range f.repos {
		c.gitEntry(top)
	}
	for _, b := range f.bare {
		c.gitDir(b, "", 0)
	}
	dirs := make([]string, 0, len(f.controls))
	for d := range f.controls {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		c.controls(d)
	}
}

// explorer moves away every file Explorer follows (explorer.go) that the
// box created or changed in the roots, at any depth: opening the folder
// holding one would send the user's NTLM credentials to the server it
// names.
func (c *checker) explorer(before explorerRecord) {
	const rule = "Explorer shortcut or desktop.ini"
	found, err := findExplorer(c.h.Roots, before)
	for _, f := range found {
		c.moveAway(f.Path, rule, f.Why+"; Windows Explorer would follow it to the server it names with your credentials")
	}
	if err != nil {
		c.fail(strings.Join(plan.Outermost(c.h.Roots), ", "), rule, "not searched to the end: "+err.Error())
	}
}

// outsideLink moves away the link at p when it leads into a folder the box
// writes outside the roots (its temporary folder): a host program
// following it would meet what the box left there, which no search
// covers.
func (c *checker) outsideLink(p string) {
	if c.guarded(p) {
		return
	}
	t, err := os.Readlink(p)
	if err != nil {
		return
	}
	t = strings.TrimPrefix(t, `\??\`) // a junction's target, as read
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(p), t)
	}
	for _, o := range c.h.Outside {
		if within(t, o) {
			c.moveAway(p, "symlink", "leads into "+event.Escape(o)+", which the box writes and no check covers")
			return
		}
	}
}

// controls moves away the control files in folder dir that were not there
// before the run.
func (c *checker) controls(dir string) {
	for _, s := range c.h.Controls {
		p := filepath.Join(dir, filepath.FromSlash(s))
		if c.guarded(p) {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			c.moveAway(p, "control file "+s, "was created by the box; an agent CLI or editor started there would obey it")
		}
	}
}

// gitEntry looks at the .git entry of work tree top.
func (c *checker) gitEntry(top string) {
	entry := filepath.Join(top, ".git")
	fi, err := os.Lstat(entry)
	if err != nil {
		return
	}
	_, isGuard := c.guards[key(entry)]
	switch kindOf(fi.Mode()) {
	case plan.KindSymlink:
		if !isGuard {
			c.moveAway(entry, "git folder", "a new .git link would point host git at a folder the box chose")
		}
	case plan.KindDir:
		c.gitDir(entry, top, 0)
	case plan.KindFile:
		t := ""
		if data, err := readSmall(entry, 4096); err == nil {
			t = hostexec.ReadGitFile(data)
		}
		if t != "" && !filepath.IsAbs(t) {
			t = filepath.Join(top, t)
		}
		if t != "" {
			t = filepath.Clean(t)
		}
		if isGuard {
			if t != "" && c.inRoots(t) {
				c.gitDir(t, top, 0)
			}
			return
		}
		if t == "" || !c.inRoots(t) {
			c.moveAway(entry, "git file", "a new .git file would point host git at a folder outside the writable roots")
			return
		}
		c.gitDir(t, top, 0)
	}
}

// gitDir neutralises what host git would run from the git folder p (work
// tree top, "" when bare): in a folder new since the run began, its
// config (only safe keys kept), config.worktree, hooks and commondir; in
// any folder, a commondir or config.worktree that appeared, a linked
// worktree's commondir that points anywhere but its repository; and the
// same in its worktrees' and submodules' folders.
func (c *checker) gitDir(p, top string, depth int) {
	fi, err := os.Lstat(p)
	if err != nil || kindOf(fi.Mode()) != plan.KindDir || depth > 16 || c.seen[key(p)] {
		return
	}
	c.seen[key(p)] = true
	isNew := !c.known[key(p)]
	admin := strings.EqualFold(filepath.Base(filepath.Dir(p)), "worktrees")
	inTree := func(v string) bool {
		v = filepath.FromSlash(v)
		if !filepath.IsAbs(v) {
			v = filepath.Join(p, v)
		}
		return c.inRoots(filepath.Clean(v))
	}
	// commondir: in a linked worktree's folder it must lead back to the
	// repository holding it; anywhere else it must not appear.
	cd := filepath.Join(p, "commondir")
	if _, err := os.Lstat(cd); err == nil {
		switch {
		case admin:
			data, err := readSmall(cd, 4096)
			v := filepath.FromSlash(strings.TrimSpace(string(data)))
			want := filepath.Dir(filepath.Dir(p))
			if err != nil || v == "" || key(filepath.Join(p, v)) != key(want) && key(v) != key(want) {
				c.replace(cd, []byte("../..\n"), "git worktree commondir", "pointed this worktree's git at a folder the box chose; put back to ../..")
			}
		case isNew || !c.isGuard(cd):
			c.moveAway(cd, "git commondir", "points host git at another folder's config and hooks")
		}
	}
	if isNew {
		c.sanitize(filepath.Join(p, "config"), "git config", inTree)
	}
	if cw := filepath.Join(p, "config.worktree"); isNew || !c.isGuard(cw) {
		c.sanitize(cw, "git config.worktree", inTree)
	}
	if isNew {
		c.newHooks(p)
	}
	if admin {
		return
	}
	if list, err := os.ReadDir(filepath.Join(p, "worktrees")); err == nil {
		for _, e := range list {
			c.gitDir(filepath.Join(p, "worktrees", e.Name()), "", depth+1)
		}
	}
	c.modules(filepath.Join(p, "modules"), depth+1)
}

func (c *checker) isGuard(p string) bool {
	g, ok := c.guards[key(p)]
	return ok && g.Kind != plan.KindMissing
}

// modules checks the submodules' git folders (those holding a config)
// under dir.
func (c *checker) modules(dir string, depth int) {
	if depth > 16 {
		return
	}
	list, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range list {
		if kindOf(e.Type()) != plan.KindDir {
			continue
		}
		sp := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(filepath.Join(sp, "config")); err == nil {
			c.gitDir(sp, "", depth+1)
		} else {
			c.modules(sp, depth+1)
		}
	}
}

// newHooks moves away every hook of a new git folder: anything in hooks\
// but git's own *.sample files, or hooks itself when it is not a folder.
func (c *checker) newHooks(p string) {
	hooks := filepath.Join(p, "hooks")
	fi, err := os.Lstat(hooks)
	if err != nil {
		return
	}
	if kindOf(fi.Mode()) != plan.KindDir {
		c.moveAway(hooks, "git hooks", "a repository made during the run: host git would run what this leads to")
		return
	}
	list, _ := os.ReadDir(hooks)
	for _, e := range list {
		if strings.HasSuffix(e.Name(), ".sample") && kindOf(e.Type()) == plan.KindFile {
			continue
		}
		c.moveAway(filepath.Join(hooks, e.Name()), "git hooks", "a hook in a repository made during the run: host git would run it")
	}
}

// sanitize rewrites the git config at p keeping only the variables that
// run nothing (hostexec.Safe); the original goes to quarantine. A config
// that is not a file, or too large, is moved away whole.
func (c *checker) sanitize(p, rule string, inTree func(string) bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return
	}
	if kindOf(fi.Mode()) != plan.KindFile {
		c.moveAway(p, rule, "a git config made during the run that is not a file")
		return
	}
	data, err := readSmall(p, 1<<20)
	if err != nil {
		c.moveAway(p, rule, "a git config made during the run that agentbox cannot read ("+err.Error()+")")
		return
	}
	out, dropped, changed := hostexec.Sanitize(data, inTree)
	if !changed {
		return
	}
	what := "rewritten by agentbox in a form git reads the same"
	if len(dropped) > 0 {
		what = "removed " + strings.Join(dropped, ", ") + " (they can make host git run programs)"
	}
	c.replace(p, out, rule, "a git config made during the run: "+what)
}

// replace moves what is at p to quarantine and writes data in its place.
func (c *checker) replace(p string, data []byte, rule, why string) {
	if !c.moveAway(p, rule, why) {
		return
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		c.warn(p, rule, "a clean one could not be written: "+err.Error())
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		c.warn(p, rule, "a clean one could not be written: "+err.Error())
		return
	}
	c.note(p, rule, "rewritten", why)
}

// readSmall reads a regular file of at most max bytes.
func readSmall(p string, max int64) ([]byte, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, fmt.Errorf("not a regular file of at most %d bytes", max)
	}
	return os.ReadFile(p)
}
