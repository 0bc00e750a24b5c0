package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentbox/agentbox/box"
	"github.com/agentbox/agentbox/buildinfo"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/provider"
	"github.com/agentbox/agentbox/usage"
	"github.com/agentbox/agentbox/winsandbox"
	"github.com/agentbox/agentbox/wrap"
)

// version is a release's version, set by the release build with -ldflags
// "-X main.version=…". Without it, Go's build information names the
// version (a tag or a pseudo-version) and always the commit.
var version = "dev"

func newApp() *cli.App {
	app := &cli.App{
		Name:        "agentbox",
		Usage:       "confine AI coding agents (and any command) with the OS's own sandboxing",
		HideVersion: true, // --version is ours: the same text as `agentbox version`
		Flags:       []cli.Flag{&cli.BoolFlag{Name: "version", Usage: "print the version, commit and Go version"}},
		// A path may hold a comma: every list flag is repeated instead.
		DisableSliceFlagSeparator: true,
		ExitErrHandler:            func(*cli.Context, error) {},
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				return buildinfo.Read(version).Text(c.App.Writer)
			}
			return usage.NoCommand(c)
		},
		Commands: []*cli.Command{
			{
				Name:      "run",
				Usage:     "run CMD confined by the policy; exit with its status",
				ArgsUsage: "-- CMD [ARGS...]",
				Flags: append(policyFlags(),
					&cli.StringFlag{Name: "net-log", Usage: "in allowlist mode, log every allowed and denied connection to `FILE`"},
					&cli.BoolFlag{Name: "verify", Usage: "first check from inside a box that every rule of the plan is in force; refuse to run CMD if one is not"},
				),
				Action: func(c *cli.Context) error {
					code, err := box.Run(request(c))
					if err != nil {
						return err
					}
					return &exitCode{code}
				},
			},
			{
				Name:      "plan",
				Usage:     "show the resolved plan: layers, every mount in order and why, network, env",
				ArgsUsage: "[-- CMD [ARGS...]]",
				Flags: append(policyFlags(),
					&cli.BoolFlag{Name: "json", Usage: "print the plan as JSON"},
					&cli.BoolFlag{Name: "argv", Usage: "print a bwrap command line a shell can run, shell-quoted, one argument a line (with --wide: on one line)"},
					&cli.BoolFlag{Name: "profile", Usage: "print the Seatbelt profile sandbox-exec applies (macOS)"},
					&cli.StringFlag{Name: "target", Usage: "resolve the plan for `OS` (darwin) rather than this machine: with --profile, what a Mac would get"},
					&cli.BoolFlag{Name: "wide", Usage: "print every line whole, whatever the terminal's width"},
				),
				Action: func(c *cli.Context) error {
					f := box.PlanText
					width := box.Width(c.App.Writer, c.Bool("wide"))
					var given []string
					for _, name := range []string{"json", "argv", "profile"} {
						if c.Bool(name) {
							given = append(given, "--"+name)
						}
					}
					switch {
					case len(given) > 1:
						return conflict("plan", given[0], given[1], "they are two different outputs: pass one of them")
					case c.Bool("json"):
						f = box.PlanJSON
					case c.Bool("argv"):
						// One argument a line; --wide: one line.
						f, width = box.PlanArgv, wrap.Width(c.App.Writer, c.Bool("wide"))
					case c.Bool("profile"):
						f = box.PlanProfile
					}
					req := request(c)
					req.Target = c.String("target")
					return box.Plan(req, f, width, c.App.Writer)
				},
			},
			{
				Name:      "learn",
				Usage:     "run CMD confined, and propose a policy that allows what it was refused (safe changes only; in force once you trust it)",
				ArgsUsage: "-- CMD [ARGS...]",
				Flags: append(policyFlags(),
					&cli.StringFlag{Name: "output", Usage: "write the proposal (a diff) to `FILE` and leave the project's policy alone"},
				),
				Action: func(c *cli.Context) error {
					return box.Learn(request(c), c.String("output"), c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name:      "verify",
				Usage:     "start the box the plan describes and check from inside it that every rule is in force",
				ArgsUsage: "[-- CMD [ARGS...]]",
				Flags: append(policyFlags(), &cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
					&cli.BoolFlag{Name: "wide", Usage: "print every line whole, whatever the terminal's width"}),
				Action: func(c *cli.Context) error {
					if err := box.Verify(request(c), c.Bool("json"), box.Width(c.App.Writer, c.Bool("wide")), c.App.Writer); errors.Is(err, box.ErrVerifyFailed) {
						return &exitCode{1}
					} else {
						return err
					}
				},
			},
			{
				Name:  "log",
				Usage: "show recent runs from the audit log: status, backend, project, command, denials",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "json", Usage: "print the events as stored, one JSON object per line"},
					&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "print new events as they are recorded, until interrupted"},
					&cli.StringFlag{Name: "project", Usage: "only runs of the project `DIR` or below it"},
					&cli.StringFlag{Name: "workspace", Usage: "only runs in workspace `ID`"},
					&cli.BoolFlag{Name: "denials", Usage: "only runs with denials, each denial listed"},
					&cli.StringFlag{Name: "run", Usage: "every event of the run `ID` (a unique prefix will do)"},
					&cli.IntFlag{Name: "n", Value: 20, Usage: "show the last `N` runs (0: all)"},
					&cli.BoolFlag{Name: "wide", Usage: "print every line whole, whatever the terminal's width"},
				},
				Action: func(c *cli.Context) error {
					return fitted(c, c.Bool("json") || c.Bool("wide"), func(w io.Writer) error {
						return box.Log(box.LogRequest{JSON: c.Bool("json"), Follow: c.Bool("follow"), Denials: c.Bool("denials"),
							Project: c.String("project"), Workspace: c.String("workspace"), Run: c.String("run"), Last: c.Int("n"),
							Args: c.Args().Slice()}, w)
					})
				},
			},
			{
				Name:  "init",
				Usage: "write a commented starter .agentbox.toml in the current folder",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "overwrite an existing .agentbox.toml"}},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return box.Init(c.Bool("force"), c.App.Writer)
				},
			},
			{
				Name:  "doctor",
				Usage: "what this machine can enforce (bwrap, user namespaces, AppArmor, Landlock, seccomp, cgroups) and what auto picks; exit 1 when nothing can confine",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"},
					&cli.BoolFlag{Name: "wide", Usage: "print every line whole, whatever the terminal's width"}},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					err := fitted(c, c.Bool("json") || c.Bool("wide"), func(w io.Writer) error { return box.Doctor(c.Bool("json"), w) })
					if errors.Is(err, box.ErrNoBackend) {
						return &exitCode{1} // the report says why
					}
					return err
				},
			},
			{
				Name:      "trust",
				Usage:     "trust a project policy (what it means is pinned: any change of meaning needs trusting again, a comment does not)",
				ArgsUsage: "[FILE]",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "revoke", Usage: "forget the trust instead"},
					&cli.BoolFlag{Name: "proposal", Usage: "apply the policy agentbox learn proposed for it, after showing what it changes, and trust that"}},
				Action: func(c *cli.Context) error {
					return fitted(c, false, func(w io.Writer) error {
						return box.Trust(c.Args().First(), c.Bool("revoke"), c.Bool("proposal"), w)
					})
				},
			},
			{
				Name:      "status",
				Usage:     "inside a sandbox: is it active, which backend, what is writable and hidden, the network; exit 1 outside one",
				UsageText: "agentbox status [--json]\nagentbox status --prompt [POLICY FLAGS] [-- CMD [ARGS...]]",
				ArgsUsage: "[-- CMD [ARGS...]]",
				Flags: append(policyFlags(),
					&cli.BoolFlag{Name: "json", Usage: "print JSON"},
					&cli.BoolFlag{Name: "prompt", Usage: "print the notice to give an agent about the box that agentbox run with these flags and CMD starts"},
				),
				Action: func(c *cli.Context) error {
					if c.Bool("prompt") {
						if c.Bool("json") {
							return conflict("status", "--prompt", "--json", "the notice is text")
						}
						return box.Prompt(request(c), c.App.Writer)
					}
					for _, f := range policyFlags() {
						if name := f.Names()[0]; c.IsSet(name) {
							return usageError(fmt.Sprintf("status: --%s only applies with --prompt", name),
								"agentbox status --prompt --"+name+" … prints the notice for a box with these flags")
						}
					}
					if err := noArgs(c); err != nil {
						return err
					}
					err := fitted(c, c.Bool("json"), func(w io.Writer) error {
						return box.WriteStatus(box.ReadStatus(box.Backends()), c.Bool("json"), w)
					})
					if errors.Is(err, box.ErrNotConfined) {
						return &exitCode{1}
					}
					return err
				},
			},
			{
				Name:      "caches",
				Usage:     "list the private package and build caches agentbox keeps for each workspace, or clear them",
				ArgsUsage: "[TOOL...]",
				Flags: append(policyFlags(),
					&cli.BoolFlag{Name: "clear", Usage: "remove the caches of the workspace a run here uses (of TOOL only, if given)"},
					&cli.BoolFlag{Name: "all", Usage: "with --clear: every workspace's caches"},
					&cli.BoolFlag{Name: "json", Usage: "print JSON"},
				),
				Action: func(c *cli.Context) error {
					return fitted(c, c.Bool("json"), func(w io.Writer) error {
						return box.Caches(box.Request{Flags: flagsFrom(c)}, box.CachesOptions{Tools: c.Args().Slice(), Clear: c.Bool("clear"), All: c.Bool("all"), JSON: c.Bool("json")}, w)
					})
				},
			},
			{
				Name:  "providers",
				Usage: "the agent CLIs agentbox knows, whether each is supported inside the sandbox, its writable paths",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return fitted(c, c.Bool("json"), func(w io.Writer) error { return box.Providers(c.Bool("json"), w) })
				},
			},
			{
				Name:      "shell-init",
				Usage:     "print aliases that run every supported agent CLI (installed now or later) through agentbox, and agentbox's completion",
				ArgsUsage: "bash|zsh|fish",
				Action: func(c *cli.Context) error {
					shell := c.Args().First()
					if err := box.ShellInit(shell, c.App.Writer); err != nil {
						return err
					}
					return usage.Completion(c.App.Writer, usage.Model(c.App), shell)
				},
			},
			{
				Name:      "completion",
				Usage:     "print the shell completion script (commands, flags and their values)",
				ArgsUsage: "bash|zsh|fish",
				Action: func(c *cli.Context) error {
					return usage.Completion(c.App.Writer, usage.Model(c.App), c.Args().First())
				},
			},
			{
				Name:  "setup",
				Usage: "Windows: create the sandbox users, group and firewall rules (elevated, once; idempotent)",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "check", Usage: "verify the real state and name each problem"},
					&cli.BoolFlag{Name: "uninstall", Usage: "remove everything setup made"},
					&cli.BoolFlag{Name: "no-elevate", Usage: "fail with a hint instead of asking for elevation"},
					&cli.StringFlag{Name: strings.TrimPrefix(winsandbox.ElevatedArg, "--"), Hidden: true},
				},
				Action: func(c *cli.Context) error {
					opts := winsandbox.SetupOptions{NoElevate: c.Bool("no-elevate"), Relaunch: c.String(strings.TrimPrefix(winsandbox.ElevatedArg, "--")), Log: c.App.Writer}
					switch {
					case c.Bool("check") && c.Bool("uninstall"):
						return conflict("setup", "--check", "--uninstall", "check first, then uninstall")
					case c.Bool("check"):
						if err := winsandbox.Check(c.App.Writer); err != nil {
							return withHints(err, "run `agentbox setup` (it asks for elevation) to repair it")
						}
						return nil
					case c.Bool("uninstall"):
						return winsandbox.Uninstall(opts)
					}
					return winsandbox.Setup(opts)
				},
			},
			{
				Name:  "version",
				Usage: "print agentbox's version, the commit it was built from and the Go version",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: func(c *cli.Context) error {
					info := buildinfo.Read(version)
					if c.Bool("json") {
						return info.JSON(c.App.Writer)
					}
					return info.Text(c.App.Writer)
				},
			},
		},
	}
	usage.Setup(app)
	return app
}

