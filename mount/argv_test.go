package mount

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
)

var update = flag.Bool("update", false, "rewrite testdata/*.bwrap.golden")

// goldenWorld builds the fixed host the golden cases are resolved in: a
// home folder with two credential stores, a repository with a nested one
// whose hooks are missing, a secret file and folder, and a host tmp folder.
func goldenWorld(t *testing.T) (root string, env policy.Env) {
	t.Helper()
	// Not in t.TempDir(): that is usually under the host's /tmp, which the
	// tmp-host case shares with the box, and whatever lies there (this
	// home folder and its agentbox folders) is then kept read-only too.
	dir, err := os.MkdirTemp("/var/tmp", "mount-golden-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root, err = filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{"home/u/.aws", "home/u/proj/.git/hooks", "home/u/proj/sub/.git", "home/u/proj/private", "tmp", "state"}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"home/u/.netrc", "home/u/proj/.git/config", "home/u/proj/sub/.git/config", "home/u/proj/secret.txt"}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env = policy.Env{
		GOOS:    "linux",
		UID:     1000,
		GID:     1000,
		Home:    filepath.Join(root, "home/u"),
		Cwd:     filepath.Join(root, "home/u/proj"),
		TempDir: filepath.Join(root, "tmp"),
		Environ: []string{
			"HOME=" + filepath.Join(root, "home/u"),
			"PATH=/usr/bin:/bin",
			"XDG_STATE_HOME=" + filepath.Join(root, "state"),
			"GITHUB_TOKEN=ghp_secret",
			"EDITOR=vi",
		},
		FS: policy.OSFS{},
	}
	return root, env
}

// tmpHash matches the hash part of a tmp id derived from a folder, which
// depends on where the world is.
var tmpHash = regexp.MustCompile(`\b(proj)-[0-9a-f]{8}\b`)

func normalize(root, s string) string {
	return tmpHash.ReplaceAllString(strings.ReplaceAll(s, root, "$ROOT"), "$1-HASH")
}

