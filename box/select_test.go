package box

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
)

// backend.Select completes candidates on the plan itself and undoes one it
// passes over by restoring a shallow copy of the plan. That is only right
// while confined and every backend's Complete set fields of the plan and
// never write into what its slices and maps hold: this holds each backend
// to it, on plans with guards (a repository), a private /tmp, an
// allowlist, a denied path and a provider's confined command and
// variables. It also runs a Complete that fails, which Select undoes too.
func TestSelectUndoesACandidate(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home/u")
	for _, d := range []string{"home/u/.aws", "home/u/proj/.git/hooks", "tmp", "state"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := policy.Env{GOOS: "linux", UID: 1000, GID: 1000, Home: home, Cwd: filepath.Join(home, "proj"),
		TempDir: filepath.Join(root, "tmp"), FS: policy.OSFS{},
		Environ: []string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_STATE_HOME=" + filepath.Join(root, "state")}}
	for _, tc := range []struct {
		flags   policy.Flags
		command []string
	}{
		{policy.Flags{}, []string{"make"}},
		{policy.Flags{Tmp: "private"}, []string{"make"}},
		{policy.Flags{Network: "allowlist", Allow: []string{"example.com"}}, []string{"make"}},
		{policy.Flags{Network: "none", Deny: []string{"~/.aws"}}, []string{"make"}},
		{policy.Flags{}, []string{"claude", "-p", "hi"}},
	} {
		layers, err := policy.Load(env, tc.flags)
		if err != nil {
			t.Fatal(err)
		}
		p, err := policy.Resolve(layers, env, tc.command, policy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p.RunID = "0123456789ab"
		for _, b := range Backends() {
			before := p.Clone()
			saved := *p
			confined(p, b)
			err := b.Complete(p)
			*p = saved
			if diff := cmp.Diff(before, p, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s %v %+v (Complete: %v): the plan is not as it was once its fields are restored (-before +after):\n%s",
					b.Name(), tc.command, tc.flags, err, diff)
			}
		}
		// And through Select: a plan no backend is chosen for is as it was.
		before := p.Clone()
		c, _ := backend.Select(p, []backend.Backend{refusing{Backends()[0]}, refusing{Backends()[1]}}, confined)
		if c.Backend != nil {
			t.Fatalf("chose %s", c.Backend.Name())
		}
		if diff := cmp.Diff(before, p, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%v %+v: Select changed a plan it chose no backend for (-before +after):\n%s", tc.command, tc.flags, diff)
		}
	}
}

// refusing is a backend that completes the plan, then finds a rule it
// cannot enforce.
type refusing struct{ backend.Backend }

func (r refusing) Available() error { return nil }
func (r refusing) Complete(p *plan.Plan) error {
	if err := r.Backend.Complete(p); err != nil {
		return err
	}
	p.Box.Rules = append(p.Box.Rules, plan.RuleStatus{Rule: "test", Level: plan.NotEnforced, How: "refused by the test"})
	return nil
}