// policyFlags are the flags that form the last policy layer (SPEC layer 5).
func policyFlags() []cli.Flag {
	list := func(name, text string) cli.Flag {
		return &cli.StringSliceFlag{Name: name, Usage: text, Category: usage.PolicyCategory}
	}
	text := func(name, text string) cli.Flag {
		return &cli.StringFlag{Name: name, Usage: text, Category: usage.PolicyCategory}
	}
	choice := func(name, text string, values []string) cli.Flag {
		return &usage.Choice{StringFlag: cli.StringFlag{Name: name, Usage: text, Category: usage.PolicyCategory}, Values: values}
	}
	swtch := func(name, text string) cli.Flag {
		return &cli.BoolFlag{Name: name, Usage: text, Category: usage.PolicyCategory}
	}
	providers := []string{"auto", "none"}
	for _, p := range provider.Builtin() {
		providers = append(providers, p.Name)
	}
	return []cli.Flag{
		list("policy", "an extra policy `FILE` (trusted as given; repeatable)"),
		list("writable", "make `PATH` writable (absolute; repeatable)"),
		list("read-only", "keep `PATH` read-only inside a writable root (repeatable)"),
		list("deny", "hide `PATH` (repeatable)"),
		choice("network", "network `MODE`", policy.Choices("network.mode")),
		list("allow", "allow `HOST` in allowlist mode: a name, *.domain, an address, with an optional :port; \"METHOD host/path/*\" for requests (repeatable)"),
		list("publish", "let the host's 127.0.0.1:`PORT` reach the box's port: PORT, PORT:BOXPORT or ADDR:PORT:BOXPORT (repeatable)"),
		text("workspace", "workspace `ID`: hide every other workspace"),
		text("workspace-root", "the work `DIR` holding all workspaces"),
		text("task", "task `ID`: <root>/<workspace>/<task> becomes the working directory"),
		choice("tmp", "/tmp `MODE`", policy.Choices("tmp.mode")),
		choice("env-mode", "environment `MODE`", policy.Choices("env.mode")),
		list("pass-env", "keep variable `NAME` in clean mode (glob; repeatable)"),
		list("deny-env", "remove variable `NAME` (glob; repeatable)"),
		choice("provider", "the agent CLI's provider `NAME`", providers),
		choice("backend", "backend `NAME`", policy.Choices("sandbox.backend")),
		swtch("best-effort", "if confinement is impossible, warn and run unconfined"),
		swtch("require", "refuse to run unconfined (the default; overrides a policy's best-effort)"),
		swtch("allow-broad-writable", "allow a writable root that is / or holds the home folder"),
		swtch("quiet", "show no notices (which backend confines, rules enforced weaker); errors and warnings stay"),
	}
}

