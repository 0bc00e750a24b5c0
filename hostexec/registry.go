package hostexec

import (
	"slices"
	"strings"

	"github.com/agentbox/agentbox/provider"
)

// Trigger is what makes a host program run or obey a path: the class an
// entry of the registry belongs to.
type Trigger string

// The triggers, each a class of host programs that run what a project (or
// the home folder) holds without the user choosing to run the project's
// code.
const (
	// OnCd: on entering the folder or drawing a prompt (git status in a
	// prompt, direnv, mise, version managers a --version consults).
	OnCd Trigger = "on cd or at a prompt"
	// OnOpen: on opening the folder in an editor or IDE (tasks, language
	// servers).
	OnOpen Trigger = "on opening the folder in an editor"
	// OnCommit: on commit, checkout or merge (hooks and what they run).
	OnCommit Trigger = "on commit, checkout or merge"
	// OnAgent: on the next start of an agent CLI (its settings, hooks,
	// MCP servers, commands, skills, rules).
	OnAgent Trigger = "on the next agent CLI start"
	// Loosens: project settings that override the user's own (an
	// .npmrc that turns install scripts back on).
	Loosens Trigger = "loosens your own settings"
	// AtLogin: at login, in every shell, or when a common tool starts
	// (the home folder's startup files).
	AtLogin Trigger = "at login, in every shell or tool start"
)

// Refs says what in a file names other files a host program runs or
// reads: those are kept like the file itself.
type Refs uint8

// The kinds of Refs.
const (
	RefsNone    Refs = iota
	RefsShell        // ". FILE", "source FILE"
	RefsDirenv       // source_env, dotenv, PATH_add, layout, use nix/flake …
	RefsYarnrc       // yarnPath, plugins (.yarnrc.yml); yarn-path (.yarnrc)
	RefsRustup       // [toolchain] path (rust-toolchain.toml), a path (rust-toolchain)
	RefsBunfig       // preload
	RefsMise         // [env] _.source, _.file, _.path; [hooks]
	RefsToolVer      // path: versions (.tool-versions)
	RefsEntries      // entry: and run: commands (pre-commit, lefthook)
	RefsHgrc         // %include files, [extensions] paths, [hooks] commands (hg, sl)
)

// Harmless says when a control file that a run created may stay: its
// content is one that makes its program run nothing (a version pin that
// names a version, not a path). Any other new one is moved away after the
// run.
type Harmless uint8

// The kinds of Harmless.
const (
	HarmlessNever   Harmless = iota
	HarmlessVersion          // plain version names only
	HarmlessRustup           // no path
	HarmlessYarnrc           // no yarnPath, yarn-path or plugins
)

// Spec is one kind of path a host program runs or obeys, relative to a
// base folder: a project folder, the home folder, or an agent CLI's own
// folder.
type Spec struct {
	// Program is the host program: "git", "claude", "vscode", "shell".
	Program string
	// Trigger is the class of the entry.
	Trigger Trigger
	// Refs says how the files it names are found.
	Refs Refs
	// Harmless says which new ones may stay after the run.
	Harmless Harmless
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
	// Watch is true for a file that is not kept itself, because its
	// program asks again after any change (direnv's .envrc): only what it
	// names (Refs) is kept.
	Watch bool
}

// Rule names the spec as plan output shows it: "claude .claude/settings.json".
func (s Spec) Rule() string { return s.Program + " " + s.Path }

