package provider

// The built-in registry. A provider is Supported only after a real run of
// the CLI inside bubblewrap showed that its Writable paths are enough; how,
// with which version and on what date is written above each entry and in
// VERIFIED.md, and scripts/verify-providers.sh repeats the check.
//
// Writable paths start with "~/" (the home folder). Control paths are
// relative to a project folder and ReadOnly paths to the CLI's own folder
// (Home): they are the files through which a CLI runs commands or widens its
// own permissions (settings with hooks, the hook scripts, MCP servers,
// permission and approval rules, commands, agents, skills and plugins that
// grant tools), so an agent that could edit them could loosen its sandbox or
// plant code that runs unconfined the next time the CLI starts outside
// agentbox. Package hostexec keeps them safe for every command, not only
// for the CLI's own, in every folder of every writable root. Project
// instruction files (CLAUDE.md, AGENTS.md) are prompts the CLIs write
// themselves (/init, memories) and stay writable; the user-level ones apply
// to every project and are kept. Domains are the hosts the CLI needs to work
// in allowlist mode, taken from the installed package; telemetry hosts are
// left out.
func init() {
	builtin = []Provider{
		// claude: verified with @anthropic-ai/claude-code 2.1.197 (native linux-x64
		// binary) on 2026-12-02, as root and as an unprivileged user, each with a
		// new and then an existing home: strace of every step unconfined, then
		// scripts/verify-providers.sh (bwrap 0.8.0, read-only /, private /tmp,
		// only the workspace and ~/.claude writable). See VERIFIED.md.
		//
		// ~/.claude alone is enough only when CLAUDE_CONFIG_DIR=~/.claude is set
		// inside the box: by default Claude Code also rewrites ~/.claude.json by
		// creating ~/.claude.json.tmp.<pid>.<hex> and ~/.claude.json.lock next to
		// it in the home folder, which a bind of the file alone cannot allow; the
		// writes then fail without any message and the state is lost.
		{
			Name:      "claude",
			Title:     "Claude Code",
			Commands:  []string{"claude"},
			Packages:  []string{"@anthropic-ai/claude-code"},
			Supported: true,
			Writable:  []string{"~/.claude"},
			// Without CLAUDE_CONFIG_DIR, Claude Code rewrites ~/.claude.json
			// through a temporary file and a lock beside it in the home
			// folder, which a bind of the file alone cannot allow.
			HomeVar:    "CLAUDE_CONFIG_DIR",
			Keys:       []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
			SetHomeVar: true,
			// The user's state (login, onboarding, trusted projects, MCP
			// servers) is in ~/.claude.json; with CLAUDE_CONFIG_DIR set,
			// Claude Code reads ~/.claude/.claude.json instead, which the
			// box keeps as a merged copy (provider.Sync).
			Config: "~/.claude.json",
			// Claude Code 2.1.197 refuses --dangerously-skip-permissions as
			// root unless IS_SANDBOX=1 (or CLAUDE_CODE_BUBBLEWRAP) says it
			// runs in a sandbox (its isRootOutsideDeliberateSandbox check);
			// IS_SANDBOX=1 also keeps it from forcing its own sandbox.
			SandboxEnv: []string{"IS_SANDBOX=1"},
			// Hooks in settings.json, the scripts in hooks/ and plugins run
			// when Claude Code starts, also outside the box; agents, skills,
			// commands, rules and output styles steer every session.
			Home:    "~/.claude",
			Managed: []string{"plugins"},
			// What Claude Code 2.1.197 writes in its folder in its work
			// (turns with -p and interactive sessions, its own strings):
			// everything else there is kept (.config.json, which it
			// reads in place of ~/.claude.json; local/, its local
			// install's launcher; remote-settings.json and
			// policy-limits.json, settings it obeys; chrome/, a native
			// messaging host; keybindings.json, teams/, jobs/).
			Allow: []string{
				".claude.json", ".claude.json.*", ".credentials.json", ".credentials.json.*",
				"backups", "projects", "sessions", "session-env", "shell-snapshots",
				"todos", "tasks", "plans", "file-history", "history.jsonl",
				"statsig", "debug", "ide", "cache", "paste-cache", "image-cache",
				"telemetry", "usage-data", "uploads", "stats-cache.json",
				"mcp-needs-auth-cache.json",
			},
			ReadOnly: []string{
				"settings.json", "settings.local.json", "hooks", "plugins",
				"commands", "agents", "skills", "rules", "workflows",
				"output-styles", "CLAUDE.md",
			},
			Control: []string{
				".claude/settings.json",       // hooks, permissions, statusLine, apiKeyHelper, env
				".claude/settings.local.json", // the same, per user
				".claude/commands",            // slash commands; allowed-tools widens permissions
				".claude/agents",              // subagents; tools and hooks in front matter
				".claude/skills",              // skills; scripts and allowed-tools
				".claude/hooks",               // where hook scripts live by convention
				".claude/rules",               // rules loaded into every session
				".claude/workflows",           // workflows it runs
				".claude/output-styles",       // system prompt replacements
				".mcp.json",                   // project MCP servers are commands it starts
			},
			CommandFiles: []CommandFile{
				{Path: "settings.json", User: true, Format: "json", Keys: claudeCommandKeys},
				{Path: "settings.local.json", User: true, Format: "json", Keys: claudeCommandKeys},
				{Path: ".claude/settings.json", Format: "json", Keys: claudeCommandKeys},
				{Path: ".claude/settings.local.json", Format: "json", Keys: claudeCommandKeys},
				{Path: ".mcp.json", Format: "json", Keys: []string{"mcpServers"}},
			},
			Domains: []string{
				"api.anthropic.com",       // API, OAuth profile, event logging
				"platform.claude.com",     // console OAuth login and token refresh
				"claude.ai",               // claude.ai subscription login
				"claude.com",              // claude.com/cai/oauth/authorize
				"mcp-proxy.anthropic.com", // claude.ai connectors
				"downloads.claude.ai",     // releases and plugins
				"registry.npmjs.org",      // update check (claude doctor, auto-update)
			},
		},
		// codex: verified with @openai/codex 0.171.0 (native x86_64 musl binary)
		// on 2026-12-02, as root and as an unprivileged user, each with a new and
		// then an existing home: strace of every step unconfined, then
		// scripts/verify-providers.sh (bwrap 0.8.0, read-only /, private /tmp,
		// only the workspace and ~/.codex writable). See VERIFIED.md.
		//
		// ~/.codex must exist before it is bound (Codex creates it itself only
		// when the home folder is writable). Codex also opens anonymous
		// O_TMPFILE files in /var/tmp unless TMPDIR is set; agentbox sets
		// TMPDIR=/tmp. Confined, Codex's own sandbox is turned off with
		// --sandbox danger-full-access (see VERIFIED.md for the rule).
		{
			Name:      "codex",
			Title:     "Codex CLI",
			Commands:  []string{"codex"},
			Packages:  []string{"@openai/codex"},
			Supported: true,
			Writable:  []string{"~/.codex"},
			HomeVar:   "CODEX_HOME",
			Keys:      []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
			// Checked against Codex 0.171.0 (VERIFIED.md): -s placed first
			// is accepted by every subcommand, and given twice is an error,
			// so a mode the user chose is kept.
			InnerSandbox: &InnerSandbox{
				Off:         []string{"--sandbox", "danger-full-access"},
				Command:     "codex",
				Subcommand:  "sandbox",
				Flags:       []string{"-s", "--sandbox", "--sandbox=", "--dangerously-bypass-approvals-and-sandbox", "--yolo", "--approve-for-me"},
				ShortFlag:   "-s",
				Profile:     []string{"-p", "--profile"},
				Config:      []string{"-c", "--config"},
				ConfigKey:   "sandbox_mode",
				ConfigFiles: []string{"~/config.toml", "/etc/codex/config.toml", ".codex/config.toml"},
			},
			// config.toml holds sandbox_mode, the notify program and the MCP
			// servers' commands; hooks.json and hooks/ its hooks; rules/
			// approves commands without asking; packages holds the
			// app-server binary Codex copies and runs (it keeps running
			// after Codex exits, unconfined). A missing skills/ is blocked
			// for the run like the rest: Codex 0.171 unpacks its bundled
			// skills there at every start when they are missing, and starts
			// and works when it cannot (verified with an empty read-only
			// folder); what it unpacks outside the box is then kept.
			Home:    "~/.codex",
			Managed: []string{"packages", "plugins"},
			// What Codex 0.171.0 writes in its folder in its work: its
			// databases, sessions, logs, login and caches. Everything
			// else there is kept: .env, which it loads at every start
			// (PATH, OPENAI_BASE_URL, LD_PRELOAD, BASH_ENV), bin/, what
			// it names, memories/.
			Allow: []string{
				"auth.json", "history.jsonl", "sessions", "archived_sessions",
				"shell_snapshots", "log", "tmp", "thread-writer-locks",
				"installation_id", "version.json", "models_cache.json",
				".sandbox_migration", "*.sqlite", "*.sqlite-wal", "*.sqlite-shm",
				"*.sqlite-journal", "cache",
			},
			ReadOnly: []string{
				"config.toml", "hooks.json", "hooks", "rules", "skills", "prompts",
				"plugins", "agents", "packages", "AGENTS.md", "AGENTS.override.md",
			},
			Control: []string{
				".codex",  // project config.toml (sandbox_mode, MCP servers, hooks), rules, skills
				".agents", // skills and plugins
			},
			CommandFiles: []CommandFile{
				{Path: "config.toml", User: true, Format: "toml", Keys: []string{"notify", "mcp_servers", "hooks"}},
				{Path: "hooks.json", User: true, Format: "json", Keys: []string{"hooks"}},
				{Path: ".codex/config.toml", Format: "toml", Keys: []string{"notify", "mcp_servers", "hooks"}},
			},
			Domains: []string{
				"api.openai.com",     // API key auth: Responses API
				"chatgpt.com",        // ChatGPT login: backend-api/codex
				"auth.openai.com",    // ChatGPT login and token refresh
				"registry.npmjs.org", // update check
			},
		},
		// The CLIs below are not verified inside the box, but their control
		// files are kept all the same: any command may write them.
		{Name: "kimi", Title: "Kimi Code", Commands: []string{"kimi", "kimi-code"},
			Home:         "~/.kimi", // config.toml with [[hooks]] and MCP servers
			ReadOnly:     []string{"config.toml", "config.json", "mcp.json", "skills", "agents", "AGENTS.md"},
			Control:      []string{".kimi"},
			CommandFiles: []CommandFile{{Path: "config.toml", User: true, Format: "toml", Keys: []string{"hooks", "mcp"}}},
		},
		{Name: "opencode", Title: "OpenCode", Commands: []string{"opencode"}, Packages: []string{"opencode-ai"},
			Home:     "~/.config/opencode", // opencode.json (MCP servers, plugins), plugin/ (code it loads)
			ReadOnly: []string{"opencode.json", "opencode.jsonc", "config.json", "plugin", "plugins", "agent", "agents", "command", "commands", "AGENTS.md"},
			Control:  []string{"opencode.json", "opencode.jsonc", ".opencode"},
		},
		{Name: "mimo", Title: "MiMo Code", Commands: []string{"mimo", "mimo-code"},
			Home: "~/.mimo", ReadOnly: []string{"config.toml", "config.json", "settings.json", "hooks", "skills", "AGENTS.md"},
			Control: []string{".mimo"},
		},
		{Name: "hermes", Title: "Hermes", Commands: []string{"hermes"},
			Home:     "~/.hermes", // config.yaml (MCP servers, terminal backend), skills, plugins
			ReadOnly: []string{"config.yaml", "skills", "plugins", "hooks", "SOUL.md"},
			Control:  []string{".hermes"},
		},
		{Name: "pi", Title: "Pi", Commands: []string{"pi"},
			Home:     "~/.pi/agent", // settings.json (packages), extensions/ (code it loads), mcp.json
			ReadOnly: []string{"settings.json", "mcp.json", "extensions", "skills", "prompts", "themes", "AGENTS.md", "AGENTS.override.md", "SYSTEM.md"},
			Control:  []string{".pi"},
		},
	}
}

// claudeCommandKeys are the settings keys of Claude Code whose strings are
// commands it runs: hooks, the status line, credential helpers.
var claudeCommandKeys = []string{"hooks", "statusLine", "apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "otelHeadersHelper", "fileSuggestion", "mcpServers"}
