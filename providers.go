package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/provider"
)

// installed reports the first command of p found on PATH.
func installed(p provider.Provider) string {
	for _, c := range p.Commands {
		if path, err := exec.LookPath(c); err == nil {
			return path
		}
	}
	return ""
}

func providersCommand(c *cli.Context) error {
	list := provider.Builtin()
	if c.Bool("json") {
		type row struct {
			provider.Provider
			Installed string `json:"installed,omitempty"`
		}
		var rows []row
		for _, p := range list {
			rows = append(rows, row{p, installed(p)})
		}
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tsupported\tinstalled\tcommands\twritable")
	for _, p := range list {
		sup := "no (not verified)"
		if p.Supported {
			sup = "yes"
		}
		inst := installed(p)
		if inst == "" {
			inst = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, sup, inst, strings.Join(p.Commands, ","), strings.Join(p.Writable, ","))
	}
	return tw.Flush()
}

// shellInitCommand prints aliases that put every installed, supported agent
// CLI behind agentbox, and completion for agentbox itself.
func shellInitCommand(c *cli.Context) error {
	shell := c.Args().First()
	self, err := selfPath()
	if err != nil {
		return err
	}
	w := c.App.Writer
	var names []string
	for _, p := range provider.Builtin() {
		if p.Supported && installed(p) != "" {
			names = append(names, p.Commands...)
		}
	}
	q := shellQuote(self)
	switch shell {
	case "bash", "zsh":
		fmt.Fprintf(w, "# agentbox: agent CLIs run confined; `command NAME` runs one unconfined\n")
		for _, n := range names {
			fmt.Fprintf(w, "alias %s='%s run -- %s'\n", n, strings.ReplaceAll(q, "'", `'\''`), n)
		}
		if shell == "bash" {
			fmt.Fprintf(w, "_agentbox_complete() { COMPREPLY=( $(compgen -W \"$(%s --generate-bash-completion)\" -- \"${COMP_WORDS[COMP_CWORD]}\") ); }\n", q)
			fmt.Fprintln(w, "complete -o default -F _agentbox_complete agentbox")
		} else {
			fmt.Fprintf(w, "_agentbox() { compadd -- $(%s --generate-bash-completion) }\n", q)
			fmt.Fprintln(w, "(( $+functions[compdef] )) && compdef _agentbox agentbox")
		}
	case "fish":
		fmt.Fprintf(w, "# agentbox: agent CLIs run confined; `command NAME` runs one unconfined\n")
		for _, n := range names {
			fmt.Fprintf(w, "function %s --wraps %s; %s run -- %s $argv; end\n", n, n, q, n)
		}
		fmt.Fprintf(w, "complete -c agentbox -f -a '(%s --generate-bash-completion)'\n", self)
	default:
		return withHints(fmt.Errorf("shell-init: %q is not a shell agentbox knows", shell), "use bash, zsh or fish, e.g. eval \"$(agentbox shell-init bash)\"")
	}
	return nil
}

// promptCommand prints the notice an agent can be given about the box that
// `agentbox run` with the same flags would start.
func promptText(c *cli.Context) (string, error) {
	command := commandArgs(c)
	if len(command) == 0 {
		command = []string{"sh"}
	}
	p, err := resolve(c, command)
	if err != nil {
		return "", err
	}
	choice, err := chooseBackend(p)
	if err != nil {
		return "", err
	}
	if choice.degraded != "" {
		return "You are NOT running in a sandbox: " + choice.degraded + "\n", nil
	}
	if choice.name == "" {
		choice.name = mount.Backend
	}
	return p.Prompt(choice.name), nil
}

// adjustProvider changes the command for the box when agentbox really
// confines it: a confined Codex gets its own sandbox turned off, unless the
// user chose a sandbox mode. Never when running unconfined.
func adjustProvider(p *plan.Plan) {
	if p.Provider.Name != "codex" || !p.Provider.Supported || p.Provider.Index >= len(p.Command) {
		return
	}
	// --provider codex may name a wrapper script: only Codex itself gets
	// the flag.
	if cmd := p.Command[p.Provider.Index]; filepath.Base(cmd) != "codex" && !strings.Contains(cmd, "node_modules/@openai/codex/") {
		p.Provider.Adjusted = "left alone: " + filepath.Base(cmd) + " is not the codex command"
		return
	}
	var configs [][]byte
	home := os.Getenv("CODEX_HOME")
	if home == "" {
		home = filepath.Join(p.Identity.Home, ".codex")
	}
	for _, f := range []string{filepath.Join(home, "config.toml"), "/etc/codex/config.toml", filepath.Join(p.Cwd, ".codex", "config.toml")} {
		if data, err := os.ReadFile(f); err == nil {
			configs = append(configs, data)
		}
	}
	p.Command, p.Provider.Adjusted = provider.CodexSandboxOff(p.Command, p.Provider.Index, configs)
}
