package winsandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRedirects(t *testing.T) {
	for _, tc := range []struct {
		attrs, tag uint32
		want       bool
	}{
		{fileAttributeDirectory, 0, false},
		{fileAttributeDirectory | fileAttributeReparsePoint, reparseTagMountPoint, true}, // a junction
		{fileAttributeReparsePoint, reparseTagSymlink, true},
		{fileAttributeDirectory | fileAttributeReparsePoint, 0xA000001D, true},  // WSL's symbolic link
		{fileAttributeDirectory | fileAttributeReparsePoint, 0x9000601A, false}, // a OneDrive (cloud files) folder
		{fileAttributeReparsePoint, 0x80000013, false},                          // a deduplicated file
		{fileAttributeReparsePoint, 0x8000001B, false},                          // an App Execution Alias
		{0, reparseTagMountPoint, false},                                        // no reparse point: the tag means nothing
	} {
		if got := redirects(tc.attrs, tc.tag); got != tc.want {
			t.Errorf("redirects(%#x, %#x) = %v, want %v", tc.attrs, tc.tag, got, tc.want)
		}
	}
}

// TestMayFollow: only a path whose every recorded ACE is a read grant on
// one file is read and written through links; a writable root, a deny
// and a folder's read grant never are.
func TestMayFollow(t *testing.T) {
	read, modify := FileRights(RightsRead), FileRights(RightsModify)
	const p = `C:\Users\me\scoop\apps\agentbox\current\agentbox.exe`
	for _, tc := range []struct {
		name string
		aces []*recACE
		want bool
	}{
		{"a file's read grant", []*recACE{{Path: p, SID: "G", Mask: read}}, true},
		{"case differs", []*recACE{{Path: `c:\users\ME\scoop\apps\agentbox\current\AGENTBOX.EXE`, SID: "G", Mask: read}}, true},
		{"nothing recorded", nil, false},
		{"a folder's read grant", []*recACE{{Path: p, SID: "G", Mask: read, Inherit: true}}, false},
		{"a writable root", []*recACE{{Path: p, SID: "G", Mask: modify, Inherit: true}}, false},
		{"a deny", []*recACE{{Path: p, SID: "G", Mask: read, Deny: true}}, false},
		{"read and modify", []*recACE{{Path: p, SID: "G", Mask: read}, {Path: p, SID: "C", Mask: modify}}, false},
		{"another path's", []*recACE{{Path: p + "x", SID: "G", Mask: read}}, false},
	} {
		r := &aclRecord{ACEs: tc.aces}
		if got := r.mayFollow(p); got != tc.want {
			t.Errorf("%s: mayFollow = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSamePath(t *testing.T) {
	for _, tc := range []struct {
		final, want string
		same        bool
	}{
		{`\\?\C:\Users\me\proj`, `C:\Users\me\proj`, true},
		{`\\?\C:\Users\me\proj`, `c:\users\ME\proj\`, true},
		{`\\?\C:\`, `C:\`, true},
		{`\\?\UNC\server\share\x`, `\\server\share\x`, true},
		{`\\?\C:\Users\me\.ssh`, `C:\Users\me\proj\sub`, false},                        // a junction swapped in
		{`\\?\C:\Users\me\AppData\Roaming\Microsoft`, `C:\Users\me\proj\sub\x`, false}, // through a junction on the way
		{`\\?\D:\real\proj`, `S:\proj`, false},                                         // a subst drive
	} {
		if got := samePath(tc.final, tc.want); got != tc.same {
			t.Errorf("samePath(%q, %q) = %v, want %v", tc.final, tc.want, got, tc.same)
		}
	}
}

func TestExtendedPath(t *testing.T) {
	long := `C:\Users\me\proj\` + strings.Repeat(`deep\`, 50) + `x`
	for _, tc := range []struct{ in, want string }{
		{`C:\Users\me\proj`, `C:\Users\me\proj`},
		{long, `\\?\` + long},
		{strings.ReplaceAll(long, `\`, `/`), `\\?\` + long},
		{`C:\Users\me\proj\.\` + strings.Repeat(`deep\`, 50) + `skip\..\x`, `\\?\` + long},
		{`\\server\share\` + strings.Repeat(`deep\`, 50) + `x`, `\\?\UNC\server\share\` + strings.Repeat(`deep\`, 50) + `x`},
		{`\\?\` + long, `\\?\` + long},
		{strings.Repeat(`rel\`, 70), strings.Repeat(`rel\`, 70)},
	} {
		if got := extendedPath(tc.in); got != tc.want {
			t.Errorf("extendedPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestLinkFollowing: the links on the way to a file agentbox follows are
// judged step by step, each folder below the volume's root and the file,
// and only one the user, SYSTEM, Administrators or TrustedInstaller owns
// is followed (a sandbox user's, a box's, is not).
func TestLinkFollowing(t *testing.T) {
	for in, want := range map[string][]string{
		`C:\Users\me\AppData\Local\Microsoft\WinGet\Links\tool.exe`: {`C:\Users`, `C:\Users\me`, `C:\Users\me\AppData`, `C:\Users\me\AppData\Local`, `C:\Users\me\AppData\Local\Microsoft`, `C:\Users\me\AppData\Local\Microsoft\WinGet`, `C:\Users\me\AppData\Local\Microsoft\WinGet\Links`, `C:\Users\me\AppData\Local\Microsoft\WinGet\Links\tool.exe`},
		`C:\tool.exe`:                 {`C:\tool.exe`},
		`C:\a\b\`:                     {`C:\a`, `C:\a\b`},
		`C:/a/b`:                      {`C:\a`, `C:\a\b`},
		`\\server\share\dir\tool.exe`: {`\\server\share\dir`, `\\server\share\dir\tool.exe`},
		`C:\`:                         nil,
	} {
		if diff := cmp.Diff(want, pathSteps(in)); diff != "" {
			t.Errorf("pathSteps(%q) (-want +got):\n%s", in, diff)
		}
	}
	const me = "S-1-5-21-1-2-3-1001"
	for owner, want := range map[string]bool{
		me:                    true,
		"s-1-5-21-1-2-3-1001": true,
		"S-1-5-18":            true,
		"S-1-5-32-544":        true,
		"S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464": true,
		"S-1-5-21-1-2-3-1002": false, // a sandbox user (a box), another user
		"S-1-5-32-545":        false, // Users
		"S-1-1-0":             false, // Everyone
		"":                    false,
	} {
		if got := trustedLinkOwner(owner, me); got != want {
			t.Errorf("trustedLinkOwner(%q) = %v, want %v", owner, got, want)
		}
	}
	if trustedLinkOwner("", "") {
		t.Error("an unknown owner with no user is trusted")
	}
}
