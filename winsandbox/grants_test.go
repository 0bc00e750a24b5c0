package winsandbox

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/cache"
	"github.com/agentbox/agentbox/plan"
	"github.com/google/go-cmp/cmp"
)

// otherWorkspace is withCaches for a second workspace: its project and
// its private caches live elsewhere.
func otherWorkspace() *plan.Plan {
	p := withCaches(cache.Private, "")
	move := func(s string) string {
		s = strings.ReplaceAll(s, `C:\Users\me\proj`, `C:\Users\me\other`)
		return strings.ReplaceAll(s, `proj-1a2b3c4d`, `other-5e6f7a8b`)
	}
	for i := range p.Mounts {
		p.Mounts[i].Path = move(p.Mounts[i].Path)
		p.Mounts[i].Source = move(p.Mounts[i].Source)
	}
	p.Cwd, p.CacheDir, p.Tmp.HostDir = move(p.Cwd), move(p.CacheDir), move(p.Tmp.HostDir)
	p.HostExec.GitDirs = []string{move(p.HostExec.GitDirs[0])}
	return p
}

// TestWorkspaceGrantsLastForTheRun: reads in the box are checked against
// the sandbox group every workspace's box shares, so what one
// workspace's run was granted (its project, its private caches, its
// temporary folder) must be gone from the DACLs when the run ends, and a
// killed run's grants must be gone before the next run's command starts.
// Before, the grants stayed for the project's next run, and the box of
// any other workspace could read them by path. The record is driven with
// the ACEs Build gives each workspace, as applyACEs does.
func TestWorkspaceGrantsLastForTheRun(t *testing.T) {
	const group = "S-1-5-21-1-2-3-5000"
	specOf := func(p *plan.Plan) []recACE {
		t.Helper()
		s, err := Build(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out []recACE
		for _, a := range s.ACEs {
			out = append(out, recordACE(a, group))
		}
		return out
	}
	a, b := specOf(withCaches(cache.Private, "")), specOf(otherWorkspace())
	aRoots := []string{`C:\Users\me\proj`, testCaches}
	bRoots := []string{`C:\Users\me\other`, `C:\Users\me\.local\state\agentbox\caches\other-5e6f7a8b`}
	runA, runB := aclHolder{PID: 1, Started: 1}, aclHolder{PID: 2, Started: 2}

	// grants returns the live allow ACEs the record wants on path (what
	// its DACL holds of agentbox's once synced), as "SID mask".
	grants := func(r *aclRecord, path string) []string {
		var out []string
		for _, w := range r.want(path) {
			if !w.Deny {
				out = append(out, w.SID)
			}
		}
		return out
	}
	var r aclRecord
	// B runs and ends.
	r.begin(b, `c:\users\me\other`, runB)
	for _, root := range bRoots {
		if diff := cmp.Diff([]string{group, CapabilitySID(root)}, grants(&r, root)); diff != "" {
			t.Errorf("during B's run, %s (-want +got):\n%s", root, diff)
		}
	}
	ended := r.end(runB)
	for _, root := range bRoots {
		if !containsFold(ended, root) {
			t.Errorf("B's run ended and %s is not among the paths to sync %q", root, ended)
		}
	}
	// A runs: nothing of B's is granted to the group A's box runs as.
	r.begin(a, `c:\users\me\proj`, runA)
	for _, root := range bRoots {
		if g := grants(&r, root); len(g) != 0 {
			t.Errorf("during A's run, B's %s is granted to %q", root, g)
		}
	}
	for _, root := range aRoots {
		if diff := cmp.Diff([]string{group, CapabilitySID(root)}, grants(&r, root)); diff != "" {
			t.Errorf("during A's run, %s (-want +got):\n%s", root, diff)
		}
	}
	r.end(runA)
	for _, p := range r.paths() {
		if g := grants(&r, p); len(g) != 0 {
			t.Errorf("after both runs, %s is granted to %q", p, g)
		}
	}
	// The denials stay for their projects (read-only .git\hooks and config).
	for _, p := range []string{`C:\Users\me\proj\.git\hooks`, `C:\Users\me\other\.git\hooks`} {
		if len(r.want(p)) == 0 {
			t.Errorf("the denial on %s went with the run", p)
		}
	}

	// B is killed during its next run: A's next run removes B's grants
	// before its command starts (begin names those paths to sync).
	r.begin(b, `c:\users\me\other`, runB)
	r.prune(func(h aclHolder) bool { return h != runB })
	paths, _ := r.begin(a, `c:\users\me\proj`, aclHolder{PID: 3, Started: 3})
	for _, root := range bRoots {
		if !containsFold(paths, root) {
			t.Errorf("A's run after B was killed does not sync %s: %q", root, paths)
		}
		if g := grants(&r, root); len(g) != 0 {
			t.Errorf("A's run after B was killed keeps B's %s granted to %q", root, g)
		}
	}
}

// TestGrantFailure: a killed run's grant that cannot be removed refuses
// the run with the path and the fix; any other failure is passed on as is.
func TestGrantFailure(t *testing.T) {
	base := errString(`setting the ACL of C:\w: Access is denied.`)
	got := grantFailure(`C:\w`, true, base).Error()
	for _, want := range []string{`C:\w`, "Access is denied.", "refused", "Fix:", "setup --uninstall"} {
		if !strings.Contains(got, want) {
			t.Errorf("grantFailure(stale) = %q, missing %q", got, want)
		}
	}
	if got := grantFailure(`C:\w`, false, base); got != base {
		t.Errorf("grantFailure(not stale) = %v, want the error itself", got)
	}
	var r aclRecord
	r.begin([]recACE{{Path: `C:\w`, SID: "S-1-5-21-1-1-1-1", Mask: FileRights(RightsModify)}}, "p", aclHolder{PID: 1})
	if r.stale(`C:\w`) {
		t.Error("a held grant is stale")
	}
	r.begin([]recACE{{Path: `C:\d`, SID: "S-1-5-21-1-1-1-1", Deny: true, Mask: FileRights(RightsWrite)}}, "p", aclHolder{PID: 1})
	r.begin(nil, "p", aclHolder{PID: 1})
	r.prune(func(aclHolder) bool { return false })
	if !r.stale(`C:\w`) {
		t.Error("a killed run's grant is not stale")
	}
	if r.stale(`C:\d`) {
		t.Error("a denial no project wants is taken for a killed run's grant")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if winKey(x) == winKey(s) {
			return true
		}
	}
	return false
}

// TestSameWorkspaceRunsShareGrants: two runs of one workspace at once
// hold the same grants; the one that ends first takes only itself out,
// and the grants stay for the other until it ends (then the paths are
// synced and nothing is granted). A reused process ID is another run.
func TestSameWorkspaceRunsShareGrants(t *testing.T) {
	const group = "S-1-5-21-1-2-3-5000"
	s, err := Build(withCaches(cache.Private, ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []recACE
	for _, a := range s.ACEs {
		want = append(want, recordACE(a, group))
	}
	roots := []string{`C:\Users\me\proj`, testCaches}
	first, second := aclHolder{PID: 1, Started: 1}, aclHolder{PID: 2, Started: 2}
	granted := func(r *aclRecord, root string) bool {
		for _, w := range r.want(root) {
			if !w.Deny && w.SID == group {
				return true
			}
		}
		return false
	}
	var r aclRecord
	r.begin(want, `c:\users\me\proj`, first)
	r.begin(want, `c:\users\me\proj`, second)
	ended := r.end(first)
	for _, root := range roots {
		if containsFold(ended, root) || !granted(&r, root) {
			t.Errorf("the first run ended while the second runs: %s synced (%v) or no longer granted (%v)", root, containsFold(ended, root), granted(&r, root))
		}
	}
	// The second run's process ID reused by another process: not it.
	reused := aclHolder{PID: second.PID, Started: 99}
	r.prune(func(h aclHolder) bool { return h == reused })
	for _, root := range roots {
		if granted(&r, root) {
			t.Errorf("%s still granted for a reused process ID", root)
		}
	}
}
