package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/doctor"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/seccomp"
	"github.com/agentbox/agentbox/winsandbox"
)

func planCommand(c *cli.Context) error {
	command := commandArgs(c)
	if len(command) == 0 {
		shell := os.Getenv("SHELL")
		if shell == "" {
			shell = "/bin/sh"
		}
		command = []string{shell}
	}
	p, err := resolve(c, command)
	if err != nil {
		return err
	}
	choice, berr := chooseBackend(p)
	backend := choice.name
	if berr == nil && choice.degraded == "" {
		adjustProvider(p)
	}
	switch {
	case berr != nil:
		backend = "none: " + firstLine(berr)
	case choice.degraded != "":
		backend = "none, UNCONFINED: " + choice.degraded
	}
	w := c.App.Writer
	switch {
	case c.Bool("argv"):
		self, err := selfPath()
		if err != nil {
			return err
		}
		bwrap := choice.bwrap
		if bwrap == "" {
			bwrap = "bwrap"
		}
		av, err := mount.Render(p, mount.Options{Bwrap: bwrap, Self: self, Seccomp: true})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, mount.Shell(bwrap, self, av))
	case c.Bool("json"):
		out := struct {
			*plan.Plan
			Effective string `json:"effective_backend"`
		}{p, backend}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	default:
		p.WriteText(w, backend)
		if l := p.Limits; l.Processes > 0 || l.Memory > 0 {
			av := cgroup.Probe()
			fmt.Fprintf(w, "  enforced by: processes: %s; memory: %s\n", limitMechanism(l.Processes > 0, av.Pids, "RLIMIT_NPROC (counts all your processes; never applied to root)", p.Identity.Root()), limitMechanism(l.Memory > 0, av.Memory, "RLIMIT_AS per process", false))
		}
		if backend == landlock.Backend {
			a, _ := landlock.Check(p)
			fmt.Fprintf(w, "landlock:  ABI %d; how each rule is enforced:\n", a.ABI)
			for _, r := range a.Rules {
				fmt.Fprintf(w, "  %-16s %-32s %s: %s\n", r.Level, r.Rule, r.Path, r.How)
			}
		}
		if backend == mount.Backend || backend == landlock.Backend {
			f, err := seccomp.Build(p.Seccomp)
			if err != nil {
				fmt.Fprintf(w, "seccomp:   NOT in force: %v\n", err)
				break
			}
			var blocked, reopened []string
			for _, g := range f.Blocked {
				blocked = append(blocked, g.Name)
			}
			for _, g := range f.Reopened {
				reopened = append(reopened, g.Name+" ("+g.Why+")")
			}
			fmt.Fprintf(w, "seccomp:   blocked: %s; foreign architectures killed\n", strings.Join(blocked, ", "))
			if len(reopened) > 0 {
				fmt.Fprintf(w, "  reopened by policy: %s\n", strings.Join(reopened, "; "))
			}
		}
	}
	return nil
}

// starter is the policy `agentbox init` writes.
const starter = `# agentbox policy for this project. Relative paths are relative to this file.
# A project policy is used only after you trust it: agentbox trust
version = 1

[sandbox]
enforce = "require"        # refuse to run unconfined; "best-effort" warns and runs anyway

[filesystem]
writable = ["."]           # this project; add caches your tools need, e.g. "~/.cache/go-build"
read_only = []             # kept read-only inside writable roots (.git/hooks and .git/config always are)
deny = ["~/.ssh"]          # hidden: an empty folder or file in its place

[tmp]
mode = "workspace"         # /tmp shared by this workspace; "private" for a fresh one per run

[network]
mode = "open"              # "none" cuts the network (loopback only)

[env]
mode = "inherit"
# Secrets the agent does not need. Names or globs; removed in every mode.
# The agent CLI's own key (claude: ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN,
# CLAUDE_CODE_OAUTH_TOKEN; codex: OPENAI_API_KEY, CODEX_API_KEY) is kept:
# globs never remove it, only its exact name would.
deny = ["AWS_*", "AZURE_*", "GOOGLE_APPLICATION_CREDENTIALS", "GCP_*", "GCLOUD_*", "DIGITALOCEAN_*",
        "*_TOKEN", "*_API_KEY", "*_SECRET*", "*_PASSWORD*", "*_PASSWD*", "*_PRIVATE_KEY*",
        "*_CREDENTIALS", "DATABASE_URL", "*_DATABASE_URL", "SSH_AUTH_SOCK"]

[limits]
# processes = 4096
# memory = "8GiB"
`

func initCommand(c *cli.Context) error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	path := filepath.Join(cwd, policy.ProjectFile)
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if c.Bool("force") {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return withHints(fmt.Errorf("%s already exists", path), "pass --force to overwrite it")
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(starter); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "wrote %s\nreview it, then: agentbox trust %s\n", path, shellQuote(path))
	return nil
}

