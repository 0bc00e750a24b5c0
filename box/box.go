// Package box is what agentbox's commands do, with the command line already
// parsed: it resolves a request into a frozen plan (policy layers, the
// backend chosen for this machine and what it makes of the plan), runs it on
// the one run path, and answers plan, status and doctor from the same plan
// and the same backends.
//
// The plan is frozen when Resolve returns: everything that changes a run
// (the backend's choice, a provider's argument change, the box's cgroup,
// a per-run folder) has been decided, so `agentbox plan --json` is exactly
// what `agentbox run` does.
//
// What does not belong here: flags and the CLI's voice (package main),
// policy files (policy), any backend's own work (mount, landlock,
// winsandbox), the shared host-side supervision (supervise).
package box

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/seatbelt"
	"github.com/agentbox/agentbox/trace"
	"github.com/agentbox/agentbox/winsandbox"
)

// Backends returns every backend agentbox has, in the order auto tries
// them. Adding a backend is one line here.
func Backends() []backend.Backend {
	return []backend.Backend{
		mount.New(),
		landlock.New(),
		winsandbox.New(),
		seatbelt.New(),
	}
}

// Request is a command line, parsed.
type Request struct {
	Flags   policy.Flags
	Command []string
	// NetLog is --net-log: every connection of an allowlist run is logged there.
	NetLog string
	// Verify is run --verify: the box's rules are checked from inside a
	// box first, and CMD runs only if every one is in force.
	Verify bool
	// Target is plan --target: the system the plan is resolved for when
	// it is not this one ("darwin"), "" for this machine.
	Target string
}

// World describes the machine and the caller, for resolution.
func World() (policy.Env, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return policy.Env{}, fmt.Errorf("finding the working directory: %w", err)
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return policy.Env{}, errors.New("finding the home folder: set HOME to an absolute path")
	}
	// An executable that cannot be found is no reason to refuse a run:
	// only what agentbox serves in the box is left out then.
	self, _ := SelfPath()
	return policy.Env{
		Self:    self,
		GOOS:    runtime.GOOS,
		UID:     os.Getuid(),
		GID:     os.Getgid(),
		Home:    filepath.Clean(home),
		Cwd:     cwd,
		TempDir: os.TempDir(),
		User:    winsandbox.UserSID(),
		Environ: os.Environ(),
		FS:      policy.OSFS{},
	}, nil
}

// Resolve turns the request into a frozen plan for this machine, with the
// backends all: the policy layers, the backend Select picks, and what it
// makes of the plan. A plan that runs unconfined (best-effort) says why in
// Box.Degraded.
func Resolve(req Request, all []backend.Backend) (*plan.Plan, backend.Backend, error) {
	env, err := World()
	if err != nil {
		return nil, nil, err
	}
	ph := trace.Begin("policy")
	layers, err := policy.Load(env, req.Flags)
	ph.End()
	if err != nil {
		var ue *policy.UntrustedError
		if errors.As(err, &ue) {
			return nil, nil, untrusted(ue)
		}
		return nil, nil, err
	}
	ph = trace.Begin("plan")
	p, err := policy.Resolve(layers, env, req.Command, policy.Options{AllowBroad: req.Flags.AllowBroad})
	ph.End()
	if err != nil {
		var nf *policy.NeedFlags
		if errors.As(err, &nf) {
			return nil, nil, hint(err, "run agentbox from a project folder, or, to let the box write here: "+withFlags(os.Args, nf.Flags))
		}
		return nil, nil, err
	}
	p.RunID = newRunID()
	ph = trace.Begin("backend")
	outer := OuterBox(env, all)
	b, err := Complete(p, innerBackends(all, outer), outer)
	ph.End()
	return p, b, err
}

