//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// commands are agentbox's visible commands, in the order help lists them.
var commands = []string{"run", "plan", "learn", "verify", "log", "init", "doctor", "trust", "status", "caches", "providers", "shell-init", "completion", "setup", "version", "help"}

// TestHelpGolden runs every command's --help through the real binary and
// checks the transcript against testdata/help.golden (go test -update
// rewrites it): help is the surface a newcomer reads first.
func TestHelpGolden(t *testing.T) {
	w := newWorld(t)
	var b strings.Builder
	for _, args := range append([][]string{{"--help"}}, helpArgs()...) {
		r := w.run(args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("agentbox %s: %s", strings.Join(args, " "), r)
		}
		b.WriteString("$ agentbox " + strings.Join(args, " ") + "\n" + r.stdout + "\n")
	}
	got := b.String()
	path := filepath.Join("testdata", "help.golden")
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
		t.Errorf("help transcript (-want +got):\n%s", diff)
	}
	// Every command help lists is in the transcript, and no other.
	top := w.run("--help").stdout
	_, list, _ := strings.Cut(top, "commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	var listed []string
	for _, line := range strings.Split(list, "\n") {
		listed = append(listed, strings.Fields(line)[0])
	}
	if diff := cmp.Diff(commands, listed); diff != "" {
		t.Errorf("commands in agentbox --help (-want +got):\n%s", diff)
	}
	// The same help, three ways.
	if a, b := w.run("run", "--help").stdout, w.run("help", "run").stdout; a != b {
		t.Errorf("agentbox help run differs from agentbox run --help:\n%s\n---\n%s", b, a)
	}
}

func helpArgs() [][]string {
	var out [][]string
	for _, c := range commands {
		out = append(out, []string{c, "--help"})
	}
	return out
}

// A mistake on the command line is one error line, a suggestion and the
// short usage on stderr, exit 125, and never the whole help.
func TestMistakes(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"rn"}, `agentbox: error: unknown command "rn"
agentbox: hint: did you mean run?
agentbox: hint: agentbox --help lists the commands
`},
		{[]string{"claude"}, `agentbox: error: unknown command "claude"
agentbox: hint: to run it confined: agentbox run -- claude
agentbox: hint: agentbox --help lists the commands
`},
		{[]string{"run", "--netwrok", "none", "--", "true"}, `agentbox: error: run: unknown flag --netwrok
agentbox: hint: did you mean --network?
agentbox: hint: usage: agentbox run [FLAGS] -- CMD [ARGS...] (agentbox run --help lists the flags)
`},
		{[]string{"run", "--net", "--", "true"}, `agentbox: error: run: unknown flag --net
agentbox: hint: did you mean --network or --net-log?
agentbox: hint: usage: agentbox run [FLAGS] -- CMD [ARGS...] (agentbox run --help lists the flags)
`},
		{[]string{"plan", "--network"}, `agentbox: error: plan: --network needs a value
agentbox: hint: --network takes open, none or allowlist
agentbox: hint: usage: agentbox plan [FLAGS] [-- CMD [ARGS...]] (agentbox plan --help lists the flags)
`},
		{[]string{"--network", "none", "run", "--", "true"}, `agentbox: error: unknown flag --network
agentbox: hint: --network is a flag of run, plan, learn, verify, status and caches: it goes after the command, e.g. agentbox run --network
agentbox: hint: usage: agentbox COMMAND [FLAGS] [ARGS...] (agentbox --help lists the commands)
`},
		{[]string{"help", "stauts"}, `agentbox: error: unknown command "stauts"
agentbox: hint: did you mean status?
agentbox: hint: agentbox --help lists the commands
`},
		{[]string{"completion", "bsh"}, `agentbox: error: completion: unknown shell "bsh"
agentbox: hint: did you mean bash or zsh?
agentbox: hint: use bash, zsh or fish, e.g. source <(agentbox completion bash)
`},
		{[]string{"shell-init"}, `agentbox: error: shell-init: which shell? bash, zsh or fish
agentbox: hint: e.g. eval "$(agentbox shell-init bash)" in ~/.bashrc
`},
		{[]string{"run", "--backend", "docker", "--", "true"}, `agentbox: error: flag --backend: "docker" is not one of auto, bwrap, landlock, windows, seatbelt
`},
		{[]string{"run", "--backend", "seatbelt", "--", "true"}, `agentbox: error: seatbelt is macOS's sandbox; this is linux
agentbox: hint: agentbox plan --target darwin --profile shows the profile a Mac would get
agentbox: hint: run ` + "`agentbox doctor`" + ` to see what this machine can enforce
`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := w.run(tc.args...)
			if r.code != 125 || r.stdout != "" {
				t.Fatalf("want exit 125 and nothing on stdout, got %s", r)
			}
			if diff := cmp.Diff(tc.want, r.stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// Flags that contradict each other, or that would be silently ignored, are
// errors; status and doctor exit the same with and without --json.
func TestExitCodes(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"plan", "--json", "--argv"}, 125, "plan: --json and --argv cannot be used together"},
		{[]string{"plan", "--best-effort", "--require"}, 125, "--best-effort and --require contradict each other"},
		{[]string{"status", "--prompt", "--json"}, 125, "status: --prompt and --json cannot be used together"},
		{[]string{"status", "--network", "none"}, 125, "status: --network only applies with --prompt"},
		{[]string{"status", "--", "claude"}, 125, `status takes no arguments, got "claude"`},
		{[]string{"setup", "--check", "--uninstall"}, 125, "setup: --check and --uninstall cannot be used together"},
		{[]string{"doctor", "now"}, 125, `doctor takes no arguments, got "now"`},
		{[]string{"status"}, 1, ""},
		{[]string{"status", "--json"}, 1, ""},
		// bwrap works on this machine (the suite needs it), so doctor
		// finds a backend; box's TestDoctorNoBackend covers exit 1.
		{[]string{"doctor"}, 0, ""},
		{[]string{"doctor", "--json"}, 0, ""},
		{[]string{"run", "help"}, 127, "help"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := w.run(tc.args...)
			expectCode(t, r, tc.code)
			expectContains(t, "stderr", r.stderr, tc.stderr)
		})
	}
}

