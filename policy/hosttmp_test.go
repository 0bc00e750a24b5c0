package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// TestHostTmpKeepsOwnFolders: agentbox's configuration, state and cache
// folders under /tmp (XDG variables pointing there) are kept read-only,
// with the folders above them pinned, when the box shares the host's /tmp;
// in the other /tmp modes the box does not see the host's /tmp at all. The
// private caches, which would lie in the read-only state folder, are not
// made then.
func TestHostTmpKeepsOwnFolders(t *testing.T) {
	files := mapFS{
		"/home/u/proj/README":                "",
		"/tmp/x/config/agentbox/config.toml": "version = 1\n",
		"/tmp/x/state/agentbox/trusted":      "",
	}
	xdg := []string{"XDG_CONFIG_HOME=/tmp/x/config", "XDG_STATE_HOME=/tmp/x/state", "XDG_CACHE_HOME=/tmp/x/cache"}
	hostWant := []string{
		"pin /tmp/x",
		"pin /tmp/x/config",
		"pin /tmp/x/state",
		"pin /tmp/x/cache",
		"ro-bind /tmp/x/config/agentbox",
		"ro-bind /tmp/x/state/agentbox",
		"ro-bind /tmp/x/cache/agentbox",
		"ro-bind /tmp/x/config/agentbox/config.toml",
	}
	for _, tc := range []struct {
		mode      string
		want      []string
		cachesOff bool
	}{
		{plan.TmpHost, hostWant, true},
		{plan.TmpWorkspace, nil, false},
		{plan.TmpPrivate, nil, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			env := fakeEnv(files, xdg...)
			layers, err := Load(env, Flags{Tmp: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			p, err := Resolve(layers, env, []string{"true"}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range p.Mounts {
				if m.Stage == plan.StageReadOnly && plan.Within(m.Path, "/tmp") {
					got = append(got, string(m.Op)+" "+m.Path)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("read-only stage under /tmp (-want +got):\n%s", diff)
			}
			if tc.cachesOff != (p.CacheDir == "") {
				t.Errorf("private caches folder %q; want none: %v", p.CacheDir, tc.cachesOff)
			}
			if tc.mode == plan.TmpHost {
				// The folders agentbox makes before the run, outermost
				// first, so the box cannot make them itself.
				var made []string
				for _, d := range p.Prepare {
					if strings.HasPrefix(d.Path, "/tmp/x/cache") {
						made = append(made, d.Path)
					}
				}
				if diff := cmp.Diff([]string{"/tmp/x/cache", "/tmp/x/cache/agentbox"}, made); diff != "" {
					t.Errorf("prepared (-want +got):\n%s", diff)
				}
			}
		})
	}
}