// Complete chooses the backend for a resolved plan and completes the plan
// for it; then the plan is frozen. It returns the backend, nil for an
// unconfined (best-effort) run or one in the outer box. outer is the
// box agentbox itself runs in (OuterBox), if any.
func Complete(p *plan.Plan, all []backend.Backend, outer Outer) (backend.Backend, error) {
	choice, err := backend.Select(p, all, confined)
	if choice.Backend == nil && outer.Backend != "" && (p.Backend == "auto" || p.Backend == "") {
		// Inside a box no backend can add a box of its own (bwrap cannot
		// make namespaces there, Landlock cannot enforce the plan): the
		// command runs in the box it is already in, which confines it,
		// and says so in one line rather than failing. A backend the
		// user named is not second-guessed.
		why := choice.Degraded
		if err != nil {
			why = firstLine(err)
		}
		inOuter(p, outer, why)
		return nil, plan.Validate(p)
	}
	if err != nil {
		return nil, err
	}
	if choice.Backend == nil {
		p.Box = plan.Box{Degraded: choice.Degraded, Passed: choice.Passed}
		p.Log.Filesystem = ""
		// Never when unconfined: the provider's own sandbox stays on,
		// nothing tells it it runs in a sandbox, and it keeps its usual
		// configuration.
		p.Provider.Adjusted, p.Provider.Confined = "", nil
		p.Provider.ConfinedEnv, p.Provider.State = nil, nil
		return nil, plan.Validate(p)
	}
	// Select completed p for the backend it chose (see confined).
	p.Box.Passed = choice.Passed
	if why := unpreparable(p); why != "" && outer.Backend != "" && (p.Backend == "auto" || p.Backend == "") {
		inOuter(p, outer, why)
		return nil, plan.Validate(p)
	}
	// Rules that no backend choice can fix, such as a process limit for
	// root where no cgroup can be made.
	if ne := p.Box.NotEnforced(); len(ne) > 0 && p.Enforce == plan.Require {
		var lines []string
		for _, r := range ne {
			lines = append(lines, r.Rule+" "+r.Path+": "+r.How)
		}
		return nil, hint(fmt.Errorf("%s cannot enforce: %s", choice.Backend.Name(), strings.Join(lines, "; ")),
			"change the policy, or run with --best-effort to accept it")
	}
	if err := plan.Validate(p); err != nil {
		return nil, fmt.Errorf("internal error: completed plan is invalid: %w", err)
	}
	return choice.Backend, nil
}

// confined makes p what a confined run with b gets, before b completes
// it: the provider's command and variables for a confined run, and the
// filesystem log b keeps. backend.Select calls it for each candidate and
// undoes it for one it passes over, so it only sets fields of p.
func confined(p *plan.Plan, b backend.Backend) {
	if p.Provider.Confined != nil {
		p.Command = append([]string(nil), p.Provider.Confined...)
	}
	confinedEnv(p)
	planLog(p, b)
}

// newRunID draws a run's ID: 12 random hex digits.
func newRunID() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%012x", os.Getpid())
	}
	return hex.EncodeToString(b[:])
}

// hinted is an error with hint lines for the user (package main prints them).
type hinted struct {
	err   error
	hints []string
}

func (h *hinted) Error() string   { return h.err.Error() }
func (h *hinted) Unwrap() error   { return h.err }
func (h *hinted) Hints() []string { return h.hints }

func hint(err error, hints ...string) error { return &hinted{err: err, hints: hints} }

// untrusted explains a project policy that is not trusted yet.
func untrusted(ue *policy.UntrustedError) error {
	hints := append(ue.Explain(), "review it, then trust it with: agentbox trust "+ShellQuote(ue.File))
	if ue.Proposal {
		hints = append(hints, "agentbox learn also left a proposal for it: agentbox trust --proposal shows and applies it")
	}
	return hint(ue, hints...)
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " '\"$`\\!*?[]{}()<>|&;#~\t\n") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// withFlags is the command line argv (agentbox's own, as typed) with flags
// added after its command word, shell-quoted: the whole command that
// works, to copy. A flag already there is not added again.
func withFlags(argv []string, flags []string) string {
	if len(argv) == 0 {
		return ""
	}
	out := []string{"agentbox"}
	rest := argv[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		out = append(out, rest[0])
		rest = rest[1:]
	}
	have := map[string]bool{}
	for _, a := range rest {
		if a == "--" {
			break
		}
		have[a] = true
	}
	for i := 0; i < len(flags); i++ {
		f := flags[i]
		if f == "--writable" && i+1 < len(flags) {
			if !have["--writable="+flags[i+1]] {
				out = append(out, f, flags[i+1])
			}
			i++
			continue
		}
		if !have[f] {
			out = append(out, f)
		}
	}
	out = append(out, rest...)
	for i := range out {
		out[i] = ShellQuote(out[i])
	}
	return strings.Join(out, " ")
}
