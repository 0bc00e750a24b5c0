package winsandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPathReadGrants: a PATH folder in the profile the sandbox users
// cannot read gets a read grant when it is narrow (a Go bin); a broad one
// (the home folder's own bin directly in it), one outside the profile and
// one whose DACL could not be read are named for `plan` instead; a
// readable one, a covered one, a relative one and a repeat are left alone.
func TestPathReadGrants(t *testing.T) {
	const home = `C:\Users\me`
	env := []string{`Path=C:\Windows\system32;"C:\Users\me\go\bin";C:\Users\me\.cargo\bin;;C:\Users\me\proj\node_modules\.bin;C:\gone;c:\users\me\GO\BIN;relative\bin;C:\odd;C:\Users\me\bin;C:\Tools\private`}
	readable := func(dir string) (bool, bool) {
		switch winKey(dir) {
		case winKey(`C:\Windows\system32`):
			return true, true
		case winKey(`C:\gone`):
			return true, true // not there: nothing to run
		case winKey(`C:\odd`):
			return false, false
		}
		return false, true
	}
	covered := func(dir string) bool {
		return winWithin(dir, `C:\Users\me\proj`) || winKey(dir) == winKey(`C:\Users\me\.cargo\bin`)
	}
	grants, notes := pathReadGrants(env, readable, covered, home, `C:\Users\me\AppData\Local\Temp`)
	wantGrants := []readGrant{{Path: `C:\Users\me\go\bin`, Folder: true, Origin: "a folder of the command's PATH in your profile: read only"}}
	if diff := cmp.Diff(wantGrants, grants, cmp.AllowUnexported(readGrant{})); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	wantNotes := []string{
		`PATH folder C:\odd: whether the sandbox users may read it could not be read; its programs may not run in the box`,
		`PATH folder C:\Users\me\bin: the sandbox users cannot read it (it is too broad to share: it lies directly in your home folder, which holds your other files there), so its programs do not run in the box`,
		`PATH folder C:\Tools\private: the sandbox users cannot read it (it lies outside your profile), so its programs do not run in the box`,
	}
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	if g, n := pathReadGrants(env, nil, covered, home, ""); g != nil || n != nil {
		t.Error("grants or notes without the facts")
	}
}

func TestSandboxCanRead(t *testing.T) {
	const group = "S-1-5-21-9-9-9-1010"
	read := FileRights(RightsRead)
	for _, tc := range []struct {
		name string
		aces []rawACE
		want bool
	}{
		{"a profile folder: the user, SYSTEM, Administrators", []rawACE{{Type: aceAllow, Mask: 0x1f01ff, SID: "S-1-5-21-1-2-3-1001"}, {Type: aceAllow, Mask: 0x1f01ff, SID: sidSystem}}, false},
		{"Users read", []rawACE{{Type: aceAllow, Mask: read, SID: sidUsers}}, true},
		{"the sandbox group granted", []rawACE{{Type: aceAllow, Mask: read, SID: group}}, true},
		{"the sandbox group denied first", []rawACE{{Type: aceDeny, Mask: read, SID: group}, {Type: aceAllow, Mask: read, SID: group}}, false},
		{"inherit-only grant", []rawACE{{Type: aceAllow, Flags: aceInheritOnly, Mask: read, SID: group}}, false},
	} {
		if got := sandboxCanRead(tc.aces, false, group); got != tc.want {
			t.Errorf("%s: sandboxCanRead = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBuildGrantsPathFolders: a spec built with the machine's answer
// gives the sandbox group read on the narrow PATH folders in the profile
// it cannot read (npm's global folder, WindowsApps), read-only, each only
// where Users cannot read already, and no note for them.
func TestBuildGrantsPathFolders(t *testing.T) {
	opts := Options{Exists: exists, PathReadable: func(dir string) (bool, bool) {
		return !winWithin(dir, `C:\Users\me`), true
	}}
	s, err := Build(base(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range s.ACEs {
		if strings.HasPrefix(a.Origin, "a folder of the command's PATH") {
			if a.Rights != RightsRead || a.Deny || !a.Inherit || !a.IfUsersCannotRead || a.Trustee != GroupName {
				t.Errorf("PATH grant %+v, want an inherited read grant for the group where Users cannot read", a)
			}
			got = append(got, a.Path)
		}
	}
	want := []string{`C:\Users\me\AppData\Roaming\npm`, `C:\Users\me\AppData\Local\Microsoft\WindowsApps`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PATH grants (-want +got):\n%s", diff)
	}
	for _, n := range s.Notes {
		if strings.HasPrefix(n, "PATH folder ") {
			t.Errorf("note for a granted folder: %s", n)
		}
	}
}