// TestGoldenArgv resolves each testdata/<case>.toml as a trusted project
// policy in the fixed world and compares the rendered bwrap arguments with
// testdata/<case>.bwrap.golden, one argument per line.
func TestGoldenArgv(t *testing.T) {
	tests := []struct {
		name    string
		root    bool // run as uid 0
		opts    Options
		environ []string // added to the world's
	}{
		{name: "defaults"},
		{name: "root", root: true},
		{name: "workspace-task", opts: Options{Foreground: true}},
		{name: "deny"},
		{name: "network-none"},
		{name: "tmp-private"},
		{name: "tmp-host"},
		{name: "limits"},
		{name: "env", opts: Options{Seccomp: true}},
		{name: "network-publish"},
		{name: "network-secret", environ: []string{"API_KEY=sk-golden-0123456789"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, env := goldenWorld(t)
			if tc.root {
				env.UID, env.GID = 0, 0
			}
			env.Environ = append(env.Environ, tc.environ...)
			data, err := os.ReadFile(filepath.Join("testdata", tc.name+".toml"))
			if err != nil {
				t.Fatal(err)
			}
			proj := filepath.Join(env.Cwd, policy.ProjectFile)
			if err := os.WriteFile(proj, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := (policy.TrustStore{Path: policy.StorePath(env)}).Trust(proj, policy.Hash(data)); err != nil {
				t.Fatal(err)
			}
			layers, err := policy.Load(env, policy.Flags{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := policy.Resolve(layers, env, []string{"make", "test"}, policy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := testBackend().Complete(p); err != nil {
				t.Fatal(err)
			}
			tc.opts.Bwrap, tc.opts.Self = "/usr/bin/bwrap", "/usr/local/bin/agentbox"
			av, err := Render(p, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, a := range Annotated(av) {
				b.WriteString(normalize(root, a) + "\n")
			}
			got := b.String()
			golden := filepath.Join("testdata", tc.name+".bwrap.golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./mount -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", golden, diff)
			}
			checkArgv(t, p, av)
		})
	}
}

// checkArgv asserts the properties every rendered plan has, whatever the
// policy: the root first, namespaces, capabilities dropped exactly for
// root, one null fd per hidden file, and the command last.
func checkArgv(t *testing.T, p *plan.Plan, av Argv) {
	t.Helper()
	args := av.Args
	first := []string{"--ro-bind", "/", "/", "--dev", "/dev"}
	// Root's box gets device nodes of its own, made before bwrap starts
	// (no binds of them here).
	if av.DevNodes != (p.Identity.UID == 0) {
		t.Errorf("DevNodes %v for uid %d", av.DevNodes, p.Identity.UID)
	}
	first = append(first, "--proc", "/proc",
		"--ro-bind", "/proc/sys", "/proc/sys",
		"--unshare-pid", "--die-with-parent")
	if diff := cmp.Diff(first, args[:len(first)]); diff != "" {
		t.Errorf("first arguments (-want +got):\n%s", diff)
	}
	joined := "\x00" + strings.Join(args, "\x00") + "\x00"
	if got, want := strings.Contains(joined, "\x00--cap-drop\x00ALL\x00"), p.Identity.UID == 0; got != want {
		t.Errorf("--cap-drop ALL present: %v, want %v (uid %d)", got, want, p.Identity.UID)
	}
	if got, want := strings.Contains(joined, "\x00--unshare-net\x00"), p.Network.Mode == plan.NetNone || p.Network.Mode == plan.NetAllowlist; got != want {
		t.Errorf("--unshare-net present: %v, want %v (network %s)", got, want, p.Network.Mode)
	}
	// The box's certificate bundle over each system bundle, each from a
	// descriptor of its own, when the proxy terminates TLS.
	if len(p.Network.Intercept) > 0 {
		if len(av.CAFDs) != len(p.Network.CABundles) || len(av.CAFDs) == 0 {
			t.Errorf("%d bundle fds for bundles %q", len(av.CAFDs), p.Network.CABundles)
		}
		for i, fd := range av.CAFDs {
			if want := "\x00--ro-bind-data\x00" + strconv.Itoa(fd) + "\x00" + p.Network.CABundles[i] + "\x00"; !strings.Contains(joined, want) {
				t.Errorf("no %q", strings.ReplaceAll(want, "\x00", " "))
			}
		}
	} else if len(av.CAFDs) > 0 {
		t.Errorf("bundle fds %v with nothing intercepted", av.CAFDs)
	}
	if diff := cmp.Diff(p.Command, args[len(args)-len(p.Command):]); diff != "" {
		t.Errorf("command at the end (-want +got):\n%s", diff)
	}
	if args[len(args)-len(p.Command)-1] != "--" {
		t.Errorf("no -- before the command in %q", args)
	}
	hidden := 0
	for _, m := range p.Mounts {
		if m.Op == plan.HideFile {
			hidden++
		}
	}
	if len(av.NullFDs) != hidden {
		t.Errorf("%d null fds for %d hidden files", len(av.NullFDs), hidden)
	}
	// Every bind but the root's comes from a descriptor, never a path.
	binds := 0
	for _, m := range p.Mounts {
		if (m.Op == plan.Bind || m.Op == plan.ROBind || m.Op == plan.Pin) && m.Path != "/" {
			binds++
		}
	}
	if len(av.Binds) != binds {
		t.Errorf("%d bind fds for %d binds", len(av.Binds), binds)
	}
	for i, a := range args {
		if (a == "--bind" || a == "--ro-bind") && args[i+1] != "/" && args[i+1] != "/proc/sys" {
			t.Errorf("%s %s: a host path bound by name", a, args[i+1])
		}
	}
	// The descriptors follow the fixed ones without a gap or a repeat.
	var fds []int
	if av.LogFD > 0 {
		fds = append(fds, av.LogFD)
	}
	if av.PreloadFD > 0 {
		fds = append(fds, av.PreloadFD)
	}
	if av.NetFD > 0 {
		fds = append(fds, av.NetFD)
	}
	fds = append(fds, av.NullFDs...)
	for _, b := range av.Binds {
		fds = append(fds, b.FD)
	}
	slices.Sort(fds)
	for i, fd := range fds {
		if fd != firstFD+i {
			t.Errorf("descriptors %v: want %d to %d", fds, firstFD, firstFD+len(fds)-1)
			break
		}
	}
}

// testBackend is the bwrap backend on a machine where agentbox can make no
// cgroup (so limits are rlimits, as the goldens record).
func testBackend() *Bwrap {
	return &Bwrap{Path: "/usr/bin/bwrap", Cgroups: func() cgroup.Availability {
		no := cgroup.Controller{Reason: "not in this test"}
		return cgroup.Availability{Pids: no, Memory: no}
	}, LandlockABI: func() int { return 6 }}
}

func testPlan() *plan.Plan {
	def := plan.Origin{Key: "default"}
	return &plan.Plan{
		Enforce:  plan.Require,
		Identity: plan.Identity{UID: 1000, GID: 1000, Home: "/home/u"},
		Command:  []string{"true"},
		Cwd:      "/home/u/proj",
		Mounts: []plan.Mount{
			{Stage: plan.StageRoot, Op: plan.ROBind, Path: "/", Access: plan.ReadOnly, Origin: def},
			{Stage: plan.StageRoot, Op: plan.Dev, Path: "/dev", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageRoot, Op: plan.Proc, Path: "/proc", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageTmp, Op: plan.Tmpfs, Path: "/tmp", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageWritable, Op: plan.Bind, Path: "/home/u/proj", Access: plan.ReadWrite, Origin: def},
			{Stage: plan.StageDeny, Op: plan.HideFile, Path: "/home/u/.netrc", Access: plan.Hidden, Origin: def},
			{Stage: plan.StageDeny, Op: plan.HideFile, Path: "/home/u/proj/.env", Access: plan.Hidden, Origin: def},
		},
		Tmp:     plan.Tmp{Mode: plan.TmpPrivate},
		Network: plan.Network{Mode: plan.NetOpen},
		Env:     plan.Env{Mode: "inherit"},
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *plan.Plan)
		want   string
	}{
		{"allowlist entry", func(p *plan.Plan) { p.Network.Mode, p.Network.Allow = plan.NetAllowlist, []string{"https://x.test"} },
			`network: allow entry "https://x.test": want a host, not a URL`},
		{"invalid plan", func(p *plan.Plan) { p.Command = nil },
			"empty command"},
		{"unknown operation", func(p *plan.Plan) {
			p.Mounts = append(p.Mounts, plan.Mount{Stage: plan.StageDeny, Op: "overlay", Path: "/x", Origin: plan.Origin{Key: "test"}})
		}, "mount overlay /x: operation not supported by bwrap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan()
			tc.change(p)
			_, err := Render(p, Options{})
			if err == nil {
				t.Fatalf("Render succeeded, want %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderSmallPlan(t *testing.T) {
	p := testPlan()
	p.Env.Removed = []string{"GITHUB_TOKEN"}
	p.Limits = plan.Limits{Processes: 10, OpenFiles: 20, Memory: 30, CPUTime: 40, FileSize: 50}
	p.Box = plan.Box{Backend: Backend, Writable: p.Writable(), Tmpdir: "/tmp"}
	av, err := Render(p, Options{Foreground: true, Seccomp: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--ro-bind", "/proc/sys", "/proc/sys",
		"--unshare-pid", "--die-with-parent",
		"--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP",
		"--tmpfs", "/tmp",
		"--bind-fd", "10", "/home/u/proj",
		"--ro-bind-data", "11", "/home/u/.netrc",
		"--ro-bind-data", "12", "/home/u/proj/.env",
		"--add-seccomp-fd", "6",
		"--chdir", "/home/u/proj",
		"--unsetenv", "GITHUB_TOKEN",
		"--setenv", "AGENTBOX", "1",
		"--setenv", "AGENTBOX_BACKEND", "bwrap",
		"--setenv", "AGENTBOX_WRITABLE", "/home/u/proj",
		"--setenv", "AGENTBOX_DENY", "/home/u/.netrc,/home/u/proj/.env",
		"--setenv", "AGENTBOX_NETWORK", "open",
		"--setenv", "TMPDIR", "/tmp",
		"--info-fd", "3",
		"--as-pid-1", "--", "/proc/self/fd/5", InitCommand, "--ready-fd", "4", "--check-fd", "8", "--private-mounts", "--foreground", "--log-fd", "9",
		"--rlimit", "nproc=10", "--rlimit", "nofile=20", "--rlimit", "as=30", "--rlimit", "cpu=40", "--rlimit", "fsize=50",
		"--", "true",
	}
	if diff := cmp.Diff(want, av.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{11, 12}, av.NullFDs); diff != "" {
		t.Errorf("null fds (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Bind{{FD: 10, Source: "/home/u/proj"}}, av.Binds); diff != "" {
		t.Errorf("binds (-want +got):\n%s", diff)
	}
	if !av.Seccomp {
		t.Error("Argv.Seccomp is false with Options.Seccomp true")
	}
}

// TestComplete: the backend fills the box from the plan: every rule
// enforced, the writable folders and TMPDIR as CMD is told, the rendered
// command line as the detail, and the truthful variables among its
// arguments.
func TestComplete(t *testing.T) {
	p := testPlan()
	p.Network.Mode = plan.NetNone
	if err := testBackend().Complete(p); err != nil {
		t.Fatal(err)
	}
	if p.Box.Backend != Backend || len(p.Box.NotEnforced()) > 0 || len(p.Box.Weaker()) > 0 {
		t.Errorf("box: %+v, want bwrap with every rule enforced", p.Box)
	}
	if diff := cmp.Diff([]string{"/home/u/proj"}, p.Box.Writable); diff != "" {
		t.Errorf("writable (-want +got):\n%s", diff)
	}
	d, err := DetailOf(p)
	if err != nil {
		t.Fatal(err)
	}
	av, err := Render(p, Options{Bwrap: "/usr/bin/bwrap", Seccomp: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(av.Args, d.Args); diff != "" {
		t.Errorf("detail args (-want +got):\n%s", diff)
	}
	joined := strings.Join(d.Args, " ")
	for _, want := range []string{"--setenv AGENTBOX_BACKEND bwrap", "--setenv AGENTBOX_NETWORK none", "--setenv AGENTBOX_DENY /home/u/.netrc,/home/u/proj/.env"} {
		if !strings.Contains(joined, want) {
			t.Errorf("args lack %q: %s", want, joined)
		}
	}
}

// shellWords are strings that need quoting, and some that do not.
var shellWords = []string{
	"", "plain", "/usr/bin/x", "a b", "it's", `"double"`, "$HOME", "${X}", "`id`", "$(id)",
	"*", "?", "[a]", "a\nb", "tab\there", `back\slash`, "~", "~/x", "-n", "--opt=v", "=",
	"ü", "#x", ";", "&&", "|", "!", "a'b'c", "''", "%s", "@", "{a,b}", " ", "\\'",
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"plain", "plain"},
		{"/usr/bin/x", "/usr/bin/x"},
		{"--opt=v,w:x+y@z%", "--opt=v,w:x+y@z%"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
		{"~", "'~'"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, quote(tc.in)); diff != "" {
				t.Errorf("quote(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestQuoteRoundTrip runs the quoted words through a real POSIX shell and
// checks that every word comes back unchanged.
func TestQuoteRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	var quoted []string
	for _, w := range shellWords {
		quoted = append(quoted, quote(w))
	}
	script := `set -- ` + strings.Join(quoted, " ") + `
printf '%s\0' "$@"`
	out, err := exec.Command(sh, "-c", script).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if diff := cmp.Diff(shellWords, got); diff != "" {
		t.Errorf("words after the shell (-want +got):\n%s", diff)
	}

	// The same words as arguments to sh -c '...' sh ARGS, the way a pasted
	// command line passes them.
	out, err = exec.Command(sh, "-c", `exec sh -c 'printf "%s\n" "$@"' sh `+strings.Join(quoted, " ")).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	want := strings.Join(shellWords, "\n") + "\n"
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("printf output (-want +got):\n%s", diff)
	}
}

func TestShell(t *testing.T) {
	d := Detail{
		Bwrap:        "/usr/bin/bwrap",
		Args:         []string{"--ro-bind", "/", "/", "--bind-fd", "11", "/home/u/my proj", "--chdir", "/home/u/my proj", "--", "echo", "it's", ""},
		NullFDs:      []int{9, 10},
		Binds:        []Bind{{FD: 11, Source: "/home/u/my proj"}},
		Seccomp:      []string{"userns"},
		SeccompExtra: []string{"socket-families"},
	}
	want := `/usr/bin/bwrap --ro-bind / / --bind-fd 11 '/home/u/my proj' --chdir '/home/u/my proj' -- echo 'it'\''s' '' ` +
		`3>/dev/null 4>/dev/null 5<'/opt/agent box/agentbox' 6< <('/opt/agent box/agentbox' __seccomp +socket-families userns) 8</dev/null 9</dev/null 10</dev/null 11<'/home/u/my proj'`
	got := Shell("/opt/agent box/agentbox", d)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Shell (-want +got):\n%s", diff)
	}
}

// TestShellDevNodes: root's box has device nodes of its own, which the
// printed command line makes first, from the host's, in a tmpfs it moves
// over /dev in a mount namespace of bwrap's own.
func TestShellDevNodes(t *testing.T) {
	d := Detail{
		Bwrap:    "/usr/bin/bwrap",
		Args:     []string{"--ro-bind", "/", "/", "--dev", "/dev", "--bind", "/dev/shm", "/dev/shm", "--", "true"},
		DevNodes: true,
	}
	want := `unshare --mount --propagation private sh -c 'mount -t tmpfs -o nosuid,noexec,mode=755 tmpfs "$0" && cp -a /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty "$0"/ && { umount -l /dev 2>/dev/null; mount --move "$0" /dev; } && exec "$@"' "$(mktemp -d)" ` +
		`/usr/bin/bwrap --ro-bind / / --dev /dev --bind /dev/shm /dev/shm -- true ` +
		`3>/dev/null 4>/dev/null 5</usr/local/bin/agentbox 6< <(/usr/local/bin/agentbox __seccomp) 8</dev/null`
	got := Shell("/usr/local/bin/agentbox", d)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Shell (-want +got):\n%s", diff)
	}
	// A grant under /dev is bound into the tmpfs, and the host's /dev
	// stays in the namespace.
	d.Args = []string{"--ro-bind", "/", "/", "--dev", "/dev", "--bind-fd", "11", "/dev/shm", "--ro-bind-fd", "12", "/dev/my dev", "--", "true"}
	d.Binds = []Bind{{FD: 11, Source: "/dev/shm", Dir: true}, {FD: 12, Source: "/dev/my dev"}}
	grants := `unshare --mount --propagation private sh -c 'mount -t tmpfs -o nosuid,noexec,mode=755 tmpfs "$0" && cp -a /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty "$0"/` +
		` && mkdir -p "$(dirname "$0"/shm)" && { if [ -d /dev/shm ]; then mkdir -p "$0"/shm; else : > "$0"/shm; fi; } && mount --rbind /dev/shm "$0"/shm` +
		` && mkdir -p "$(dirname "$0"'\''/my dev'\'')" && { if [ -d '\''/dev/my dev'\'' ]; then mkdir -p "$0"'\''/my dev'\''; else : > "$0"'\''/my dev'\''; fi; } && mount --rbind '\''/dev/my dev'\'' "$0"'\''/my dev'\''` +
		` && mount --move "$0" /dev && exec "$@"' "$(mktemp -d)" ` +
		`/usr/bin/bwrap --ro-bind / / --dev /dev --bind-fd 11 /dev/shm --ro-bind-fd 12 '/dev/my dev' -- true ` +
		`3>/dev/null 4>/dev/null 5</usr/local/bin/agentbox 6< <(/usr/local/bin/agentbox __seccomp) 8</dev/null 11</dev/shm 12<'/dev/my dev'`
	got2 := Shell("/usr/local/bin/agentbox", d)
	if diff := cmp.Diff(grants, got2); diff != "" {
		t.Errorf("Shell with grants under /dev (-want +got):\n%s", diff)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		for _, line := range []string{got, got2} {
			cmd := exec.Command(bash, "-n")
			cmd.Stdin = strings.NewReader(line + "\n")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("bash -n: %v: %s", err, out)
			}
		}
	}
}

// TestShellParses checks that bash accepts the command line Shell prints
// (it uses process substitution, so it is bash, not sh).
func TestShellParses(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on PATH")
	}
	d := Detail{Bwrap: "/usr/bin/bwrap", Args: append([]string{"--chdir", "/x y"}, shellWords...), NullFDs: []int{7}, Seccomp: []string{"userns"}}
	cmd := exec.Command(bash, "-n")
	cmd.Stdin = strings.NewReader(Shell("/usr/local/bin/agentbox", d) + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("bash -n: %v: %s", err, stderr.String())
	}
}

// TestChecks: the init verifies every mount after stage 1 that no later
// mount covers, a bind by the descriptor it was given.
func TestChecks(t *testing.T) {
	p := testPlan()
	o := plan.Origin{Key: "test"}
	p.Mounts = append(p.Mounts[:4:4],
		plan.Mount{Stage: plan.StageTmp, Op: plan.Bind, Source: "/var/x", Path: "/tmp/x", Access: plan.ReadWrite, Origin: o},
		plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Path: "/home/u/proj", Access: plan.ReadWrite, Origin: o},
		plan.Mount{Stage: plan.StageReadOnly, Op: plan.Pin, Path: "/home/u/proj/.git", Access: plan.ReadWrite, Origin: o},
		plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: "/home/u/proj/.git/hooks", Access: plan.ReadOnly, Origin: o},
		plan.Mount{Stage: plan.StageDeny, Op: plan.HideFile, Path: "/home/u/.netrc", Access: plan.Hidden, Origin: o},
		plan.Mount{Stage: plan.StageDeny, Op: plan.HideDir, Path: "/home/u/proj/secrets", Access: plan.Hidden, Origin: o},
		plan.Mount{Stage: plan.StageDeny, Op: plan.HideFile, Path: "/home/u/proj/.env", Access: plan.Hidden, Origin: o},
	)
	av, err := Render(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fdOf := map[string]int{}
	for _, b := range av.Binds {
		fdOf[b.Source] = b.FD
	}
	want := []Check{
		{Kind: "tmpfs", Path: "/tmp"},
		{Kind: "bind", Path: "/tmp/x", FD: fdOf["/var/x"]},
		{Kind: "bind", Path: "/home/u/proj", FD: fdOf["/home/u/proj"]},
		{Kind: "bind", Path: "/home/u/proj/.git", FD: fdOf["/home/u/proj/.git"]},
		{Kind: "bind-ro", Path: "/home/u/proj/.git/hooks", FD: fdOf["/home/u/proj/.git/hooks"]},
		{Kind: "hide-file", Path: "/home/u/.netrc"},
		{Kind: "hide-dir", Path: "/home/u/proj/secrets"},
		{Kind: "hide-file", Path: "/home/u/proj/.env"},
	}
	if diff := cmp.Diff(want, av.Checks); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}
	// A root box: bwrap's own read-only binds over /proc are checked too.
	root := *p
	root.Identity.UID = 0
	root.HostExec.State, root.RunID = "/root/.local/state/agentbox", "0123456789ab"
	av, err = Render(&root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rootWant := append([]Check{{Kind: "ro", Path: "/proc/sysrq-trigger"}, {Kind: "ro", Path: "/proc/irq"}, {Kind: "ro", Path: "/proc/bus"}}, want...)
	if diff := cmp.Diff(rootWant, av.Checks); diff != "" {
		t.Errorf("checks as root (-want +got):\n%s", diff)
	}
	p.Mounts = append(p.Mounts, plan.Mount{Stage: plan.StageDeny, Op: plan.HideDir, Path: "/home/u", Access: plan.Hidden, Origin: o})
	av, err = Render(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range av.Checks {
		if strings.HasPrefix(c.Path, "/home/u/") {
			t.Errorf("%s is checked, though a later mount of /home/u covers it", c.Path)
		}
	}
}
