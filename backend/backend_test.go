package backend

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// fake is a backend whose answers a test chooses.
type fake struct {
	name     string
	avail    error
	complete error
	level    plan.Level // the level Complete gives every rule
}

func (f *fake) Name() string     { return f.name }
func (f *fake) Available() error { return f.avail }
func (f *fake) Complete(p *plan.Plan) error {
	if f.complete != nil {
		return f.complete
	}
	p.Box = plan.Box{Backend: f.name, Rules: []plan.RuleStatus{{Rule: "root", Level: f.level, How: "as " + f.name + " does"}}}
	return nil
}
func (f *fake) Describe(*plan.Plan, io.Writer)        {}
func (f *fake) Run(*plan.Plan, *Context) (int, error) { return 0, nil }
func (f *fake) SelfCheck() (string, bool)             { return "", true }
func ok(name string) *fake                            { return &fake{name: name, level: plan.Enforced} }
func missing(name, code string) *fake {
	return &fake{name: name, avail: &Unavailable{Code: code, Reason: name + " is missing", Fix: "install " + name}}
}
func weak(name string) *fake   { return &fake{name: name, level: plan.Weaker} }
func cannot(name string) *fake { return &fake{name: name, level: plan.NotEnforced} }
func planFor(backend, enforce string) *plan.Plan {
	return &plan.Plan{Backend: backend, Enforce: enforce}
}
func unsupported(p *plan.Plan) *plan.Plan { p.Provider = plan.Provider{Name: "kimi"}; return p }

func TestSelect(t *testing.T) {
	tests := []struct {
		name     string
		p        *plan.Plan
		all      []Backend
		want     string // the backend chosen, "" for none
		degraded string // prefix of Choice.Degraded
		err      string // substring of the error
		passed   []string
	}{
		{name: "auto: first available", p: planFor("auto", plan.Require), all: []Backend{ok("bwrap"), ok("landlock")}, want: "bwrap"},
		{name: "auto: falls back", p: planFor("auto", plan.Require), all: []Backend{missing("bwrap", "bwrap-missing"), ok("landlock")}, want: "landlock",
			passed: []string{"bwrap: bwrap is missing"}},
		{name: "auto: weaker is fine", p: planFor("auto", plan.Require), all: []Backend{weak("landlock")}, want: "landlock"},
		{name: "auto: a rule not enforced passes the backend over", p: planFor("auto", plan.Require), all: []Backend{cannot("landlock"), ok("windows")}, want: "windows",
			passed: []string{"landlock: landlock cannot enforce: root: as landlock does"}},
		{name: "auto: none under require", p: planFor("auto", plan.Require), all: []Backend{missing("bwrap", ""), missing("landlock", "")},
			err:    "no backend can confine this command here: bwrap: bwrap is missing; landlock: landlock is missing",
			passed: []string{"bwrap: bwrap is missing", "landlock: landlock is missing"}},
		{name: "auto: none under best-effort", p: planFor("auto", plan.BestEffort), all: []Backend{missing("bwrap", "")}, degraded: "no-backend: no backend can confine",
			passed: []string{"bwrap: bwrap is missing"}},
		{name: "named", p: planFor("landlock", plan.Require), all: []Backend{ok("bwrap"), ok("landlock")}, want: "landlock"},
		{name: "named and missing", p: planFor("bwrap", plan.Require), all: []Backend{missing("bwrap", "bwrap-missing"), ok("landlock")}, err: "bwrap is missing"},
		{name: "named and missing, best-effort", p: planFor("bwrap", plan.BestEffort), all: []Backend{missing("bwrap", "bwrap-missing")}, degraded: "bwrap-missing: bwrap is missing"},
		{name: "named without a code", p: planFor("bwrap", plan.BestEffort), all: []Backend{missing("bwrap", "")}, degraded: "bwrap-unavailable: bwrap is missing"},
		{name: "named and cannot enforce", p: planFor("landlock", plan.Require), all: []Backend{cannot("landlock")}, err: "landlock cannot enforce: root"},
		{name: "named but unknown", p: planFor("seatbelt", plan.Require), all: []Backend{ok("bwrap")}, err: `backend "seatbelt": no such backend (known: auto, bwrap)`},
		{name: "completion fails", p: planFor("auto", plan.Require), all: []Backend{&fake{name: "windows", complete: errors.New("no tmpfs on Windows")}}, err: "windows: no tmpfs on Windows",
			passed: []string{"windows: no tmpfs on Windows"}},
		{name: "unsupported provider", p: unsupported(planFor("auto", plan.Require)), all: []Backend{ok("bwrap")}, err: "provider kimi has not been verified"},
		{name: "unsupported provider, best-effort", p: unsupported(planFor("auto", plan.BestEffort)), all: []Backend{ok("bwrap")}, degraded: "provider-unsupported:kimi: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.p.Clone()
			c, err := Select(tc.p, tc.all, nil)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatalf("error %v", err)
			}
			got := ""
			if c.Backend != nil {
				got = c.Backend.Name()
			}
			if got != tc.want {
				t.Errorf("chose %q, want %q", got, tc.want)
			}
			if !strings.HasPrefix(c.Degraded, tc.degraded) || (tc.degraded == "") != (c.Degraded == "") {
				t.Errorf("degraded %q, want it to start with %q", c.Degraded, tc.degraded)
			}
			if diff := cmp.Diff(tc.passed, c.Passed); diff != "" {
				t.Errorf("passed over (-want +got):\n%s", diff)
			}
			if c.Backend == nil {
				if diff := cmp.Diff(before, tc.p); diff != "" {
					t.Errorf("Select changed the plan it chose no backend for (-before +after):\n%s", diff)
				}
				return
			}
			// The chosen backend completed the plan itself.
			if tc.p.Box.Backend != tc.want {
				t.Errorf("plan completed for %q, want %q", tc.p.Box.Backend, tc.want)
			}
		})
	}
}

