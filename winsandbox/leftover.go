package winsandbox

import (
	"bytes"
	"slices"
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
// or a folder, its identity, and the run that holds it.
type recPlaceholder struct {
	Path    string    `json:"path"`
	Dir     bool      `json:"dir,omitempty"`
	Content string    `json:"content"`
	Volume  uint32    `json:"volume"`
	FileID  uint64    `json:"file_id"`
	Holder  aclHolder `json:"holder"`
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

// dropPlaceholder takes path's placeholder of holder h out of the record.
func (r *aclRecord) dropPlaceholder(path string, h aclHolder) {
	r.Placeholders = slices.DeleteFunc(r.Placeholders, func(p recPlaceholder) bool {
		return p.Holder == h && winKey(p.Path) == winKey(path)
	})
}
