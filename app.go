package main

import (
	"github.com/urfave/cli/v2"

	"github.com/agentbox/agentbox/policy"
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
				),
				Action: runCommand,
			},
			{
				Name:      "plan",
				Usage:     "show the resolved plan: layers, every mount in order and why, network, env",
				ArgsUsage: "[-- CMD [ARGS...]]",
				Flags: append(policyFlags(),
					&cli.BoolFlag{Name: "json", Usage: "print the plan as JSON"},
					&cli.BoolFlag{Name: "argv", Usage: "print the exact bwrap command line, shell-quoted"},
				),
				Action: planCommand,
			},
			{
				Name:   "init",
				Usage:  "write a commented starter .agentbox.toml in the current folder",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "overwrite an existing .agentbox.toml"}},
				Action: initCommand,
			},
			{
				Name:   "doctor",
				Usage:  "what this machine can enforce (bwrap, user namespaces, AppArmor, Landlock, seccomp, cgroups) and what auto picks",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: doctorCommand,
			},
			{
				Name:      "trust",
				Usage:     "trust a project policy (its SHA-256 is pinned; any edit needs trusting again)",
				ArgsUsage: "[FILE]",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: "revoke", Usage: "forget the trust instead"}},
				Action:    trustCommand,
			},
			{
				Name:      "status",
				Usage:     "inside a sandbox: is it active, which backend, what is writable and hidden, the network",
				ArgsUsage: "[--prompt [policy flags] [-- CMD...]]",
				Flags: append(policyFlags(),
					&cli.BoolFlag{Name: "json", Usage: "print JSON"},
					&cli.BoolFlag{Name: "prompt", Usage: "print the notice an agent can be given about the box `run` with these flags starts"},
				),
				Action: statusCommand,
			},
			{
				Name:   "providers",
				Usage:  "the agent CLIs agentbox knows, whether each is supported inside the sandbox, its writable paths",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: providersCommand,
			},
			{
				Name:      "shell-init",
				Usage:     "print aliases that run every installed, supported agent CLI through agentbox",
				ArgsUsage: "bash|zsh|fish",
				Action:    shellInitCommand,
			},
			{
				Name:  "setup",
				Usage: "Windows: create the sandbox users, group and firewall rules (elevated, once; idempotent)",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "check", Usage: "verify the real state and name each problem"},
					&cli.BoolFlag{Name: "uninstall", Usage: "remove everything setup made"},
					&cli.BoolFlag{Name: "no-elevate", Usage: "fail with a hint instead of asking for elevation"},
				},
				Action: setupCommand,
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
		&cli.StringFlag{Name: "backend", Usage: "backend `NAME`: auto, bwrap, landlock, windows"},
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
