package usage

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

func TestSuggest(t *testing.T) {
	commands := []string{"run", "plan", "init", "doctor", "trust", "status", "providers", "shell-init", "completion", "setup", "version", "help"}
	flags := []string{"policy", "writable", "network", "net-log", "allow", "allow-broad-writable", "tmp", "task", "deny", "deny-env"}
	tests := []struct {
		word       string
		candidates []string
		want       []string
	}{
		{"rn", commands, []string{"run"}},
		{"pln", commands, []string{"plan"}},
		{"statsu", commands, []string{"status"}}, // a swapped pair is one edit
		{"docter", commands, []string{"doctor"}}, // a wrong letter
		{"providres", commands, []string{"providers"}},
		{"shellinit", commands, []string{"shell-init"}},
		{"RUN", commands, []string{"run"}}, // case does not matter
		{"claude", commands, nil},          // nothing close: no guess
		{"x", commands, nil},
		{"", commands, nil},
		{"netwrok", flags, []string{"network"}},
		{"net", flags, []string{"network", "net-log"}}, // a prefix of two flags
		{"writeable", flags, []string{"writable"}},
		{"alow", flags, []string{"allow"}},
		{"deny-evn", flags, []string{"deny-env"}},
	}
	for _, tc := range tests {
		t.Run(tc.word, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Suggest(tc.word, tc.candidates)); diff != "" {
				t.Errorf("Suggest(%q) (-want +got):\n%s", tc.word, diff)
			}
		})
	}
}

// testApp is a small CLI with the shapes agentbox has.
func testApp() *cli.App {
	app := &cli.App{
		Name:  "tool",
		Usage: "do things",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "version", Usage: "print the version"}},
		Commands: []*cli.Command{
			{Name: "run", Usage: "run CMD", ArgsUsage: "-- CMD [ARGS...]", Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "writable", Usage: "make `PATH` writable", Category: PolicyCategory},
				&Choice{StringFlag: cli.StringFlag{Name: "network", Usage: "network `MODE`", Category: PolicyCategory}, Values: []string{"open", "none"}},
				&cli.StringFlag{Name: "workspace-root", Usage: "the work `DIR`"},
				&cli.BoolFlag{Name: "require", Usage: "refuse to run unconfined (the default)"},
				&cli.BoolFlag{Name: "prompt", Usage: "print what `run` starts"},
			}},
			{Name: "shell-init", Usage: "print aliases", ArgsUsage: "bash|zsh|fish"},
			{Name: "trust", Usage: "trust a file", ArgsUsage: "[FILE]"},
			{Name: "hidden", Hidden: true},
		},
	}
	Setup(app)
	return app
}

func TestModel(t *testing.T) {
	m := Model(testApp())
	want := App{
		Name: "tool", Usage: "do things",
		Flags: []Flag{{Name: "version", Usage: "print the version"}, {Name: "help", Aliases: []string{"h"}, Usage: "show help"}},
		Commands: []Command{
			{Name: "run", Usage: "run CMD", ArgsUsage: "-- CMD [ARGS...]", Synopsis: []string{"tool run [FLAGS] -- CMD [ARGS...]"}, Args: ArgCommand,
				Flags: []Flag{
					{Name: "writable", Usage: "make PATH writable", Placeholder: "PATH", Repeatable: true, Policy: true},
					{Name: "network", Usage: "network MODE: open or none", Placeholder: "MODE", Values: []string{"open", "none"}, Policy: true},
					{Name: "workspace-root", Usage: "the work DIR", Placeholder: "DIR"},
					// A switch shows no default and no placeholder.
					{Name: "require", Usage: "refuse to run unconfined (the default)"},
					{Name: "prompt", Usage: "print what run starts"},
					{Name: "help", Aliases: []string{"h"}, Usage: "show help"},
				}},
			{Name: "shell-init", Usage: "print aliases", ArgsUsage: "bash|zsh|fish", Synopsis: []string{"tool shell-init bash|zsh|fish"},
				Args: ArgValues, Values: []string{"bash", "zsh", "fish"}, Flags: []Flag{{Name: "help", Aliases: []string{"h"}, Usage: "show help"}}},
			{Name: "trust", Usage: "trust a file", ArgsUsage: "[FILE]", Synopsis: []string{"tool trust [FILE]"},
				Args: ArgFile, Flags: []Flag{{Name: "help", Aliases: []string{"h"}, Usage: "show help"}}},
			{Name: "help", Usage: "show the commands, or one command's flags", ArgsUsage: "[COMMAND]", Synopsis: []string{"tool help [COMMAND]"},
				Args: ArgValues, Values: []string{"run", "shell-init", "trust"}, Flags: []Flag{{Name: "help", Aliases: []string{"h"}, Usage: "show help"}}},
		},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("Model (-want +got):\n%s", diff)
	}
}