// projectRegistry is what host programs other than the agent CLIs run or
// obey in any folder of a project: editors and IDEs, what a prompt or an
// entered folder runs, hook managers, agent CLIs agentbox does not
// confine, and project settings that override the user's own. The agent
// CLIs agentbox knows add their own (provider.Provider.Control).
var projectRegistry = []Spec{
	// Editors and IDEs, on opening the folder.
	{Program: "vscode", Trigger: OnOpen, Path: ".vscode", Dir: true, Block: true, Why: "tasks.json tasks that run when the folder opens, settings.json naming programs (terminal profiles, formatters, linters; read again while VS Code runs), launch.json, mcp.json servers"},
	{Program: "jetbrains", Trigger: OnOpen, Path: ".idea", Dir: true, Block: true, Why: "run configurations and startup tasks (workspace.xml, runConfigurations/)"},
	{Program: "jetbrains", Trigger: OnOpen, Path: ".run", Dir: true, Why: "shared run configurations"},
	{Program: "fleet", Trigger: OnOpen, Path: ".fleet", Dir: true, Why: "run configurations (run.json) and settings"},
	{Program: "devcontainer", Trigger: OnOpen, Path: ".devcontainer", Dir: true, Why: "devcontainer.json initializeCommand runs on the host when the folder is opened in a container"},
	{Program: "devcontainer", Trigger: OnOpen, Path: ".devcontainer.json", Why: "initializeCommand runs on the host"},
	{Program: "zed", Trigger: OnOpen, Path: ".zed", Dir: true, Why: "settings.json (language servers, formatters, context servers the agent panel starts) and tasks.json"},
	{Program: "helix", Trigger: OnOpen, Path: ".helix", Dir: true, Why: "languages.toml names the language servers and formatters it starts"},
	{Program: "neovim", Trigger: OnOpen, Path: ".nvim.lua", Why: "runs with 'exrc' set (once trusted by path and content)"},
	{Program: "neovim", Trigger: OnOpen, Path: ".nvimrc", Why: "runs with 'exrc' set"},
	{Program: "vim", Trigger: OnOpen, Path: ".exrc", Why: "runs with 'exrc' set"},
	{Program: "emacs", Trigger: OnOpen, Path: ".dir-locals.el", Why: "directory variables, eval: forms once marked safe"},
	{Program: "emacs", Trigger: OnOpen, Path: ".dir-locals-2.el", Why: "the same as .dir-locals.el"},
	{Program: "rust-analyzer", Trigger: OnOpen, Path: "rust-analyzer.toml", Why: "the commands rust-analyzer runs (cargo overrides, check commands)"},
	{Program: "cargo", Trigger: OnOpen, Path: ".cargo", Dir: true, Why: "config.toml: build.rustc-wrapper, target runners and [env] run by every cargo command, cargo metadata (what rust-analyzer runs when an editor opens the folder) included"},
	// On cd or at a prompt.
	{Program: "direnv", Trigger: OnCd, Path: ".envrc", Refs: RefsDirenv, Watch: true, Why: "direnv runs what it loads with no prompt: its allow covers .envrc alone"},
	{Program: "mise", Trigger: OnCd, Path: "mise.toml", Refs: RefsMise, Why: "hooks, tasks and env that mise runs on cd once the folder is trusted (by path, not content)"},
	{Program: "mise", Trigger: OnCd, Path: ".mise.toml", Refs: RefsMise, Why: "the same as mise.toml"},
	{Program: "mise", Trigger: OnCd, Path: "mise.local.toml", Refs: RefsMise, Why: "the same as mise.toml"},
	{Program: "mise", Trigger: OnCd, Path: ".mise.local.toml", Refs: RefsMise, Why: "the same as mise.toml"},
	{Program: "mise", Trigger: OnCd, Path: ".mise", Dir: true, Why: "mise configuration and tasks"},
	{Program: "mise", Trigger: OnCd, Path: ".rtx.toml", Refs: RefsMise, Why: "the same as mise.toml (its old name)"},
	{Program: "mise", Trigger: OnCd, Path: ".config/mise.toml", Refs: RefsMise, Why: "the same as mise.toml"},
	{Program: "mise", Trigger: OnCd, Path: ".config/mise", Dir: true, Why: "mise configuration (config.toml, conf.d)"},
	{Program: "asdf", Trigger: OnCd, Path: ".tool-versions", Refs: RefsToolVer, Harmless: HarmlessVersion, Why: "which tool asdf and mise run; a path: version runs a program from that folder"},
	{Program: "rustup", Trigger: OnCd, Path: "rust-toolchain.toml", Refs: RefsRustup, Harmless: HarmlessRustup, Why: "the toolchain every cargo and rustc runs (a prompt's rust module runs rustc --version on cd); path = runs a toolchain from that folder"},
	{Program: "rustup", Trigger: OnCd, Path: "rust-toolchain", Refs: RefsRustup, Harmless: HarmlessRustup, Why: "the same as rust-toolchain.toml"},
	{Program: "yarn", Trigger: OnCd, Path: ".yarnrc.yml", Refs: RefsYarnrc, Harmless: HarmlessYarnrc, Why: "yarnPath is the program every yarn command (yarn --version in a prompt) runs, plugins are code it loads"},
	{Program: "yarn", Trigger: OnCd, Path: ".yarnrc", Refs: RefsYarnrc, Harmless: HarmlessYarnrc, Why: "yarn-path is the program Yarn 1 runs instead of itself"},
	{Program: "pyenv", Trigger: OnCd, Path: ".python-version", Harmless: HarmlessVersion, Why: "the python pyenv's shims run; a name with a path in it leaves pyenv's folder"},
	{Program: "nvm", Trigger: OnCd, Path: ".nvmrc", Harmless: HarmlessVersion, Why: "the node nvm and fnm use"},
	{Program: "nodenv", Trigger: OnCd, Path: ".node-version", Harmless: HarmlessVersion, Why: "the node nodenv, fnm and volta use"},
	{Program: "rbenv", Trigger: OnCd, Path: ".ruby-version", Harmless: HarmlessVersion, Why: "the ruby rbenv and chruby use"},
	{Program: "goenv", Trigger: OnCd, Path: ".go-version", Harmless: HarmlessVersion, Why: "the go goenv uses"},
	{Program: "jenv", Trigger: OnCd, Path: ".java-version", Harmless: HarmlessVersion, Why: "the java jenv uses"},
	{Program: "sdkman", Trigger: OnCd, Path: ".sdkmanrc", Harmless: HarmlessVersion, Why: "the SDKs sdk env uses"},
	// Version-control systems other than git (whose repositories have
	// rules of their own): what their next command, a prompt's status
	// included, obeys in a checkout, wherever the checkout lies.
	{Program: "hg", Trigger: OnCd, Path: ".hg/hgrc", Refs: RefsHgrc, Why: "[hooks] and [extensions] every hg command runs (hg status in a prompt); %include reads more files"},
	{Program: "hg", Trigger: OnCd, Path: ".hg/hgrc-not-shared", Refs: RefsHgrc, Why: "read like .hg/hgrc in a repository that shares its store"},
	{Program: "hg", Trigger: OnCd, Path: ".hg/sharedpath", Why: "points hg at another repository's store and, with share-safe, at its hgrc"},
	{Program: "sapling", Trigger: OnCd, Path: ".sl/config", Refs: RefsHgrc, Why: "[hooks] and [extensions] every sl command runs; %include reads more files"},
	{Program: "sapling", Trigger: OnCd, Path: ".sl/hgrc", Refs: RefsHgrc, Why: "the same as .sl/config"},
	{Program: "sapling", Trigger: OnCd, Path: ".sl/sharedpath", Why: "points sl at another repository's store and config"},
	{Program: "jj", Trigger: OnCd, Path: ".jj/repo/config.toml", Why: "aliases, ui.pager, ui.editor, ui.diff.tool, merge tools and fix tools: programs jj runs"},
	{Program: "jj", Trigger: OnCd, Path: ".jj/repo/store/git_target", Why: "the git repository jj reads, whose config git obeys when jj runs it"},
	{Program: "bazaar", Trigger: OnCd, Path: ".bzr/branch/branch.conf", Why: "the branch's configuration: hooks, push and bound locations"},
	{Program: "bazaar", Trigger: OnCd, Path: ".bzr/branch/location", Why: "a lightweight checkout's branch: where bzr and brz read the branch.conf they obey"},
	{Program: "fossil", Trigger: OnCd, Path: ".fslckout", Why: "the checkout database names the repository whose settings (ssh-command, diff-command, editor, th1-setup) fossil obeys; kept read-only, so fossil commands that write it fail in the box"},
	{Program: "fossil", Trigger: OnCd, Path: "_FOSSIL_", Why: "the same as .fslckout (its older name)"},
	{Program: "fossil", Trigger: OnCd, Path: ".fossil-settings", Dir: true, Why: "versioned settings fossil obeys in this checkout"},
	// Hook managers, on commit, checkout and merge (the files a manager
	// reads when the installed hooks call it are also blocked at the top
	// of a project: hookManagers).
	{Program: "lefthook", Trigger: OnCommit, Path: ".lefthook", Dir: true, Why: "scripts lefthook runs from its hooks"},
	{Program: "lefthook", Trigger: OnCommit, Path: ".lefthook-local", Dir: true, Why: "the same, per user"},
	{Program: "overcommit", Trigger: OnCommit, Path: ".git-hooks", Dir: true, Why: "overcommit's own hooks in the repository"},
	// Agent CLIs agentbox does not confine, on their next start.
	{Program: "gemini", Trigger: OnAgent, Path: ".gemini", Dir: true, Why: "settings.json: MCP servers it starts, hooks, tool settings"},
	{Program: "cursor", Trigger: OnAgent, Path: ".cursor", Dir: true, Why: "mcp.json servers it starts, hooks.json, rules"},
	{Program: "cursor", Trigger: OnAgent, Path: ".cursorrules", Why: "rules loaded into every session"},
	{Program: "aider", Trigger: OnAgent, Path: ".aider.conf.yml", Why: "lint-cmd and test-cmd are commands aider runs"},
	{Program: "aider", Trigger: OnAgent, Path: ".aider.model.settings.yml", Why: "model settings it loads"},
	{Program: "continue", Trigger: OnAgent, Path: ".continue", Dir: true, Why: "config.yaml and mcpServers it starts"},
	{Program: "continue", Trigger: OnAgent, Path: ".continuerc.json", Why: "the same"},
	{Program: "cline", Trigger: OnAgent, Path: ".clinerules", Dir: true, Why: "rules and workflows Cline loads"},
	{Program: "roo", Trigger: OnAgent, Path: ".roo", Dir: true, Why: "rules, modes and MCP servers Roo Code loads"},
	{Program: "roo", Trigger: OnAgent, Path: ".roomodes", Why: "modes Roo Code loads (with their tool groups)"},
	{Program: "roo", Trigger: OnAgent, Path: ".roorules", Why: "rules Roo Code loads"},
	{Program: "kiro", Trigger: OnAgent, Path: ".kiro", Dir: true, Why: "hooks it runs on file events, steering, MCP settings"},
	{Program: "windsurf", Trigger: OnAgent, Path: ".windsurf", Dir: true, Why: "rules and workflows, MCP settings"},
	{Program: "windsurf", Trigger: OnAgent, Path: ".windsurfrules", Why: "rules loaded into every session"},
	{Program: "amazonq", Trigger: OnAgent, Path: ".amazonq", Dir: true, Why: "rules and mcp.json servers"},
	{Program: "junie", Trigger: OnAgent, Path: ".junie", Dir: true, Why: "guidelines and MCP settings"},
	// Project settings that override the user's own.
	{Program: "npm", Trigger: Loosens, Path: ".npmrc", Why: "overrides ~/.npmrc: ignore-scripts, script-shell, node-options, git, registry"},
	{Program: "bun", Trigger: Loosens, Path: "bunfig.toml", Refs: RefsBunfig, Why: "preload scripts bun runs before every script and test"},
	{Program: "maven", Trigger: Loosens, Path: ".mvn", Dir: true, Why: "extensions.xml (code Maven loads), jvm.config and maven.config (flags of every mvn), the wrapper's download URL"},
	{Program: "gradle", Trigger: Loosens, Path: "gradle/wrapper/gradle-wrapper.properties", Why: "distributionUrl: the Gradle every ./gradlew downloads and runs"},
	{Program: "pip", Trigger: Loosens, Path: "pip.conf", Why: "a virtual environment's pip.conf: where pip installs from"},
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
	{Program: "mise", Path: ".local/share/mise", Dir: true, Why: "mise's installed tools and shims, on PATH"},
	{Program: "asdf", Path: ".asdf", Dir: true, Why: "asdf's installed tools and shims, on PATH; asdf.sh is sourced"},
	{Program: "asdf", Path: ".tool-versions", Why: "asdf's global versions"},
	{Program: "nvm", Path: ".nvm", Dir: true, Why: "nvm.sh is sourced by the shell; its node versions are on PATH"},
	{Program: "pyenv", Path: ".pyenv", Dir: true, Why: "pyenv's shims and versions, on PATH"},
	{Program: "rbenv", Path: ".rbenv", Dir: true, Why: "rbenv's shims and versions, on PATH"},
	{Program: "volta", Path: ".volta", Dir: true, Why: "volta's shims, on PATH"},
	{Program: "bun", Path: ".bun/bin", Dir: true, Why: "on PATH for bun users"},
	{Program: "bun", Path: ".bunfig.toml", Why: "bun's global preload scripts"},
	{Program: "deno", Path: ".deno/bin", Dir: true, Why: "on PATH for deno users"},
	{Program: "rustup", Path: ".rustup", Dir: true, Why: "the toolchains every cargo and rustc runs"},
	{Program: "sdkman", Path: ".sdkman", Dir: true, Why: "sdkman-init.sh is sourced; its SDKs are on PATH"},
	{Program: "yarn", Path: ".yarnrc.yml", Why: "yarnPath and plugins for every project"},
	{Program: "yarn", Path: ".yarnrc", Why: "yarn-path for every project"},
	{Program: "gradle", Path: ".gradle/init.d", Dir: true, Why: "init scripts every gradle build runs"},
	{Program: "gradle", Path: ".gradle/init.gradle", Why: "an init script every gradle build runs"},
	{Program: "gradle", Path: ".gradle/init.gradle.kts", Why: "an init script every gradle build runs"},
	{Program: "gradle", Path: ".gradle/gradle.properties", Why: "org.gradle.jvmargs of every build"},
	{Program: "maven", Path: ".mavenrc", Why: "the mvn script sources it"},
	{Program: "maven", Path: ".m2/settings.xml", Why: "mirrors and profiles of every build"},
	{Program: "starship", Path: ".config/starship.toml", Why: "custom prompt modules run commands at every prompt"},
	{Program: "zsh", Path: ".oh-my-zsh", Dir: true, Why: "oh-my-zsh and its plugins run in every zsh"},
	{Program: "zsh", Path: ".zsh", Dir: true, Why: "plugins the zsh startup files source"},
	{Program: "zsh", Path: ".config/zsh", Dir: true, Why: "zsh startup files (ZDOTDIR)"},
	{Program: "zsh", Path: ".p10k.zsh", Sources: true, Why: "powerlevel10k's configuration, sourced by .zshrc"},
	{Program: "shell", Path: ".fzf.bash", Sources: true, Why: "sourced by .bashrc"},
	{Program: "shell", Path: ".fzf.zsh", Sources: true, Why: "sourced by .zshrc"},
	{Program: "nushell", Path: ".config/nushell", Dir: true, Why: "nushell's config and env run at start"},
	{Program: "powershell", Path: ".config/powershell", Dir: true, Why: "the PowerShell profile runs at start"},
	{Program: "tmux", Path: ".tmux", Dir: true, Why: "tmux plugins run at start"},
	{Program: "gemini", Path: ".gemini", Dir: true, Why: "Gemini CLI's settings: MCP servers, hooks"},
	{Program: "aider", Path: ".aider.conf.yml", Why: "lint-cmd and test-cmd aider runs"},
	{Program: "continue", Path: ".continue", Dir: true, Why: "Continue's config and MCP servers"},
	{Program: "kiro", Path: ".kiro", Dir: true, Why: "Kiro's settings, hooks and MCP servers"},
	{Program: "windsurf", Path: ".codeium", Dir: true, Why: "Windsurf's settings and MCP servers"},
	{Program: "zed", Path: ".config/zed", Dir: true, Why: "Zed's settings: language servers, context servers, tasks"},
	{Program: "helix", Path: ".config/helix", Dir: true, Why: "Helix's languages.toml: language servers it starts"},
	{Program: "amazonq", Path: ".aws/amazonq", Dir: true, Why: "Amazon Q's MCP servers and rules"},
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
	{"lefthook", lefthookFiles()},
	{"simple-git-hooks", []string{".simple-git-hooks.json", ".simple-git-hooks.js", ".simple-git-hooks.cjs", ".simple-git-hooks.mjs",
		"simple-git-hooks.json", "simple-git-hooks.js", "simple-git-hooks.cjs", "simple-git-hooks.mjs"}},
	{"overcommit", []string{".overcommit.yml"}},
}

