package main

import (
	"errors"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentbox/agentbox/box"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/winsandbox"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func newApp() *cli.App {
	return &cli.App{
		Name:                 "agentbox",
		Usage:                "confine AI coding agents (and any command) with the OS's own sandboxing",
		Version:              version,
		HideVersion:          true,
		EnableBashCompletion: true,
		// A path may hold a comma: every list flag is repeated instead.
		DisableSliceFlagSeparator: true,
		ExitErrHandler:            func(*cli.Context, error) {},
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
					&cli.BoolFlag{Name: "argv", Usage: "print the exact bwrap command line, shell-quoted"},
				),
				Action: func(c *cli.Context) error {
					f := box.PlanText
					switch {
					case c.Bool("json") && c.Bool("argv"):
						return withHints(errors.New("plan: --json and --argv are two different outputs"), "pass one of them")
					case c.Bool("json"):
						f = box.PlanJSON
					case c.Bool("argv"):
						f = box.PlanArgv
					}
					return box.Plan(request(c), f, c.App.Writer)
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
				Flags:     append(policyFlags(), &cli.BoolFlag{Name: "json", Usage: "print the report as JSON"}),
				Action: func(c *cli.Context) error {
					if err := box.Verify(request(c), c.Bool("json"), c.App.Writer); errors.Is(err, box.ErrVerifyFailed) {
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
				},
				Action: func(c *cli.Context) error {
					return box.Log(box.LogRequest{JSON: c.Bool("json"), Follow: c.Bool("follow"), Denials: c.Bool("denials"),
						Project: c.String("project"), Workspace: c.String("workspace"), Run: c.String("run"), Last: c.Int("n"),
						Args: c.Args().Slice()}, c.App.Writer)
				},
			},
			{
				Name:   "init",
				Usage:  "write a commented starter .agentbox.toml in the current folder",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "overwrite an existing .agentbox.toml"}},
				Action: func(c *cli.Context) error { return box.Init(c.Bool("force"), c.App.Writer) },
			},
			{
				Name:   "doctor",
				Usage:  "what this machine can enforce (bwrap, user namespaces, AppArmor, Landlock, seccomp, cgroups) and what auto picks",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: func(c *cli.Context) error { return box.Doctor(c.Bool("json"), c.App.Writer) },
			},
			{
				Name:      "trust",
				Usage:     "trust a project policy (its SHA-256 is pinned; any edit needs trusting again)",
				ArgsUsage: "[FILE]",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: "revoke", Usage: "forget the trust instead"}},
				Action:    func(c *cli.Context) error { return box.Trust(c.Args().First(), c.Bool("revoke"), c.App.Writer) },
			},
			{
				Name:      "status",
				Usage:     "inside a sandbox: is it active, which backend, what is writable and hidden, the network",
				ArgsUsage: "[--prompt [policy flags] [-- CMD...]]",
				Flags: append(policyFlags(),
					&cli.BoolFlag{Name: "json", Usage: "print JSON"},
					&cli.BoolFlag{Name: "prompt", Usage: "print the notice an agent can be given about the box `run` with these flags starts"},
				),
				Action: func(c *cli.Context) error {
					if c.Bool("prompt") {
						return box.Prompt(request(c), c.App.Writer)
					}
					err := box.WriteStatus(box.ReadStatus(box.Backends()), c.Bool("json"), c.App.Writer)
					if errors.Is(err, box.ErrNotConfined) {
						return &exitCode{1}
					}
					return err
				},
			},
			{
				Name:   "providers",
				Usage:  "the agent CLIs agentbox knows, whether each is supported inside the sandbox, its writable paths",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: func(c *cli.Context) error { return box.Providers(c.Bool("json"), c.App.Writer) },
			},
			{
				Name:      "shell-init",
				Usage:     "print aliases that run every installed, supported agent CLI through agentbox",
				ArgsUsage: "bash|zsh|fish",
				Action:    func(c *cli.Context) error { return box.ShellInit(c.Args().First(), c.App.Writer) },
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
				Usage: "print agentbox's version",
				Action: func(c *cli.Context) error {
					_, err := c.App.Writer.Write([]byte("agentbox " + version + "\n"))
					return err
				},
			},
		},
	}
}

// policyFlags are the flags that form the last policy layer (SPEC layer 5).
func policyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "policy", Usage: "an extra policy `FILE` (trusted as given; repeatable)"},
		&cli.StringSliceFlag{Name: "writable", Usage: "make `PATH` writable (absolute; repeatable)"},
		&cli.StringSliceFlag{Name: "read-only", Usage: "keep `PATH` read-only inside a writable root (repeatable)"},
		&cli.StringSliceFlag{Name: "deny", Usage: "hide `PATH` (repeatable)"},
		&cli.StringFlag{Name: "network", Usage: "network `MODE`: open, none or allowlist"},
		&cli.StringSliceFlag{Name: "allow", Usage: "allow `HOST` in allowlist mode: a name, *.domain, an address, with an optional :port (repeatable)"},
		&cli.StringFlag{Name: "workspace", Usage: "workspace `ID`: hide every other workspace"},
		&cli.StringFlag{Name: "workspace-root", Usage: "the work `DIR` holding all workspaces"},
		&cli.StringFlag{Name: "task", Usage: "task `ID`: <root>/<workspace>/<task> becomes the working directory"},
		&cli.StringFlag{Name: "tmp", Usage: "/tmp `MODE`: workspace, private or host"},
		&cli.StringFlag{Name: "env-mode", Usage: "environment `MODE`: inherit or clean"},
		&cli.StringSliceFlag{Name: "pass-env", Usage: "keep variable `NAME` in clean mode (glob; repeatable)"},
		&cli.StringSliceFlag{Name: "deny-env", Usage: "remove variable `NAME` (glob; repeatable)"},
		&cli.StringFlag{Name: "provider", Usage: "provider `NAME`, auto or none"},
		&cli.StringFlag{Name: "backend", Usage: "backend `NAME`: auto, bwrap, landlock or windows"},
		&cli.BoolFlag{Name: "best-effort", Usage: "if confinement is impossible, warn and run unconfined"},
		&cli.BoolFlag{Name: "require", Usage: "refuse to run unconfined (the default)"},
		&cli.BoolFlag{Name: "allow-broad-writable", Usage: "allow a writable root that is / or holds the home folder"},
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
	}
}

// request is the command line of run, plan and status --prompt.
func request(c *cli.Context) box.Request {
	return box.Request{Flags: flagsFrom(c), Command: c.Args().Slice(), NetLog: c.String("net-log"), Verify: c.Bool("verify")}
}
