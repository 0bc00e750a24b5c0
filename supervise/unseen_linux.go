package supervise

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
)

// What the box changed that git status will not show the user: the
// after-run check reports it (event.Unseen), and clears the marks in a
// git index that the run set to hide a tracked file's change.

// indexState is what a git folder's index said before the run: its stamp
// and the entries marked assume-unchanged or skip-worktree then.
type indexState struct {
	Dev, Ino uint64
	Ctime    int64
	Size     int64
	Marked   []string `json:"marked,omitempty"`
	// Missing: there was no index; Unread: agentbox could not read it.
	// Either way, what the index says after the run is all new.
	Missing bool `json:"missing,omitempty"`
	Unread  bool `json:"unread,omitempty"`
}

// indexStates records, before the run, the marks of the index of every
// git folder known: from agentbox's cache of it (state/gitindex) when the
// index has not changed since, else by reading it.
func indexStates(h *plan.HostExec) map[string]indexState {
	out := map[string]indexState{}
	for _, g := range h.GitDirs {
		st, err := statIndex(g)
		if err != nil {
			out[g] = indexState{Missing: errors.Is(err, unix.ENOENT), Unread: !errors.Is(err, unix.ENOENT)}
			continue
		}
		if c, ok := readIndexCache(h.State, g); ok && c.Dev == st.Dev && c.Ino == st.Ino && c.Ctime == st.Ctime && c.Size == st.Size {
			out[g] = c
			continue
		}
		marks, err := readMarks(g)
		if err != nil {
			st.Unread = true
			out[g] = st
			continue
		}
		for _, m := range marks {
			st.Marked = append(st.Marked, m.Path)
		}
		out[g] = st
		writeIndexCache(h.State, g, st)
	}
	return out
}

func statIndex(g string) (indexState, error) {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(g, "index"), &st); err != nil {
		return indexState{}, err
	}
	if !isReg(st) {
		return indexState{}, errors.New("not a file")
	}
	return indexState{Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim.Nano(), Size: st.Size}, nil
}

// hashSize is the size of object names in the repository of git folder
// g: 32 when its config says extensions.objectFormat = sha256.
func hashSize(g string) int {
	common := g
	if data, _, err := readFile(filepath.Join(g, "commondir"), 4096); err == nil {
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(g, c)
		}
		common = filepath.Clean(c)
	}
	data, _, err := readFile(filepath.Join(common, "config"), 1<<20)
	if err == nil {
		for _, v := range hostexec.ParseConfig(data).Vars {
			if v.Section == "extensions" && v.Key == "objectformat" && strings.EqualFold(v.Value, "sha256") {
				return 32
			}
		}
	}
	return 20
}

func readMarks(g string) ([]hostexec.IndexFlag, error) {
	data, _, err := readFile(filepath.Join(g, "index"), 1<<30)
	if err != nil {
		return nil, err
	}
	return hostexec.IndexFlags(data, hashSize(g))
}

// readFile reads a file by path through readAt (no symlink followed at the
// last step).
func readFile(p string, max int64) ([]byte, unix.Stat_t, error) {
	dfd, name, err := openParent(p)
	if err != nil {
		return nil, unix.Stat_t{}, err
	}
	defer unix.Close(dfd)
	return readAt(dfd, name, max)
}

func indexCacheName(g string) string {
	sum := sha256.Sum256([]byte(g))
	return hex.EncodeToString(sum[:16])
}

func readIndexCache(state, g string) (indexState, bool) {
	var c indexState
	data, _, err := readFile(filepath.Join(state, "gitindex", indexCacheName(g)), 64<<20)
	if err != nil || json.Unmarshal(data, &c) != nil {
		return c, false
	}
	return c, true
}

func writeIndexCache(state, g string, c indexState) {
	if state == "" {
		return
	}
	sfd, err := openDir(state)
	if err != nil {
		return
	}
	defer unix.Close(sfd)
	if ownedDir(sfd) != nil {
		return
	}
	dfd, err := subdir(sfd, "gitindex")
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	if data, err := json.Marshal(c); err == nil {
		writeSmall(dfd, indexCacheName(g), data)
	}
}

// indexMarks clears, in the index of every git folder known before the
// run whose index changed, the assume-unchanged and skip-worktree marks
// the run set (a sparse checkout's skip-worktree marks are only
// reported), and reports each.
func (c *checker) indexMarks() {
	if c.before == nil {
		return
	}
	gits := make([]string, 0, len(c.before))
	for g := range c.before {
		gits = append(gits, g)
	}
	sort.Strings(gits)
	for _, g := range gits {
		was := c.before[g]
		c.current = filepath.Join(g, "index")
		now, err := statIndex(g)
		switch {
		case errors.Is(err, unix.ENOENT):
			continue
		case err != nil:
			c.fail(filepath.Join(g, "index"), "git index", "could not be checked after the run: "+err.Error())
			continue
		case !was.Missing && !was.Unread && now.Dev == was.Dev && now.Ino == was.Ino && now.Ctime == was.Ctime && now.Size == was.Size:
			continue
		}
		if c.clearMarks(g, was.Marked) {
			c.staleEntries(g)
		}
	}
}