func trustCommand(c *cli.Context) error {
	env, err := currentEnv()
	if err != nil {
		return err
	}
	file := c.Args().First()
	if file == "" {
		file = policy.FindProject(env, env.Cwd)
		if file == "" {
			return fmt.Errorf("no %s here or in any parent folder", policy.ProjectFile)
		}
	}
	if file, err = filepath.Abs(file); err != nil {
		return err
	}
	store := policy.TrustStore{Path: policy.StorePath(env)}
	if c.Bool("revoke") {
		ok, err := store.Revoke(file)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(c.App.Writer, "%s was not trusted\n", file)
			return nil
		}
		fmt.Fprintf(c.App.Writer, "revoked trust in %s\n", file)
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading policy: %w", err)
	}
	l, err := policy.Parse("project", file, data)
	if err != nil {
		return err
	}
	if err := store.Trust(file, policy.Hash(data)); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "trusted %s (sha256 %s)\n", file, policy.Hash(data)[:16])
	for _, g := range (&policy.UntrustedError{Layer: l}).Grants() {
		fmt.Fprintf(c.App.Writer, "  %s\n", g)
	}
	return nil
}

// statusCommand tells a process whether it runs in a box. It reports what
// agentbox set, and checks what it can for itself: a variable can be
// inherited or forged, a read-only root cannot.
func statusCommand(c *cli.Context) error {
	if c.Bool("prompt") {
		text, err := promptText(c)
		if err != nil {
			return err
		}
		fmt.Fprint(c.App.Writer, text)
		return nil
	}
	st := struct {
		Active   bool     `json:"active"`
		Backend  string   `json:"backend,omitempty"`
		Writable []string `json:"writable,omitempty"`
		Deny     []string `json:"deny,omitempty"`
		Network  string   `json:"network,omitempty"`
		Tmp      string   `json:"tmpdir,omitempty"`
		Degraded string   `json:"degraded,omitempty"`
		// Checked is what this process could verify for itself: / mounted
		// read-only (bwrap), or no_new_privs with a seccomp filter
		// (Landlock, which leaves no mount to look at).
		Checked    string `json:"checked,omitempty"`
		Consistent bool   `json:"consistent"`
	}{
		Active:   os.Getenv("AGENTBOX") == "1",
		Backend:  os.Getenv("AGENTBOX_BACKEND"),
		Writable: splitList(os.Getenv("AGENTBOX_WRITABLE")),
		Deny:     splitList(os.Getenv("AGENTBOX_DENY")),
		Network:  os.Getenv("AGENTBOX_NETWORK"),
		Tmp:      os.Getenv("TMPDIR"),
		Degraded: os.Getenv("AGENTBOX_DEGRADED"),
	}
	if st.Active {
		st.Checked, st.Consistent = selfCheck(st.Backend)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	w := c.App.Writer
	switch {
	case st.Active && !st.Consistent:
		fmt.Fprintf(w, "agentbox: AGENTBOX=1 is set but %s: this is NOT a working agentbox sandbox\n", st.Checked)
		return &exitCode{1}
	case st.Active:
		fmt.Fprintf(w, "sandbox:  active (%s; checked: %s)\n", st.Backend, st.Checked)
		fmt.Fprintf(w, "writable: %s\n", strings.Join(st.Writable, ", "))
		fmt.Fprintf(w, "hidden:   %s\n", strings.Join(st.Deny, ", "))
		fmt.Fprintf(w, "network:  %s\n", st.Network)
		fmt.Fprintf(w, "tmp:      %s (private to this box's workspace or run)\n", st.Tmp)
	case st.Degraded != "":
		fmt.Fprintf(w, "sandbox:  NOT active: running unconfined (%s)\n", st.Degraded)
		return &exitCode{1}
	default:
		fmt.Fprintln(w, "sandbox:  not active")
		return &exitCode{1}
	}
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// setupCommand is `agentbox setup` (Windows): it prepares the sandbox users,
// their group and the firewall rules once, checks them, or removes them.
func setupCommand(c *cli.Context) error {
	switch {
	case c.Bool("check"):
		if err := winsandbox.Check(c.App.Writer); err != nil {
			return withHints(err, "run `agentbox setup` (elevated) to repair it")
		}
		return nil
	case c.Bool("uninstall"):
		return winsandbox.Uninstall()
	}
	return winsandbox.Setup(winsandbox.SetupOptions{
		NoElevate: c.Bool("no-elevate"),
		Args:      os.Args[1:],
		Log:       c.App.Writer,
	})
}

// doctorCommand tells what this machine can enforce and how to fix the rest.
func doctorCommand(c *cli.Context) error {
	r := doctor.Probe()
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	r.Text(c.App.Writer)
	return nil
}

// limitMechanism says how a limit will be enforced here: the box's own
// cgroup when agentbox can create one, else the rlimit (or nothing, for a
// process limit as root).
func limitMechanism(set bool, c cgroup.Controller, rlimit string, root bool) string {
	switch {
	case !set:
		return "unlimited"
	case c.OK:
		return fmt.Sprintf("the box's own cgroup (v%d, under %s)", c.Version, c.Parent)
	case root:
		return "NOT ENFORCED: no cgroup here (" + c.Reason + "), and the kernel never applies RLIMIT_NPROC to root; run refuses under require"
	}
	return rlimit + "; no cgroup here: " + c.Reason
}