// run runs the test app and returns what it wrote and its error's lines.
func runApp(args ...string) (string, []string) {
	app := testApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	app.ExitErrHandler = func(*cli.Context, error) {}
	app.Action = NoCommand
	for _, c := range app.Commands {
		if c.Action == nil {
			c.Action = func(*cli.Context) error { return nil }
		}
	}
	err := app.Run(append([]string{"tool"}, args...))
	if err == nil {
		return out.String(), nil
	}
	lines := []string{"error: " + err.Error()}
	var h interface{ Hints() []string }
	if errors.As(err, &h) {
		for _, s := range h.Hints() {
			lines = append(lines, "hint: "+s)
		}
	}
	return out.String(), lines
}

// TestMistakes: a mistyped command or flag is one error line and short
// hints, never the whole help.
func TestMistakes(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"rn"}, []string{`error: unknown command "rn"`, "hint: did you mean run?", "hint: tool --help lists the commands"}},
		{[]string{"claude"}, []string{`error: unknown command "claude"`, "hint: to run it confined: tool run -- claude", "hint: tool --help lists the commands"}},
		{[]string{"help", "trsut"}, []string{`error: unknown command "trsut"`, "hint: did you mean trust?", "hint: tool --help lists the commands"}},
		{[]string{"run", "--netwrok", "none"}, []string{"error: run: unknown flag --netwrok", "hint: did you mean --network?",
			"hint: usage: tool run [FLAGS] -- CMD [ARGS...] (tool run --help lists the flags)"}},
		{[]string{"run", "--net"}, []string{"error: run: unknown flag --net", "hint: did you mean --network?",
			"hint: usage: tool run [FLAGS] -- CMD [ARGS...] (tool run --help lists the flags)"}},
		{[]string{"run", "--network"}, []string{"error: run: --network needs a value", "hint: --network takes open or none",
			"hint: usage: tool run [FLAGS] -- CMD [ARGS...] (tool run --help lists the flags)"}},
		{[]string{"run", "--require=yes"}, []string{"error: run: --require is a switch and takes no value",
			"hint: usage: tool run [FLAGS] -- CMD [ARGS...] (tool run --help lists the flags)"}},
		{[]string{"--network", "none", "run"}, []string{"error: unknown flag --network",
			"hint: --network is a flag of run: it goes after the command, e.g. tool run --network",
			"hint: usage: tool COMMAND [FLAGS] [ARGS...] (tool --help lists the commands)"}},
		{[]string{"trust", "-x"}, []string{"error: trust: unknown flag -x", "hint: usage: tool trust [FILE] (tool trust --help lists the flags)"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, got := runApp(tc.args...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if out != "" {
				t.Errorf("a mistake printed help:\n%s", out)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"run", "--help"}, {"help", "run"}, {"run", "-h"}} {
		out, errs := runApp(args...)
		if errs != nil {
			t.Fatalf("%v: %v", args, errs)
		}
		want := `tool run: run CMD

usage:
  tool run [FLAGS] -- CMD [ARGS...]

policy flags (the last policy layer):
  --writable PATH  make PATH writable
  --network MODE   network MODE: open or none

flags:
  --workspace-root DIR  the work DIR
  --require             refuse to run unconfined (the default)
  --prompt              print what run starts
  -h, --help            show help
`
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("%v (-want +got):\n%s", args, diff)
		}
	}
	for _, args := range [][]string{{}, {"--help"}, {"help"}} {
		out, errs := runApp(args...)
		if errs != nil || !strings.Contains(out, "commands:\n  run         run CMD\n  shell-init  print aliases\n  trust       trust a file\n  help ") {
			t.Errorf("%v: %v\n%s", args, errs, out)
		}
		if strings.Contains(out, "hidden") {
			t.Errorf("%v shows a hidden command:\n%s", args, out)
		}
	}
	// After run, "help" is the command to run, not a help topic.
	if out, errs := runApp("run", "help"); out != "" || errs != nil {
		t.Errorf("run help: %q %v", out, errs)
	}
}

