package winsandbox

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSIDBytes(t *testing.T) {
	for _, tc := range []struct {
		sid string
		hex string
	}{
		{"S-1-5-32-545", "0102000000000005200000002102" + "0000"},
		{"S-1-1-0", "010100000000000100000000"},
		{"S-1-5-18", "010100000000000512000000"},
		{"S-1-5-21-1-2-3-1001", "010500000000000515000000010000000200000003000000e9030000"},
	} {
		b, err := sidBytes(tc.sid)
		if err != nil {
			t.Fatalf("sidBytes(%s): %v", tc.sid, err)
		}
		if got := hex.EncodeToString(b); got != tc.hex {
			t.Errorf("sidBytes(%s) = %s, want %s", tc.sid, got, tc.hex)
		}
		back, n, err := sidString(b)
		if err != nil || back != tc.sid || n != len(b) {
			t.Errorf("sidString(sidBytes(%s)) = %s, %d, %v", tc.sid, back, n, err)
		}
	}
	for _, bad := range []string{"", "S-2-5", "X-1-5-18", "S-1-5-abc", "S-1-5-1-2-3-4-5-6-7-8-9-10-11-12-13-14-15-16", "S-1-5-4294967296"} {
		if _, err := sidBytes(bad); err == nil {
			t.Errorf("sidBytes(%q) accepted", bad)
		}
	}
	for _, bad := range [][]byte{nil, {1}, {2, 0, 0, 0, 0, 0, 0, 5}, {1, 2, 0, 0, 0, 0, 0, 5, 1, 0, 0, 0}} {
		if _, _, err := sidString(bad); err == nil {
			t.Errorf("sidString(%x) accepted", bad)
		}
	}
}

