package seatbelt

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
)

// allows evaluates the profile forms for one file operation on path, the
// way Seatbelt decides with (deny default): allowed when an allow form
// that names op has a filter path matches. The profiles agentbox writes
// have no deny rule but the default, so no precedence is involved.
func allows(t *testing.T, forms []*Node, op, path string) bool {
	t.Helper()
	for _, f := range forms {
		if f.Head() != "allow" {
			continue
		}
		names, filters := false, []*Node(nil)
		for _, k := range f.Kids[1:] {
			if !k.List {
				if k.Symbol == op {
					names = true
				}
				continue
			}
			filters = append(filters, k)
		}
		if !names {
			continue
		}
		for _, flt := range filters {
			if match(t, flt, path) {
				return true
			}
		}
	}
	return false
}

func match(t *testing.T, f *Node, path string) bool {
	t.Helper()
	arg := func() *Node {
		if len(f.Kids) != 2 {
			t.Fatalf("line %d: %s takes one argument", f.Line, f.Head())
		}
		return f.Kids[1]
	}
	switch f.Head() {
	case "subpath":
		s := arg().String
		return path == s || strings.HasPrefix(path, strings.TrimSuffix(s, "/")+"/")
	case "literal":
		return path == arg().String
	case "regex":
		re, err := regexp.Compile(arg().Regex)
		if err != nil {
			t.Fatalf("line %d: %v", f.Line, err)
		}
		return re.MatchString(path)
	case "require-all":
		for _, k := range f.Kids[1:] {
			if !match(t, k, path) {
				return false
			}
		}
		return true
	case "require-any":
		for _, k := range f.Kids[1:] {
			if match(t, k, path) {
				return true
			}
		}
		return false
	case "require-not":
		return !match(t, arg(), path)
	}
	return false // a filter of another kind (global-name, target, remote) never names a file
}

