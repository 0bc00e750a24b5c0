package provider

// The built-in registry. Issue 3 fills the paths of each provider from real
// runs; until a provider is verified it is listed with Supported false.
func init() {
	builtin = []Provider{
		{Name: "claude", Title: "Claude Code", Commands: []string{"claude"}, Packages: []string{"@anthropic-ai/claude-code"}},
		{Name: "codex", Title: "Codex CLI", Commands: []string{"codex"}, Packages: []string{"@openai/codex"}},
		{Name: "kimi", Title: "Kimi Code", Commands: []string{"kimi", "kimi-code"}},
		{Name: "opencode", Title: "OpenCode", Commands: []string{"opencode"}, Packages: []string{"opencode-ai"}},
		{Name: "mimo", Title: "MiMo Code", Commands: []string{"mimo", "mimo-code"}},
		{Name: "hermes", Title: "Hermes", Commands: []string{"hermes"}},
		{Name: "pi", Title: "Pi", Commands: []string{"pi"}},
	}
}
