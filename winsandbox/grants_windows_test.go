package winsandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
)

// explicitGrants returns the SIDs of path's explicit allow ACEs, or one
// word saying why there are none to read.
func explicitGrants(path string) []string {
	d, ok, err := readDACL(path, false)
	if err != nil || !ok {
		return []string{fmt.Sprintf("unreadable(%v)", err)}
	}
	var out []string
	for _, a := range d.aces {
		if !a.inherited() && !a.deny() {
			out = append(out, strings.ToUpper(a.SID))
		}
	}
	return out
}

// plantKilledGrant records and writes, for the sandbox group group and
// root's capability SID, the grants on root of a run that was killed (its
// holder is not alive), as such a run leaves them.
func plantKilledGrant(t *testing.T, recPath, user, group, root string) {
	t.Helper()
	killed := aclHolder{PID: uint32(os.Getpid()), Started: 1}
	err := withRecord(recPath, user, group, true, func(rec *aclRecord, save func() error) error {
		rec.begin([]recACE{
			{Path: root, SID: group, Mask: FileRights(RightsModify), Inherit: true},
			{Path: root, SID: CapabilitySID(root), Mask: FileRights(RightsModify), Inherit: true},
		}, winKey(root), killed)
		if err := save(); err != nil {
			return err
		}
		return syncPath(rec, root, group)
	})
	if err != nil {
		t.Fatalf("planting a killed run's grant on %s: %v", root, err)
	}
}

// grantsIn returns, per path, the SIDs the record grants there.
func grantsIn(rec *aclRecord) map[string][]string {
	out := map[string][]string{}
	for _, a := range rec.ACEs {
		if !a.Deny {
			out[winKey(a.Path)] = append(out[winKey(a.Path)], strings.ToUpper(a.SID))
		}
	}
	return out
}

// TestWindowsGrantsLastForTheRun runs a box of workspace A through the
// whole run path while the record holds grants a killed run of another
// workspace (B) left. The command prints the ACL record as it is while
// it runs: A's project granted to the sandbox group and its capability
// SID, held by the run, and nothing of B's (removed before the command
// started); after the run the record names no grant. Reads in the box
// are checked against the sandbox group every workspace's box shares, so
// a grant that stayed (as every writable root's did) let the box of any
// workspace read it. Wine keeps no DACLs, so this checks the record
// through the real run path; TestWindowsGrantsDACL checks the DACLs on
// real Windows, and the Windows workflow that one workspace's box cannot
// read the other's files.
func TestWindowsGrantsLastForTheRun(t *testing.T) {
	me := wineSetup(t)
	w := New()
	a, b := tempDir(t), tempDir(t)
	tmp := filepath.Join(tempDir(t), "agentbox-"+me)
	recPath, user, err := aclRecordFile()
	if err != nil {
		t.Fatal(err)
	}
	plantKilledGrant(t, recPath, user, me, b)
	before := &aclRecord{}
	if err := readRecord(recPath, user, before); err != nil {
		t.Fatal(err)
	}
	if g := grantsIn(before)[winKey(b)]; len(g) != 2 {
		t.Fatalf("the planted grant is not recorded: %q", g)
	}

	p := winePlan(a, tmp, "RUN", plan.Network{Mode: plan.NetOpen}, "cmd", "/d", "/c", "type", recPath)
	if err := w.Complete(p); err != nil {
		t.Fatal(err)
	}
	code, out, err := wineRun(w, p)
	if err != nil || code != 0 {
		t.Fatalf("run: status %d, output %q, error %v", code, out, err)
	}
	during := &aclRecord{}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), during); err != nil {
		t.Fatalf("the record as the command saw it: %v (output %q)", err, out)
	}
	g := grantsIn(during)
	if !slices.Contains(g[winKey(a)], strings.ToUpper(me)) || !slices.Contains(g[winKey(a)], strings.ToUpper(CapabilitySID(a))) {
		t.Errorf("during A's run the record grants A's project to %q, want the group and its capability SID", g[winKey(a)])
	}
	for _, x := range during.ACEs {
		if !x.Deny && len(x.Holders) == 0 {
			t.Errorf("during A's run a grant is held by no run: %+v", *x)
		}
	}
	if len(g[winKey(b)]) != 0 {
		t.Errorf("during A's run the record still grants B's project (a killed run's) to %q", g[winKey(b)])
	}
	after := &aclRecord{}
	if err := readRecord(recPath, user, after); err != nil {
		t.Fatal(err)
	}
	if g := grantsIn(after); len(g) != 0 {
		t.Errorf("after the run the record still grants %q", g)
	}
}

// TestWindowsGrantsDACL: what a run was granted is in the DACL while it
// runs and gone when it ends, and a killed run's grants on another
// workspace's folder are gone from that folder's DACL before the next
// run's command starts. (Wine keeps no DACLs.)
func TestWindowsGrantsDACL(t *testing.T) {
	enforcing(t)
	t.Setenv("ProgramData", tempDir(t))
	recPath, user, err := aclRecordFile()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(recPath), 0o755); err != nil {
		t.Fatal(err)
	}
	const group = "S-1-5-21-1-2-3-4242"
	a, b := tempDir(t), tempDir(t)
	plantKilledGrant(t, recPath, user, group, b)
	if g := explicitGrants(b); !slices.Contains(g, group) || !slices.Contains(g, strings.ToUpper(CapabilitySID(b))) {
		t.Fatalf("the planted grant is not in %s's DACL: %q", b, g)
	}
	s := &Spec{ACEs: []ACE{
		{Path: a, Trustee: GroupName, Rights: RightsModify, Inherit: true},
		{Path: a, Trustee: CapabilitySID(a), Rights: RightsModify, Inherit: true},
	}}
	release, err := applyACEs(s, a, group)
	if err != nil {
		t.Fatalf("applyACEs: %v", err)
	}
	if g := explicitGrants(a); !slices.Contains(g, group) || !slices.Contains(g, strings.ToUpper(CapabilitySID(a))) {
		t.Errorf("during the run %s is granted to %q, want the group and its capability SID", a, g)
	}
	if g := explicitGrants(b); slices.Contains(g, group) || slices.Contains(g, strings.ToUpper(CapabilitySID(b))) {
		t.Errorf("during A's run, B's folder still holds the killed run's grant: %q", g)
	}
	if err := release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if g := explicitGrants(a); slices.Contains(g, group) || slices.Contains(g, strings.ToUpper(CapabilitySID(a))) {
		t.Errorf("after the run %s is still granted to %q", a, g)
	}
}