// world is a small host: a home with credentials, a git project, agentbox's
// state, all in a temporary folder; GOOS darwin.
func world(t *testing.T) (string, policy.Env) {
	t.Helper()
	// Not under /tmp: the box's /tmp is its own, and the host's is hidden.
	dir, err := os.MkdirTemp("/var/tmp", "seatbelt-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"home/u/.aws", "home/u/.ssh", "home/u/proj/.git/hooks", "home/u/proj/deploy", "home/u/proj/src", "tmp", "state"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"home/u/.netrc", "home/u/proj/.git/config", "home/u/proj/.git/HEAD", "home/u/.ssh/id_ed25519"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(root, "home/u")
	return root, policy.Env{
		GOOS: "darwin", UID: 501, GID: 20, Home: home,
		Cwd: filepath.Join(home, "proj"), TempDir: filepath.Join(root, "tmp"),
		Environ: []string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_STATE_HOME=" + filepath.Join(root, "state")},
		FS:      policy.OSFS{},
	}
}

func resolve(t *testing.T, env policy.Env, flags policy.Flags, cmd ...string) *plan.Plan {
	t.Helper()
	layers, err := policy.Load(env, flags)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Resolve(layers, env, cmd, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.RunID = "0123456789ab"
	sb := &Seatbelt{Canon: func(s string) string { return s }}
	if err := sb.Complete(p); err != nil {
		t.Fatal(err)
	}
	if err := plan.Validate(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProfileDecides reads the profile of a resolved plan back and
// decides, path by path, what the box may read and write: each rule of
// the plan has its clause, and nothing else is allowed.
func TestProfileDecides(t *testing.T) {
	root, env := world(t)
	home := env.Home
	proj := filepath.Join(home, "proj")
	p := resolve(t, env, policy.Flags{ReadOnly: []string{filepath.Join(proj, "deploy")}, Deny: []string{filepath.Join(home, ".aws")}, Network: "none"}, "sh")
	d, err := DetailOf(p)
	if err != nil {
		t.Fatal(err)
	}
	forms, err := Read(d.Profile)
	if err != nil {
		t.Fatalf("the profile does not read back: %v\n%s", err, d.Profile)
	}
	if forms[0].Head() != "version" || forms[1].Head() != "deny" || forms[1].Kids[1].Symbol != "default" {
		t.Fatalf("the profile does not start (version 1) (deny default):\n%s", d.Profile)
	}
	tmp := p.Box.Tmpdir
	if tmp == "" {
		t.Fatal("no TMPDIR for the box")
	}
	cases := []struct {
		path        string
		read, write bool
	}{
		{proj, true, true},
		{filepath.Join(proj, "src/main.go"), true, true},
		{filepath.Join(proj, "deploy/run.sh"), true, false},         // read-only inside the writable root
		{filepath.Join(proj, ".git/hooks/pre-commit"), true, false}, // a guard
		{filepath.Join(proj, ".git/config"), true, false},
		{filepath.Join(proj, ".git/HEAD"), true, true},
		{filepath.Join(proj, "sub/.vscode/tasks.json"), true, false}, // a control file at depth, refused while the run lasts
		{filepath.Join(proj, "sub/.claude/settings.json"), true, false},
		{filepath.Join(home, ".aws/credentials"), false, false}, // denied
		{filepath.Join(home, ".ssh/id_ed25519"), false, false},  // a credential hidden by default
		{filepath.Join(home, "other/file"), true, false},
		{"/etc/passwd", true, false},
		{"/usr/bin/git", true, false},
		{filepath.Join(tmp, "x"), true, true},
		{"/dev/null", true, true},
		{"/dev/tty", true, true},
		{"/dev/ttys001", false, false}, // another terminal
		{"/dev/disk0", false, false},
		{filepath.Join(root, "state/agentbox/trust"), true, false}, // agentbox's own state: read-only, as under bubblewrap
	}
	for _, c := range cases {
		if got := allows(t, forms, "file-read*", c.path); got != c.read {
			t.Errorf("read %s: allowed %v, want %v", c.path, got, c.read)
		}
		if got := allows(t, forms, "file-write*", c.path); got != c.write {
			t.Errorf("write %s: allowed %v, want %v", c.path, got, c.write)
		}
	}
	for _, op := range []string{"network-outbound", "network*"} {
		for _, f := range forms {
			if f.Head() == "allow" && strings.Contains(render(f), "remote ip") && strings.Contains(render(f), op) {
				t.Errorf("network none allows %s to an IP address: %s", op, render(f))
			}
		}
	}
}

// TestProfileNetwork: each mode's clause, and unix sockets only inside the
// writable roots or where the policy names them in every mode.
func TestProfileNetwork(t *testing.T) {
	_, env := world(t)
	for _, tc := range []struct {
		flags policy.Flags
		has   []string
		not   []string
	}{
		{policy.Flags{Network: "none"}, nil, []string{`(remote ip`, `(remote tcp`, `(allow network*`}},
		{policy.Flags{Network: "open"}, []string{`(allow network-outbound (remote ip "*:*"))`}, []string{`(allow network*`}},
		{policy.Flags{Allow: []string{"example.com"}}, []string{`(remote tcp (string-append "localhost:" (param "PROXY_PORT")))`}, []string{`(remote ip`}},
	} {
		p := resolve(t, env, tc.flags, "sh")
		d, err := DetailOf(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Read(d.Profile); err != nil {
			t.Fatal(err)
		}
		for _, s := range tc.has {
			if !strings.Contains(d.Profile, s) {
				t.Errorf("network %s: the profile lacks %s", p.Network.Mode, s)
			}
		}
		for _, s := range tc.not {
			if strings.Contains(d.Profile, s) {
				t.Errorf("network %s: the profile has %s", p.Network.Mode, s)
			}
		}
		forms, _ := Read(d.Profile)
		proj := filepath.Join(env.Home, "proj")
		if !allows(t, forms, "network-outbound", filepath.Join(proj, "app.sock")) {
			t.Errorf("network %s: a socket in the project is refused", p.Network.Mode)
		}
		if allows(t, forms, "network-outbound", filepath.Join(env.Home, ".docker/run/docker.sock")) {
			t.Errorf("network %s: a socket in the home folder answers the box", p.Network.Mode)
		}
	}
}

func render(n *Node) string {
	if !n.List {
		switch {
		case n.IsStr:
			return Quote(n.String)
		case n.IsRe:
			return `#"` + n.Regex + `"`
		}
		return n.Symbol
	}
	var parts []string
	for _, k := range n.Kids {
		parts = append(parts, render(k))
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// TestTranslate: the mount list's order decides, as bubblewrap's mounts do.
func TestTranslate(t *testing.T) {
	m := func(op plan.Op, path string, a plan.Access) plan.Mount {
		return plan.Mount{Op: op, Path: path, Access: a, Stage: plan.StageWritable}
	}
	p := &plan.Plan{Network: plan.Network{Mode: plan.NetNone}, Tmp: plan.Tmp{Mode: plan.TmpWorkspace, HostDir: "/s/tmp/w"},
		Mounts: []plan.Mount{
			m(plan.ROBind, "/", plan.ReadOnly),
			m(plan.Dev, "/dev", plan.ReadWrite),
			m(plan.Proc, "/proc", plan.ReadOnly),
			m(plan.Tmpfs, "/s/tmp", plan.ReadWrite),
			m(plan.RemountRO, "/s/tmp", plan.ReadOnly),
			{Op: plan.Bind, Source: "/s/tmp/w", Path: "/tmp", Access: plan.ReadWrite, Stage: plan.StageTmp},
			m(plan.Bind, "/p", plan.ReadWrite),
			m(plan.ROBind, "/p/ro", plan.ReadOnly),
			m(plan.Bind, "/p/ro/w", plan.ReadWrite),
			m(plan.HideDir, "/p/secret", plan.Hidden),
			m(plan.Pin, "/p/ro", plan.ReadOnly),
			m(plan.Bind, "/q/inner", plan.ReadWrite),
			m(plan.ROBind, "/q", plan.ReadOnly), // covers /q/inner entirely
		}}
	got, err := Translate(p)
	if err != nil {
		t.Fatal(err)
	}
	want := Rules{
		Read: []Region{
			{Path: "/", Access: plan.ReadOnly, Except: []string{"/dev", "/s/tmp", "/tmp", "/s/tmp/w", "/p", "/p/ro", "/p/ro/w", "/p/secret", "/q/inner", "/q"}},
			{Path: "/s/tmp/w", Access: plan.ReadWrite},
			{Path: "/p", Access: plan.ReadWrite, Except: []string{"/p/ro", "/p/ro/w", "/p/secret"}},
			{Path: "/p/ro", Access: plan.ReadOnly, Except: []string{"/p/ro/w"}},
			{Path: "/p/ro/w", Access: plan.ReadWrite},
			{Path: "/q", Access: plan.ReadOnly},
		},
		Write: []Region{
			{Path: "/s/tmp/w", Access: plan.ReadWrite},
			{Path: "/p", Access: plan.ReadWrite, Except: []string{"/p/ro", "/p/ro/w", "/p/secret"}},
			{Path: "/p/ro/w", Access: plan.ReadWrite},
		},
		Pinned:  []string{"/p/ro"},
		Hidden:  []string{"/dev", "/s/tmp", "/tmp", "/p/secret"},
		Network: plan.NetNone,
		Tmpdir:  "/s/tmp/w",
	}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Origin" }, cmp.Ignore())); diff != "" {
		t.Errorf("Translate (-want +got):\n%s", diff)
	}
}

// TestUnexpressible: a path a profile cannot name refuses the plan; it is
// never left out.
func TestUnexpressible(t *testing.T) {
	for _, path := range []string{"/p/a\nb", `/p/a"b`, "relative", "/p/\x7f"} {
		p := &plan.Plan{Network: plan.Network{Mode: plan.NetNone}, Mounts: []plan.Mount{
			{Op: plan.ROBind, Path: "/", Access: plan.ReadOnly},
			{Op: plan.Bind, Path: path, Access: plan.ReadWrite},
		}}
		if _, err := Translate(p); err == nil || !strings.Contains(err.Error(), "cannot name") {
			t.Errorf("Translate with %q: err = %v, want a refusal", path, err)
		}
	}
}

// TestQuoteReads: every string Quote writes reads back as itself.
func TestQuoteReads(t *testing.T) {
	for _, s := range []string{"/plain", `/with "quotes"`, `/back\slash`, "/ü/ß", "/a;b(c)"} {
		forms, err := Read("(literal " + Quote(s) + ")")
		if err != nil {
			t.Fatal(err)
		}
		if got := forms[0].Kids[1].String; got != s {
			t.Errorf("Quote(%q) reads back as %q", s, got)
		}
	}
}

// TestReadRejects: what is not a well-formed profile is an error with its
// line.
func TestReadRejects(t *testing.T) {
	for _, src := range []string{"(allow", "(allow))", `(literal "x)`, "(regex #\"x)\n", "atom"} {
		if _, err := Read(src); err == nil {
			t.Errorf("Read(%q) accepted it", src)
		}
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{"/tmp/x": "/private/tmp/x", "/var": "/private/var", "/etc/hosts": "/private/etc/hosts",
		"/Users/me": "/Users/me", "/tmpx": "/tmpx", "/private/tmp": "/private/tmp"} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
}
