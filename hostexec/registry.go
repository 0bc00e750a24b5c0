package hostexec

import "github.com/agentbox/agentbox/provider"

// Spec is one kind of path a host program runs or obeys, relative to a
// base folder: a project folder, the home folder, or an agent CLI's own
// folder.
type Spec struct {
	// Program is the host program: "git", "claude", "vscode", "shell".
	Program string
	// Path is relative to the base, slash-separated.
	Path string
	// Why says what the host program does with it.
	Why string
	// Dir is true for a folder: a placeholder for it is a folder.
	Dir bool
	// Sources is true for a shell startup file: the files it sources
	// (". FILE", "source FILE") are kept too.
	Sources bool
	// Block is true for a project control file that a host program may
	// pick up while the box runs (an agent CLI started in the project, an
	// open editor): missing at the top of a project, it is blocked for the
	// run (plan.KeepBlocked); the others are checked after the run.
	Block bool
	// Managed is true for what an agent CLI makes in its own folder on
	// its first start: missing, it is checked after the run, not blocked.
	Managed bool
}

// Rule names the spec as plan output shows it: "claude .claude/settings.json".
func (s Spec) Rule() string { return s.Program + " " + s.Path }

// editorSpecs are what editors and IDEs obey in a project folder.
var editorSpecs = []Spec{
	{Program: "vscode", Path: ".vscode", Dir: true, Block: true, Why: "tasks.json tasks that run when the folder opens, settings.json naming programs (terminal profiles, formatters, linters; read again while VS Code runs), launch.json"},
	{Program: "jetbrains", Path: ".idea", Dir: true, Block: true, Why: "run configurations and startup tasks (workspace.xml, runConfigurations/)"},
	{Program: "jetbrains", Path: ".run", Dir: true, Why: "shared run configurations"},
	{Program: "devcontainer", Path: ".devcontainer", Dir: true, Why: "devcontainer.json initializeCommand runs on the host when the folder is opened in a container"},
	{Program: "devcontainer", Path: ".devcontainer.json", Why: "initializeCommand runs on the host"},
	{Program: "mise", Path: "mise.toml", Why: "hooks, tasks and env that mise runs on cd once the folder is trusted (by path, not content)"},
	{Program: "mise", Path: ".mise.toml", Why: "the same as mise.toml"},
	{Program: "mise", Path: "mise.local.toml", Why: "the same as mise.toml"},
	{Program: "mise", Path: ".mise", Dir: true, Why: "mise configuration and tasks"},
}