func TestCompletionUnknownShell(t *testing.T) {
	m := Model(testApp())
	for shell, want := range map[string]string{"bsh": "did you mean bash or zsh?", "": "completion bash", "powershell": "use bash"} {
		err := Completion(&bytes.Buffer{}, m, shell)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(strings.Join(e.Hints(), "\n"), want) {
			t.Errorf("Completion(%q) = %v %v, want a hint with %q", shell, err, e, want)
		}
	}
}

// TestCompletionScripts checks what each script offers for the shapes of
// flags; the real shells run them in integration/cli_test.go.
func TestCompletionScripts(t *testing.T) {
	m := Model(testApp())
	want := map[string][]string{
		"bash": {`--network) COMPREPLY=($(compgen -W "open none" -- "$cur")); return ;;`,
			`--workspace-root) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")); return ;;`,
			`--writable) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;`,
			`shell-init) ((COMP_CWORD == first)) && COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")) ;;`,
			`_command_offset "$first"`, "complete -F _tool tool"},
		"zsh": {"#compdef tool", `'--network=[network MODE: open or none]:MODE:(open none)'`, `'*--writable=[make PATH writable]:PATH:_files'`,
			`'--workspace-root=[the work DIR]:DIR:_files -/'`, `'1:value:(bash zsh fish)'`, `'(-)*::command line:_tool_command_line'`, "compdef _tool tool"},
		"fish": {`complete -c tool -n '__fish_seen_subcommand_from run; and not __tool_after_dashdash' -l network -x -a 'open none' -d 'network MODE: open or none'`,
			`complete -c tool -n '__fish_seen_subcommand_from run; and not __tool_after_dashdash' -l writable -r -F`,
			`complete -c tool -n '__fish_seen_subcommand_from shell-init' -a 'bash zsh fish'`,
			`complete -c tool -n '__fish_seen_subcommand_from run; and __tool_after_dashdash' -a '(__tool_command_line)'`},
	}
	for shell, parts := range want {
		var b bytes.Buffer
		if err := Completion(&b, m, shell); err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if !strings.Contains(b.String(), p) {
				t.Errorf("%s script lacks %q:\n%s", shell, p, b.String())
			}
		}
		if strings.Contains(b.String(), "hidden") {
			t.Errorf("%s script completes a hidden command", shell)
		}
	}
}

func TestManEscapes(t *testing.T) {
	var b bytes.Buffer
	err := Man(&b, Model(testApp()), []Section{{Title: "DESCRIPTION", Text: "Run `tool run -- x`.\n\n  .hidden \\ line\n"}},
		[]Section{{Title: "EXIT STATUS", Text: "- 125 when\n  it failed.\n- 0 else.\n"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".TH TOOL 1", ".SH NAME\ntool \\- do things\n", `Run \fBtool run \-\- x\fR.`, `\&.hidden \e line`,
		".IP \\(bu 2\n125 when it failed.\n", ".SS \"run\"", "\\fB\\-\\-network\\fR \\fIMODE\\fR\nNetwork MODE: open or none.\n", ".SH POLICY FLAGS"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("man page lacks %q:\n%s", want, b.String())
		}
	}
}
