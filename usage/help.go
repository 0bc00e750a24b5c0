package usage

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/agentbox/agentbox/wrap"
)

// Setup makes app speak with this package's voice: help screens from the
// model, usage errors as *Error (one line and hints, never the whole help),
// an unknown command as an error, and a `help [COMMAND]` command that fails
// on a command that does not exist. It only sets hooks: the model is read
// when help or an error is shown, never on the run path.
func Setup(app *cli.App) {
	// urfave/cli prints help through package-level hooks.
	cli.HelpPrinterCustom = func(w io.Writer, _ string, data any, _ map[string]any) {
		m := Model(app)
		if c, ok := data.(*cli.Command); ok {
			if mc, ok := m.Command(c.Name); ok {
				CommandHelp(w, m, mc)
				return
			}
		}
		AppHelp(w, m)
	}
	app.HideHelpCommand = true
	// urfave adds --help to the top level only along with its own help
	// command, which ours replaces.
	app.Flags = append(app.Flags, cli.HelpFlag)
	app.OnUsageError = onUsageError(app, "")
	app.Commands = append(app.Commands, helpCommand(app))
	for _, c := range app.Commands {
		// No `agentbox run help`: after run, "help" is the command to run.
		c.HideHelpCommand = true
		c.OnUsageError = onUsageError(app, c.Name)
	}
}

// helpCommand is `agentbox help [COMMAND]`.
func helpCommand(app *cli.App) *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the commands, or one command's flags",
		ArgsUsage: "[COMMAND]",
		Action: func(c *cli.Context) error {
			m := Model(app)
			name := c.Args().First()
			if name == "" {
				AppHelp(c.App.Writer, m)
				return nil
			}
			mc, ok := m.Command(name)
			if !ok {
				return UnknownCommand(m, name)
			}
			CommandHelp(c.App.Writer, m, mc)
			return nil
		},
	}
}

// NoCommand is the top level's action without a command: the help, or an
// error naming an argument that is not a command.
func NoCommand(c *cli.Context) error {
	m := Model(c.App)
	if name := c.Args().First(); name != "" {
		return UnknownCommand(m, name)
	}
	AppHelp(c.App.Writer, m)
	return nil
}

// AppHelp writes the top-level help, fitted to w's width (wrap.Width).
func AppHelp(w io.Writer, m App) {
	ww := wrap.NewWriter(w, wrap.Width(w, false))
	defer ww.Flush()
	w = ww
	fmt.Fprintf(w, "%s: %s\n\nusage:\n  %s COMMAND [FLAGS] [ARGS...]\n\ncommands:\n", m.Name, m.Usage, m.Name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range m.Commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.Name, c.Usage)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nflags:")
	writeFlags(w, m.Flags)
	fmt.Fprintf(w, "\n`%s COMMAND --help` lists a command's flags; `man %s` is the manual.\n", m.Name, m.Name)
}

// CommandHelp writes one command's help: its usage lines, then its
// policy flags and its own flags, fitted to w's width (wrap.Width).
func CommandHelp(w io.Writer, m App, c Command) {
	ww := wrap.NewWriter(w, wrap.Width(w, false))
	defer ww.Flush()
	w = ww
	fmt.Fprintf(w, "%s %s: %s\n\nusage:\n", m.Name, c.Name, c.Usage)
	for _, s := range c.Synopsis {
		fmt.Fprintf(w, "  %s\n", s)
	}
	var policy, own []Flag
	for _, f := range c.Flags {
		if f.Policy {
			policy = append(policy, f)
		} else {
			own = append(own, f)
		}
	}
	if len(policy) > 0 {
		fmt.Fprintln(w, "\npolicy flags (the last policy layer):")
		writeFlags(w, policy)
	}
	fmt.Fprintln(w, "\nflags:")
	writeFlags(w, own)
}

// writeFlags writes one aligned line per flag.
func writeFlags(w io.Writer, flags []Flag) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range flags {
		fmt.Fprintf(tw, "  %s\t%s\n", FlagSpelling(f), f.Usage)
	}
	tw.Flush()
}

// FlagSpelling is how help shows a flag: "--network MODE", "-h, --help".
func FlagSpelling(f Flag) string {
	var names []string
	for _, a := range f.Aliases {
		names = append(names, Spelling(a))
	}
	names = append(names, Spelling(f.Name))
	s := strings.Join(names, ", ")
	if f.Placeholder != "" {
		s += " " + f.Placeholder
	}
	return s
}
