package box

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/seatbelt"
)

// PlanSchema is the version of the JSON `agentbox plan --json` prints.
const PlanSchema = 1

// PlanFormat is how `agentbox plan` prints the plan.
type PlanFormat int

// The formats of `agentbox plan`.
const (
	PlanText    PlanFormat = iota // the readable table
	PlanJSON                      // the whole plan as JSON, with its digest
	PlanArgv                      // the exact bwrap command line, shell-quoted
	PlanProfile                   // the Seatbelt profile (macOS)
)

// PlanJSONOutput is what `agentbox plan --json` prints: the schema
// version, the plan's digest (the same as the run's start event in the
// audit log) and the plan itself.
type PlanJSONOutput struct {
	Schema int    `json:"schema"`
	Digest string `json:"digest"`
	*plan.Plan
}

// defaultShell is the command `agentbox plan` shows without one: the
// user's shell. On Windows that is %ComSpec% (cmd.exe when unset): there
// is no /bin/sh, and $SHELL, when a Unix-like toolkit sets it, names a
// path of its own that Windows cannot start.
func defaultShell(goos string, getenv func(string) string) string {
	if goos == "windows" {
		if c := getenv("ComSpec"); c != "" {
			return c
		}
		return "cmd.exe"
	}
	if s := getenv("SHELL"); s != "" {
		return s
	}
	return "/bin/sh"
}

// Plan resolves the request as `agentbox run` would and prints the plan in
// format f; the readable table fits width columns (0: no limit; see
// Width). An empty command is the user's shell.
func Plan(req Request, f PlanFormat, width int, w io.Writer) error {
	if len(req.Command) == 0 {
		req.Command = []string{defaultShell(runtime.GOOS, os.Getenv)}
	}
	all := Backends()
	var p *plan.Plan
	var b backend.Backend
	var err error
	switch {
	case req.Target == "" || req.Target == runtime.GOOS:
		p, b, err = Resolve(req, all)
	case req.Target == "darwin":
		p, b, err = resolveFor(req, "darwin", seatbelt.New())
	default:
		return hint(fmt.Errorf("plan --target %s: agentbox resolves a plan for darwin or for this machine", req.Target), "agentbox plan --target darwin --profile -- CMD")
	}
	if err != nil && p == nil {
		return err
	}
	if err != nil {
		// The plan resolved but no backend can run it under require:
		// show it, saying why nothing would run.
		p.Box = plan.Box{Degraded: "nothing runs: " + firstLine(err)}
	}
	switch f {
	case PlanJSON:
		return writeJSON(w, PlanJSONOutput{Schema: PlanSchema, Digest: p.Digest(), Plan: p})
	case PlanProfile:
		d, derr := seatbelt.DetailOf(p)
		if derr != nil {
			return errors.New("--profile needs the seatbelt backend (macOS, or plan --target darwin): " + derr.Error())
		}
		fmt.Fprint(w, d.Profile)
		return nil
	case PlanArgv:
		d, derr := mount.DetailOf(p)
		if derr != nil {
			return errors.New("--argv needs the bwrap backend: " + derr.Error())
		}
		self, err := SelfPath()
		if err != nil {
			return err
		}
		// The placeholders agentbox run makes first (see plan.Prepare):
		// bwrap cannot bind what does not exist.
		var prep [][]string
		for _, d := range p.Prepare {
			switch d.Placeholder {
			case "dir":
				prep = append(prep, []string{"mkdir", "-p", ShellQuote(d.Path)})
			case "file":
				prep = append(prep, []string{"{", "[", "-e", ShellQuote(d.Path), "]", "||", "printf", "%s", ShellQuote(d.Content), ">", ShellQuote(d.Path) + ";", "}"})
			}
		}
		if p.Log.Filesystem == fslog.Preload && p.Log.Preload != "" {
			// The preloaded log's libraries, where LD_PRELOAD names
			// them (with no socket: the records go nowhere).
			prep = append(prep, []string{ShellQuote(self), fslog.PreloadCommand, ShellQuote(p.Log.Preload)})
		}
		words := mount.ShellWords(self, d)
		if width == 0 {
			// --wide: the whole command on one line.
			for _, c := range prep {
				fmt.Fprint(w, strings.Join(c, " ")+" && ")
			}
			fmt.Fprintln(w, strings.Join(words, " "))
			return nil
		}
		fmt.Fprint(w, argvLines(prep, words, width))
		return nil
	}
	if err := p.WriteText(w, width); err != nil {
		return err
	}
	if b != nil {
		var d strings.Builder
		b.Describe(p, &d)
		return plan.Fit(w, d.String(), width)
	}
	return nil
}

// argvLines is plan --argv's command line one argument a line: each
// preparing command and "&&" (one word a line when it does not fit
// width), then each word of the bwrap command,
// every line but the last continued with a backslash, and the comments on
// what only agentbox run provides after it.
func argvLines(prep [][]string, words []string, width int) string {
	var lines, comments []string
	for _, c := range prep {
		// A preparing command that fits is one line.
		if l := strings.Join(c, " ") + " &&"; utf8.RuneCountInString(l)+4 <= width {
			lines = append(lines, l)
			continue
		}
		lines = append(lines, c...)
		lines = append(lines, "&&")
	}
	for _, w := range words {
		if strings.HasPrefix(w, "#") {
			comments = append(comments, w)
			continue
		}
		lines = append(lines, w)
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(l)
		if i < len(lines)-1 {
			b.WriteString(" \\")
		}
		b.WriteByte('\n')
	}
	for _, c := range comments {
		b.WriteString(c + "\n")
	}
	return b.String()
}

func firstLine(err error) string {
	s := err.Error()
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// resolveFor resolves req as a machine of goos would, with this machine's
// files and environment, and completes the plan for backend b: what a Mac
// would get, shown on Linux. Nothing runs from it.
func resolveFor(req Request, goos string, b backend.Backend) (*plan.Plan, backend.Backend, error) {
	env, err := World()
	if err != nil {
		return nil, nil, err
	}
	env.GOOS = goos
	layers, err := policy.Load(env, req.Flags)
	if err != nil {
		return nil, nil, err
	}
	p, err := policy.Resolve(layers, env, req.Command, policy.Options{AllowBroad: req.Flags.AllowBroad})
	if err != nil {
		return nil, nil, err
	}
	p.RunID = newRunID()
	if err := b.Complete(p); err != nil {
		return p, nil, err
	}
	return p, b, plan.Validate(p)
}
