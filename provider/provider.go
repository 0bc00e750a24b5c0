package provider

import (
	"path/filepath"
	"sort"
	"strings"
)

// Provider is one agent CLI agentbox knows.
type Provider struct {
	// Name is the provider's name in policies and on the command line.
	Name string `json:"name"`
	// Title is the product's name for humans.
	Title string `json:"title"`
	// Commands are the executable base names that identify it.
	Commands []string `json:"commands"`
	// Packages are npm package names whose cli.js identifies it.
	Packages []string `json:"packages,omitempty"`
	// Supported is true only when a real run inside the sandbox verified the
	// paths below (or the user declared them with sandbox = true).
	Supported bool `json:"supported"`
	// Writable are the paths of its own it must write; "~" is the home folder.
	Writable []string `json:"writable,omitempty"`
	// Control are the control files the CLI obeys in a project folder,
	// relative to it: they stay read-only in every folder of every
	// writable root, for every command (package hostexec).
	Control []string `json:"control,omitempty"`
	// Domains are the network names it needs in allowlist mode.
	Domains []string `json:"domains,omitempty"`
	// ReadOnly are the control files the CLI obeys in its own folder
	// (Home), relative to it: what it would run unconfined later (hooks
	// and the scripts they name, MCP servers, commands, agents, skills,
	// rules, plugins, copied binaries, user-level instructions). They stay
	// read-only wherever that folder is within the box's reach.
	ReadOnly []string `json:"read_only,omitempty"`
	// Managed are the ReadOnly paths the CLI makes itself on its first
	// start (Codex unpacks its bundled skills and installs its app server;
	// Claude Code makes plugins/): one that is missing is not blocked, so
	// the CLI starts in the box, and what the box made there is moved away
	// after the run.
	Managed []string `json:"managed,omitempty"`
	// Allow are the entries of its own folder (Home) the CLI writes in
	// its work, names or path.Match patterns of the folder's top level:
	// sessions, projects, history, logs, caches, locks, its login and its
	// own copy of the top config. When it is set, it is all the box may
	// write there: every other entry that exists is kept read-only for
	// the run, and every other entry the box adds or changes is moved away
	// after it, whatever its name (a CLI obeys more files in its folder
	// than any list of them says).
	Allow []string `json:"allow,omitempty"`
	// Home is the CLI's own folder ("~/.claude"); HomeVar moves it.
	Home string `json:"home,omitempty"`
	// Commands are control files that name commands the CLI runs (hooks,
	// MCP servers, a status line, a notify program): the files those
	// commands name are kept like the control file itself.
	CommandFiles []CommandFile `json:"command_files,omitempty"`
	// HomeVar names the variable that moves its folder (CLAUDE_CONFIG_DIR,
	// CODEX_HOME): when the user sets it, its value replaces Writable[0].
	HomeVar string `json:"home_var,omitempty"`
	// SetHomeVar sets HomeVar to Writable[0] inside the box when the user
	// has not set it.
	SetHomeVar bool `json:"set_home_var,omitempty"`
	// Config is the file in the home folder where the CLI keeps its user
	// configuration and state when HomeVar is not set (~/.claude.json).
	// Inside the box the CLI uses a copy in its own folder, refreshed from
	// this file before every confined run (Sync); the box never writes it.
	Config string `json:"config,omitempty"`
	// SandboxEnv are variables that tell the CLI it runs in a sandbox,
	// NAME=value, set only when agentbox really confines it.
	SandboxEnv []string `json:"sandbox_env,omitempty"`
	// Keys are the environment variables that hold its own credentials:
	// a deny glob (such as "*_API_KEY") does not remove them, only a deny
	// that names them exactly does.
	Keys []string `json:"keys,omitempty"`
	// InnerSandbox turns the CLI's own sandbox off when agentbox
	// confines it; nil when the CLI has none.
	InnerSandbox *InnerSandbox `json:"inner_sandbox,omitempty"`
	// Declared is true for a provider declared or extended in a policy.
	Declared bool `json:"declared,omitempty"`
}

// CommandFile is a control file that names commands its CLI runs.
type CommandFile struct {
	// Path is the file, relative to the CLI's own folder when User is
	// true and to a project folder otherwise.
	Path string `json:"path"`
	User bool   `json:"user,omitempty"`
	// Format is "json" or "toml".
	Format string `json:"format"`
	// Keys are the top-level keys under which every string, at any depth,
	// is a command line or a program's path.
	Keys []string `json:"keys"`
}

// builtin lists the providers agentbox knows without any policy; see
// registry.go for their data.
var builtin []Provider

