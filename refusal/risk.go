package refusal

import (
	"path"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// HostExecuted reports whether making p writable would let the box change
// something a host program runs or obeys later (git hooks and config,
// agent CLI control files, shell startup files, editor task files,
// programs on PATH, system folders), and why. Everything agentbox calls
// risky for that reason goes through this one function.
func HostExecuted(pl *plan.Plan, p string) (bool, string) {
	// What the plan already protects wherever it lies in p.
	for _, m := range pl.Mounts {
		if strings.HasPrefix(m.Origin.Key, "always: ") && m.Op != plan.Pin && plan.Within(m.Path, p) {
			return true, tilde(pl, p) + " holds " + tilde(pl, m.Path) + " (" + strings.TrimPrefix(m.Origin.Key, "always: ") + "), which a host program runs or obeys"
		}
	}
	for _, sys := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/boot", "/var/lib", "/snap"} {
		if plan.Within(p, sys) || plan.Within(sys, p) {
			return true, tilde(pl, p) + " is a system folder: the host runs programs and reads configuration from it"
		}
	}
	home := pl.Identity.Home
	if home != "" && plan.Within(home, p) {
		return true, tilde(pl, p) + " holds your whole home folder"
	}
	if home != "" && plan.Within(p, home) {
		rel := strings.TrimPrefix(p, home+"/")
		for _, h := range homeExecuted {
			if rel == h.path || strings.HasPrefix(rel, h.path+"/") || strings.HasPrefix(h.path, rel+"/") {
				return true, "~/" + h.path + " " + h.why
			}
		}
	}
	for _, el := range strings.Split(p, "/") {
		if why, ok := projectExecuted[el]; ok {
			return true, path.Base(p) + ": " + why
		}
	}
	return false, ""
}

// homeExecuted are what host programs run or obey in the home folder.
var homeExecuted = []struct{ path, why string }{
	{".bashrc", "runs in every interactive bash"}, {".bash_profile", "runs in bash login shells"},
	{".bash_login", "runs in bash login shells"}, {".bash_logout", "runs at logout"}, {".profile", "runs in login shells"},
	{".bash_aliases", "is sourced by .bashrc"}, {".zshrc", "runs in every interactive zsh"}, {".zprofile", "runs in zsh login shells"},
	{".zshenv", "runs in every zsh"}, {".zlogin", "runs in zsh login shells"}, {".config/fish", "runs in every fish"},
	{".gitconfig", "tells git which programs to run"}, {".config/git", "tells git which programs to run"},
	{".ssh", "tells ssh which programs to run and who may log in"}, {".local/bin", "is on PATH"}, {"bin", "is on PATH"},
	{".cargo/bin", "is on PATH"}, {"go/bin", "is on PATH"}, {".config/systemd", "holds user services"},
	{".config/autostart", "starts programs at login"}, {".local/lib", "holds Python's user site, run by every python"},
	{".npmrc", "can name programs npm runs"}, {".config/Code", "holds VS Code's settings and tasks"},
	{".vscode", "holds VS Code's extensions"}, {".config/nvim", "runs in neovim"}, {".vimrc", "runs in vim"},
	{".claude", "holds Claude Code's settings and hooks"}, {".claude.json", "holds Claude Code's settings and MCP servers"},
	{".codex", "holds Codex's configuration"}, {".config/direnv", "runs in every allowed folder"},
	{".pam_environment", "sets variables at login"}, {".config/environment.d", "sets variables for user services"},
}

// projectExecuted are folder and file names in a project that host
// programs run or obey: git, editors, agent CLIs.
var projectExecuted = map[string]string{
	".git":          "git runs its hooks and obeys its config",
	".vscode":       "VS Code runs its tasks and obeys its settings",
	".idea":         "JetBrains IDEs run its configurations",
	".devcontainer": "its initializeCommand runs on the host",
	".claude":       "Claude Code obeys its settings and runs its hooks",
	".codex":        "Codex obeys its configuration",
}

// HostRun says whether making the folder dir writable would let the box
// change something a host program runs or obeys, by the registry of those
// (package hostexec, which searches the folder as a run with it writable
// would), and why. It reads the disk, so it is given to this package by
// its caller.
type HostRun func(dir string) (risky bool, why string)

// Recheck returns f as the registry classifies it: a change that makes a
// folder writable, which the advice called safe, is risky when hostRun
// finds anything in that folder that a host program runs or obeys. The
// advice looks at names only, and the refusal it comes from may have been
// made up by the box; nothing is called safe before the registry agrees.
func Recheck(pl *plan.Plan, f Fix, hostRun HostRun) Fix {
	if f.Risky || f.Key != "filesystem.writable" || hostRun == nil {
		return f
	}
	if risky, why := hostRun(untilde(pl, f.Value)); risky {
		f.Risky, f.Why = true, why
	}
	return f
}

// untilde is tilde undone.
func untilde(pl *plan.Plan, v string) string {
	if v == "~" {
		return pl.Identity.Home
	}
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		return path.Join(pl.Identity.Home, rest)
	}
	return v
}
