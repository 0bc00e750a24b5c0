package winsandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadGrants: what the sandbox users may read besides the plan's paths
// reaches no further than it must. agentbox.exe in Downloads or in the
// profile itself, or a command there, used to make the whole folder (and
// with the profile: AppData, .gitconfig, .npmrc) readable to every box,
// for good.
func TestReadGrants(t *testing.T) {
	const temp = home + `\AppData\Local\Temp`
	proj := home + `\proj`
	inProj := func(p string) bool { return winWithin(p, proj) }
	for _, tc := range []struct {
		name                 string
		runner, program, cwd string
		home                 string
		want                 []readGrant
		wantErr              string
	}{
		{name: "installed runner, npm command, cwd in the project",
			runner: `C:\Program Files\agentbox\agentbox.exe`, program: home + `\AppData\Roaming\npm\claude.cmd`, cwd: proj, home: home,
			want: []readGrant{
				{Path: `C:\Program Files\agentbox\agentbox.exe`, Origin: "the runner (agentbox.exe): this file only"},
				{Path: home + `\AppData\Roaming\npm`, Folder: true, Origin: "the command's folder"},
			}},
		{name: "agentbox.exe in Downloads: the file only",
			runner: home + `\Downloads\agentbox.exe`, cwd: proj, home: home,
			want: []readGrant{{Path: home + `\Downloads\agentbox.exe`, Origin: "the runner (agentbox.exe): this file only"}}},
		{name: "agentbox.exe in the profile itself: the file only",
			runner: home + `\agentbox.exe`, cwd: proj, home: home,
			want: []readGrant{{Path: home + `\agentbox.exe`, Origin: "the runner (agentbox.exe): this file only"}}},
		{name: "a command in Downloads: the file only",
			program: home + `\Downloads\tool.exe`, cwd: proj, home: home,
			want: []readGrant{{Path: home + `\Downloads\tool.exe`, Origin: `the command's program: this file only (its folder C:\Users\me\Downloads is too broad to share)`}}},
		{name: "a command in the profile itself: the file only",
			program: home + `\tool.exe`, cwd: proj, home: home,
			want: []readGrant{{Path: home + `\tool.exe`, Origin: `the command's program: this file only (its folder C:\Users\me is too broad to share)`}}},
		{name: "a command in AppData\\Local\\Programs: the file only",
			program: home + `\AppData\Local\Programs\x.exe`, cwd: proj, home: home,
			want: []readGrant{{Path: home + `\AppData\Local\Programs\x.exe`, Origin: `the command's program: this file only (its folder C:\Users\me\AppData\Local\Programs is too broad to share)`}}},
		{name: "a command in a program's own folder under Programs",
			program: home + `\AppData\Local\Programs\Tool\tool.exe`, cwd: proj, home: home,
			want: []readGrant{{Path: home + `\AppData\Local\Programs\Tool`, Folder: true, Origin: "the command's folder"}}},
		{name: "a command in the temporary folder: the file only",
			program: temp + `\x.exe`, cwd: proj, home: home,
			want: []readGrant{{Path: temp + `\x.exe`, Origin: `the command's program: this file only (its folder C:\Users\me\AppData\Local\Temp is too broad to share)`}}},
		{name: "a command in the project needs nothing",
			program: proj + `\build\tool.exe`, cwd: proj, home: home},
		{name: "cwd outside the roots, narrow: granted",
			cwd: `D:\data\reports`, home: home,
			want: []readGrant{{Path: `D:\data\reports`, Folder: true, Origin: "the working directory"}}},
		{name: "cwd the home folder: refused", cwd: home, home: home, wantErr: "it is your home folder"},
		{name: "cwd Downloads: refused", cwd: home + `\Downloads`, home: home, wantErr: "lies directly in your home folder"},
		{name: "cwd C:\\Users: refused", cwd: `C:\Users`, home: home, wantErr: "it holds your home folder"},
		{name: "cwd C:\\: refused", cwd: `C:\`, home: home, wantErr: "it holds your home folder"},
		{name: "cwd AppData\\Roaming: refused", cwd: home + `\AppData\Roaming`, home: home, wantErr: "every program keeps its data in it"},
		{name: "home unknown: the command's file only",
			program: home + `\AppData\Roaming\npm\claude.cmd`, cwd: proj,
			want: []readGrant{{Path: home + `\AppData\Roaming\npm\claude.cmd`, Origin: `the command's program: this file only (its folder C:\Users\me\AppData\Roaming\npm is too broad to share)`}}},
		{name: "home unknown: a cwd outside the roots is refused", cwd: `D:\data`, wantErr: "the home folder is not known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readGrants(tc.runner, tc.program, tc.cwd, tc.home, temp, inProj)
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("readGrants: %v, want error %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("readGrants (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildReadGrantBreadth: the spec never grants the sandbox group read
// on the folder of an agentbox.exe kept in Downloads, and refuses to run
// from the home folder when no writable root holds it.
func TestBuildReadGrantBreadth(t *testing.T) {
	s, err := Build(base(), Options{Exists: exists, Runner: home + `\Downloads\agentbox.exe`})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range s.ACEs {
		if !a.Deny && (winKey(a.Path) == winKey(home+`\Downloads`) || winKey(a.Path) == winKey(home)) {
			t.Errorf("read granted on %s (%s)", a.Path, a.Origin)
		}
	}
	p := base()
	p.Cwd = home
	if _, err := Build(p, Options{Exists: exists}); err == nil || !strings.Contains(err.Error(), "it is your home folder") {
		t.Errorf("running from the home folder: %v, want a refusal", err)
	}
}
