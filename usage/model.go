package usage

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// App is the command line as help, completion and the man page show it.
type App struct {
	Name     string
	Usage    string
	Flags    []Flag // the flags before a command: --help, --version
	Commands []Command
}

// Command is one visible command.
type Command struct {
	Name string
	// Usage is its one-line description.
	Usage string
	// ArgsUsage is what follows the flags: "-- CMD [ARGS...]", "[FILE]",
	// "bash|zsh|fish".
	ArgsUsage string
	Flags     []Flag
	// Synopsis are its usage lines ("agentbox run [FLAGS] -- CMD
	// [ARGS...]"): the command's UsageText, one line each, or one made
	// from its name, flags and ArgsUsage.
	Synopsis []string
	// Args is how its arguments complete (see ArgKind).
	Args ArgKind
	// Values are the words its first argument takes, for ArgValues.
	Values []string
}

// ArgKind is what a command's arguments are, for completion.
type ArgKind int

// The kinds of arguments.
const (
	ArgNone    ArgKind = iota // nothing to complete
	ArgCommand                // a command line: CMD and its arguments
	ArgFile                   // a file
	ArgValues                 // one of Values
)

// Flag is one flag of a command.
type Flag struct {
	Name    string
	Aliases []string
	// Usage is its description with the placeholder's backquotes removed.
	Usage string
	// Placeholder names its value ("MODE", "PATH"); "" for a switch.
	Placeholder string
	// Values are the values it takes when the set is closed.
	Values []string
	// Repeatable is true for a list flag.
	Repeatable bool
	// Policy is true for the flags that form the last policy layer.
	Policy bool
}

// Files reports whether the flag's value is a path to complete as such.
func (f Flag) Files() bool {
	switch f.Placeholder {
	case "FILE", "PATH", "DIR":
		return true
	}
	return false
}

// Dirs reports whether the flag's value is a folder.
func (f Flag) Dirs() bool { return f.Placeholder == "DIR" }

// Spelling is how the flag is typed: "--network", "-h".
func Spelling(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// Choice is a string flag whose value is one of a closed set. Help, the man
// page and completion list Values; checking the value stays with whoever
// reads it (the policy, for policy flags), so there is one check.
type Choice struct {
	cli.StringFlag
	Values []string
}

// PolicyCategory is the urfave category of the policy flags.
const PolicyCategory = "policy"

// Model reads app's visible commands and flags. The help and version flags
// are added as agentbox shows them.
func Model(app *cli.App) App {
	m := App{Name: app.Name, Usage: app.Usage}
	for _, f := range app.Flags {
		if f.Names()[0] != "help" {
			m.Flags = append(m.Flags, flagOf(f))
		}
	}
	m.Flags = append(m.Flags, helpFlag())
	for _, c := range app.Commands {
		if c.Hidden {
			continue
		}
		mc := Command{Name: c.Name, Usage: c.Usage, ArgsUsage: c.ArgsUsage}
		for _, f := range c.Flags {
			if vf, ok := f.(cli.VisibleFlag); (ok && !vf.IsVisible()) || f.Names()[0] == "help" {
				continue
			}
			mc.Flags = append(mc.Flags, flagOf(f))
		}
		mc.Flags = append(mc.Flags, helpFlag())
		mc.Synopsis = synopsis(m.Name, c, len(mc.Flags) > 1)
		mc.Args, mc.Values = argsOf(c.ArgsUsage)
		if c.Name == "help" {
			mc.Args, mc.Values = ArgValues, nil
			for _, o := range app.Commands {
				if !o.Hidden && o.Name != "help" {
					mc.Values = append(mc.Values, o.Name)
				}
			}
		}
		m.Commands = append(m.Commands, mc)
	}
	return m
}

// synopsis is c's usage lines.
func synopsis(app string, c *cli.Command, hasFlags bool) []string {
	if c.UsageText != "" {
		return strings.Split(strings.TrimSpace(c.UsageText), "\n")
	}
	s := app + " " + c.Name
	if hasFlags {
		s += " [FLAGS]"
	}
	if c.ArgsUsage != "" {
		s += " " + c.ArgsUsage
	}
	return []string{s}
}

func helpFlag() Flag { return Flag{Name: "help", Aliases: []string{"h"}, Usage: "show help"} }

// Command returns the command called name.
func (a App) Command(name string) (Command, bool) {
	for _, c := range a.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// flagOf reads one urfave flag.
func flagOf(f cli.Flag) Flag {
	names := f.Names()
	out := Flag{Name: names[0]}
	if len(names) > 1 {
		out.Aliases = names[1:]
	}
	var raw string
	if df, ok := f.(cli.DocGenerationFlag); ok {
		raw = df.GetUsage()
		if df.TakesValue() {
			out.Placeholder = "VALUE"
		}
	}
	out.Placeholder, out.Usage = placeholder(raw, out.Placeholder)
	switch f := f.(type) {
	case *Choice:
		out.Values = append([]string(nil), f.Values...)
		out.Usage += ": " + oneOf(f.Values)
		out.Policy = f.Category == PolicyCategory
	case *cli.StringSliceFlag:
		out.Repeatable = true
		out.Policy = f.Category == PolicyCategory
	case *cli.StringFlag:
		out.Policy = f.Category == PolicyCategory
	case *cli.BoolFlag:
		out.Policy = f.Category == PolicyCategory
	}
	return out
}

// placeholder splits a usage text on its first `quoted` word, the way
// urfave names a flag's value, and returns the word and the text without
// the quotes. A flag with no quoted word keeps def.
func placeholder(usage, def string) (string, string) {
	start := strings.IndexByte(usage, '`')
	if start < 0 {
		return def, usage
	}
	end := strings.IndexByte(usage[start+1:], '`')
	if end < 0 {
		return def, usage
	}
	name := usage[start+1 : start+1+end]
	if def == "" {
		// A switch has no value: the quotes were only emphasis.
		return "", usage[:start] + name + usage[start+1+end+1:]
	}
	return name, usage[:start] + name + usage[start+1+end+1:]
}

// argsOf reads what a command's ArgsUsage says about its arguments:
// "a|b|c" is a closed set, a "CMD" is a command line, a "FILE" a file.
func argsOf(argsUsage string) (ArgKind, []string) {
	s := strings.Trim(argsUsage, "[] ")
	switch {
	case s == "":
		return ArgNone, nil
	case strings.Contains(s, "CMD"):
		return ArgCommand, nil
	case strings.Contains(s, "FILE"):
		return ArgFile, nil
	case strings.Contains(s, "|") && !strings.ContainsAny(s, " []"):
		return ArgValues, strings.Split(s, "|")
	}
	return ArgNone, nil
}
