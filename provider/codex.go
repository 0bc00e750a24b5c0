package provider

import (
	"path/filepath"
	"strings"
)

// InnerSandbox is how a CLI's own sandbox is turned off when agentbox
// confines it: two nested sandboxes lock each other up. The data lives in
// the registry (Codex's entry); Adjust applies it.
type InnerSandbox struct {
	// Off are the arguments inserted right after the CLI's command.
	Off []string `json:"off"`
	// Command is the executable's base name the arguments are for: a
	// wrapper script named by --provider is left alone. An npm package
	// path ending in it counts too (node …/node_modules/PKG/…).
	Command string `json:"command"`
	// Subcommand, given first, asks for the CLI's own sandbox: then nothing
	// changes.
	Subcommand string `json:"subcommand,omitempty"`
	// Flags mean the command chooses a mode itself: each is an exact
	// argument, or with a trailing "=" a prefix of one ("--sandbox=").
	Flags []string `json:"flags,omitempty"`
	// ShortFlag is a one-letter flag that may carry its value joined
	// ("-sread-only").
	ShortFlag string `json:"short_flag,omitempty"`
	// Profile flags may choose the mode through a profile.
	Profile []string `json:"profile,omitempty"`
	// Config flags take KEY=VALUE overrides; an override of ConfigKey
	// chooses the mode.
	Config []string `json:"config,omitempty"`
	// ConfigKey, set at the top level of one of ConfigFiles, chooses the
	// mode.
	ConfigKey string `json:"config_key,omitempty"`
	// ConfigFiles are read for ConfigKey: "~/" is the CLI's own folder
	// (Writable[0] or its HomeVar), a relative path is relative to the
	// working directory.
	ConfigFiles []string `json:"config_files,omitempty"`
}

// ConfigPaths returns the config files to read, for the CLI's own folder
// home and the working directory cwd.
func (s InnerSandbox) ConfigPaths(home, cwd string) []string {
	var out []string
	for _, f := range s.ConfigFiles {
		switch {
		case strings.HasPrefix(f, "~/"):
			out = append(out, filepath.Join(home, f[2:]))
		case filepath.IsAbs(f):
			out = append(out, f)
		default:
			out = append(out, filepath.Join(cwd, f))
		}
	}
	return out
}

// Adjust returns argv with the CLI's own sandbox turned off (s.Off right
// after the command at index i), and why; or argv unchanged and why not:
// the command is not the CLI itself (named s.Command, or a script in one of
// the npm packages), asks for its sandbox, or chooses a mode itself through
// a flag, a profile, an override or one of configs (the contents of the
// ConfigPaths that exist).
func (s InnerSandbox) Adjust(argv []string, i int, packages []string, configs [][]byte) ([]string, string) {
	if i < 0 || i >= len(argv) || len(s.Off) == 0 {
		return argv, ""
	}
	cmd := argv[i]
	ours := filepath.Base(cmd) == s.Command
	for _, pkg := range packages {
		ours = ours || strings.Contains(filepath.ToSlash(cmd), "node_modules/"+pkg+"/")
	}
	if !ours {
		return argv, "left alone: " + filepath.Base(cmd) + " is not the " + s.Command + " command"
	}
	rest := argv[i+1:]
	for j, a := range rest {
		if a == "--" {
			break
		}
		switch {
		case j == 0 && s.Subcommand != "" && a == s.Subcommand:
			return argv, "left alone: `" + s.Command + " " + a + "` asks for " + s.Command + "'s own sandbox"
		case s.flag(a):
			return argv, "left alone: the command chooses a sandbox mode (" + a + ")"
		case contains(s.Profile, a) || hasPrefixIn(s.Profile, a+"="):
			return argv, "left alone: a profile may choose the sandbox mode"
		case contains(s.Config, a) && j+1 < len(rest) && strings.HasPrefix(strings.TrimSpace(rest[j+1]), s.ConfigKey):
			return argv, "left alone: the command sets " + s.ConfigKey
		case s.override(a):
			return argv, "left alone: the command sets " + s.ConfigKey
		}
	}
	for _, c := range configs {
		for _, line := range strings.Split(string(c), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "[") {
				break // only the top-level key chooses the default mode
			}
			if k, _, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == s.ConfigKey {
				return argv, "left alone: " + s.ConfigKey + " is set in " + s.Command + "'s config"
			}
		}
	}
	out := append([]string(nil), argv[:i+1]...)
	out = append(out, s.Off...)
	out = append(out, rest...)
	return out, s.Command + "'s own sandbox turned off (" + strings.Join(s.Off, " ") + "): agentbox confines it"
}

// flag reports whether a is one of the flags that choose a mode.
func (s InnerSandbox) flag(a string) bool {
	for _, f := range s.Flags {
		if a == f || strings.HasSuffix(f, "=") && strings.HasPrefix(a, f) {
			return true
		}
	}
	return s.ShortFlag != "" && strings.HasPrefix(a, s.ShortFlag) && len(a) > len(s.ShortFlag) && !strings.HasPrefix(a, "--")
}

// override reports whether a is a joined config override of ConfigKey
// ("--config=sandbox_mode=…", "-csandbox_mode=…").
func (s InnerSandbox) override(a string) bool {
	for _, c := range s.Config {
		sep := "="
		if !strings.HasPrefix(c, "--") {
			sep = ""
		}
		if strings.HasPrefix(a, c+sep+s.ConfigKey) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasPrefixIn(list []string, s string) bool {
	for _, x := range list {
		if strings.HasPrefix(s, x+"=") {
			return true
		}
	}
	return false
}