// staleEntries finds, in the index of git folder g that the run changed,
// the entries written during the run whose cached stat data matches the
// file in the work tree while the file's content is not the entry's
// object: git status and git diff trust the stat data and never look, so
// the change is hidden without any mark. Their stat data is cleared (git
// hashes them again, and shows them), and each is reported. An entry of a
// folder whose work tree agentbox does not know (a bare or linked git
// folder) has its stat data cleared when written during the run.
func (c *checker) staleEntries(g string) {
	dfd, err := openDir(g)
	if err != nil {
		c.fail(g, "git index", "could not be checked after the run: "+err.Error())
		return
	}
	defer unix.Close(dfd)
	data, _, err := readAt(dfd, "index", 1<<30)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			c.fail(filepath.Join(g, "index"), "git index", "could not be read after the run: "+err.Error())
		}
		return
	}
	size := hashSize(g)
	entries, err := hostexec.IndexEntriesSince(data, size, (c.started-c.started%2_000_000_000)/1e9)
	if err != nil {
		c.fail(filepath.Join(g, "index"), "git index", "a git index agentbox cannot read ("+err.Error()+"): rebuild it (git read-tree HEAD) before you run git there")
		return
	}
	exts, err := hostexec.IndexExtensions(data, size)
	if err != nil || slices.Contains(exts, "link") {
		// A split index keeps most entries in a shared index file the
		// entries here only point into: a change the box hid there (an
		// entry rewritten to match the changed file) would not show.
		// Until it is whole again the check cannot finish.
		c.fail(filepath.Join(g, "index"), "git index", "a split index (core.splitIndex) changed during the run, and agentbox reads only whole indexes: an entry the box rewrote in its shared part would hide a change from git status; run git update-index --no-split-index there (the next run checks it then)")
		return
	}
	top := ""
	if filepath.Base(g) == ".git" {
		top = filepath.Dir(g)
	}
	tfd := -1
	if top != "" {
		if tfd, err = openDir(top); err != nil {
			top = ""
		} else {
			defer unix.Close(tfd)
		}
	}
	clear := map[string]bool{}
	var hidden []string
	for _, e := range entries {
		switch e.Mode & 0o170000 {
		case 0o100000, 0o120000:
		default:
			continue // a submodule: git looks at its own repository
		}
		if top == "" {
			clear[e.Path] = true
			continue
		}
		switch hiddenEdit(tfd, top, e, size) {
		case editHidden:
			clear[e.Path] = true
			hidden = append(hidden, e.Path)
		case editUnknown:
			clear[e.Path] = true
		}
	}
	if len(clear) == 0 {
		return
	}
	out, err := hostexec.ClearIndexStat(data, size, clear)
	if err == nil {
		err = replaceIndex(dfd, out)
	}
	sort.Strings(hidden)
	for _, p := range hidden {
		if err != nil {
			c.fail(filepath.Join(top, p), "git index", "its index entry was rewritten during the run to match the changed file's size and times, so git status and git diff do not show the change, and it could not be undone ("+err.Error()+"): run git update-index --really-refresh there")
			continue
		}
		c.unseen(filepath.Join(top, p), "index entry cleared", "changed during the run, and its index entry rewritten to match the new file's size and times, which hid the change from git status and git diff; the entry's cached data was cleared, so git status shows it")
	}
	if err != nil && len(hidden) == 0 {
		c.fail(filepath.Join(g, "index"), "git index", "entries written during the run could not be marked for git to compare again ("+err.Error()+"): run git update-index --really-refresh there")
	}
}

// The verdicts of hiddenEdit.
const (
	editShown   = iota // git sees the file as it is (or as changed)
	editHidden         // git trusts stat data that hides a change
	editUnknown        // cannot tell
)