// lefthookFiles are every configuration file lefthook reads at the top of
// a work tree: lefthook, .lefthook, .config/lefthook, each also -local,
// in YAML, TOML and JSON.
func lefthookFiles() []string {
	var out []string
	for _, base := range []string{"lefthook", ".lefthook", ".config/lefthook"} {
		for _, local := range []string{"", "-local"} {
			for _, ext := range []string{".yml", ".yaml", ".toml", ".json"} {
				out = append(out, base+local+ext)
			}
		}
	}
	return out
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
			out = append(out, Spec{Program: p.Name, Trigger: OnAgent, Path: c, Dir: isDirSpec(c), Block: block, Why: p.Title + " obeys it in a project"})
		}
	}
	for _, s := range projectRegistry {
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
		out = append(out, Spec{Program: p.Name, Trigger: OnAgent, Path: c, Dir: isDirSpec(c), Managed: managed, Why: p.Title + " obeys it in every project"})
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

// systemFolders are where the host keeps programs and the configuration
// of system services: writing there is writing what the host runs
// (cron tables, systemd units, profile.d scripts, PATH).
var systemFolders = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/boot",
	"/var/lib", "/var/spool", "/var/db", "/snap", "/run", "/var/run", "/srv/git"}

// Risky reports whether letting the box write p (absolute, clean) would
// let it change something a host program runs or obeys later, and why:
// a system folder, the home folder or a folder holding it, an entry of
// the home folder's registry (or a folder within or holding one), or a
// path through a folder a project entry names (.git, .vscode, .claude,
// .envrc …). It reads the same registry every run keeps safe, so `learn`
// and `trust` never call safe what a run protects.
func Risky(home string, providers []provider.Provider, p string) (bool, string) {
	for _, sys := range systemFolders {
		if within(p, sys) || within(sys, p) {
			return true, p + " is a system folder: the host runs programs and reads configuration from it"
		}
	}
	if home != "" && within(home, p) {
		return true, p + " holds your whole home folder"
	}
	if home != "" && within(p, home) {
		rel := p[len(home)+1:]
		specs := append(slices.Clone(homeSpecs), providerHomeSpecs(providers)...)
		for _, s := range specs {
			if rel == s.Path || strings.HasPrefix(rel, s.Path+"/") || strings.HasPrefix(s.Path, rel+"/") {
				why := s.Why
				if why == "" {
					why = s.Program + " obeys it"
				}
				return true, "~/" + s.Path + ": " + why
			}
		}
	}
	// Project entries, wherever they are: p goes through one (a folder
	// of that name, or the whole nested path).
	specs := append(projectSpecs(providers), Spec{Program: "git", Path: ".git", Why: "git runs its hooks and obeys its config"})
	for _, m := range hookManagers {
		for _, f := range m.Files {
			specs = append(specs, Spec{Program: m.Mark, Path: f, Why: "the installed git hooks run what it says"})
		}
	}
	for _, s := range specs {
		if strings.Contains(p+"/", "/"+s.Path+"/") {
			return true, s.Path + ": " + s.Program + " — " + s.Why
		}
	}
	return false, ""
}

// providerHomeSpecs are the agent CLIs' own folders, as home entries.
func providerHomeSpecs(providers []provider.Provider) []Spec {
	var out []Spec
	for _, p := range providers {
		if strings.HasPrefix(p.Home, "~/") {
			out = append(out, Spec{Program: p.Name, Path: p.Home[2:], Why: p.Title + " obeys its settings and runs its hooks"})
		}
		if strings.HasPrefix(p.Config, "~/") {
			out = append(out, Spec{Program: p.Name, Path: p.Config[2:], Why: p.Title + "'s settings and MCP servers"})
		}
	}
	return out
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