func mustACE(t *testing.T, deny bool, flags byte, mask uint32, sid string) rawACE {
	t.Helper()
	a, err := newACE(deny, flags, mask, sid)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestACLRoundTrip(t *testing.T) {
	// An object ACE (type 5) agentbox never writes: kept byte for byte.
	object := rawACE{Type: 5, Flags: 0, Mask: 0x100, Raw: []byte{5, 0, 12, 0, 0, 1, 0, 0, 0, 0, 0, 0}}
	aces := []rawACE{
		mustACE(t, true, 0, FileRights(RightsDelete), "S-1-5-21-1-2-3-4"),
		mustACE(t, false, aceObjectInherit|aceContainerInh, FileRights(RightsModify), "S-1-5-21-9-8-7-6"),
		object,
		mustACE(t, false, aceInherited, 0x1f01ff, "S-1-5-18"),
	}
	b, err := buildACL(2, aces)
	if err != nil {
		t.Fatal(err)
	}
	rev, got, err := parseACL(b)
	if err != nil {
		t.Fatal(err)
	}
	if rev != 2 {
		t.Errorf("revision %d", rev)
	}
	if diff := cmp.Diff(aces, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	for _, bad := range [][]byte{nil, {2, 0, 4, 0, 0, 0, 0, 0}, {2, 0, 8, 0, 1, 0, 0, 0}, b[:len(b)-1]} {
		if _, _, err := parseACL(bad); err == nil {
			t.Errorf("parseACL(%x) accepted", bad)
		}
	}
}

func TestNextDACL(t *testing.T) {
	group, capSID := "S-1-5-21-100-200-300-1010", "S-1-5-21-1-2-3-4"
	ours := map[string]bool{group: true, capSID: true}
	admin := mustACE(t, false, aceObjectInherit|aceContainerInh, 0x1f01ff, "S-1-5-32-544")
	userDeny := mustACE(t, true, 0, 0x40000, "S-1-5-21-7-7-7-1001")
	inh := mustACE(t, false, aceInherited|aceObjectInherit|aceContainerInh, 0x1200a9, sidUsers)
	modG := mustACE(t, false, aceObjectInherit|aceContainerInh, FileRights(RightsModify), group)
	modC := mustACE(t, false, aceObjectInherit|aceContainerInh, FileRights(RightsModify), capSID)
	delG := mustACE(t, true, 0, FileRights(RightsDelete), group)
	// An inherited ACE of agentbox's (from a root above) is never ours to
	// remove here.
	inhG := mustACE(t, false, aceInherited|aceObjectInherit|aceContainerInh, FileRights(RightsModify), group)
	for _, tc := range []struct {
		name    string
		cur     []rawACE
		want    []rawACE
		next    []rawACE
		changed bool
	}{
		{"first write", []rawACE{admin, inh}, []rawACE{modG, modC}, []rawACE{admin, modG, modC, inh}, true},
		{"already there, other order", []rawACE{modC, admin, modG, inh}, []rawACE{modG, modC}, []rawACE{modC, admin, modG, inh}, false},
		{"nothing wanted, nothing there", []rawACE{admin, inh}, nil, []rawACE{admin, inh}, false},
		{"inherited copies are not ours", []rawACE{admin, inhG}, nil, []rawACE{admin, inhG}, false},
		{"stale removed, others kept in place", []rawACE{userDeny, admin, delG, modG, inh}, []rawACE{modG}, []rawACE{userDeny, admin, modG, inh}, true},
		{"deny goes first", []rawACE{admin, inh}, []rawACE{modG, delG}, []rawACE{delG, admin, modG, inh}, true},
		{"a mask differs", []rawACE{admin, mustACE(t, false, aceObjectInherit|aceContainerInh, FileRights(RightsRead), group)}, []rawACE{modG}, []rawACE{admin, modG}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, changed := nextDACL(tc.cur, ours, tc.want)
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if diff := cmp.Diff(tc.next, next); diff != "" {
				t.Errorf("next (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsersCanRead(t *testing.T) {
	read := FileRights(RightsRead)
	for _, tc := range []struct {
		name string
		dacl []rawACE
		null bool
		want bool
	}{
		{"null dacl", nil, true, true},
		{"empty dacl", nil, false, false},
		{"users read (System32)", []rawACE{mustACE(t, false, 0, read, sidUsers)}, false, true},
		{"inherited authenticated users", []rawACE{mustACE(t, false, aceInherited, 0x1301bf, sidAuthUsers)}, false, true},
		{"everyone generic read", []rawACE{mustACE(t, false, 0, genericRead, sidEveryone)}, false, true},
		{"profile: owner only", []rawACE{mustACE(t, false, 0, 0x1f01ff, "S-1-5-21-7-7-7-1001"), mustACE(t, false, 0, 0x1f01ff, "S-1-5-18")}, false, false},
		{"inherit-only does not apply", []rawACE{mustACE(t, false, aceInheritOnly|aceContainerInh, read, sidUsers)}, false, false},
		{"deny first", []rawACE{mustACE(t, true, 0, read, sidEveryone), mustACE(t, false, 0, read, sidUsers)}, false, false},
		{"traverse only", []rawACE{mustACE(t, false, 0, fileExecute|synchronize, sidUsers)}, false, false},
	} {
		if got := usersCanRead(tc.dacl, tc.null); got != tc.want {
			t.Errorf("%s: usersCanRead = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestACLRecord(t *testing.T) {
	me := aclHolder{PID: 10, Started: 1}
	other := aclHolder{PID: 20, Started: 2}
	next := aclHolder{PID: 30, Started: 3}
	// x: a writable root's grant; y: a read-only path's denial; z: a read
	// grant another workspace's run wants too.
	x := recACE{Path: `C:\p`, SID: "S-1-5-21-9-9-9-9", Mask: FileRights(RightsModify), Inherit: true}
	y := recACE{Path: `C:\p\.git\hooks`, SID: "S-1-5-21-9-9-9-9", Deny: true, Mask: FileRights(RightsWrite), Inherit: true}
	z := recACE{Path: `C:\shared`, SID: "S-1-5-21-9-9-9-9", Mask: FileRights(RightsRead), Inherit: true}
	keys := func(as []*recACE) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.key())
		}
		return out
	}
	check := func(step string, want map[string][]string, r *aclRecord) {
		t.Helper()
		for path, w := range want {
			if diff := cmp.Diff(w, keys(r.want(path)), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: what %s should hold (-want +got):\n%s", step, path, diff)
			}
		}
	}
	var r aclRecord

	// Project A's run wants x, y, z; a run of workspace B wants z too.
	paths, added := r.begin([]recACE{x, y, z, x}, `c:\p`, me)
	if diff := cmp.Diff([]string{`C:\p`, `C:\p\.git\hooks`, `C:\shared`}, paths); diff != "" {
		t.Errorf("first begin paths (-want +got):\n%s", diff)
	}
	if len(added) != 3 || len(r.ACEs) != 3 {
		t.Fatalf("added %d, record %d; want 3 and 3", len(added), len(r.ACEs))
	}
	r.begin([]recACE{z}, `c:\b`, other)
	for _, a := range r.ACEs {
		if a.perRun() != !a.Deny || a.perRun() && len(a.Projects) != 0 {
			t.Errorf("%s: a grant is recorded for projects %q; it is the runs' alone", a.key(), a.Projects)
		}
	}
	check("during the runs", map[string][]string{`C:\p`: {x.key()}, `C:\p\.git\hooks`: {y.key()}, `C:\shared`: {z.key()}}, &r)

	// A's run ends: its grant on its root goes (no other workspace's box
	// may read it); the denial stays for A; z stays while B's run holds it.
	if diff := cmp.Diff([]string{`C:\p`}, r.end(me)); diff != "" {
		t.Errorf("paths to clean after A's run (-want +got):\n%s", diff)
	}
	check("after A's run", map[string][]string{`C:\p`: nil, `C:\p\.git\hooks`: {y.key()}, `C:\shared`: {z.key()}}, &r)
	r.done(`C:\p`)
	if diff := cmp.Diff([]string{y.key(), z.key()}, keys(r.ACEs)); diff != "" {
		t.Errorf("record after A's grant was removed (-want +got):\n%s", diff)
	}

	// B's run is killed: its holder is pruned, and A's next run (which
	// wants x again and no more y) cleans z before its command starts.
	r.prune(func(h aclHolder) bool { return h != other })
	paths, _ = r.begin([]recACE{x}, `c:\p`, next)
	if diff := cmp.Diff([]string{`C:\p`, `C:\p\.git\hooks`, `C:\shared`}, paths); diff != "" {
		t.Errorf("begin after a killed run (-want +got):\n%s", diff)
	}
	check("A's next run", map[string][]string{`C:\p`: {x.key()}, `C:\p\.git\hooks`: nil, `C:\shared`: nil}, &r)
	for _, p := range []string{`C:\p\.git\hooks`, `C:\shared`} {
		r.done(p)
	}
	if diff := cmp.Diff([]string{x.key()}, keys(r.ACEs)); diff != "" {
		t.Errorf("record after the cleaning (-want +got):\n%s", diff)
	}
	r.end(next)
	r.done(`C:\p`)
	if len(r.ACEs) != 0 {
		t.Errorf("record after the last run: %q, want empty", keys(r.ACEs))
	}

	// A grant an older record kept for a project (grants used to stay
	// between runs) is not live: any run removes it, a denial it keeps.
	old := aclRecord{ACEs: []*recACE{
		{Path: x.Path, SID: x.SID, Mask: x.Mask, Inherit: true, Projects: []string{`c:\p`}},
		{Path: y.Path, SID: y.SID, Deny: true, Mask: y.Mask, Inherit: true, Projects: []string{`c:\p`}},
	}}
	paths, _ = old.begin(nil, `c:\other`, me)
	if diff := cmp.Diff([]string{`C:\p`}, paths); diff != "" {
		t.Errorf("begin on an older record (-want +got):\n%s", diff)
	}
	check("older record", map[string][]string{`C:\p`: nil, `C:\p\.git\hooks`: {y.key()}}, &old)

	// A failed write takes back only what that run added.
	var f aclRecord
	f.begin([]recACE{x}, `c:\p`, me)
	_, added = f.begin([]recACE{x, y}, `c:\p`, me)
	f.forget(`C:\p\.git\hooks`, added)
	if diff := cmp.Diff([]string{x.key()}, keys(f.ACEs)); diff != "" {
		t.Errorf("after forget (-want +got):\n%s", diff)
	}
	if !strings.Contains(x.key(), `c:\p`) {
		t.Errorf("key %q is not by comparison form", x.key())
	}
}

func TestACLFileSystem(t *testing.T) {
	for fs, want := range map[string]bool{"NTFS": true, "ReFS": true, "FAT32": false, "exFAT": false, "FAT": false, "": false} {
		if aclFileSystem(fs) != want {
			t.Errorf("aclFileSystem(%q) = %v", fs, !want)
		}
	}
}