// homeSpecs are what runs at login, in every shell, or when common tools
// start, relative to the home folder. They matter only when a writable
// root is the home folder or holds it (--allow-broad-writable), or holds
// one of them.
var homeSpecs = []Spec{
	// Shells: everything they run at start, and what those files source.
	{Program: "shell", Path: ".profile", Sources: true, Why: "login shells run it"},
	{Program: "shell", Path: ".bashrc", Sources: true, Why: "every interactive bash runs it"},
	{Program: "shell", Path: ".bash_profile", Sources: true, Why: "bash login shells run it"},
	{Program: "shell", Path: ".bash_login", Sources: true, Why: "bash login shells run it"},
	{Program: "shell", Path: ".bash_logout", Sources: true, Why: "bash runs it at logout"},
	{Program: "shell", Path: ".bash_aliases", Sources: true, Why: "Debian's .bashrc sources it"},
	{Program: "shell", Path: ".bash_completion", Sources: true, Why: "bash-completion sources it"},
	{Program: "shell", Path: ".zshrc", Sources: true, Why: "every interactive zsh runs it"},
	{Program: "shell", Path: ".zprofile", Sources: true, Why: "zsh login shells run it"},
	{Program: "shell", Path: ".zshenv", Sources: true, Why: "every zsh runs it"},
	{Program: "shell", Path: ".zlogin", Sources: true, Why: "zsh login shells run it"},
	{Program: "shell", Path: ".zlogout", Sources: true, Why: "zsh runs it at logout"},
	{Program: "shell", Path: ".config/fish", Dir: true, Why: "fish runs config.fish and conf.d/ at start"},
	{Program: "shell", Path: ".xprofile", Sources: true, Why: "the display manager runs it at login"},
	{Program: "shell", Path: ".xsession", Why: "the display manager runs it at login"},
	{Program: "shell", Path: ".xsessionrc", Sources: true, Why: "the X session sources it"},
	{Program: "shell", Path: ".xinitrc", Why: "startx runs it"},
	{Program: "shell", Path: ".pam_environment", Why: "PAM sets these variables (LD_PRELOAD) at login"},
	{Program: "shell", Path: ".config/environment.d", Dir: true, Why: "systemd sets these variables for the user's services"},
	// Programs on PATH, ahead of the system's.
	{Program: "shell", Path: "bin", Dir: true, Why: "on PATH: a program there shadows the system's"},
	{Program: "shell", Path: ".local/bin", Dir: true, Why: "on PATH: a program there shadows the system's"},
	{Program: "shell", Path: ".cargo/bin", Dir: true, Why: "on PATH for Rust users"},
	{Program: "shell", Path: "go/bin", Dir: true, Why: "on PATH for Go users"},
	// Services and autostart.
	{Program: "systemd", Path: ".config/systemd", Dir: true, Why: "user units run at login and on timers"},
	{Program: "systemd", Path: ".local/share/systemd", Dir: true, Why: "user units"},
	{Program: "desktop", Path: ".config/autostart", Dir: true, Why: "desktop sessions start these at login"},
	{Program: "desktop", Path: ".local/share/applications", Dir: true, Why: "desktop entries: what opening a file or link runs"},
	{Program: "desktop", Path: ".config/mimeapps.list", Why: "which program opens which file type"},
	{Program: "desktop", Path: ".mailcap", Why: "which program opens which file type"},
	// ssh.
	{Program: "ssh", Path: ".ssh/config", Why: "ProxyCommand, LocalCommand and Match exec run programs"},
	{Program: "ssh", Path: ".ssh/rc", Why: "sshd runs it at each login"},
	{Program: "ssh", Path: ".ssh/environment", Why: "sshd sets these variables at each login"},
	{Program: "ssh", Path: ".ssh/authorized_keys", Why: "who may log in"},
	// git's own configuration.
	{Program: "git", Path: ".gitconfig", Why: "core.hooksPath, core.fsmonitor, aliases, filters and every other command git runs"},
	{Program: "git", Path: ".config/git", Dir: true, Why: "git's config, attributes and ignore files"},
	// Interpreters that run code at start.
	{Program: "python", Path: ".local/lib", Dir: true, Why: "Python's user site: .pth files and usercustomize run in every python"},
	{Program: "python", Path: ".pythonrc.py", Why: "PYTHONSTARTUP"},
	{Program: "python", Path: ".ipython", Dir: true, Why: "IPython startup scripts"},
	{Program: "python", Path: ".config/pip", Dir: true, Why: "where pip installs from"},
	{Program: "node", Path: ".npmrc", Why: "node-options and script-shell run programs in every npm command"},
	{Program: "ruby", Path: ".irbrc", Why: "irb runs it"},
	{Program: "r", Path: ".Rprofile", Why: "R runs it"},
	{Program: "cargo", Path: ".cargo/config.toml", Why: "build.rustc-wrapper and target runners run programs"},
	{Program: "cargo", Path: ".cargo/config", Why: "the same as .cargo/config.toml"},
	{Program: "gdb", Path: ".gdbinit", Why: "gdb runs it"},
	{Program: "gdb", Path: ".config/gdb", Dir: true, Why: "gdb runs gdbinit there"},
	{Program: "psql", Path: ".psqlrc", Why: "psql runs it (\\! runs programs)"},
	{Program: "sqlite", Path: ".sqliterc", Why: "sqlite3 runs it (.shell runs programs)"},
	// Editors and terminal tools.
	{Program: "vim", Path: ".vimrc", Why: "vim runs it (! and system() run programs)"},
	{Program: "vim", Path: ".vim", Dir: true, Why: "vim plugins"},
	{Program: "vim", Path: ".gvimrc", Why: "gvim runs it"},
	{Program: "vim", Path: ".exrc", Why: "vi runs it"},
	{Program: "neovim", Path: ".config/nvim", Dir: true, Why: "neovim's init and plugins"},
	{Program: "neovim", Path: ".local/share/nvim", Dir: true, Why: "neovim's installed plugins"},
	{Program: "emacs", Path: ".emacs", Why: "emacs runs it"},
	{Program: "emacs", Path: ".emacs.d", Dir: true, Why: "emacs' init and packages"},
	{Program: "emacs", Path: ".config/emacs", Dir: true, Why: "emacs' init and packages"},
	{Program: "tmux", Path: ".tmux.conf", Why: "tmux runs it (run-shell)"},
	{Program: "tmux", Path: ".config/tmux", Dir: true, Why: "tmux runs tmux.conf there"},
	{Program: "screen", Path: ".screenrc", Why: "screen runs it"},
	{Program: "vscode", Path: ".vscode", Dir: true, Why: "VS Code's extensions (code it loads)"},
	{Program: "vscode", Path: ".vscode-server", Dir: true, Why: "VS Code remote's extensions and settings"},
	{Program: "vscode", Path: ".config/Code", Dir: true, Why: "VS Code's user settings and tasks"},
	{Program: "cursor", Path: ".cursor", Dir: true, Why: "Cursor's extensions and MCP servers"},
	{Program: "cursor", Path: ".config/Cursor", Dir: true, Why: "Cursor's user settings"},
	{Program: "jetbrains", Path: ".config/JetBrains", Dir: true, Why: "JetBrains IDEs' settings"},
	{Program: "jetbrains", Path: ".local/share/JetBrains", Dir: true, Why: "JetBrains IDEs' plugins"},
	{Program: "direnv", Path: ".config/direnv", Dir: true, Why: "direnvrc runs in every allowed folder"},
	{Program: "direnv", Path: ".direnvrc", Why: "the same as ~/.config/direnv/direnvrc"},
	{Program: "gh", Path: ".config/gh/config.yml", Why: "gh aliases starting with ! run programs"},
	{Program: "mise", Path: ".config/mise", Dir: true, Why: "mise's global config: hooks, tasks, env"},
	// Skills shared by several agent CLIs.
	{Program: "agents", Path: ".agents", Dir: true, Why: "skills and plugins shared by agent CLIs (Codex, Pi)"},
}