// hiddenEdit tells whether the work-tree file of index entry e (below the
// work tree open as tfd, at top) has stat data git would trust while its
// content is not the entry's object.
func hiddenEdit(tfd int, top string, e hostexec.IndexEntry, hashSize int) int {
	fd, _, name, stop, err := lookup(tfd, top, e.Path)
	if err != nil || stop {
		return editUnknown
	}
	if fd < 0 {
		return editShown // missing: git shows it deleted
	}
	defer unix.Close(fd)
	st, err := lstatAt(fd, name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return editShown
		}
		return editUnknown
	}
	if uint32(st.Size) != e.Size || uint32(st.Mtim.Sec) != e.Mtime || uint32(st.Ctim.Sec) != e.Ctime {
		return editShown // git compares the content itself
	}
	var h hash.Hash = sha1.New()
	if hashSize == 32 {
		h = sha256.New()
	}
	switch {
	case isLink(st) && e.Mode&0o170000 == 0o120000:
		t, err := readlinkAt(fd, name)
		if err != nil {
			return editUnknown
		}
		fmt.Fprintf(h, "blob %d\x00%s", len(t), t)
	case isReg(st) && e.Mode&0o170000 == 0o100000:
		f, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return editUnknown
		}
		file := os.NewFile(uintptr(f), name)
		defer file.Close()
		fmt.Fprintf(h, "blob %d\x00", st.Size)
		if n, err := io.Copy(h, io.LimitReader(file, st.Size+1)); err != nil || n != st.Size {
			return editUnknown
		}
	default:
		return editShown // a changed type: git sees it
	}
	if bytes.Equal(h.Sum(nil), e.ID) {
		return editShown
	}
	return editHidden
}

// replaceIndex writes data as the index of the git folder dfd, as git
// itself writes it: through index.lock, which also keeps a git command of
// the user's from racing this.
func replaceIndex(dfd int, data []byte) error {
	fd, err := unix.Openat(dfd, "index.lock", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	for b := data; len(b) > 0 && err == nil; {
		var n int
		if n, err = unix.Write(fd, b); err == nil {
			b = b[n:]
		}
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, "index.lock", dfd, "index")
	}
	if err != nil {
		unix.Unlinkat(dfd, "index.lock", 0)
	}
	return err
}

// clearMarks clears the marks of git folder g's index that are not in
// kept. It reports whether the index could be read; one that cannot is a
// check that did not finish.
func (c *checker) clearMarks(g string, kept []string) bool {
	dfd, err := openDir(g)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			c.fail(g, "git index", "could not be checked after the run: "+err.Error())
		}
		return false
	}
	defer unix.Close(dfd)
	data, _, err := readAt(dfd, "index", 1<<30)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			c.fail(filepath.Join(g, "index"), "git index", "could not be read after the run ("+err.Error()+"), so what it hides from git status was not checked: rebuild it (git read-tree HEAD) before you run git there")
		}
		return false
	}
	size := hashSize(g)
	marks, err := hostexec.IndexFlags(data, size)
	if err != nil {
		c.fail(filepath.Join(g, "index"), "git index", "a git index agentbox cannot read ("+err.Error()+"), so what it hides from git status was not checked: rebuild it (git read-tree HEAD) before you run git there")
		return false
	}
	had := map[string]bool{}
	for _, k := range kept {
		had[k] = true
	}
	sparse := false
	if d, _, err := readAt(dfd, "info/sparse-checkout", 1<<20); err == nil && len(bytes.TrimSpace(d)) > 0 {
		sparse = true
	}
	clear := map[string]bool{}
	var names []string
	for _, m := range marks {
		if had[m.Path] {
			continue
		}
		if m.SkipWorktree && !m.AssumeValid && sparse {
			c.unseen(m.Path, "index mark", "marked skip-worktree during the run (a sparse checkout): git status does not show its changes")
			continue
		}
		clear[m.Path] = true
		names = append(names, m.Path)
	}
	if len(clear) == 0 {
		return true
	}
	out, err := hostexec.ClearIndexFlags(data, size, clear, !sparse)
	if err == nil {
		err = replaceIndex(dfd, out)
	}
	for _, n := range names {
		if err != nil {
			c.unseen(n, "index mark", "marked assume-unchanged or skip-worktree during the run, so git status and git diff do not show its changes; the mark could not be cleared ("+err.Error()+"): git update-index --no-assume-unchanged --no-skip-worktree -- "+n)
			continue
		}
		c.unseen(n, "index mark cleared", "marked assume-unchanged or skip-worktree during the run, which hid its changes from git status and git diff; the mark was cleared")
	}
	return true
}

// unseen reports one thing the box changed out of git's sight.
func (c *checker) unseen(p, action, detail string) {
	c.ev.Emit(event.Event{Kind: event.Unseen, Path: p, Action: action, Detail: detail})
}

// outOfSight are the names of folders projects leave out of git: what
// the box changes there git status never shows.
var outOfSight = map[string]bool{
	"node_modules": true, ".venv": true, "venv": true, "__pycache__": true, "target": true, "dist": true, "build": true,
	"out": true, ".next": true, ".nuxt": true, ".svelte-kit": true, ".turbo": true, ".cache": true, ".parcel-cache": true,
	".tox": true, ".nox": true, ".mypy_cache": true, ".pytest_cache": true, ".ruff_cache": true, ".gradle": true,
	".direnv": true, "bower_components": true, "jspm_packages": true, ".pnpm-store": true, "site-packages": true,
	".terraform": true, ".serverless": true, "coverage": true, ".eggs": true, "_build": true, "deps": true, ".bundle": true,
}

