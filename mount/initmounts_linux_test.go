package mount

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
)

// TestWithoutInitMounts: a run with the C init leaves bwrap's words for the
// init's binds out and keeps everything else in order; a root run gives
// the init CAP_SYS_ADMIN to make them; a detail whose words are not those
// binds is refused, nothing is left out.
func TestWithoutInitMounts(t *testing.T) {
	p := testPlan()
	o := plan.Origin{Key: "test"}
	p.Mounts = append(p.Mounts[:5:5],
		plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: "/home/u/proj/.claude", Access: plan.ReadOnly, Origin: o},
		plan.Mount{Stage: plan.StageReadOnly, Op: plan.Pin, Path: "/home/u/proj/.git", Access: plan.ReadWrite, Origin: o},
		plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: "/home/u/proj/.git/hooks", Access: plan.ReadOnly, Origin: o},
		plan.Mount{Stage: plan.StageDeny, Op: plan.HideDir, Path: "/home/u/.aws", Access: plan.Hidden, Origin: o},
		plan.Mount{Stage: plan.StageDeny, Op: plan.HideFile, Path: "/home/u/.netrc", Access: plan.Hidden, Origin: o},
	)
	av, err := Render(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(av.InitMounts) != 5 {
		t.Fatalf("init mounts %+v, want five", av.InitMounts)
	}
	for _, root := range []bool{false, true} {
		args, at, err := WithoutInitMounts(av.Args, av.CommandAt, av.InitMounts, root)
		if err != nil {
			t.Fatal(err)
		}
		opts := strings.Join(args[:at], " ")
		for _, m := range av.InitMounts {
			if strings.Contains(opts, m.Path) {
				t.Errorf("root %v: bwrap still binds %s: %s", root, m.Path, opts)
			}
		}
		if !strings.Contains(opts, "--bind-fd ") || !strings.Contains(opts, " /home/u/proj ") {
			t.Errorf("root %v: the writable root is gone: %s", root, opts)
		}
		if got := strings.HasSuffix(opts, "--cap-add CAP_SYS_ADMIN"); got != root {
			t.Errorf("root %v: CAP_SYS_ADMIN for the init: %v (%s)", root, got, opts)
		}
		if !slices.Equal(args[at:], av.Args[av.CommandAt:]) {
			t.Errorf("root %v: the command changed: %q", root, args[at:])
		}
		if n := len(av.Args[:av.CommandAt]) - 16; !root && at != n {
			t.Errorf("options %d words, want %d", at, n)
		}
	}
	bad := slices.Clone(av.InitMounts)
	bad[2].Path = "/home/u/proj/.git"
	if _, _, err := WithoutInitMounts(av.Args, av.CommandAt, bad, false); err == nil {
		t.Error("a detail whose range is another bind was taken")
	}
	bad = slices.Clone(av.InitMounts)
	bad[0].From, bad[0].To = bad[2].From, bad[2].To
	if _, _, err := WithoutInitMounts(av.Args, av.CommandAt, bad, false); err == nil {
		t.Error("ranges out of order were taken")
	}
	// A hidden path's range must hold bwrap's words for hiding that path
	// that way, and nothing else.
	for name, change := range map[string]func(m []InitMount){
		"a hidden folder's range on another path":    func(m []InitMount) { m[3].Path = "/home/u/.ssh" },
		"a hidden folder taken for a file":           func(m []InitMount) { m[3].Kind = "make-hide-file" },
		"a hidden file taken for a folder":           func(m []InitMount) { m[4].Kind = "make-hide-dir" },
		"a hidden file with a descriptor":            func(m []InitMount) { m[4].FD = 9 },
		"a read-only bind without its descriptor":    func(m []InitMount) { m[0].FD = 0 },
		"a hidden file's range one word short":       func(m []InitMount) { m[4].To-- },
		"a kind the init does not know":              func(m []InitMount) { m[4].Kind = "make-rw" },
		"a hidden folder's range past the command":   func(m []InitMount) { m[3].To = av.CommandAt + 1 },
		"a hidden folder's range over another mount": func(m []InitMount) { m[3].From-- },
		"a pin taken for a read-only bind":           func(m []InitMount) { m[1].Kind = "make-ro" },
		"a read-only bind taken for a pin":           func(m []InitMount) { m[2].Kind = "make-pin" },
		"a pin without its descriptor":               func(m []InitMount) { m[1].FD = 0 },
	} {
		bad := slices.Clone(av.InitMounts)
		change(bad)
		if _, _, err := WithoutInitMounts(av.Args, av.CommandAt, bad, false); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}

// TestGoInitRefusesMakes: the Go init makes no mount (its threads each have
// a mount namespace of their own): a check file asking for one of the C
// init's mounts fails the box before CMD, whatever its kind.
func TestGoInitRefusesMakes(t *testing.T) {
	dir := t.TempDir()
	for _, kind := range []string{"make-ro", "make-hide-dir", "make-hide-file", "make-rw"} {
		err := verifyMounts([]byte(kind + "\t0\t0\t" + dir + "\x00"))
		if err == nil || !strings.Contains(err.Error(), "the Go init cannot make this mount") {
			t.Errorf("%s: %v, want the Go init's refusal", kind, err)
		}
	}
}
