package main

import (
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/agentbox/agentbox/box"
)

// cliParse parses `agentbox run ARGS` with the CLI itself; ok is false
// when the CLI refuses the line or does not get to run's action.
func cliParse(args []string) (box.Request, bool) {
	app := newApp()
	var got box.Request
	ran := false
	for _, c := range app.Commands {
		if c.Name == "run" {
			c.Action = func(c *cli.Context) error { got, ran = request(c), true; return nil }
		}
	}
	app.Writer, app.ErrWriter = io.Discard, io.Discard
	err := app.Run(append([]string{"agentbox", "run"}, args...))
	return got, err == nil && ran
}

// The fast parse of run's command line gives the request the CLI gives,
// for every flag and spelling, and leaves to the CLI every line it does
// not take as it is.
func TestParseRunMatchesCLI(t *testing.T) {
	for _, args := range [][]string{
		{"--", "/bin/true"},
		{"/bin/true"},
		{"ls", "-l", "--", "x"},
		{"--network", "none", "--", "curl", "--network", "x"},
		{"--network=none", "-backend", "landlock", "-best-effort", "--", "a"},
		{"--best-effort=false", "--require", "--", "a"},
		{"--best-effort", "false", "a"},
		{"--verify", "--", "a"},
		{"--verify=0", "--", "a"},
		{"--writable", " /a ", "--writable=/b,c", "--deny", "/x", "--", "a"},
		{"--allow", "example.com", "--allow=*.x.org:443", "--net-log", "/tmp/l", "--", "a"},
		{"--policy", "/p.toml", "--pass-env", "A*", "--deny-env", "B", "--env-mode", "clean", "a"},
		{"--workspace", "w", "--workspace-root", "/r", "--task", "t", "--tmp", "private", "--", "a"},
		{"--provider", "none", "--allow-broad-writable", "--", "a", "--best-effort"},
		{"--network", "", "--", "a"},
		{"--network", "bogus", "--", "a"}, // the policy refuses it, as it would from the CLI
		{"--network", "--", "a"},          // "--" is the value, as the CLI takes it
		{"--read-only", "/x", "--read-only", "/y", "a", "b"},
		{"-", "a"},
		{},
		{"--"},
		{"--", "--"},
	} {
		fast, ok := parseRun(args)
		if !ok {
			t.Errorf("%q: the fast parse refused it", args)
			continue
		}
		want, ok := cliParse(args)
		if !ok {
			t.Errorf("%q: the CLI refused what the fast parse took", args)
			continue
		}
		if diff := cmp.Diff(want, fast); diff != "" {
			t.Errorf("%q (-cli +fast):\n%s", args, diff)
		}
	}
	// Left to the CLI, which prints its own message or help.
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--nope", "a"}, {"--network"}, {"---network", "x"},
		{"--best-effort=maybe"}, {"-=x"}, {"--=x"}, {"--writable"}} {
		if _, ok := parseRun(args); ok {
			t.Errorf("%q: the fast parse took it", args)
		}
	}
}

// Only `agentbox run …` takes the fast path.
func TestFastRunOnlyForRun(t *testing.T) {
	for _, args := range [][]string{{"agentbox"}, {"agentbox", "plan", "--", "a"}, {"agentbox", "--help", "run"}, {"agentbox", "help", "run"}} {
		if _, ok := fastRun(args); ok {
			t.Errorf("%q took the fast path", args)
		}
	}
	if _, ok := fastRun([]string{"agentbox", "run", "--", "a"}); !ok {
		t.Error("agentbox run -- a did not take the fast path")
	}
}

var benchArgs = []string{"--writable", "/a", "--network", "none", "--", "/bin/true"}

func BenchmarkParseRunCLI(b *testing.B) {
	for b.Loop() {
		cliParse(benchArgs)
	}
}

func BenchmarkParseRunFast(b *testing.B) {
	for b.Loop() {
		parseRun(benchArgs)
	}
}
