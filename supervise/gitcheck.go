package supervise

import (
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// gitState is what of a git folder a box could use to make host git run its
// commands, and mounts cannot stop it from creating: a commondir (which
// points git at another config and hooks), a config.worktree, and new
// submodule folders under modules/ (whose config git reads when it recurses).
type gitState struct {
	commondir, worktree bool
	modules             map[string]bool
}

func readGitState(dir string) gitState {
	st := gitState{modules: map[string]bool{}}
	_, err := os.Lstat(filepath.Join(dir, "commondir"))
	st.commondir = err == nil
	_, err = os.Lstat(filepath.Join(dir, "config.worktree"))
	st.worktree = err == nil
	entries, _ := os.ReadDir(filepath.Join(dir, "modules"))
	for _, e := range entries {
		st.modules[e.Name()] = true
	}
	return st
}

// gitWatch records the git folders' state before the run.
func gitWatch(p *plan.Plan) map[string]gitState {
	out := map[string]gitState{}
	for _, d := range p.GitDirs {
		out[d] = readGitState(d)
	}
	return out
}

// gitAudit compares after the run. A new commondir or config.worktree has
// no business being made by a sandboxed command (git worktree add writes
// them under worktrees/, not here): it is renamed out of git's way and
// reported. A new submodule folder may be legitimate (git submodule add),
// so it is reported for review, not moved.
func gitAudit(before map[string]gitState, ev event.Emitter) {
	for dir, was := range before {
		now := readGitState(dir)
		for _, f := range []struct {
			name     string
			was, now bool
		}{{"commondir", was.commondir, now.commondir}, {"config.worktree", was.worktree, now.worktree}} {
			if f.now && !f.was {
				p := filepath.Join(dir, f.name)
				q := p + ".agentbox-quarantined"
				e := event.Event{Kind: event.Quarantine, Path: p, Rule: "always: git " + f.name,
					Reason: "it can make git outside the box run commands"}
				said := "the sandboxed command created " + event.Escape(p) + ", which can make git outside the box run its commands; "
				if err := os.Rename(p, q); err == nil {
					e.Action, e.Detail = "moved", said+"moved to "+event.Escape(q)
				} else {
					e.Action, e.Detail = "failed", said+"remove it before running git there ("+err.Error()+")"
				}
				ev.Emit(e)
			}
		}
		for m := range now.modules {
			if !was.modules[m] {
				p := filepath.Join(dir, "modules", m)
				ev.Emit(event.Event{Kind: event.Quarantine, Action: "reported", Path: p, Rule: "always: git submodules",
					Reason: "a new submodule folder, whose config git reads outside the box",
					Detail: "the sandboxed command added submodule folder " + event.Escape(p) + ": review its config before running git there (git reads it outside the box)"})
			}
		}
	}
}
