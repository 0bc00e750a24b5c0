package winsandbox

import (
	"bytes"
	"slices"

	"github.com/agentbox/agentbox/plan"
)

// A placeholder a killed run left (the pure half; gitfiles_windows.go
// makes, records and removes them).
//
// A run makes each git folder's missing commondir and config.worktree
// (gitfiles.go) and each missing control folder (controlfolder.go), and
// removes them when it ends. A run whose agentbox was killed leaves them,
// and the next run took them for what they look like: a commondir or a
// .vscode that appeared during that run (the after-run check moved it to
// quarantine as the box's), or an existing file of the user's (planned
// read-only: the next run made no placeholder of its own there, and the
// file stayed for good). So every placeholder a run makes is
// recorded in the user's ACL record (which only that user can write:
// recordtrust.go) with the run that holds it and the file's identity
// (volume serial number and file ID). When that run is gone, the
// placeholder is agentbox's only while it is the very file made (same
// identity, a plain file with one link, no reparse point) and holds
// exactly what it was made with, or the very folder made, still empty: a file of the same name and content the
// box (or anyone) wrote there is another file, and is left to the checks
// that judge what the box leaves. Ours is removed before the next run
// plans, or, when that run already planned it as there, taken over by
// that run (kept for the run, with its deny ACE, and removed after it).

// recPlaceholder is one placeholder a run made: where, a file with what
// or a folder, its identity, and the runs that hold it.
//
// A run of the same workspace that starts while another holds a
// placeholder plans it as a file or folder that exists (a deny ACE, no
// placeholder of its own), so it relies on it being there: it joins the
// holders, and the placeholder is removed only when the last of them
// ends. Otherwise the first run's end would take away the second run's
// protection while its box still runs.
type recPlaceholder struct {
	Path    string    `json:"path"`
	Dir     bool      `json:"dir,omitempty"`
	Content string    `json:"content"`
	Volume  uint32    `json:"volume"`
	FileID  uint64    `json:"file_id"`
	Holder  aclHolder `json:"holder"`
	// Joined are the other runs that hold it (joinPlaceholders).
	Joined []aclHolder `json:"joined,omitempty"`
}

// holders returns every run that holds the placeholder.
func (r *recPlaceholder) holders() []aclHolder {
	var out []aclHolder
	for _, h := range append([]aclHolder{r.Holder}, r.Joined...) {
		if h != (aclHolder{}) && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// keepHolders makes hs the placeholder's holders, and reports whether
// there is one.
func (r *recPlaceholder) keepHolders(hs []aclHolder) bool {
	r.Holder, r.Joined = aclHolder{}, nil
	if len(hs) == 0 {
		return false
	}
	r.Holder = hs[0]
	if len(hs) > 1 {
		r.Joined = slices.Clone(hs[1:])
	}
	return true
}

// held drops the holders that are no longer alive and reports whether a
// live run still holds the placeholder.
func (r *recPlaceholder) held(alive func(aclHolder) bool) bool {
	return r.keepHolders(slices.DeleteFunc(r.holders(), func(h aclHolder) bool { return !alive(h) }))
}

// join adds run me to the placeholder's holders.
func (r *recPlaceholder) join(me aclHolder) {
	if hs := r.holders(); !slices.Contains(hs, me) {
		r.keepHolders(append(hs, me))
	}
}

// leave takes run me out of the placeholder's holders and reports
// whether another live run still holds it (then it stays).
func (r *recPlaceholder) leave(me aclHolder, alive func(aclHolder) bool) bool {
	r.keepHolders(slices.DeleteFunc(r.holders(), func(h aclHolder) bool { return h == me }))
	return r.held(alive)
}

// fileFacts is what a placeholder's path holds now, read through a
// handle opened without following a reparse point.
type fileFacts struct {
	Exists  bool
	Regular bool // a file, not a folder, not a reparse point
	Dir     bool // a folder, not a reparse point
	Empty   bool // a folder with nothing in it
	Links   uint32
	Volume  uint32
	FileID  uint64
	Content []byte
}

// leftover is what becomes of a recorded placeholder.
type leftover int

const (
	leftoverHeld    leftover = iota // its run is alive: not ours to touch
	leftoverOurs                    // the very file the dead run made, untouched
	leftoverForeign                 // gone, or another file now: forget the record
)

// judgeLeftover decides, for a recorded placeholder whose run is alive or
// not, from what its path holds now.
func judgeLeftover(r recPlaceholder, alive bool, f fileFacts) leftover {
	if alive {
		return leftoverHeld
	}
	if !f.Exists || f.Volume != r.Volume || f.FileID != r.FileID || r.FileID == 0 {
		return leftoverForeign
	}
	if r.Dir {
		if !f.Dir || !f.Empty {
			return leftoverForeign
		}
		return leftoverOurs
	}
	if !f.Regular || f.Links != 1 {
		return leftoverForeign
	}
	if !bytes.Equal(f.Content, []byte(r.Content)) {
		return leftoverForeign
	}
	return leftoverOurs
}

// leaveToOthers marks, among the guards of the after-run check, the
// missing places where this run leaves its placeholder to another live
// run that holds it too (releasePlaceholders): it is that run's, still
// the very one made, which this run's box could not change, so the check
// takes it for what was there before the run (kept read-only) rather
// than for something that appeared during the run, which it would move
// away from the run that relies on it.
func leaveToOthers(h *plan.HostExec, others []recPlaceholder) {
	for i := range h.Guards {
		g := &h.Guards[i]
		if g.Kind != plan.KindMissing {
			continue
		}
		for _, o := range others {
			if winKey(o.Path) != winKey(g.Path) {
				continue
			}
			g.Kind, g.Keep = plan.KindFile, plan.KeepReadOnly
			if o.Dir {
				g.Kind = plan.KindDir
			}
			g.Note = "agentbox's placeholder, left after the run to another run that still runs and holds it (the box could not change it)"
		}
	}
}
