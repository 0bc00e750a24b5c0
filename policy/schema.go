package policy

// Schema is policy file version 1 as SPEC describes it. Decoding is strict:
// a key that is not a field here is an error naming the file, line and key.
type Schema struct {
	Version    int                           `toml:"version"`
	Sandbox    SandboxSchema                 `toml:"sandbox"`
	Filesystem FilesystemSchema              `toml:"filesystem"`
	Workspace  WorkspaceSchema               `toml:"workspace"`
	Tmp        TmpSchema                     `toml:"tmp"`
	Network    NetworkSchema                 `toml:"network"`
	Env        EnvSchema                     `toml:"env"`
	Limits     LimitsSchema                  `toml:"limits"`
	Seccomp    SeccompSchema                 `toml:"seccomp"`
	Provider   ProviderSchema                `toml:"provider"`
	Providers  map[string]ProviderDeclSchema `toml:"providers"`
	Log        LogSchema                     `toml:"log"`
	Notice     NoticeSchema                  `toml:"notice"`
	// Caches chooses, per tool ("npm", "go", …, or "default" for every
	// tool not named), how the box gets its package and build caches:
	// "private", "host-read-only", "host-writable" or "off".
	Caches map[string]string `toml:"caches"`
}

// SandboxSchema is the [sandbox] table.
type SandboxSchema struct {
	Enforce string `toml:"enforce"`
	Backend string `toml:"backend"`
	// ProjectMayLoosen lets a trusted project policy set enforce and
	// backend looser than the user's own; only the user's files may set it.
	ProjectMayLoosen bool `toml:"project_may_loosen"`
}

// FilesystemSchema is the [filesystem] table.
type FilesystemSchema struct {
	Writable  []string `toml:"writable"`
	ReadOnly  []string `toml:"read_only"`
	Deny      []string `toml:"deny"`
	ScanLimit int64    `toml:"scan_limit"`
	// ProtectDepth is gone: repositories and control files are found at
	// any depth. It is still read, so a policy that sets it gets an error
	// that says so instead of "unknown key".
	ProtectDepth *int `toml:"protect_depth"`
	// SSHKeys is "hidden" (the default: every file in ~/.ssh but config,
	// known_hosts, authorized_keys and *.pub is hidden) or "visible".
	SSHKeys string `toml:"ssh_keys"`
}

// WorkspaceSchema is the [workspace] table.
type WorkspaceSchema struct {
	Root string `toml:"root"`
	ID   string `toml:"id"`
	Task string `toml:"task"`
}

// TmpSchema is the [tmp] table.
type TmpSchema struct {
	Mode string `toml:"mode"`
}

// NetworkSchema is the [network] table.
type NetworkSchema struct {
	Mode  string   `toml:"mode"`
	Allow []string `toml:"allow"`
	Deny  []string `toml:"deny"`
	// UnixSockets are the host's unix sockets the box may use.
	UnixSockets []string `toml:"unix_sockets"`
	// Upstream is "http://[user:pass@]host:port": the proxy allowed
	// hosts are reached through; "none" to connect directly whatever
	// HTTPS_PROXY says.
	Upstream string `toml:"upstream"`
	// Publish are "PORT", "PORT:BOXPORT" or "ADDR:PORT:BOXPORT".
	Publish []string `toml:"publish"`
	// Secret are the [[network.secret]] tables.
	Secret []SecretSchema `toml:"secret"`
}

// SecretSchema is one [[network.secret]] table: the box sees a per-run
// placeholder in Env, and the proxy puts the real value (from agentbox's
// own environment, or File) in its place on TLS connections to Hosts.
type SecretSchema struct {
	Env   string   `toml:"env"`
	File  string   `toml:"file"`
	Hosts []string `toml:"hosts"`
}

// EnvSchema is the [env] table.
type EnvSchema struct {
	Mode string            `toml:"mode"`
	Pass []string          `toml:"pass"`
	Deny []string          `toml:"deny"`
	Set  map[string]string `toml:"set"`
}

// LimitsSchema is the [limits] table.
type LimitsSchema struct {
	Processes int64  `toml:"processes"`
	OpenFiles int64  `toml:"open_files"`
	Memory    string `toml:"memory"`
	CPUTime   string `toml:"cpu_time"`
	FileSize  string `toml:"file_size"`
}

// SeccompSchema is the [seccomp] table.
type SeccompSchema struct {
	Allow []string `toml:"allow"`
}

// ProviderSchema is the [provider] table.
type ProviderSchema struct {
	Name string `toml:"name"`
}

// ProviderDeclSchema is one [providers.NAME] table.
type ProviderDeclSchema struct {
	Commands []string `toml:"commands"`
	Writable []string `toml:"writable"`
	Sandbox  bool     `toml:"sandbox"`
}

// LogSchema is the [log] table: whether runs are recorded in the audit log,
// and whether what the box is refused on the filesystem is recorded there.
type LogSchema struct {
	Enabled bool `toml:"enabled"`
	// Filesystem is true (the preloaded log, the default), false, or
	// "complete" (the seccomp log, which sees static programs too);
	// Parse checks which.
	Filesystem      any  `toml:"filesystem"`
	FilesystemReads bool `toml:"filesystem_reads"`
}

// NoticeSchema is the [notice] table: how often agentbox's notices are
// shown. They say what the run gets, never what it is refused: errors,
// and the warning of a run that is not confined at all, are always shown.
type NoticeSchema struct {
	// Backend is "once" (the default: once per project, until what it
	// says changes), "always" or "never", for the one line a confined run
	// prints when Landlock confines it because bwrap cannot, or when its
	// backend enforces rules weaker than the policy asks.
	Backend string `toml:"backend"`
}
