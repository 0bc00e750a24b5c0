package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResolveEnvironmentWindows: Windows variable names are
// case-insensitive, so resolution for GOOS=windows compares names and
// patterns in any case; clean mode keeps what Windows programs need to
// start; inherited truthful variables go whatever their case; and the
// agent CLI's own key survives a deny glob and clean mode there as on
// Linux. (Its CLAUDE_CONFIG_DIR is set only when a box confines it:
// plan.Provider.ConfinedEnv.)
func TestResolveEnvironmentWindows(t *testing.T) {
	base := []string{
		`Path=C:\Windows\system32`, `SystemRoot=C:\Windows`, `ComSpec=C:\Windows\system32\cmd.exe`, `PATHEXT=.COM;.EXE`,
		`USERPROFILE=C:\Users\u`, `windir=C:\Windows`, "Anthropic_Api_Key=sk-x", "github_token=ghp", "agentbox_writable=C:\\x",
		"EDITOR=vi",
	}
	tests := []struct {
		name        string
		flags       Flags
		wantEnviron []string
		wantRemoved []string
		wantKept    []string
	}{
		{
			name:  "inherit: deny globs match any case, truthful names go in any case, the provider key stays",
			flags: Flags{DenyEnv: []string{"*_TOKEN", "*_KEY"}},
			wantEnviron: []string{`Path=C:\Windows\system32`, `SystemRoot=C:\Windows`, `ComSpec=C:\Windows\system32\cmd.exe`, `PATHEXT=.COM;.EXE`,
				`USERPROFILE=C:\Users\u`, `windir=C:\Windows`, "Anthropic_Api_Key=sk-x", "EDITOR=vi"},
			wantRemoved: []string{"github_token"},
			wantKept:    []string{"Anthropic_Api_Key"},
		},
		{
			// The agent CLI's own key stays in clean mode too.
			name:  "clean keeps Path and what Windows needs",
			flags: Flags{EnvMode: "clean"},
			wantEnviron: []string{`Path=C:\Windows\system32`, `SystemRoot=C:\Windows`, `ComSpec=C:\Windows\system32\cmd.exe`, `PATHEXT=.COM;.EXE`,
				`USERPROFILE=C:\Users\u`, `windir=C:\Windows`, "Anthropic_Api_Key=sk-x"},
			wantRemoved: []string{"EDITOR", "github_token"},
			wantKept:    []string{"Anthropic_Api_Key"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWinWorld(t)
			w.mkdir("home/u/.claude")
			w.env.GOOS = "windows"
			w.env.Environ = append([]string(nil), base...)
			flags := tc.flags
			flags.Tmp = "private"
			p := w.mustResolve(flags, Options{}, "claude")
			// The caches' variables are TestResolveCachesWindows's.
			cacheVar := map[string]bool{}
			for _, c := range p.Caches {
				for _, d := range c.Dirs {
					name, _, _ := strings.Cut(d.Var, "=")
					cacheVar[name] = true
				}
				for _, rd := range c.Reads {
					name, _, _ := strings.Cut(rd.Var, "=")
					cacheVar[name] = true
				}
			}
			var got []string
			for _, kv := range p.Environ {
				if name, _, _ := strings.Cut(kv, "="); !cacheVar[name] {
					got = append(got, w.norm(kv))
				}
			}
			want := append([]string(nil), tc.wantEnviron...)
			for i, kv := range want {
				want[i] = w.norm(replaceHome(kv, w.path("home/u")))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("environ (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRemoved, p.Env.Removed); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantKept, p.Env.Kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
		})
	}
}

// newWinWorld is newWorld for Windows, in a folder of its own rather than
// t.TempDir: Wine cannot remove folders the way os.RemoveAll asks, which
// would fail the test for nothing it tests.
func newWinWorld(t *testing.T) *world {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, root: root}
	w.mkdir("home/u/proj")
	w.mkdir("tmp")
	w.env = Env{GOOS: "windows", UID: -1, GID: -1, Home: w.path("home/u"), Cwd: w.path("home/u/proj"), TempDir: w.path("tmp"), FS: OSFS{}}
	return w
}

func replaceHome(s, home string) string { return strings.Replace(s, "$HOME", home, 1) }

// TestResolveTmpOwnerWindows: on Windows every user's UID is -1, so the
// per-user tmp folder is named after the user's SID.
func TestResolveTmpOwnerWindows(t *testing.T) {
	for _, tc := range []struct {
		goos, user string
		uid        int
		want       string
	}{
		{"windows", "S-1-5-21-1-2-3-1001", -1, "agentbox-S-1-5-21-1-2-3-1001"},
		{"windows", "", -1, "agentbox--1"}, // no SID known: the number, as before
	} {
		w := newWinWorld(t)
		w.env.GOOS, w.env.User, w.env.UID = tc.goos, tc.user, tc.uid
		p := w.mustResolve(Flags{}, Options{}, "true")
		if got := filepath.Base(filepath.Dir(p.Tmp.HostDir)); got != tc.want {
			t.Errorf("%s uid %d user %q: tmp folder in %s, want %s", tc.goos, tc.uid, tc.user, got, tc.want)
		}
	}
}
