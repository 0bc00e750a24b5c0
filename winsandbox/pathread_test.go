package winsandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUnreadablePathNotes: `plan` names each PATH folder the sandbox users
// cannot read (a bin in the profile), not one they can, one a writable
// root or read grant covers, a missing one, or a repeat.
func TestUnreadablePathNotes(t *testing.T) {
	env := []string{`Path=C:\Windows\system32;"C:\Users\me\go\bin";C:\Users\me\.cargo\bin;;C:\Users\me\proj\node_modules\.bin;C:\gone;c:\users\me\GO\BIN;relative\bin;C:\odd`}
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
	got := unreadablePathNotes(env, readable, covered)
	want := []string{
		`PATH folder C:\Users\me\go\bin: the sandbox users cannot read it, so its programs do not run in the box (give the box the tool another way, or run it from a folder they can read)`,
		`PATH folder C:\odd: whether the sandbox users may read it could not be read; its programs may not run in the box`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	if unreadablePathNotes(env, nil, covered) != nil {
		t.Error("notes without the facts")
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

// TestBuildNotesUnreadablePath: a spec built with the machine's answer
// names, in its notes (`agentbox plan`), the PATH folders in the profile
// the sandbox users cannot read, and not the system's.
func TestBuildNotesUnreadablePath(t *testing.T) {
	opts := Options{Exists: exists, PathReadable: func(dir string) (bool, bool) {
		return !winWithin(dir, `C:\Users\me`), true
	}}
	s, err := Build(base(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range s.Notes {
		if strings.HasPrefix(n, "PATH folder ") {
			got = append(got, strings.SplitN(n, ":", 3)[0]+":"+strings.SplitN(n, ":", 3)[1])
		}
	}
	want := []string{`PATH folder C:\Users\me\AppData\Roaming\npm`, `PATH folder C:\Users\me\AppData\Local\Microsoft\WindowsApps`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PATH notes (-want +got):\n%s\nall notes: %q", diff, s.Notes)
	}
}
