package usage

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// Error is a mistake on the command line: one line saying what is wrong,
// and hints (a suggestion, the command's short usage) that package main
// prints as "agentbox: hint:" lines.
type Error struct {
	Msg   string
	hints []string
}

func (e *Error) Error() string { return e.Msg }

// Hints returns the lines that help fix the mistake.
func (e *Error) Hints() []string { return e.hints }

// UnknownCommand is the error for `agentbox NAME` when no command is
// called NAME.
func UnknownCommand(m App, name string) error {
	e := &Error{Msg: fmt.Sprintf("unknown command %q", name)}
	var names []string
	for _, c := range m.Commands {
		names = append(names, c.Name)
	}
	if s := Suggest(name, names); len(s) > 0 {
		e.hints = append(e.hints, "did you mean "+oneOf(s)+"?")
	} else if !strings.HasPrefix(name, "-") {
		e.hints = append(e.hints, "to run it confined: "+m.Name+" run -- "+name)
	}
	e.hints = append(e.hints, m.Name+" --help lists the commands")
	return e
}

// FlagError turns the flag package's error for command cmd ("" for the
// top level) into one line in agentbox's words, with a suggestion for a
// mistyped flag and the command's short usage.
func FlagError(m App, cmd string, err error) error {
	flags := m.Flags
	where := ""
	synopsis := []string{m.Name + " COMMAND [FLAGS] [ARGS...]"}
	if c, ok := m.Command(cmd); ok {
		flags = c.Flags
		where = c.Name + ": "
		synopsis = c.Synopsis
	}
	msg := err.Error()
	e := &Error{Msg: where + msg}
	switch {
	case strings.HasPrefix(msg, "flag provided but not defined: "):
		name := strings.TrimLeft(strings.TrimPrefix(msg, "flag provided but not defined: "), "-")
		e.Msg = fmt.Sprintf("%sunknown flag %s", where, Spelling(name))
		var spellings []string
		for _, f := range flags {
			for _, n := range append([]string{f.Name}, f.Aliases...) {
				spellings = append(spellings, n)
			}
		}
		if s := Suggest(name, spellings); len(s) > 0 {
			for i := range s {
				s[i] = Spelling(s[i])
			}
			e.hints = append(e.hints, "did you mean "+oneOf(s)+"?")
		} else if owners := flagOwners(m, name); len(owners) > 0 {
			e.hints = append(e.hints, fmt.Sprintf("%s is a flag of %s: it goes after the command, e.g. %s %s %s",
				Spelling(name), allOf(owners), m.Name, owners[0], Spelling(name)))
		}
	case strings.HasPrefix(msg, "flag needs an argument: "):
		name := strings.TrimLeft(strings.TrimPrefix(msg, "flag needs an argument: "), "-")
		e.Msg = fmt.Sprintf("%s%s needs a value", where, Spelling(name))
		for _, f := range flags {
			if f.Name == name && len(f.Values) > 0 {
				e.hints = append(e.hints, fmt.Sprintf("%s takes %s", Spelling(name), oneOf(f.Values)))
			}
		}
	case strings.HasPrefix(msg, "invalid boolean value "):
		// --json=yes: a switch takes no value.
		if _, after, ok := strings.Cut(msg, " for -"); ok {
			name, _, _ := strings.Cut(after, ":")
			e.Msg = fmt.Sprintf("%s%s is a switch and takes no value", where, Spelling(name))
		}
	}
	for i, s := range synopsis {
		if i == len(synopsis)-1 {
			s += " (" + helpHint(m, cmd) + ")"
		}
		e.hints = append(e.hints, "usage: "+s)
	}
	return e
}

// flagOwners are the commands that have a flag called name.
func flagOwners(m App, name string) []string {
	var out []string
	for _, c := range m.Commands {
		for _, f := range c.Flags {
			if f.Name == name && name != "help" {
				out = append(out, c.Name)
			}
		}
	}
	return out
}

// helpHint says where the full help of cmd is.
func helpHint(m App, cmd string) string {
	if cmd == "" {
		return m.Name + " --help lists the commands"
	}
	return m.Name + " " + cmd + " --help lists the flags"
}

// isUsage reports whether err is a command-line mistake.
func isUsage(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// onUsageError is the urfave hook for command cmd of app: the model is read
// only when there is a mistake to explain.
func onUsageError(app *cli.App, cmd string) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		if isUsage(err) {
			return err
		}
		return FlagError(Model(app), cmd, err)
	}
}