// The hints of every backend passed over reach the error, with the doctor's.
func TestSelectHints(t *testing.T) {
	_, err := Select(planFor("auto", plan.Require), []Backend{missing("bwrap", ""), missing("landlock", "")}, nil)
	var h interface{ Hints() []string }
	if !errors.As(err, &h) {
		t.Fatalf("error %v has no hints", err)
	}
	want := []string{"install bwrap", "install landlock", "run `agentbox doctor` for what this machine can enforce and how to fix it"}
	if diff := cmp.Diff(want, h.Hints()); diff != "" {
		t.Errorf("hints (-want +got):\n%s", diff)
	}
}

func TestFirstAvailable(t *testing.T) {
	b, passed := FirstAvailable([]Backend{missing("bwrap", ""), ok("landlock"), ok("windows")})
	if b == nil || b.Name() != "landlock" || len(passed) != 1 {
		t.Errorf("FirstAvailable = %v, %v", b, passed)
	}
	if b, _ := FirstAvailable([]Backend{missing("bwrap", "")}); b != nil {
		t.Errorf("FirstAvailable chose %s with nothing available", b.Name())
	}
}

// meddler changes the plan the way a backend's Complete may (fields set,
// a slice replaced), then cannot enforce a rule.
type meddler struct{ fake }

func (m *meddler) Complete(p *plan.Plan) error {
	p.Command = []string{"meddled"}
	p.Tmp.HostDir = "/meddled"
	p.Prepare = append(p.Prepare, plan.Prepare{Path: "/meddled"})
	p.Box = plan.Box{Backend: m.name, Rules: []plan.RuleStatus{{Rule: "root", Level: plan.NotEnforced, How: "meddled"}}}
	return nil
}

// Select completes the chosen backend once, on the plan itself, after the
// caller's prep for that backend; what a candidate passed over and its prep
// did is undone, so the plan is what the chosen backend alone makes of it.
func TestSelectCompletesInPlace(t *testing.T) {
	p := planFor("auto", plan.Require)
	p.Command = []string{"cmd"}
	p.Environ = []string{"A=1"}
	var prepped []string
	prep := func(p *plan.Plan, b Backend) {
		prepped = append(prepped, b.Name())
		p.Environ = append(append([]string(nil), p.Environ...), "FOR="+b.Name())
	}
	counted := &counting{fake: *ok("landlock")}
	c, err := Select(p, []Backend{&meddler{fake{name: "bwrap"}}, counted}, prep)
	if err != nil {
		t.Fatal(err)
	}
	if c.Backend == nil || c.Backend.Name() != "landlock" {
		t.Fatalf("chose %v, want landlock", c.Backend)
	}
	want := planFor("auto", plan.Require)
	want.Command = []string{"cmd"}
	want.Environ = []string{"A=1", "FOR=landlock"}
	want.Box = plan.Box{Backend: "landlock", Rules: []plan.RuleStatus{{Rule: "root", Level: plan.Enforced, How: "as landlock does"}}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bwrap", "landlock"}, prepped); diff != "" {
		t.Errorf("prepared for (-want +got):\n%s", diff)
	}
	if counted.n != 1 {
		t.Errorf("the chosen backend completed the plan %d times, want once", counted.n)
	}
	if diff := cmp.Diff([]string{"bwrap: bwrap cannot enforce: root: meddled"}, c.Passed); diff != "" {
		t.Errorf("passed over (-want +got):\n%s", diff)
	}
}

// counting is a fake that counts its completions.
type counting struct {
	fake
	n int
}

func (c *counting) Complete(p *plan.Plan) error { c.n++; return c.fake.Complete(p) }
