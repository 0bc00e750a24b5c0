package winsandbox

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/cache"
	"github.com/agentbox/agentbox/plan"
	"github.com/google/go-cmp/cmp"
)

const testCaches = `C:\Users\me\.local\state\agentbox\caches\proj-1a2b3c4d`

// withCaches is base() with the workspace's private caches, %APPDATA%
// and %LOCALAPPDATA% redirected there (appdata mode), and the provider.
func withCaches(appdata, prov string, confined ...string) *plan.Plan {
	p := base()
	p.CacheDir = testCaches
	p.Mounts = append(p.Mounts, plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Path: testCaches, Access: plan.ReadWrite, Origin: origin("caches: private to workspace proj-1a2b3c4d")})
	c := plan.Cache{Tool: "appdata", Mode: appdata}
	if appdata == cache.Private {
		c.Dirs = []plan.CacheDir{
			{Path: testCaches + `\appdata-roaming`, Var: "APPDATA=" + testCaches + `\appdata-roaming`},
			{Path: testCaches + `\appdata-local`, Var: "LOCALAPPDATA=" + testCaches + `\appdata-local`},
		}
	}
	p.Caches = []plan.Cache{{Tool: "npm", Mode: cache.Private}, c}
	p.Provider = plan.Provider{Name: prov, Supported: prov != "", ConfinedEnv: confined}
	return p
}

// TestBoxHome: with %APPDATA% redirected to the workspace's private
// caches, the box's USERPROFILE, HOME, HOMEDRIVE and HOMEPATH name the
// workspace's own home folder there, made before the run with the
// APPDATA folders; the agent CLI is pointed at its own folder (the
// writable root at its real path) by its variable unless the user or the
// provider set it; with appdata not private, or no private caches, the
// user's home stays.
func TestBoxHome(t *testing.T) {
	home := testCaches + `\home`
	homeEnv := []string{"USERPROFILE=" + home, "HOME=" + home, "HOMEDRIVE=C:", `HOMEPATH=\Users\me\.local\state\agentbox\caches\proj-1a2b3c4d\home`}
	userCodex := withCaches(cache.Private, "codex")
	userCodex.Environ = append(userCodex.Environ, `CODEX_HOME=D:\codex`)
	noCaches := withCaches(cache.Private, "")
	noCaches.CacheDir = ""
	for _, tc := range []struct {
		name string
		p    *plan.Plan
		want *BoxHome
	}{
		{"private", withCaches(cache.Private, ""), &BoxHome{Path: home, Make: []string{home, testCaches + `\appdata-roaming`, testCaches + `\appdata-local`}, Env: homeEnv}},
		{"codex", withCaches(cache.Private, "codex"), &BoxHome{Path: home, Make: []string{home, testCaches + `\appdata-roaming`, testCaches + `\appdata-local`},
			Env: append(append([]string(nil), homeEnv...), `CODEX_HOME=C:\Users\me\.codex`)}},
		{"codex-home-set", userCodex, &BoxHome{Path: home, Make: []string{home, testCaches + `\appdata-roaming`, testCaches + `\appdata-local`}, Env: homeEnv}},
		{"claude-config-dir-set", withCaches(cache.Private, "claude", `CLAUDE_CONFIG_DIR=C:\Users\me\.claude`), &BoxHome{Path: home, Make: []string{home, testCaches + `\appdata-roaming`, testCaches + `\appdata-local`}, Env: homeEnv}},
		{"appdata-host-read-only", withCaches(cache.HostReadOnly, "codex"), nil},
		{"appdata-off", withCaches(cache.Off, ""), nil},
		{"no-private-caches", noCaches, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, boxHome(tc.p)); diff != "" {
				t.Errorf("boxHome (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompleteBoxHome: the command's environment has the box's home in
// place of the user's USERPROFILE (the inherited value is replaced, not
// left beside it), `plan` says so rule by rule and in the spec, and the
// folders are made before the run. Before, USERPROFILE and HOME named the
// user's profile, which the sandbox users cannot read.
func TestCompleteBoxHome(t *testing.T) {
	p := withCaches(cache.Private, "")
	p.Environ = append(p.Environ, `USERPROFILE=C:\Users\me`, `HOMEDRIVE=C:`, `HOMEPATH=\Users\me`)
	if err := (&Windows{Facts: fixedFacts}).Complete(p); err != nil {
		t.Fatal(err)
	}
	s, err := SpecOf(p)
	if err != nil {
		t.Fatal(err)
	}
	home := testCaches + `\home`
	for name, want := range map[string]string{"USERPROFILE": home, "HOME": home, "HOMEPATH": `\Users\me\.local\state\agentbox\caches\proj-1a2b3c4d\home`} {
		if got := envGet(s.Spawn.Env, name); got != want {
			t.Errorf("%s in the box = %q, want %q", name, got, want)
		}
	}
	n := 0
	for _, kv := range s.Spawn.Env {
		if k, _, _ := cutEnv(kv); k == "USERPROFILE" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("USERPROFILE is in the box's environment %d times, want once", n)
	}
	found := false
	for _, r := range p.Box.Rules {
		if r.Rule == "home" && r.Path == home && r.Level == plan.Enforced {
			found = true
		}
	}
	if !found {
		t.Errorf("no rule names the box's home: %+v", p.Box.Rules)
	}
	// What the grant on the caches does not keep out is said, not hidden.
	said := false
	for _, r := range p.Box.Rules {
		if r.Rule == "windows" && r.Level == plan.Weaker && strings.Contains(r.How, "the box of another workspace can read them") && strings.Contains(r.How, testCaches) {
			said = true
		}
	}
	if !said {
		t.Errorf("plan does not say another workspace's box can read the caches: %+v", p.Box.Rules)
	}
	made := map[string]bool{}
	for _, d := range p.Prepare {
		made[d.Path] = true
	}
	for _, d := range []string{home, testCaches + `\appdata-roaming`, testCaches + `\appdata-local`} {
		if !made[d] {
			t.Errorf("%s is not made before the run (prepare: %+v)", d, p.Prepare)
		}
	}
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' && i > 0 {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}
