package supervise

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/agentbox/agentbox/plan"
)

// Recording the guards the box may change (plan.KeepRestored: those in
// folders a package manager replaces wholesale, and links) before the run,
// and putting them back after it. A file's content is kept up to
// fileBudget, and recordBudget in all; beyond, its size and time are kept:
// a change is still seen and moved away, but the original cannot be put
// back. More than recordEntries entries refuse the run: a guard that
// cannot be recorded cannot be kept.
const (
	fileBudget    = 1 << 20
	recordBudget  = 32 << 20
	recordEntries = 100_000
)

// snap is one entry of a guarded path as it was before the run.
type snap struct {
	Rel    string `json:"rel"` // "" for the guard itself
	Kind   string `json:"kind"`
	Size   int64  `json:"size"`
	MTime  int64  `json:"mtime"`
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

// kindOf is an entry's kind from its Lstat mode. A reparse point that is
// not a symbolic link (a junction: Go reports it irregular) is a link
// too: it leads elsewhere, and is never followed.
func kindOf(m fs.FileMode) string {
	switch {
	case m&(fs.ModeSymlink|fs.ModeIrregular) != 0:
		return plan.KindSymlink
	case m.IsDir():
		return plan.KindDir
	case m.IsRegular():
		return plan.KindFile
	}
	return "other"
}

// record records every guard kept by restoring.
func record(h *plan.HostExec) ([]guardRecord, error) {
	var out []guardRecord
	budget, entries := recordBudget, 0
	for _, g := range h.Guards {
		if g.Keep != plan.KeepRestored {
			continue
		}
		gr := guardRecord{Path: g.Path, Rule: g.Rule}
		if err := snapPath(g.Path, "", g.Rule, &gr.Entries, &budget, &entries); err != nil {
			return nil, fmt.Errorf("recording %s before the run: %w", g.Path, err)
		}
		out = append(out, gr)
	}
	return out, nil
}

// snapPath records the entry at p (named rel within its guard) and, for a
// folder, what is in it.
func snapPath(p, rel, rule string, out *[]snap, budget, entries *int) error {
	*entries++
	if *entries > recordEntries {
		return fmt.Errorf("more than %d files and folders to record", recordEntries)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		*out = append(*out, snap{Rel: rel, Kind: plan.KindMissing})
		return nil
	}
	s := snap{Rel: rel, Kind: kindOf(fi.Mode()), Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
	switch s.Kind {
	case plan.KindSymlink:
		s.Target, _ = os.Readlink(p)
	case plan.KindFile:
		if s.Size <= fileBudget && int(s.Size) <= *budget {
			if data, err := os.ReadFile(p); err == nil && int64(len(data)) == s.Size {
				s.Data, s.Known = data, true
				*budget -= len(data)
			}
		}
	}
	*out = append(*out, s)
	if s.Kind != plan.KindDir {
		return nil
	}
	list, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	for _, e := range list {
		if inert(rule, filepath.Join(rel, e.Name())) {
			continue
		}
		if err := snapPath(filepath.Join(p, e.Name()), filepath.Join(rel, e.Name()), rule, out, budget, entries); err != nil {
			return err
		}
	}
	return nil
}

// same reports whether the entry at p is still what s recorded.
func same(p string, s snap) bool {
	fi, err := os.Lstat(p)
	if err != nil {
		return s.Kind == plan.KindMissing
	}
	k := kindOf(fi.Mode())
	if k != s.Kind {
		return false
	}
	switch k {
	case plan.KindSymlink:
		t, _ := os.Readlink(p)
		return t == s.Target
	case plan.KindFile:
		if fi.Size() != s.Size {
			return false
		}
		if s.Known {
			data, err := os.ReadFile(p)
			return err == nil && bytes.Equal(data, s.Data)
		}
		return fi.ModTime().UnixNano() == s.MTime
	}
	return true
}

// restore puts each recorded guard back as it was: what the box changed
// or put there is moved to quarantine and the recorded entry written
// again (a file whose content was recorded, a folder, a link); what cannot
// be put back is reported.
func (c *checker) restore(recs []guardRecord) {
	for _, gr := range recs {
		recorded := map[string]bool{}
		for _, s := range gr.Entries {
			recorded[s.Rel] = true
		}
		// Parents first: a folder put back before what was in it.
		entries := append([]snap(nil), gr.Entries...)
		sort.SliceStable(entries, func(i, j int) bool { return len(entries[i].Rel) < len(entries[j].Rel) })
		for _, s := range entries {
			p := filepath.Join(gr.Path, s.Rel)
			if same(p, s) {
				continue
			}
			if _, err := os.Lstat(p); err == nil {
				if !c.moveAway(p, gr.Rule, "changed during the run") {
					continue
				}
			}
			if err := putBack(p, s); err != nil {
				c.warn(p, gr.Rule, "could not be put back as it was before the run: "+err.Error())
				continue
			}
			c.note(p, gr.Rule, "restored", "put back as it was before the run")
		}
		// What the box added inside a recorded folder.
		if len(gr.Entries) > 0 && gr.Entries[0].Kind == plan.KindDir {
			c.added(gr.Path, "", recorded, gr.Rule)
		}
	}
}

// added moves away what is in the folder at p (rel within its guard) and
// was not recorded.
func (c *checker) added(p, rel string, recorded map[string]bool, rule string) {
	list, err := os.ReadDir(p)
	if err != nil {
		return
	}
	for _, e := range list {
		r := filepath.Join(rel, e.Name())
		full := filepath.Join(p, e.Name())
		if inert(rule, r) {
			continue
		}
		if !recorded[r] {
			c.moveAway(full, rule, "was added during the run")
			continue
		}
		if e.IsDir() && e.Type()&(fs.ModeSymlink|fs.ModeIrregular) == 0 {
			c.added(full, r, recorded, rule)
		}
	}
}

// putBack writes the recorded entry s at p, where nothing is now.
func putBack(p string, s snap) error {
	switch s.Kind {
	case plan.KindMissing:
		return nil
	case plan.KindDir:
		return os.Mkdir(p, 0o755)
	case plan.KindSymlink:
		return os.Symlink(s.Target, p)
	case plan.KindFile:
		if !s.Known {
			return fmt.Errorf("its content (%d bytes) was too large to record", s.Size)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(s.Data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return fmt.Errorf("a %s cannot be put back", s.Kind)
}
