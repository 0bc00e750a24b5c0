package box

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/doctor"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// check compares got with testdata/name, or rewrites it with -update.
func check(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// TestPlanJSONGolden pins `agentbox plan --json` for a fixed host: the
// schema, the digest and the plan with the bwrap backend's box.
func TestPlanJSONGolden(t *testing.T) {
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
	if err := os.WriteFile(filepath.Join(home, "proj/.git/config"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := policy.Env{GOOS: "linux", UID: 1000, GID: 1000, Home: home, Cwd: filepath.Join(home, "proj"),
		TempDir: filepath.Join(root, "tmp"), FS: policy.OSFS{},
		Environ: []string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_STATE_HOME=" + filepath.Join(root, "state"), "GITHUB_TOKEN=x"}}
	layers, err := policy.Load(env, policy.Flags{Network: "none", Deny: []string{"~/.aws"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Resolve(layers, env, []string{"make", "test"}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.RunID = "0123456789ab"
	no := cgroup.Controller{Reason: "not in this test"}
	bw := &mount.Bwrap{Path: "/usr/bin/bwrap", LandlockABI: func() int { return 6 }, Cgroups: func() cgroup.Availability { return cgroup.Availability{Pids: no, Memory: no} }}
	p.Box.Passed = nil
	if err := bw.Complete(p); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeJSON(&b, PlanJSONOutput{Schema: PlanSchema, Digest: p.Digest(), Plan: p}); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(b.String(), root, "$ROOT")
	// The digest and the per-folder /tmp name hash the temporary root.
	got = regexp.MustCompile(`"digest": "[0-9a-f]{64}"`).ReplaceAllString(got, `"digest": "DIGEST"`)
	got = regexp.MustCompile(`proj-[0-9a-f]{8}`).ReplaceAllString(got, "proj-HASH")
	check(t, "plan.json.golden", got)
}

func TestStatusJSONGolden(t *testing.T) {
	tests := []struct {
		name    string
		st      Status
		wantErr error
	}{
		{"active", Status{Schema: StatusSchema, Active: true, Backend: "bwrap", Writable: []string{"/home/u/proj", "/tmp"},
			Deny: []string{"/home/u/.aws"}, Network: "none", Tmp: "/tmp", Checked: "/ is read-only", Consistent: true}, nil},
		{"degraded", Status{Schema: StatusSchema, Degraded: "no-backend: no backend can confine this command here"}, ErrNotConfined},
		{"outside", Status{Schema: StatusSchema}, ErrNotConfined},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteStatus(tc.st, true, &b); !errors.Is(err, tc.wantErr) {
				t.Errorf("WriteStatus = %v, want %v", err, tc.wantErr)
			}
			check(t, "status-"+tc.name+".json.golden", b.String())
		})
	}
}

func TestProvidersJSONGolden(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // nothing installed, whatever this machine has
	var b bytes.Buffer
	if err := Providers(true, &b); err != nil {
		t.Fatal(err)
	}
	check(t, "providers.json.golden", b.String())
}

// fake is a backend whose availability a test chooses.
type fake struct {
	name  string
	avail error
}

func (f *fake) Name() string                                  { return f.name }
func (f *fake) Available() error                              { return f.avail }
func (f *fake) Complete(*plan.Plan) error                     { return nil }
func (f *fake) Describe(*plan.Plan, io.Writer)                {}
func (f *fake) Run(*plan.Plan, *backend.Context) (int, error) { return 0, nil }
func (f *fake) SelfCheck() (string, bool)                     { return "", false }

// TestBackendNotice: a run that auto gave to Landlock because bwrap is
// missing or broken says so in one line of at most 100 characters, with
// the cause as doctor decides it and where to read more; a run where bwrap
// was only passed over for the plan's sake does not blame bwrap. Before,
// the line ran to 300-400 characters and blamed user namespaces under a
// masked /proc.
func TestBackendNotice(t *testing.T) {
	missing := &backend.Unavailable{Code: "bwrap-missing", Reason: "bubblewrap (bwrap) is not installed or not on PATH"}
	masked := &backend.Unavailable{Code: "bwrap-unusable", Reason: "bwrap cannot create a sandbox: Can't mount proc on /newroot/proc: Operation not permitted"}
	weaker := []plan.RuleStatus{{Rule: "deny", Level: plan.Weaker}, {Rule: "limits", Level: plan.Weaker}}
	tests := []struct {
		name  string
		box   plan.Box
		bwrap error
		cause doctor.Cause
		want  string
	}{
		{"bwrap missing", plan.Box{Backend: "landlock", Passed: []string{"bwrap: " + missing.Reason}, Rules: weaker}, missing, doctor.CauseMissing,
			"agentbox: notice: using Landlock: bwrap is not installed (agentbox doctor)"},
		{"masked /proc", plan.Box{Backend: "landlock", Passed: []string{"bwrap: " + masked.Reason}, Rules: weaker}, masked, doctor.CauseProcMasked,
			"agentbox: notice: using Landlock: /proc is masked, bwrap cannot mount its own (agentbox doctor)"},
		{"bwrap works but cannot enforce the plan", plan.Box{Backend: "landlock", Passed: []string{"bwrap: cannot enforce x"}, Rules: weaker}, nil, doctor.CauseNone,
			"agentbox: notice: landlock enforces 1 rules weaker than the policy asks (agentbox plan)"},
		{"landlock forced", plan.Box{Backend: "landlock", Rules: weaker}, missing, doctor.CauseMissing,
			"agentbox: notice: landlock enforces 1 rules weaker than the policy asks (agentbox plan)"},
		{"bwrap runs it", plan.Box{Backend: "bwrap"}, nil, doctor.CauseNone, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &plan.Plan{Box: tc.box, Notice: plan.Notice{Backend: plan.NoticeAlways}}
			all := []backend.Backend{&fake{name: "bwrap", avail: tc.bwrap}, &fake{name: "landlock"}}
			var b bytes.Buffer
			backendNotice(&b, p, tc.box.Backend, bwrapFallback(p, all), func(*backend.Unavailable) doctor.Cause { return tc.cause })
			if diff := cmp.Diff(tc.want, strings.TrimSuffix(b.String(), "\n")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Every cause fits in one line of 100 characters.
	for c := doctor.CauseMissing; c <= doctor.CauseOther; c++ {
		line := noticeLine("landlock", 13, masked, func(*backend.Unavailable) doctor.Cause { return c })
		if len(line) > 100 || c.Short() == "" {
			t.Errorf("cause %d: %d characters: %q", c, len(line), line)
		}
	}
	if line := noticeLine("landlock", 113, nil, nil); len(line) > 100 {
		t.Errorf("%d characters: %q", len(line), line)
	}
}

// The notice is shown once per project until what it rests on changes;
// "always" shows it every time, "never" (--quiet) not at all. A run with
// nothing to say forgets it, so the notice comes back with its reason.
func TestBackendNoticeOnce(t *testing.T) {
	dir := t.TempDir()
	masked := &backend.Unavailable{Code: "bwrap-unusable", Reason: "bwrap cannot create a sandbox: Can't mount proc on /newroot/proc: Operation not permitted"}
	cause := func(*backend.Unavailable) doctor.Cause { return doctor.CauseProcMasked }
	weaker := []plan.RuleStatus{{Rule: "deny", Level: plan.Weaker}}
	landlockPlan := func(project, mode string, rules []plan.RuleStatus) *plan.Plan {
		return &plan.Plan{Cwd: project, Notice: plan.Notice{Backend: mode, Dir: dir},
			Box: plan.Box{Backend: "landlock", Passed: []string{"bwrap: " + masked.Reason}, Rules: rules}}
	}
	steps := []struct {
		name     string
		p        *plan.Plan
		fallback *backend.Unavailable
		shown    bool
	}{
		{"first run in a", landlockPlan("/p/a", plan.NoticeOnce, weaker), masked, true},
		{"second run in a", landlockPlan("/p/a", plan.NoticeOnce, weaker), masked, false},
		{"first run in b", landlockPlan("/p/b", plan.NoticeOnce, weaker), masked, true},
		{"a: a rule more is weaker", landlockPlan("/p/a", plan.NoticeOnce, append(weaker, plan.RuleStatus{Rule: "tmp", Level: plan.Weaker})), masked, true},
		{"a: the same again", landlockPlan("/p/a", plan.NoticeOnce, append(weaker, plan.RuleStatus{Rule: "tmp", Level: plan.Weaker})), masked, false},
		{"a: bwrap works again", &plan.Plan{Cwd: "/p/a", Notice: plan.Notice{Backend: plan.NoticeOnce, Dir: dir}, Box: plan.Box{Backend: "bwrap"}}, nil, false},
		{"a: bwrap breaks again", landlockPlan("/p/a", plan.NoticeOnce, weaker), masked, true},
		{"b: always", landlockPlan("/p/b", plan.NoticeAlways, weaker), masked, true},
		{"b: never (--quiet)", landlockPlan("/p/c", plan.NoticeNever, weaker), masked, false},
		{"c: once, after never", landlockPlan("/p/c", plan.NoticeOnce, weaker), masked, true},
	}
	for _, s := range steps {
		var b bytes.Buffer
		backendNotice(&b, s.p, s.p.Box.Backend, s.fallback, cause)
		if got := b.Len() > 0; got != s.shown {
			t.Errorf("%s: shown %v, want %v (%q)", s.name, got, s.shown, b.String())
		}
	}
	// A record that cannot be written shows the notice every time.
	p := landlockPlan("/p/d", plan.NoticeOnce, weaker)
	p.Notice.Dir = "/proc/self/agentbox-notices"
	for i := 0; i < 2; i++ {
		var b bytes.Buffer
		backendNotice(&b, p, "landlock", masked, cause)
		if b.Len() == 0 {
			t.Errorf("run %d: no notice although nothing could be recorded", i)
		}
	}
}

// shell-init without a shell it knows is an error, before it prints anything.
func TestShellInitNeedsAShell(t *testing.T) {
	for shell, want := range map[string]string{"": "which shell?", "pwsh": `"pwsh" is not a shell`} {
		err := ShellInit(shell, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ShellInit(%q) = %v, want %q", shell, err, want)
		}
	}
}

// TestDoctorNoBackend: doctor prints its report and returns ErrNoBackend
// (the CLI exits 1) when no backend is available, with or without --json.
func TestDoctorNoBackend(t *testing.T) {
	none := []backend.Backend{
		&fake{name: "bwrap", avail: &backend.Unavailable{Reason: "bubblewrap (bwrap) is not installed or not on PATH"}},
		&fake{name: "landlock", avail: errors.New("landlock is not available: no ABI")},
	}
	for _, asJSON := range []bool{false, true} {
		var b bytes.Buffer
		if err := doctorOf(none, asJSON, &b); !errors.Is(err, ErrNoBackend) {
			t.Errorf("json=%v: %v, want ErrNoBackend", asJSON, err)
		}
		if !strings.Contains(b.String(), "no backend can confine commands here") {
			t.Errorf("json=%v: the report does not say so:\n%s", asJSON, b.String())
		}
	}
	var b bytes.Buffer
	if err := doctorOf([]backend.Backend{&fake{name: "landlock"}}, false, &b); err != nil {
		t.Errorf("one backend available: %v", err)
	}
}

// withFlags shows the command line as typed with the flags that make it
// work, once each, before the command.
func TestWithFlags(t *testing.T) {
	tests := []struct {
		argv  []string
		flags []string
		want  string
	}{
		{[]string{"/usr/bin/agentbox", "run", "--", "true"}, []string{"--writable", "/home/u", "--allow-broad-writable"},
			"agentbox run --writable /home/u --allow-broad-writable -- true"},
		{[]string{"agentbox", "run", "--network", "none", "--", "sh", "-c", "echo hi"}, []string{"--writable", "/etc"},
			"agentbox run --writable /etc --network none -- sh -c 'echo hi'"},
		{[]string{"agentbox", "run", "--writable", "/home/u", "--", "true"}, []string{"--allow-broad-writable"},
			"agentbox run --allow-broad-writable --writable /home/u -- true"},
		{[]string{"agentbox", "plan", "--allow-broad-writable", "--", "true"}, []string{"--writable", "/my home", "--allow-broad-writable"},
			"agentbox plan --writable '/my home' --allow-broad-writable -- true"},
	}
	for _, tc := range tests {
		if got := withFlags(tc.argv, tc.flags); got != tc.want {
			t.Errorf("withFlags(%q, %q) = %q, want %q", tc.argv, tc.flags, got, tc.want)
		}
	}
}
