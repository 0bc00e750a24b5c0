package policy

// Starter is the commented policy `agentbox init` writes.
const Starter = `# agentbox policy for this project. Relative paths are relative to this file.
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
mode = "open"              # "none" cuts the network (loopback only); "allowlist" lets through only allow
# allow = ["api.anthropic.com", "GET github.com/org/*"]  # allowlist: hosts, and requests by method and path
# publish = ["3000"]       # the host's 127.0.0.1:3000 reaches a server on the box's port 3000
# upstream = "http://proxy.corp:3128"  # allowlist behind a corporate proxy (default: HTTPS_PROXY)

# The box holds a placeholder; the proxy puts the real key in, on TLS to these hosts only (allowlist).
# [[network.secret]]
# env   = "ANTHROPIC_API_KEY"
# hosts = ["api.anthropic.com"]
# The host's unix sockets the box may use (none by default), e.g. your
# ssh-agent for git over SSH: unix_sockets = ["$SSH_AUTH_SOCK"]

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
