package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/agentbox/agentbox/doctor"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/winsandbox"
)

// currentEnv describes the world agentbox runs in.
func currentEnv() (policy.Env, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return policy.Env{}, fmt.Errorf("finding the working directory: %w", err)
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return policy.Env{}, fmt.Errorf("finding the home folder: set HOME to an absolute path")
	}
	return policy.Env{
		GOOS:    runtime.GOOS,
		UID:     os.Getuid(),
		GID:     os.Getgid(),
		Home:    filepath.Clean(home),
		Cwd:     cwd,
		TempDir: os.TempDir(),
		Environ: os.Environ(),
		FS:      policy.OSFS{},
	}, nil
}

// resolve loads every layer and resolves the plan for command.
func resolve(c *cli.Context, command []string) (*plan.Plan, error) {
	env, err := currentEnv()
	if err != nil {
		return nil, err
	}
	flags := flagsFrom(c)
	layers, err := policy.Load(env, flags)
	var ue *policy.UntrustedError
	if errors.As(err, &ue) {
		hints := []string{"it would grant:"}
		for _, g := range ue.Grants() {
			hints = append(hints, "  "+g)
		}
		hints = append(hints, "review it, then trust it with: agentbox trust "+shellQuote(ue.File))
		return nil, withHints(err, hints...)
	}
	if err != nil {
		return nil, err
	}
	return policy.Resolve(layers, env, command, policy.Options{AllowBroad: flags.AllowBroad})
}

// commandArgs returns what follows "--".
func commandArgs(c *cli.Context) []string {
	return c.Args().Slice()
}

// backendChoice is the backend that will confine the command, or why none can.
type backendChoice struct {
	name     string // "bwrap", or "" when none
	bwrap    string
	degraded string // the reason to run unconfined, under best-effort
}

// chooseBackend picks the backend for p, or explains why none can run.
func chooseBackend(p *plan.Plan) (backendChoice, error) {
	if p.Provider.Name != "" && !p.Provider.Supported {
		err := withHints(fmt.Errorf("provider %s has not been verified to work inside the sandbox", p.Provider.Name),
			"if you know the paths it writes, declare them in a policy:",
			fmt.Sprintf("  [providers.%s]", p.Provider.Name),
			fmt.Sprintf("  writable = [\"~/.%s\"]", p.Provider.Name),
			"  sandbox = true",
			"or run it unconfined with --best-effort, or treat it as a plain command with --provider none")
		return degrade(p, "provider-unsupported:"+p.Provider.Name, err)
	}
	backend := p.Backend
	if backend == "auto" && runtime.GOOS == "windows" {
		backend = "windows"
	}
	switch backend {
	case "windows":
		if runtime.GOOS != "windows" {
			return degrade(p, "windows-unavailable", errors.New("the windows backend runs only on Windows"))
		}
		return backendChoice{name: "windows"}, nil
	case "bwrap":
		return chooseBwrap(p)
	case "landlock":
		if _, err := landlock.Check(p); err != nil {
			return degrade(p, "landlock-unavailable", withHints(err, "run `agentbox doctor` to see what this machine can enforce"))
		}
		return backendChoice{name: landlock.Backend}, nil
	case "auto":
		// bubblewrap when it really works here (a cached probe: well under a
		// millisecond once cached), else Landlock, else nothing.
		path, lerr := mount.LookBwrap()
		if lerr == nil {
			works, why := doctor.BwrapWorks()
			if works {
				return backendChoice{name: mount.Backend, bwrap: path}, nil
			}
			lerr = errors.New(why)
		}
		_, llerr := landlock.Check(p)
		if llerr == nil {
			return backendChoice{name: landlock.Backend}, nil
		}
		return degrade(p, "no-backend", withHints(
			fmt.Errorf("no backend can confine this command: bwrap: %v; landlock: %v", firstLine(lerr), firstLine(llerr)),
			fixOf(lerr), "run `agentbox doctor` for what this machine can enforce and how to fix it"))
	default:
		return degrade(p, p.Backend+"-unavailable", fmt.Errorf("backend %s is not available on this system", p.Backend))
	}
}