// changes reports, from the tree the search after the run made of root
// (t) against the one the search before it made (old), what changed out
// of git's sight during the run: the folders changed in each tree
// projects leave out of git (and the new programs there), and new or
// changed programs elsewhere. A folder the search after the run listed
// whose identity and change time are those the search before it saw was
// not changed by the run (it is listed again because it changed shortly
// before that search, or on the host since an earlier run): it is not
// reported, so each change is reported by the run that made it, once.
func (c *checker) changes(root string, t, old *plan.Tree) {
	if old == nil || t == nil {
		return
	}
	ignored := ignoredNames(root)
	type tree struct {
		folders, programs int
		ignored           bool
	}
	trees := map[string]*tree{}
	var programs []string
	for i := 1; i < t.Len(); i++ {
		if t.Dirs[i].Flags&plan.DirListed == 0 {
			continue
		}
		rel := t.Rel(i)
		if old.Unshared[rel] {
			// Listed again only because agentbox itself gave its files
			// copies just before the run: unchanged since, it is not the
			// box's change.
			if j := old.Find(rel); j >= 0 && old.Dirs[j].Ctime == t.Dirs[i].Ctime && old.Dirs[j].Ino == t.Dirs[i].Ino {
				continue
			}
		}
		top, isIgnored := "", false
		parts := strings.Split(rel, "/")
		for k, el := range parts {
			if outOfSight[el] || ignored[el] || el == ".git" {
				top, isIgnored = strings.Join(parts[:k+1], "/"), ignored[el]
				break
			}
		}
		execs := c.newPrograms(path.Join(root, rel))
		if top != "" {
			changed := true
			b := &t.Dirs[i]
			if m, ok := c.h.Made[path.Join(root, rel)]; ok {
				// Made by agentbox for the run: as it was then.
				changed = m.Dev != b.Dev || m.Ino != b.Ino || m.Ctime != b.Ctime
			} else if j := old.Find(rel); j >= 0 {
				a := &old.Dirs[j]
				changed = a.Dev != b.Dev || a.Ino != b.Ino || a.Ctime != b.Ctime
			}
			if !changed && len(execs) == 0 {
				continue
			}
			tr := trees[top]
			if tr == nil {
				tr = &tree{ignored: isIgnored}
				trees[top] = tr
			}
			if changed {
				tr.folders++
			}
			tr.programs += len(execs)
			continue
		}
		for _, e := range execs {
			programs = append(programs, path.Join(rel, e))
		}
	}
	tops := make([]string, 0, len(trees))
	for k := range trees {
		if path.Base(k) != ".git" {
			tops = append(tops, k)
		}
	}
	sort.Strings(tops)
	for _, k := range tops {
		tr := trees[k]
		d := plural(tr.folders, "folder", "folders") + " changed"
		if tr.programs > 0 {
			d += ", " + plural(tr.programs, "new or changed program", "new or changed programs")
		}
		if tr.ignored {
			c.unseen(path.Join(root, k), "ignored tree", d+": git ignores it, so git status does not show what changes here")
		} else {
			c.unseen(path.Join(root, k), "untracked tree", d+": git status shows at most the folder's name, not what changes in it")
		}
	}
	sort.Strings(programs)
	for _, p := range programs {
		c.unseen(path.Join(root, p), "new program", "a program the box made or changed (git status shows it only if it is tracked or untracked, not ignored)")
	}
}

// plural is n and the word for n things.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// newPrograms are the executable files in folder dir changed since the
// run began.
func (c *checker) newPrograms(dir string) []string {
	dfd, err := openDir(dir)
	if err != nil {
		return nil
	}
	defer unix.Close(dfd)
	names, _ := listAt(dfd)
	var out []string
	for _, n := range names {
		st, err := lstatAt(dfd, n)
		if err == nil && isReg(st) && st.Mode&0o111 != 0 && since(st.Ctim, c.started) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// ignoredNames are the plain names (no pattern) the root's .gitignore and
// its repository's info/exclude leave out.
func ignoredNames(root string) map[string]bool {
	out := map[string]bool{}
	for _, f := range []string{filepath.Join(root, ".gitignore"), filepath.Join(root, ".git", "info", "exclude")} {
		data, _, err := readFile(f, 1<<20)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.Trim(strings.TrimSpace(line), "/")
			if line == "" || strings.ContainsAny(line, "#!*?[/\\") {
				continue
			}
			out[line] = true
		}
	}
	return out
}
