package usage

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Shells are the shells Completion writes a script for.
var Shells = []string{"bash", "zsh", "fish"}

// Completion writes the completion script of m for shell: commands, every
// command's flags, the values of flags with a closed set (backends, network
// and tmp modes, providers, shells), files and folders for path flags, and
// after `--` the confined command line as that command completes it.
func Completion(w io.Writer, m App, shell string) error {
	switch shell {
	case "bash":
		return bash(w, m)
	case "zsh":
		return zsh(w, m)
	case "fish":
		return fish(w, m)
	}
	if shell == "" {
		return &Error{Msg: "completion: which shell? " + oneOf(Shells), hints: []string{"e.g. source <(" + m.Name + " completion bash)"}}
	}
	e := &Error{Msg: fmt.Sprintf("completion: unknown shell %q", shell)}
	if s := Suggest(shell, Shells); len(s) > 0 {
		e.hints = append(e.hints, "did you mean "+oneOf(s)+"?")
	}
	e.hints = append(e.hints, "use "+oneOf(Shells)+", e.g. source <("+m.Name+" completion bash)")
	return e
}

// valueFlags are the flags of every command that take a value, each once:
// a flag name means the same thing in every command (TestOneMeaning).
func valueFlags(m App) []Flag {
	var out []Flag
	seen := map[string]bool{}
	for _, c := range m.Commands {
		for _, f := range c.Flags {
			if f.Placeholder != "" && !seen[f.Name] {
				seen[f.Name] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// longFlags are the spellings of c's flags that completion offers.
func longFlags(flags []Flag) []string {
	var out []string
	for _, f := range flags {
		out = append(out, Spelling(f.Name))
	}
	return out
}

func commandNames(m App) []string {
	var out []string
	for _, c := range m.Commands {
		out = append(out, c.Name)
	}
	return out
}

// bash writes a completion function for bash 4 or later. With the
// bash-completion package loaded, the confined command line completes as
// that command does (_command_offset); without it, as files.
func bash(w io.Writer, m App) error {
	fn := "_" + ident(m.Name)
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# bash completion for %s, generated from its commands: %s completion bash\n", m.Name, m.Name)
	p("# Load it with: source <(%s completion bash)\n\n", m.Name)
	p("%s() {\n", fn)
	p("    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n")
	p("    # bash splits --flag=value at '=' (COMP_WORDBREAKS).\n")
	p("    if [[ $cur == = ]]; then cur=; elif [[ $prev == = ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi\n")
	p("    local i word cmd= cmdpos=0 first=0\n")
	p("    for ((i = 1; i < COMP_CWORD; i++)); do\n")
	p("        [[ ${COMP_WORDS[i]} == -* ]] || { cmd=${COMP_WORDS[i]}; cmdpos=$i; break; }\n")
	p("    done\n")
	p("    if [[ -z $cmd ]]; then\n")
	p("        if [[ $cur == -* ]]; then\n")
	p("            COMPREPLY=($(compgen -W %s -- \"$cur\"))\n", quoteWords(longFlags(m.Flags)))
	p("        else\n")
	p("            COMPREPLY=($(compgen -W %s -- \"$cur\"))\n", quoteWords(commandNames(m)))
	p("        fi\n")
	p("        return\n")
	p("    fi\n")
	p("    # The first argument after the flags, or after --.\n")
	p("    for ((i = cmdpos + 1; i < COMP_CWORD; i++)); do\n")
	p("        word=${COMP_WORDS[i]}\n")
	p("        case $word in\n")
	p("        --) first=$((i + 1)); break ;;\n")
	if vf := valueFlags(m); len(vf) > 0 {
		p("        %s)\n", strings.Join(longFlags(vf), "|"))
		p("            ((i++))\n")
		p("            [[ ${COMP_WORDS[i]} == = ]] && ((i++)) ;;\n")
	}
	p("        -* | =) ;;\n")
	p("        *) first=$i; break ;;\n")
	p("        esac\n")
	p("    done\n")
	p("    if ((first == 0)); then\n")
	p("        case $prev in\n")
	for _, f := range valueFlags(m) {
		p("        %s) ", Spelling(f.Name))
		switch {
		case len(f.Values) > 0:
			p("COMPREPLY=($(compgen -W %s -- \"$cur\")); return ;;\n", quoteWords(f.Values))
		case f.Dirs():
			p("compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n")
		case f.Files():
			p("compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n")
		default:
			p("COMPREPLY=(); return ;;\n")
		}
	}
	p("        esac\n")
	p("        if [[ $cur == -* ]]; then\n")
	p("            case $cmd in\n")
	for _, c := range m.Commands {
		p("            %s) COMPREPLY=($(compgen -W %s -- \"$cur\")) ;;\n", c.Name, quoteWords(longFlags(c.Flags)))
	}
	p("            esac\n")
	p("            return\n")
	p("        fi\n")
	p("        first=$COMP_CWORD\n")
	p("    fi\n")
	p("    case $cmd in\n")
	for _, c := range m.Commands {
		switch c.Args {
		case ArgCommand:
			p("    %s)\n", c.Name)
			p("        if ((COMP_CWORD == first)); then\n")
			p("            COMPREPLY=($(compgen -c -- \"$cur\"))\n")
			p("        elif declare -F _command_offset >/dev/null; then\n")
			p("            _command_offset \"$first\"\n")
			p("        else\n")
			p("            compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\"))\n")
			p("        fi ;;\n")
		case ArgFile:
			p("    %s) ((COMP_CWORD == first)) && { compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); } ;;\n", c.Name)
		case ArgValues:
			p("    %s) ((COMP_CWORD == first)) && COMPREPLY=($(compgen -W %s -- \"$cur\")) ;;\n", c.Name, quoteWords(c.Values))
		}
	}
	p("    esac\n")
	p("}\n")
	p("complete -F %s %s\n", fn, m.Name)
	_, err := io.WriteString(w, b.String())
	return err
}

// zsh writes a completion function for zsh. It works both ways zsh loads
// one: as the file _NAME in $fpath (compinit autoloads it) and sourced
// (then it registers itself, running compinit first when nobody has).
func zsh(w io.Writer, m App) error {
	fn := "_" + ident(m.Name)
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("#compdef %s\n", m.Name)
	p("# zsh completion for %s, generated from its commands: %s completion zsh\n", m.Name, m.Name)
	p("# Load it with: source <(%s completion zsh), or install it as %s in $fpath.\n\n", m.Name, fn)
	p("# Completes the confined command line, after the flags and `--`, as that\n")
	p("# command completes.\n")
	p("%s_command_line() {\n", fn)
	p("  if [[ $words[1] == -- ]]; then\n")
	p("    shift words\n")
	p("    (( CURRENT-- ))\n")
	p("  fi\n")
	p("  _normal\n")
	p("}\n\n")
	p("%s() {\n", fn)
	p("  local curcontext=$curcontext state state_descr line ret=1\n")
	p("  typeset -A opt_args\n")
	p("  _arguments -C \\\n")
	for _, f := range m.Flags {
		p("    %s \\\n", zshFlag(f, true))
	}
	p("    '1:command:->command' \\\n")
	p("    '*::argument:->argument' && ret=0\n")
	p("  case $state in\n")
	p("  command)\n")
	p("    local -a commands=(\n")
	for _, c := range m.Commands {
		p("      %s\n", zshQuote(strings.ReplaceAll(c.Name, ":", `\:`)+":"+c.Usage))
	}
	p("    )\n")
	p("    _describe -t commands command commands && ret=0\n")
	p("    ;;\n")
	p("  argument)\n")
	p("    curcontext=${curcontext%%:*:*}:%s-$words[1]:\n", m.Name)
	p("    case $words[1] in\n")
	for _, c := range m.Commands {
		p("    %s)\n", c.Name)
		p("      _arguments -S \\\n")
		for _, f := range c.Flags {
			p("        %s \\\n", zshFlag(f, false))
		}
		switch c.Args {
		case ArgCommand:
			p("        '(-)*::command line:%s_command_line' && ret=0\n", fn)
		case ArgFile:
			p("        '1:file:_files' && ret=0\n")
		case ArgValues:
			p("        %s && ret=0\n", zshQuote("1:"+strings.ToLower(firstWord(c.ArgsUsage, "value"))+":("+strings.Join(c.Values, " ")+")"))
		default:
			p("        && ret=0\n")
		}
		p("      ;;\n")
	}
	p("    esac\n")
	p("    ;;\n")
	p("  esac\n")
	p("  return ret\n")
	p("}\n\n")
	p("if [[ $funcstack[1] == %s ]]; then\n", fn)
	p("  # Autoloaded from $fpath by compinit.\n")
	p("  %s \"$@\"\n", fn)
	p("else\n")
	p("  # Sourced: compdef needs compinit, which a plain ~/.zshrc does not run.\n")
	p("  (( $+functions[compdef] )) || { autoload -Uz compinit && compinit -i; }\n")
	p("  compdef %s %s\n", fn, m.Name)
	p("fi\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// zshFlag is one _arguments spec for f. A help or version flag excludes
// everything else.
func zshFlag(f Flag, top bool) string {
	desc := "[" + zshBracket(f.Usage) + "]"
	if f.Name == "help" || (top && f.Name == "version") {
		var names []string
		for _, n := range append(slices.Clone(f.Aliases), f.Name) {
			names = append(names, Spelling(n))
		}
		if len(names) == 1 {
			return zshQuote("(- *)" + names[0] + desc)
		}
		return zshQuote("(- *)") + "{" + strings.Join(names, ",") + "}" + zshQuote(desc)
	}
	spec := ""
	if f.Repeatable {
		spec = "*"
	}
	spec += Spelling(f.Name)
	if f.Placeholder == "" {
		return zshQuote(spec + desc)
	}
	action := " "
	switch {
	case len(f.Values) > 0:
		action = "(" + strings.Join(f.Values, " ") + ")"
	case f.Dirs():
		action = "_files -/"
	case f.Files():
		action = "_files"
	}
	if len(f.Name) > 1 {
		// --flag=value or --flag value, as urfave takes both.
		spec += "="
	}
	return zshQuote(spec + desc + ":" + f.Placeholder + ":" + action)
}

// zshBracket escapes a description inside _arguments' [...].
func zshBracket(s string) string {
	return strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`).Replace(s)
}

// zshQuote single-quotes s for zsh.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// fish writes completions for fish 3.
func fish(w io.Writer, m App) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	name := m.Name
	pre := "__" + ident(name)
	p("# fish completion for %s, generated from its commands: %s completion fish\n", name, name)
	p("# Load it with: %s completion fish | source\n\n", name)
	p("# True once the command line has a `--`: what follows is the confined command.\n")
	p("function %s_after_dashdash\n", pre)
	p("    contains -- -- (commandline -opc)\n")
	p("end\n\n")
	p("# Completes the confined command line (after `--`) as that command does.\n")
	p("function %s_command_line\n", pre)
	p("    set -l words (commandline -opc)\n")
	p("    set -l i (contains -i -- -- $words)\n")
	p("    set -l rest\n")
	p("    test $i -lt (count $words); and set rest $words[(math $i + 1)..-1]\n")
	p("    set rest $rest (commandline -ct)\n")
	p("    if test (count $rest) -le 1\n")
	p("        __fish_complete_command\n")
	p("    else\n")
	p("        complete -C (string join -- ' ' (string escape -- $rest))\n")
	p("    end\n")
	p("end\n\n")
	p("complete -c %s -f\n", name)
	for _, f := range m.Flags {
		p("complete -c %s -n __fish_use_subcommand %s\n", name, fishFlag(f))
	}
	for _, c := range m.Commands {
		p("complete -c %s -n __fish_use_subcommand -a %s -d %s\n", name, fishQuote(c.Name), fishQuote(c.Usage))
	}
	for _, c := range m.Commands {
		seen := fmt.Sprintf("__fish_seen_subcommand_from %s", c.Name)
		cond := seen
		if c.Args == ArgCommand {
			cond += "; and not " + pre + "_after_dashdash"
		}
		for _, f := range c.Flags {
			p("complete -c %s -n %s %s\n", name, fishQuote(cond), fishFlag(f))
		}
		switch c.Args {
		case ArgCommand:
			p("complete -c %s -n %s -a %s\n", name, fishQuote(seen+"; and "+pre+"_after_dashdash"), fishQuote("("+pre+"_command_line)"))
		case ArgFile:
			p("complete -c %s -n %s -F\n", name, fishQuote(seen))
		case ArgValues:
			p("complete -c %s -n %s -a %s\n", name, fishQuote(seen), fishQuote(strings.Join(c.Values, " ")))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fishFlag is the options of `complete` for f.
func fishFlag(f Flag) string {
	var parts []string
	for _, a := range f.Aliases {
		if len(a) == 1 {
			parts = append(parts, "-s "+a)
		} else {
			parts = append(parts, "-l "+a)
		}
	}
	if len(f.Name) == 1 {
		parts = append(parts, "-s "+f.Name)
	} else {
		parts = append(parts, "-l "+f.Name)
	}
	switch {
	case len(f.Values) > 0:
		parts = append(parts, "-x -a "+fishQuote(strings.Join(f.Values, " ")))
	case f.Files():
		// -r: it takes a value; -F: files complete (they are off for
		// agentbox as a whole).
		parts = append(parts, "-r -F")
	case f.Placeholder != "":
		parts = append(parts, "-x")
	}
	parts = append(parts, "-d "+fishQuote(f.Usage))
	return strings.Join(parts, " ")
}

// fishQuote single-quotes s for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// quoteWords is a double-quoted word list for bash's compgen -W.
func quoteWords(words []string) string {
	return `"` + strings.Join(words, " ") + `"`
}

// ident turns a program name into a shell identifier part.
func ident(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' {
			return '_'
		}
		return r
	}, name)
}

// firstWord is the first word of an ArgsUsage like "SHELL" or
// "bash|zsh|fish", or def.
func firstWord(s, def string) string {
	s = strings.Trim(s, "[] ")
	if s == "" || strings.Contains(s, "|") {
		return def
	}
	return strings.Fields(s)[0]
}