// Every JSON output starts with its schema.
func TestJSONSchemas(t *testing.T) {
	w := newWorld(t)
	for _, args := range [][]string{{"plan", "--json", "--", "true"}, {"status", "--json"}, {"doctor", "--json"}, {"providers", "--json"}, {"version", "--json"}} {
		r := w.run(args...)
		var v struct {
			Schema *int `json:"schema"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Schema == nil || *v.Schema != 1 {
			t.Errorf("agentbox %s: schema %v, err %v:\n%s", strings.Join(args, " "), v.Schema, err, r)
		}
		if !strings.HasPrefix(r.stdout, "{\n  \"schema\": 1,") {
			t.Errorf("agentbox %s: schema is not the first field:\n%.200s", strings.Join(args, " "), r.stdout)
		}
	}
}

// agentbox --version and agentbox version say the same: version, commit
// (when the build had version control information) and Go version.
func TestVersion(t *testing.T) {
	w := newWorld(t)
	a, b := w.run("--version"), w.run("version")
	expectCode(t, a, 0)
	if a.stdout != b.stdout {
		t.Errorf("--version %q, version %q", a.stdout, b.stdout)
	}
	if !regexp.MustCompile(`^agentbox \S+\ncommit:   .+\ngo:       go1\.\S+ linux/\w+\n$`).MatchString(a.stdout) {
		t.Errorf("version text:\n%s", a.stdout)
	}
	var v struct {
		Schema   int    `json:"schema"`
		Version  string `json:"version"`
		Commit   string `json:"commit"`
		Go       string `json:"go"`
		Platform string `json:"platform"`
	}
	r := w.run("version", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
	if v.Schema != 1 || v.Version == "" || !strings.HasPrefix(v.Go, "go1.") || !strings.HasPrefix(v.Platform, "linux/") {
		t.Errorf("version --json: %+v", v)
	}
	if v.Commit != "" && !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(v.Commit) {
		t.Errorf("commit %q", v.Commit)
	}
	if v.Commit != "" && !strings.Contains(a.stdout, v.Commit[:12]) {
		t.Errorf("the text does not name commit %s:\n%s", v.Commit, a.stdout)
	}
}

// install runs `make install` of this checkout (PREFIX=/usr/local) into a
// fresh DESTDIR with the binary under test, and returns the DESTDIR.
func install(t *testing.T) string {
	t.Helper()
	_, err := exec.LookPath("make")
	need(t, err == nil, "make is not installed (apt-get install make)")
	dest := t.TempDir()
	c := exec.Command("make", "-s", "install", "DESTDIR="+dest, "PREFIX=/usr/local", "BIN="+bin)
	c.Dir = ".."
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	return dest
}

// Where make install puts each completion script, under DESTDIR.
const (
	bashCompletion = "usr/local/share/bash-completion/completions/agentbox"
	zshCompletion  = "usr/local/share/zsh/site-functions/_agentbox"
	fishCompletion = "etc/fish/completions/agentbox.fish"
)

// make install puts the binary, the man page and the three completion
// scripts where the system finds them, and the man page renders.
func TestMakeInstall(t *testing.T) {
	dest := install(t)
	for _, f := range []string{"usr/local/bin/agentbox", "usr/local/share/man/man1/agentbox.1", bashCompletion, zshCompletion, fishCompletion} {
		if !exists(filepath.Join(dest, f)) {
			t.Errorf("make install did not install %s", f)
		}
	}
	out, err := exec.Command(filepath.Join(dest, "usr/local/bin/agentbox"), "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "agentbox ") {
		t.Errorf("installed agentbox --version: %v %q", err, out)
	}
	_, err = exec.LookPath("man")
	need(t, err == nil, "man is not installed (apt-get install man-db)")
	// man agentbox, found the way man finds it: through MANPATH.
	c := exec.Command("man", "agentbox")
	c.Env = append(os.Environ(), "MANPATH="+filepath.Join(dest, "usr/local/share/man"), "MANWIDTH=100", "MANPAGER=cat", "PAGER=cat")
	page, err := c.Output()
	if err != nil {
		t.Fatalf("man agentbox: %v\n%s", err, page)
	}
	for _, want := range []string{"agentbox - confine AI coding agents", "SYNOPSIS", "agentbox run [FLAGS] -- CMD [ARGS...]",
		"POLICY FLAGS", "--network MODE", "EXIT STATUS", "ENVIRONMENT", "AGENTBOX_POLICY"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("man agentbox lacks %q:\n%s", want, page)
		}
	}
}

// The folders make install puts the completion scripts in are the ones each
// shell searches in a default environment (the completion test below adds
// DESTDIR to the same search).
func TestCompletionWhereShellsLook(t *testing.T) {
	home := t.TempDir()
	search := map[string]*exec.Cmd{
		"zsh":  exec.Command("zsh", "-f", "-c", `print -l $fpath`),
		"fish": exec.Command("fish", "-c", `printf '%s\n' $fish_complete_path`),
	}
	for shell, c := range search {
		_, err := exec.LookPath(shell)
		need(t, err == nil, shell+" is not installed (apt-get install "+shell+")")
		c.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		out, err := c.Output()
		if err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		dir := "/" + filepath.Dir(map[string]string{"zsh": zshCompletion, "fish": fishCompletion}[shell])
		if !slices.Contains(strings.Split(string(out), "\n"), dir) {
			t.Errorf("%s does not search %s by default:\n%s", shell, dir, out)
		}
	}
	// bash-completion loads a command's script on first use from
	// ${XDG_DATA_DIRS:-/usr/local/share:/usr/share}/bash-completion/completions.
	const loader = "/usr/share/bash-completion/bash_completion"
	need(t, exists(loader), "bash-completion is not installed (apt-get install bash-completion)")
	data, err := os.ReadFile(loader)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "${XDG_DATA_DIRS:-/usr/local/share:/usr/share}") {
		t.Errorf("bash-completion no longer searches /usr/local/share by default: %s", loader)
	}
}

// completionShell starts shell in tmux with agentbox installed by make
// install: on PATH, and its completion where the shell looks for it (the
// default folders, under DESTDIR).
func completionShell(t *testing.T, shell string) *tmux {
	_, err := exec.LookPath(shell)
	need(t, err == nil, shell+" is not installed (apt-get install "+shell+")")
	dest := install(t)
	w := newWorld(t)
	for i, kv := range w.env {
		if strings.HasPrefix(kv, "PATH=") {
			w.env[i] = "PATH=" + filepath.Join(dest, "usr/local/bin") + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	w.env = append(w.env, "XDG_CONFIG_HOME="+filepath.Join(w.home, ".config"))
	var setup string
	switch shell {
	case "bash":
		// The loader bash-completion installs for login shells; it finds
		// agentbox's script in $XDG_DATA_DIRS on first use.
		const loader = "/usr/share/bash-completion/bash_completion"
		need(t, exists(loader), "bash-completion is not installed (apt-get install bash-completion)")
		w.env = append(w.env, "XDG_DATA_DIRS="+filepath.Join(dest, "usr/local/share")+":/usr/share")
		setup = "PS1='$ '; source " + loader
	case "zsh":
		setup = "PS1='%% '; fpath=(" + filepath.Join(dest, filepath.Dir(zshCompletion)) + " $fpath); autoload -Uz compinit; compinit -u"
	case "fish":
		setup = "set -p fish_complete_path " + filepath.Join(dest, filepath.Dir(fishCompletion))
	}
	tm := newTmux(t, w, map[string]string{"bash": "bash --noprofile --norc -i", "zsh": "zsh -f -i", "fish": "fish -i"}[shell])
	// The command line shows re''ady: only the shell's output says ready.
	tm.keys(setup+"; echo re''ady", "Enter")
	tm.wait("\nready\n")
	return tm
}

// complete types line (after clearing the line) and presses Tab until the
// screen shows want, and returns the screen: bash lists choices on the second Tab, and a shell
// still busy with the last completion may not see the first.
func complete(tm *tmux, line, want string) string {
	tm.t.Helper()
	// Ctrl-L: a clear screen, so only this line and what Tab shows are on
	// it (the lines above hold paths with the test's name).
	tm.keys("C-u", "C-l", line)
	for i := 0; ; i++ {
		tm.keys("Tab")
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if s := tm.screen(); strings.Contains(s, want) {
				return s
			}
			time.Sleep(50 * time.Millisecond)
		}
		if i == 3 {
			tm.t.Fatalf("%q<TAB> never showed %q:\n%s", line, want, tm.screen())
		}
	}
}

// Tab completion of `agentbox run --net` in real bash, zsh and fish, with
// the scripts make install installed: both flags that start so, then the
// network modes.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			tm := completionShell(t, shell)
			s := complete(tm, "agentbox run --net", "--net-log")
			if !strings.Contains(s, "--network") {
				t.Fatalf("--net<TAB> did not offer --network:\n%s", s)
			}
			// zsh completes to --network=, which agentbox takes too.
			complete(tm, "agentbox run --netw", "agentbox run --network")
			s = complete(tm, "agentbox run --network ", "allowlist")
			for _, mode := range []string{"none", "open"} {
				if !strings.Contains(s, mode) {
					t.Errorf("--network <TAB> did not offer %s:\n%s", mode, s)
				}
			}
			// The command line after -- completes as that command.
			complete(tm, "agentbox run --tmp host -- agentbox vers", "agentbox run --tmp host -- agentbox version")
			s = complete(tm, "agentbox shell-init ", "zsh")
			if !strings.Contains(s, "bash") {
				t.Errorf("shell-init <TAB> did not offer the shells:\n%s", s)
			}
		})
	}
}

// The completion agentbox prints is the one make install installs.
func TestCompletionMatchesInstalled(t *testing.T) {
	dest := install(t)
	w := newWorld(t)
	for shell, file := range map[string]string{"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion} {
		r := w.run("completion", shell)
		expectCode(t, r, 0)
		installed, err := os.ReadFile(filepath.Join(dest, file))
		if err != nil {
			t.Fatal(err)
		}
		if r.stdout != string(installed) {
			t.Errorf("agentbox completion %s differs from the installed %s: run make docs", shell, file)
		}
	}
}

// A run that auto gives to Landlock because bwrap is missing says so in
// one line, once per project; a run that asks for Landlock does not blame
// bwrap.
func TestLandlockFallbackSaysWhy(t *testing.T) {
	w := newWorld(t)
	pathDir := filepath.Join(w.base, "bin")
	mkdir(t, pathDir)
	for _, tool := range []string{"sh", "true"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(pathDir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	w.env = append(w.env, "PATH="+pathDir)
	r := w.run("run", "--", "true")
	expectCode(t, r, 0)
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 1 || lines[0] != "agentbox: notice: using Landlock: bwrap is not installed (agentbox doctor)" {
		t.Errorf("want one notice naming bwrap, got:\n%s", r.stderr)
	}
	r = w.run("run", "--", "true")
	expectCode(t, r, 0)
	if r.stderr != "" {
		t.Errorf("the notice again in the same project:\n%s", r.stderr)
	}
	r = w.run("run", "--backend", "landlock", "--", "true")
	expectCode(t, r, 0)
	expectNotContains(t, "stderr", r.stderr, "bwrap")
}

// Run from the home folder, agentbox refuses to make it writable, and its
// first message gives the whole command that works, which then runs.
// Before, the hint said --writable ~, which was refused again for
// --allow-broad-writable.
func TestHomeFolderGivesTheCommandThatWorks(t *testing.T) {
	w := newWorld(t)
	w.cwd = w.home
	r := w.run("run", "--network", "none", "--", "sh", "-c", "echo ran > here && cat here")
	expectCode(t, r, 125)
	const lead = "to let the box write here: "
	i := strings.Index(r.stderr, lead)
	if i < 0 {
		t.Fatalf("no command in the refusal:\n%s", r.stderr)
	}
	cmdline := strings.TrimSpace(strings.SplitN(r.stderr[i+len(lead):], "\n", 2)[0])
	if !strings.HasPrefix(cmdline, "agentbox run ") || !strings.Contains(cmdline, "--allow-broad-writable") || !strings.Contains(cmdline, "--network none") {
		t.Fatalf("the command %q is not the whole command", cmdline)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", `exec "$0" `+strings.TrimPrefix(cmdline, "agentbox "), bin)
	c.Dir, c.Env = w.cwd, w.env
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ran") {
		t.Fatalf("%s: %v\n%s", cmdline, err, out)
	}
}
