package mount

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// TestInitMounts: which mounts Render leaves to the C init (InitMount): the
// read-only binds of a path onto itself and the hidden paths that the box
// shows as the host's before them and that no later mount of bwrap's is
// at, above or below; each range of bwrap's words holds exactly that
// mount.
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
	hideFile := func(path string) plan.Mount {
		return plan.Mount{Stage: plan.StageDeny, Op: plan.HideFile, Path: path, Access: plan.Hidden, Origin: o}
	}
	hideDir := func(path string) plan.Mount {
		return plan.Mount{Stage: plan.StageDeny, Op: plan.HideDir, Path: path, Access: plan.Hidden, Origin: o}
	}
	own := []string{"pin /home/u/proj/.git", "ro /home/u/proj/.claude", "ro /home/u/proj/.git/hooks", "ro /home/u/proj/.git/config"}
	cases := []struct {
		name   string
		change func(p *plan.Plan)
		want   []string
	}{
		{"a project in the home folder: the read-only binds and the pin, not the writable root",
			project(), own},
		{"a pin below the read-only root stays bwrap's (a clone there would be read-only)",
			func(p *plan.Plan) {
				p.Mounts = append(p.Mounts[:4:4], plan.Mount{Stage: plan.StageReadOnly, Op: plan.Pin, Path: "/home/u/proj/.git", Access: plan.ReadWrite, Origin: o})
			}, nil},
		{"a pin below a read-only bind stays bwrap's",
			func(p *plan.Plan) {
				p.Mounts = append(p.Mounts[:5:5], ro("/home/u/proj/sub"), plan.Mount{Stage: plan.StageReadOnly, Op: plan.Pin, Path: "/home/u/proj/sub/.git", Access: plan.ReadWrite, Origin: o})
			}, nil},
		{"a pin below a writable bind from elsewhere stays bwrap's",
			func(p *plan.Plan) {
				p.Mounts = append(p.Mounts[:5:5], plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Source: "/srv/w", Path: "/home/u/proj/w", Access: plan.ReadWrite, Origin: o},
					plan.Mount{Stage: plan.StageReadOnly, Op: plan.Pin, Path: "/home/u/proj/w/.git", Access: plan.ReadWrite, Origin: o})
			}, nil},
		{"later mounts elsewhere do not matter; hidden paths are the init's too",
			project(hideFile("/home/u/.netrc"), hideDir("/home/u/.aws")),
			append(own[:4:4], "hide-file /home/u/.netrc", "hide-dir /home/u/.aws")},
		{"a later mount of the init's above one: all the init's, in the plan's order",
			project(hideDir("/home/u/proj/.git")),
			append(own[:4:4], "hide-dir /home/u/proj/.git")},
		{"a later mount of bwrap's above one keeps it bwrap's",
			project(hideDir("/home/u/proj/.git"), hideFile("/home/u/proj/.git/x")),
			[]string{"ro /home/u/proj/.claude"}},
		{"a later mount of the init's below one: both the init's, in the plan's order",
			project(hideFile("/home/u/proj/.git/hooks/pre-commit")),
			append(own[:4:4], "hide-file /home/u/proj/.git/hooks/pre-commit")},
		{"a later mount of the init's at the same path: both the init's, in the plan's order",
			project(hideFile("/home/u/proj/.git/config")),
			append(own[:4:4], "hide-file /home/u/proj/.git/config")},
		{"a later mount of bwrap's below one keeps it bwrap's",
			project(hideDir("/home/u/proj/.git/hooks/x"), hideFile("/home/u/proj/.git/hooks/x/y")),
			[]string{"ro /home/u/proj/.claude", "ro /home/u/proj/.git/config"}},
		{"a hidden folder with a certificate bundle below it stays bwrap's",
			func(p *plan.Plan) {
				project(hideDir("/etc/ssl"))(p)
				p.Network = plan.Network{Mode: plan.NetAllowlist, Allow: []string{"x.test"}, Intercept: []string{"x.test"}, CABundles: []string{"/etc/ssl/certs/ca.pem"}}
			}, own},
		{"a hidden file under a hidden folder: both bwrap's",
			project(hideDir("/home/u/.ssh"), hideFile("/home/u/.ssh/id_rsa")),
			own},
		{"a project under the box's own /tmp: the box does not show the host's files there",
			func(p *plan.Plan) {
				p.Mounts = append(p.Mounts[:4:4],
					plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Path: "/tmp/proj", Access: plan.ReadWrite, Origin: o},
					ro("/tmp/proj/.claude"), hideFile("/tmp/proj/.env"))
			}, nil},
		{"a bind from elsewhere", func(p *plan.Plan) {
			p.Mounts = append(p.Mounts[:5:5], plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Source: "/srv/x", Path: "/home/u/proj/x", Access: plan.ReadOnly, Origin: o})
		}, nil},
		{"a hidden path below a bind from elsewhere", func(p *plan.Plan) {
			p.Mounts = append(p.Mounts[:5:5], plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Source: "/srv/x", Path: "/home/u/proj/x", Access: plan.ReadOnly, Origin: o},
				hideFile("/home/u/proj/x/.env"))
		}, nil},
		{"a certificate bundle bwrap binds below one", func(p *plan.Plan) {
			project()(p)
			p.Mounts = append(p.Mounts, ro("/etc/ssl"), hideDir("/etc/ssl/private"))
			p.Network = plan.Network{Mode: plan.NetAllowlist, Allow: []string{"x.test"}, Intercept: []string{"x.test"}, CABundles: []string{"/etc/ssl/certs/ca.pem"}}
		}, append(own[:4:4], "hide-dir /etc/ssl/private")},
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
				want := initWords(m, av.Args)
				got = append(got, strings.TrimPrefix(m.Kind, "make-")+" "+m.Path)
				if want == nil || m.From < 0 || m.To > av.CommandAt || !slices.Equal(av.Args[m.From:m.To], want) || (m.FD > 0) != (m.Kind == "make-ro" || m.Kind == "make-pin") {
					t.Errorf("%+v: bwrap's words %q, want %q", m, av.Args[max(m.From, 0):min(m.To, len(av.Args))], want)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the init's mounts (-want +got):\n%s", diff)
			}
		})
	}
}
