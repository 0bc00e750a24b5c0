package supervise

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// What a record of the guards kept by restoring may hold: the content of
// files up to fileBudget each and recordBudget in all (beyond, a file's
// identity and change time are kept: a change is still seen and moved
// away, but the original cannot be put back), and at most recordEntries
// entries (beyond, the run is refused: a guard that cannot be recorded
// cannot be kept).
const (
	fileBudget    = 1 << 20
	recordBudget  = 32 << 20
	recordEntries = 100_000
)

// snap is one entry of a guarded path as it was before the run.
type snap struct {
	Rel    string `json:"rel"` // "" for the guard itself
	Kind   string `json:"kind"`
	Mode   uint32 `json:"mode"`
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Ctime  int64  `json:"ctime"`
	Size   int64  `json:"size"`
	Data   []byte `json:"data,omitempty"`
	Known  bool   `json:"known,omitempty"` // Data is the whole content
	Target string `json:"target,omitempty"`
}

// guardRecord is a guarded path as it was before the run: the path and,
// for a folder, everything in it.
type guardRecord struct {
	Path    string `json:"path"`
	Rule    string `json:"rule"`
	Entries []snap `json:"entries"`
}

// record records every guard kept by restoring (plan.KeepRestored). A
// guard another live run of this user recorded already is taken from that
// record (adopt), not recorded again: that run's box may have changed it
// meanwhile, and the state before any box ran is the one to put back.
func record(h *plan.HostExec, adopt map[string]guardRecord, held map[string]hold) ([]guardRecord, error) {
	var out []guardRecord
	budget := recordBudget
	entries := 0
	for _, g := range h.Guards {
		if g.Keep != plan.KeepRestored {
			continue
		}
		if gr, ok := adopt[g.Path]; ok {
			gr.Rule = g.Rule
			out = append(out, gr)
			continue
		}
		gr := guardRecord{Path: g.Path, Rule: g.Rule}
		dfd, name, err := openParent(g.Path)
		if err != nil {
			// The folder above is gone or is a symlink now: the guard is
			// recorded missing, so whatever appears there is moved away.
			gr.Entries = []snap{{Kind: plan.KindMissing}}
			out = append(out, gr)
			continue
		}
		// A package folder (node_modules) is recorded by identity alone:
		// what the box changes in it is moved away all the same, and the
		// package manager, not agentbox, puts a package back. Its content
		// would cost every launch more than the run itself.
		if ph, ok := held[g.Path]; ok && untouchedHold(dfd, name, ph, held) {
			// Another live run's placeholder: what it stands for is
			// nothing, and that run takes it away when it ends.
			unix.Close(dfd)
			gr.Entries = []snap{{Kind: plan.KindMissing}}
			out = append(out, gr)
			continue
		}
		b := &budget
		if strings.Contains(g.Path, "/node_modules/") || strings.HasSuffix(g.Path, "/node_modules") {
			none := 0
			b = &none
		}
		err = snapAt(dfd, name, "", g.Rule, &gr.Entries, b, &entries)
		unix.Close(dfd)
		if err != nil {
			return nil, fmt.Errorf("recording %s before the run: %w", g.Path, err)
		}
		out = append(out, gr)
	}
	return out, nil
}

var errTooMany = fmt.Errorf("more than %d files and folders to record; remove what the box left there (agentbox keeps it by recording it before each run and putting it back after)", recordEntries)

// snapAt appends the entry name of dfd, at rel, and what it holds.
func snapAt(dfd int, name, rel, rule string, out *[]snap, budget, entries *int) error {
	*entries++
	if *entries > recordEntries {
		return errTooMany
	}
	st, err := lstatAt(dfd, name)
	if err != nil {
		*out = append(*out, snap{Rel: rel, Kind: plan.KindMissing})
		return nil
	}
	s := snapOf(rel, st)
	switch {
	case isLink(st):
		s.Target, _ = readlinkAt(dfd, name)
	case isReg(st) && st.Size <= fileBudget && int(st.Size) <= *budget:
		if data, _, err := readAt(dfd, name, fileBudget); err == nil {
			s.Data, s.Known = data, true
			*budget -= len(data)
		}
	}
	*out = append(*out, s)
	if !isDir(st) {
		return nil
	}
	sub, err := unix.Openat(dfd, name, dirFlags, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(sub)
	names, err := listAt(sub)
	if err != nil {
		return nil
	}
	sort.Strings(names)
	for _, n := range names {
		if inert(rule, path.Join(rel, n)) {
			continue
		}
		if err := snapAt(sub, n, path.Join(rel, n), rule, out, budget, entries); err != nil {
			return err
		}
	}
	return nil
}

func snapOf(rel string, st unix.Stat_t) snap {
	s := snap{Rel: rel, Mode: st.Mode, Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim.Nano(), Size: st.Size}
	switch {
	case isLink(st):
		s.Kind = plan.KindSymlink
	case isDir(st):
		s.Kind = plan.KindDir
	case isReg(st):
		s.Kind = plan.KindFile
	default:
		s.Kind = "other"
	}
	return s
}

func readlinkAt(dfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// restore puts every recorded guard back as it was: what the box added is
// moved to quarantine, what it changed is moved to quarantine and the
// original written back, what it removed is written back.
func (c *checker) restore(recs []guardRecord) {
	for _, gr := range recs {
		c.restoreGuard(gr)
	}
}

func (c *checker) restoreGuard(gr guardRecord) {
	before := map[string]snap{}
	var order []string
	for _, s := range gr.Entries {
		before[s.Rel] = s
		order = append(order, s.Rel)
	}
	dfd, name, err := openParent(gr.Path)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return // the folder above is gone: nothing to run there
		}
		c.fail(gr.Path, gr.Rule, "could not be checked after the run: "+err.Error())
		return
	}
	defer unix.Close(dfd)
	c.restoreEntry(dfd, filepath.Dir(gr.Path), name, "", before, gr)
}

