package winsandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTrustProblem: a record or lock is used only when it is the user's
// own with a protected DACL nobody else may write through; a file another
// local user planted in acl\ under the user's name is refused.
func TestTrustProblem(t *testing.T) {
	const me, other = "S-1-5-21-1-2-3-1001", "S-1-5-21-1-2-3-1002"
	own := []rawACE{
		{Type: aceAllow, Mask: 0x1f01ff, SID: sidSystem},
		{Type: aceAllow, Mask: 0x1f01ff, SID: sidAdmins},
		{Type: aceAllow, Mask: 0x1f01ff, SID: me},
	}
	good := fileTrust{Owner: me, Protected: true, ACEs: own, Links: 1}
	for _, tc := range []struct {
		name string
		edit func(f *fileTrust)
		ok   bool
	}{
		{"as agentbox makes it", func(f *fileTrust) {}, true},
		{"owner in lower case", func(f *fileTrust) { f.Owner = "s-1-5-21-1-2-3-1001" }, true},
		{"another user reads it", func(f *fileTrust) { f.ACEs = append(f.ACEs, rawACE{Type: aceAllow, Mask: 0x1200a9, SID: other}) }, true},
		{"a deny for another user", func(f *fileTrust) { f.ACEs = append(f.ACEs, rawACE{Type: aceDeny, Mask: 0x1f01ff, SID: other}) }, true},
		{"owned by another user", func(f *fileTrust) { f.Owner = other }, false},
		{"owned by Administrators", func(f *fileTrust) { f.Owner = sidAdmins }, false},
		{"not protected", func(f *fileTrust) { f.Protected = false }, false},
		{"NULL DACL", func(f *fileTrust) { f.NullDACL, f.ACEs = true, nil }, false},
		{"another user may write", func(f *fileTrust) { f.ACEs = append(f.ACEs, rawACE{Type: aceAllow, Mask: fileWriteData, SID: other}) }, false},
		{"Everyone may change its DACL", func(f *fileTrust) { f.ACEs = append(f.ACEs, rawACE{Type: aceAllow, Mask: writeDAC, SID: sidEveryone}) }, false},
		{"Users GENERIC_ALL", func(f *fileTrust) { f.ACEs = append(f.ACEs, rawACE{Type: aceAllow, Mask: genericAll, SID: sidUsers}) }, false},
		{"another user may delete", func(f *fileTrust) { f.ACEs = append(f.ACEs, rawACE{Type: aceAllow, Mask: accessDelete, SID: other}) }, false},
		{"an inherit-only grant is not for the file", func(f *fileTrust) {
			f.ACEs = append(f.ACEs, rawACE{Type: aceAllow, Flags: aceInheritOnly, Mask: genericAll, SID: other})
		}, true},
		{"a callback allow entry", func(f *fileTrust) { f.ACEs = append(f.ACEs, rawACE{Type: 0x9, Mask: genericAll, SID: other}) }, false},
		{"two links", func(f *fileTrust) { f.Links = 2 }, false},
		{"no link count read", func(f *fileTrust) { f.Links = 0 }, false},
		{"a reparse point", func(f *fileTrust) { f.Reparse = true }, false},
		{"a folder", func(f *fileTrust) { f.Dir = true }, false},
	} {
		f := good
		f.ACEs = append([]rawACE(nil), good.ACEs...)
		tc.edit(&f)
		p := trustProblem(f, me)
		if (p == "") != tc.ok {
			t.Errorf("%s: trustProblem = %q, want ok %v", tc.name, p, tc.ok)
		}
	}
}

func TestRecordFileSID(t *testing.T) {
	for path, want := range map[string]string{
		`C:\ProgramData\agentbox\acl\S-1-5-21-1-2-3-1001.json`: "S-1-5-21-1-2-3-1001",
		`acl/S-1-5-21-1-2-3-1001.json`:                         "S-1-5-21-1-2-3-1001",
		`C:\x\acl\S-1-5-21-1-2-3-1001.json.lock`:               "",
		`C:\x\acl\evil.json`:                                   "",
		`C:\x\acl\S-1-5-21-1-2-3-1001.txt`:                     "",
	} {
		if got := recordFileSID(path); got != want {
			t.Errorf("recordFileSID(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestKeepOwn: of a record, only the ACEs of agentbox's own SIDs (the
// sandbox group, a root's own capability SID on that root) are used; a
// forged entry naming Everyone, Users, the user or another root's
// capability SID is dropped, so neither a run nor uninstall removes such
// a SID's ACEs anywhere.
func TestKeepOwn(t *testing.T) {
	const group = "S-1-5-21-9-9-9-1010"
	root := `C:\Users\me\proj`
	rec := &aclRecord{ACEs: []*recACE{
		{Path: root, SID: group, Mask: 1},
		{Path: root, SID: CapabilitySID(root), Mask: 1},
		{Path: `C:\Windows\System32`, SID: sidUsers, Mask: 1},
		{Path: `C:\Windows`, SID: sidEveryone, Mask: 1},
		{Path: `C:\Users\me`, SID: "S-1-5-21-1-2-3-1001", Mask: 1},
		{Path: `C:\Users\me\.ssh`, SID: CapabilitySID(root), Mask: 1},
		{Path: `c:\users\me\PROJ`, SID: CapabilitySID(root), Mask: 1},
	}}
	dropped := rec.keepOwn(group)
	var kept, gone []string
	for _, a := range rec.ACEs {
		kept = append(kept, a.Path+" "+a.SID)
	}
	for _, a := range dropped {
		gone = append(gone, a.Path+" "+a.SID)
	}
	wantKept := []string{root + " " + group, root + " " + CapabilitySID(root), `c:\users\me\PROJ ` + CapabilitySID(root)}
	wantGone := []string{`C:\Windows\System32 ` + sidUsers, `C:\Windows ` + sidEveryone, `C:\Users\me S-1-5-21-1-2-3-1001`, `C:\Users\me\.ssh ` + CapabilitySID(root)}
	if diff := cmp.Diff(wantKept, kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantGone, gone); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if ownSID(group, root, "") {
		t.Error("with no group SID known, the group's SID counted as agentbox's")
	}
}

// TestSpecACEsAreOwn: every ACE a spec asks for is of a SID ownSID
// accepts, so the record keeps all a run writes.
func TestSpecACEsAreOwn(t *testing.T) {
	const group = "S-1-5-21-9-9-9-1010"
	for _, tc := range cases {
		opts := tc.opts
		opts.Exists = exists
		s, err := Build(tc.plan(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range s.ACEs {
			if sid := trusteeSID(a.Trustee, group); !ownSID(sid, a.Path, group) {
				t.Errorf("%s: ACE %s %s is not of agentbox's own SIDs", tc.name, a.Path, a.Trustee)
			}
		}
	}
}