// Builtin returns a copy of the built-in registry, sorted by name.
func Builtin() []Provider {
	out := make([]Provider, len(builtin))
	for i, p := range builtin {
		p.Commands = append([]string(nil), p.Commands...)
		p.Packages = append([]string(nil), p.Packages...)
		p.Writable = append([]string(nil), p.Writable...)
		p.Control = append([]string(nil), p.Control...)
		p.Domains = append([]string(nil), p.Domains...)
		p.ReadOnly = append([]string(nil), p.ReadOnly...)
		p.Managed = append([]string(nil), p.Managed...)
		p.CommandFiles = append([]CommandFile(nil), p.CommandFiles...)
		p.Keys = append([]string(nil), p.Keys...)
		p.SandboxEnv = append([]string(nil), p.SandboxEnv...)
		out[i] = p
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Registry is a set of providers: the built-in ones plus those a policy declares.
type Registry struct {
	list []Provider
}

// NewRegistry returns a registry of the built-in providers.
func NewRegistry() *Registry { return &Registry{list: Builtin()} }

// List returns the providers, sorted by name.
func (r *Registry) List() []Provider { return r.list }

// Lookup finds a provider by name.
func (r *Registry) Lookup(name string) (Provider, bool) {
	for _, p := range r.list {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// Declare adds a provider or extends a known one: commands and writable paths
// are added, and sandbox = true marks it supported.
func (r *Registry) Declare(d Provider) {
	for i := range r.list {
		if r.list[i].Name == d.Name {
			p := &r.list[i]
			p.Commands = union(p.Commands, d.Commands)
			p.Writable = union(p.Writable, d.Writable)
			p.Control = union(p.Control, d.Control)
			p.Domains = union(p.Domains, d.Domains)
			p.Supported = p.Supported || d.Supported
			p.Declared = true
			return
		}
	}
	d.Declared = true
	r.list = append(r.list, d)
	sort.Slice(r.list, func(i, j int) bool { return r.list[i].Name < r.list[j].Name })
}

func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		found := false
		for _, t := range out {
			if s == t {
				found = true
			}
		}
		if !found {
			out = append(out, s)
		}
	}
	return out
}

// byCommand finds the provider whose command list holds base.
func (r *Registry) byCommand(base string) (Provider, bool) {
	for _, p := range r.list {
		for _, c := range p.Commands {
			if c == base {
				return p, true
			}
		}
	}
	return Provider{}, false
}

// byPackage finds the provider that ships the npm package pkg.
func (r *Registry) byPackage(pkg string) (Provider, bool) {
	for _, p := range r.list {
		for _, c := range p.Packages {
			if c == pkg {
				return p, true
			}
		}
	}
	return Provider{}, false
}

// Detection is the result of Detect: which provider the command is, and why.
type Detection struct {
	Name   string // "" when no provider was recognised
	Reason string
	Index  int // index in argv of the provider's own command (after env, npx, node)
}

// Detect recognises the provider of argv: by the base name of the command,
// through `env VAR=… cmd`, `npx [-y] pkg`, `node …/cli.js` inside a known npm
// package, and absolute paths.
func (r *Registry) Detect(argv []string) Detection {
	i := 0
	via := ""
	for i < len(argv) {
		base := filepath.Base(argv[i])
		switch {
		case base == "env":
			i++
			for i < len(argv) && (strings.Contains(argv[i], "=") || strings.HasPrefix(argv[i], "-")) {
				switch argv[i] {
				case "-u", "--unset", "-C", "--chdir":
					i++ // these take a value
				}
				i++
			}
			via += "env "
			continue
		case base == "npx" || base == "bunx" || base == "pnpx":
			i++
			for i < len(argv) && strings.HasPrefix(argv[i], "-") {
				i++
			}
			if i < len(argv) {
				pkg := argv[i]
				if at := strings.LastIndex(pkg, "@"); at > 0 {
					pkg = pkg[:at]
				}
				if p, ok := r.byPackage(pkg); ok {
					return Detection{Name: p.Name, Reason: via + base + " package " + pkg, Index: i}
				}
			}
			via += base + " "
			continue
		case base == "node" || base == "nodejs" || base == "bun" || base == "deno":
			i++
			for i < len(argv) && strings.HasPrefix(argv[i], "-") {
				i++
			}
			if i < len(argv) {
				if p, pkg, ok := r.scriptPackage(argv[i]); ok {
					return Detection{Name: p.Name, Reason: via + base + " script in package " + pkg, Index: i}
				}
			}
			via += base + " "
			continue
		}
		if p, ok := r.byCommand(base); ok {
			reason := "command " + base
			if strings.Contains(argv[i], "/") {
				reason = "command " + argv[i]
			}
			return Detection{Name: p.Name, Reason: via + reason, Index: i}
		}
		return Detection{Reason: "no known agent CLI in " + strings.TrimSpace(via+base)}
	}
	return Detection{Reason: "empty command"}
}

// scriptPackage finds a known npm package in the path of a script, such as
// …/node_modules/@openai/codex/bin/codex.js.
func (r *Registry) scriptPackage(script string) (Provider, string, bool) {
	parts := strings.Split(filepath.ToSlash(script), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] != "node_modules" {
			continue
		}
		if i+1 < len(parts) {
			pkg := parts[i+1]
			if strings.HasPrefix(pkg, "@") && i+2 < len(parts) {
				pkg += "/" + parts[i+2]
			}
			if p, ok := r.byPackage(pkg); ok {
				return p, pkg, true
			}
		}
	}
	return Provider{}, "", false
}