func flagsFrom(c *cli.Context) policy.Flags {
	return policy.Flags{
		Policy:        c.StringSlice("policy"),
		Writable:      c.StringSlice("writable"),
		ReadOnly:      c.StringSlice("read-only"),
		Deny:          c.StringSlice("deny"),
		Network:       c.String("network"),
		Allow:         c.StringSlice("allow"),
		Publish:       c.StringSlice("publish"),
		Workspace:     c.String("workspace"),
		WorkspaceRoot: c.String("workspace-root"),
		Task:          c.String("task"),
		Tmp:           c.String("tmp"),
		EnvMode:       c.String("env-mode"),
		PassEnv:       c.StringSlice("pass-env"),
		DenyEnv:       c.StringSlice("deny-env"),
		Provider:      c.String("provider"),
		Backend:       c.String("backend"),
		BestEffort:    c.Bool("best-effort"),
		Require:       c.Bool("require"),
		AllowBroad:    c.Bool("allow-broad-writable"),
		Quiet:         c.Bool("quiet"),
	}
}

// request is the command line of run, plan and status --prompt.
func request(c *cli.Context) box.Request {
	return box.Request{Flags: flagsFrom(c), Command: c.Args().Slice(), NetLog: c.String("net-log"), Verify: c.Bool("verify")}
}

// noArgs refuses arguments to a command that takes none: a word that is
// silently ignored is usually a mistyped flag or a missing "--".
func noArgs(c *cli.Context) error {
	if c.Args().Present() {
		return usageError(fmt.Sprintf("%s takes no arguments, got %q", c.Command.Name, c.Args().First()),
			"agentbox "+c.Command.Name+" --help lists its flags")
	}
	return nil
}

// conflict is the error for two flags of cmd that cannot go together.
func conflict(cmd, a, b, why string) error {
	return usageError(fmt.Sprintf("%s: %s and %s cannot be used together: %s", cmd, a, b, why))
}

// fitted runs f with the command's output fitted to the terminal's width
// (wrap.Width: 100 columns when it is not a terminal), or as it is when raw
// (--json, --wide).
func fitted(c *cli.Context, raw bool, f func(w io.Writer) error) error {
	if raw {
		return f(c.App.Writer)
	}
	ww := wrap.NewWriter(c.App.Writer, wrap.Width(c.App.Writer, false))
	err := f(ww)
	if ferr := ww.Flush(); err == nil {
		err = ferr
	}
	return err
}