// chooseBwrap picks bubblewrap, or explains why it cannot run.
func chooseBwrap(p *plan.Plan) (backendChoice, error) {
	path, err := mount.LookBwrap()
	if err != nil {
		return degrade(p, "bwrap-missing", withHints(err, fixOf(err)))
	}
	if p.Enforce == plan.BestEffort {
		// Under best-effort a broken bwrap must be found before CMD runs,
		// since CMD cannot be run twice.
		if err := mount.Probe(path); err != nil {
			return degrade(p, "bwrap-unusable", withHints(err, fixOf(err)))
		}
	}
	return backendChoice{name: mount.Backend, bwrap: path}, nil
}

func fixOf(err error) string {
	var f interface{ Fix() string }
	if errors.As(err, &f) {
		return f.Fix()
	}
	return ""
}

// degrade returns err under require, and a degraded choice under best-effort.
func degrade(p *plan.Plan, reason string, err error) (backendChoice, error) {
	if p.Enforce == plan.BestEffort {
		return backendChoice{degraded: reason + ": " + firstLine(err)}, nil
	}
	return backendChoice{}, err
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func runCommand(c *cli.Context) error {
	command := commandArgs(c)
	p, err := resolve(c, command)
	if err != nil {
		return err
	}
	choice, err := chooseBackend(p)
	if err != nil {
		return err
	}
	if choice.degraded != "" {
		return runUnconfined(p, choice.degraded)
	}
	adjustProvider(p)
	grp, err := enterCgroup(p)
	if err != nil {
		return err
	}
	defer grp.Close()
	gits := gitWatch(p)
	defer gitAudit(gits)
	if choice.name == landlock.Backend {
		self, err := selfPath()
		if err != nil {
			return err
		}
		if a, _ := landlock.Check(p); len(a.Weaker()) > 0 {
			warnf("landlock: %d rules are enforced weaker than with bubblewrap (agentbox plan --backend landlock shows how)", len(a.Weaker()))
		}
		code, err := landlock.Run(p, self)
		if err != nil {
			return err
		}
		return &exitCode{code}
	}
	if choice.name == "windows" {
		code, err := winsandbox.Run(p, winsandbox.Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
		if err != nil {
			return err
		}
		return &exitCode{code}
	}
	self, err := selfPath()
	if err != nil {
		return err
	}
	code, err := mount.Run(p, mount.Options{Bwrap: choice.bwrap, Self: self, Seccomp: true, NetLog: c.String("net-log")})
	if err != nil {
		return diagnose(err, choice.bwrap)
	}
	return &exitCode{code}
}

// diagnose adds the reason and the fix when bwrap could not set the box up.
func diagnose(err error, bwrap string) error {
	var be *mount.BoxError
	if errors.As(err, &be) && be.Op == "bwrap" {
		if perr := mount.Probe(bwrap); perr != nil {
			return withHints(fmt.Errorf("bubblewrap cannot create the sandbox: %v", perr), fixOf(perr))
		}
	}
	return err
}

// runUnconfined is best-effort's way out: one warning line, none of the
// truthful variables, AGENTBOX_DEGRADED set, and CMD exec'd in agentbox's
// place so signals and exit status are its own.
func runUnconfined(p *plan.Plan, reason string) error {
	warnf("running UNCONFINED (best-effort): %s", reason)
	path, err := exec.LookPath(p.Command[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentbox: error: %s: command not found\n", p.Command[0])
		return &exitCode{127}
	}
	env := append(append([]string(nil), p.Environ...), "AGENTBOX_DEGRADED="+reason)
	if err := os.Chdir(p.Cwd); err != nil {
		return fmt.Errorf("changing to %s: %w", p.Cwd, err)
	}
	err = syscall.Exec(path, p.Command, env)
	fmt.Fprintf(os.Stderr, "agentbox: error: %s: cannot execute: %v\n", p.Command[0], err)
	return &exitCode{126}
}

// selfPath is the agentbox executable, run again as the init in the box.
func selfPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the agentbox executable: %w", err)
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	return self, nil
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, " '\"$`\\!*?[]{}()<>|&;#~") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}