// packageTrees are folders package managers own and replace wholesale
// (npm ci removes node_modules). Guards inside them are kept by recording
// and restoring, not by mounts: a mount point cannot be removed, and a
// package manager must be able to remove the tree.
var packageTrees = map[string]bool{
	"node_modules": true, "vendor": true, "bower_components": true, "jspm_packages": true,
	".venv": true, "venv": true, "site-packages": true, ".tox": true, ".nox": true,
	"Pods": true, "Carthage": true, ".yarn": true, ".pnpm-store": true, "elm-stuff": true,
	"deps": true, "_build": true, ".bundle": true,
}

// InPackageTree reports whether rel (a path relative to a writable root,
// slash-separated) lies in a folder a package manager owns.
func InPackageTree(rel string) bool {
	start := 0
	for i := 0; i <= len(rel); i++ {
		if i == len(rel) || rel[i] == '/' {
			if packageTrees[rel[start:i]] {
				return true
			}
			start = i + 1
		}
	}
	return false
}

// hookManagers are the configuration files a hook manager's installed hook
// reads at each commit: when a repository's hooks call the manager (its
// name appears in a hook), these files run on the host like the hooks.
var hookManagers = []struct {
	Mark  string   // text in an installed hook
	Files []string // at the top of the work tree
}{
	{"pre-commit", []string{".pre-commit-config.yaml"}},
	{"lefthook", []string{"lefthook.yml", ".lefthook.yml", "lefthook.yaml", ".lefthook.yaml", "lefthook-local.yml", ".lefthook-local.yml", ".lefthook"}},
	{"simple-git-hooks", []string{".simple-git-hooks.json", ".simple-git-hooks.js", "simple-git-hooks.json"}},
	{"overcommit", []string{".overcommit.yml"}},
}

// projectSpecs returns every spec that applies in a project folder: each
// known agent CLI's control files, and the editors'. A supported agent
// CLI's are blocked when missing at a project's top (they are the ones a
// user starts in the project while a box runs there); what the box makes
// of the others is moved away after the run.
func projectSpecs(providers []provider.Provider) []Spec {
	var out []Spec
	seen := map[string]bool{}
	for _, p := range providers {
		block := p.Supported
		for _, c := range p.Control {
			if seen[c] {
				continue
			}
			seen[c] = true
			out = append(out, Spec{Program: p.Name, Path: c, Dir: isDirSpec(c), Block: block, Why: p.Title + " obeys it in a project"})
		}
	}
	for _, s := range editorSpecs {
		if !seen[s.Path] {
			seen[s.Path] = true
			out = append(out, s)
		}
	}
	return out
}

// userSpecs returns the specs of provider p's own folder.
func userSpecs(p provider.Provider) []Spec {
	var out []Spec
	for _, c := range p.ReadOnly {
		managed := false
		for _, m := range p.Managed {
			managed = managed || m == c
		}
		out = append(out, Spec{Program: p.Name, Path: c, Dir: isDirSpec(c), Managed: managed, Why: p.Title + " obeys it in every project"})
	}
	return out
}

// isDirSpec guesses whether a control path is a folder: names without a
// dot-extension are folders (".claude/hooks", ".codex"), the rest files
// (".mcp.json", "settings.json", "AGENTS.md").
func isDirSpec(p string) bool {
	base := p
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			base = p[i+1:]
			break
		}
	}
	dot := -1
	for i := 1; i < len(base); i++ {
		if base[i] == '.' {
			dot = i
		}
	}
	return dot < 0
}

// placeholderContent is what a placeholder for the file name holds: an
// empty JSON object for JSON (so a program reading it finds valid, empty
// settings), nothing otherwise.
func placeholderContent(name string) string {
	if len(name) > 5 && name[len(name)-5:] == ".json" {
		return "{}\n"
	}
	return ""
}
