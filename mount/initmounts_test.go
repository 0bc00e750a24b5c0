package mount

import (
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// TestInitMounts: which binds Render leaves to the C init (InitMount): the
// read-only binds of a path onto itself that the box shows as the host's
// before them and that no later mount of bwrap's is at, above or below;
// each range of bwrap's words holds exactly that bind.
func TestInitMounts(t *testing.T) {
	o := plan.Origin{Key: "test"}
	ro := func(path string) plan.Mount {
		return plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: path, Access: plan.ReadOnly, Origin: o}
	}
	project := func(extra ...plan.Mount) func(p *plan.Plan) {
		return func(p *plan.Plan) {
			p.Mounts = append(append(p.Mounts[:5:5],
				plan.Mount{Stage: plan.StageReadOnly, Op: plan.Pin, Path: "/home/u/proj/.git", Access: plan.ReadWrite, Origin: o},
				ro("/home/u/proj/.claude"),
				ro("/home/u/proj/.git/hooks"),
				ro("/home/u/proj/.git/config"),
			), extra...)
		}
	}
	cases := []struct {
		name   string
		change func(p *plan.Plan)
		want   []string
	}{
		{"a project in the home folder: the read-only binds, not the pin or the writable root",
			project(), []string{"/home/u/proj/.claude", "/home/u/proj/.git/hooks", "/home/u/proj/.git/config"}},
		{"later mounts elsewhere do not matter",
			project(plan.Mount{Stage: plan.StageDeny, Op: plan.HideFile, Path: "/home/u/.netrc", Access: plan.Hidden, Origin: o}),
			[]string{"/home/u/proj/.claude", "/home/u/proj/.git/hooks", "/home/u/proj/.git/config"}},
		{"a later mount above one keeps it bwrap's",
			project(plan.Mount{Stage: plan.StageDeny, Op: plan.HideDir, Path: "/home/u/proj/.git", Access: plan.Hidden, Origin: o}),
			[]string{"/home/u/proj/.claude"}},
		{"a later mount below one keeps it bwrap's",
			project(plan.Mount{Stage: plan.StageDeny, Op: plan.HideFile, Path: "/home/u/proj/.git/hooks/pre-commit", Access: plan.Hidden, Origin: o}),
			[]string{"/home/u/proj/.claude", "/home/u/proj/.git/config"}},
		{"a later mount at the same path keeps it bwrap's",
			project(plan.Mount{Stage: plan.StageDeny, Op: plan.HideFile, Path: "/home/u/proj/.git/config", Access: plan.Hidden, Origin: o}),
			[]string{"/home/u/proj/.claude", "/home/u/proj/.git/hooks"}},
		{"a project under the box's own /tmp: the box does not show the host's files there",
			func(p *plan.Plan) {
				p.Mounts = append(p.Mounts[:4:4],
					plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Path: "/tmp/proj", Access: plan.ReadWrite, Origin: o},
					ro("/tmp/proj/.claude"))
			}, nil},
		{"a bind from elsewhere", func(p *plan.Plan) {
			p.Mounts = append(p.Mounts[:5:5], plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Source: "/srv/x", Path: "/home/u/proj/x", Access: plan.ReadOnly, Origin: o})
		}, nil},
		{"a certificate bundle bwrap binds below one", func(p *plan.Plan) {
			project()(p)
			p.Mounts = append(p.Mounts, ro("/etc/ssl"))
			p.Network = plan.Network{Mode: plan.NetAllowlist, Allow: []string{"x.test"}, Intercept: []string{"x.test"}, CABundles: []string{"/etc/ssl/certs/ca.pem"}}
		}, []string{"/home/u/proj/.claude", "/home/u/proj/.git/hooks", "/home/u/proj/.git/config"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan()
			tc.change(p)
			av, err := Render(p, Options{Seccomp: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range av.InitMounts {
				got = append(got, m.Path)
				want := []string{"--ro-bind-fd", strconv.Itoa(m.FD), m.Path}
				if m.Kind != "make-ro" || m.From < 0 || m.To > av.CommandAt || !slices.Equal(av.Args[m.From:m.To], want) {
					t.Errorf("%+v: bwrap's words %q, want %q", m, av.Args[max(m.From, 0):min(m.To, len(av.Args))], want)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the init's binds (-want +got):\n%s", diff)
			}
		})
	}
}