// restoreEntry compares entry name of dfd (at rel in the guard) with its
// record, and the entries in it.
func (c *checker) restoreEntry(dfd int, parent, name, rel string, before map[string]snap, gr guardRecord) {
	full := filepath.Join(parent, name)
	was, recorded := before[rel]
	st, err := lstatAt(dfd, name)
	exists := err == nil
	if !recorded || was.Kind == plan.KindMissing {
		if exists && c.heldHere(dfd, name, full) {
			return // another live run's placeholder, as it made it
		}
		if exists {
			c.moveAway(dfd, parent, name, gr.Rule, "was created by the box where "+c.program(gr.Rule)+" would run or obey it")
		}
		return
	}
	if exists && !sameEntry(dfd, name, st, was) {
		c.moveAway(dfd, parent, name, gr.Rule, "was changed by the box")
		exists = false
		if !canRebuild(was) {
			why := "the original could not be put back (it was larger than what agentbox records before a run)"
			if strings.Contains(full, "/node_modules/") {
				why = "the original could not be put back (agentbox records a package's files by identity, not content): reinstall the package"
			}
			c.warn(full, gr.Rule, why)
			return
		}
	}
	if !exists {
		if err := rebuild(dfd, name, was); err != nil {
			c.warn(full, gr.Rule, "could not be put back: "+err.Error())
			return
		}
		c.note(full, gr.Rule, "restored", "was removed or replaced by the box; put back as it was before the run")
	}
	if was.Kind != plan.KindDir {
		return
	}
	sub, err := unix.Openat(dfd, name, dirFlags, 0)
	if err != nil {
		return
	}
	defer unix.Close(sub)
	names, _ := listAt(sub)
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
		if inert(gr.Rule, path.Join(rel, n)) {
			continue
		}
		c.restoreEntry(sub, full, n, path.Join(rel, n), before, gr)
	}
	// What the box removed from the folder.
	for r, s := range before {
		if parentRel(r) == rel && r != rel && !have[path.Base(r)] && s.Kind != plan.KindMissing {
			c.restoreEntry(sub, full, path.Base(r), r, before, gr)
		}
	}
}

// parentRel is the rel of the folder holding rel ("" for the guard's own
// entries).
func parentRel(rel string) string {
	if d := path.Dir(rel); d != "." {
		return d
	}
	return ""
}

// sameEntry reports whether the entry is still what was recorded: same
// identity and change time, or, for a file whose content was recorded,
// the same content and mode.
func sameEntry(dfd int, name string, st unix.Stat_t, was snap) bool {
	now := snapOf(was.Rel, st)
	if now.Kind != was.Kind {
		return false
	}
	if now.Dev == was.Dev && now.Ino == was.Ino && now.Ctime == was.Ctime && now.Size == was.Size && now.Mode == was.Mode {
		return true
	}
	switch was.Kind {
	case plan.KindSymlink:
		t, err := readlinkAt(dfd, name)
		return err == nil && t == was.Target
	case plan.KindDir:
		return now.Mode&0o7777 == was.Mode&0o7777
	case plan.KindFile:
		if !was.Known || now.Mode != was.Mode {
			return false
		}
		data, _, err := readAt(dfd, name, fileBudget)
		return err == nil && bytes.Equal(data, was.Data)
	}
	return false
}

func canRebuild(s snap) bool {
	return s.Kind == plan.KindDir || s.Kind == plan.KindSymlink || s.Kind == plan.KindFile && s.Known
}

// rebuild makes entry name of dfd as recorded (a folder empty: its entries
// are rebuilt one by one); nothing existing is replaced.
func rebuild(dfd int, name string, s snap) error {
	switch s.Kind {
	case plan.KindDir:
		return unix.Mkdirat(dfd, name, s.Mode&0o7777)
	case plan.KindSymlink:
		return unix.Symlinkat(s.Target, dfd, name)
	case plan.KindFile:
		if !s.Known {
			return errors.New("its content was not recorded")
		}
		tmp, err := writeNew(dfd, s.Data, s.Mode)
		if err != nil {
			return err
		}
		if err := unix.Renameat2(dfd, tmp, dfd, name, unix.RENAME_NOREPLACE); err != nil {
			unix.Unlinkat(dfd, tmp, 0)
			return err
		}
		return nil
	}
	return fmt.Errorf("cannot rebuild a %s", s.Kind)
}

// program is the host program a rule names ("claude settings.json" →
// "claude").
func (c *checker) program(rule string) string {
	p, _, _ := strings.Cut(rule, " ")
	if p == "" {
		return "a host program"
	}
	return p
}
