package plan

import (
	"fmt"
	"strings"
)

// Access is what the sandboxed process may do with a path.
type Access string

// The three kinds of access a mount grants.
const (
	ReadOnly  Access = "read-only"
	ReadWrite Access = "read-write"
	Hidden    Access = "hidden"
)

// Op is one mount operation, named after bubblewrap's own vocabulary.
type Op string

// Mount operations, applied in order; later ones cover earlier ones.
const (
	// ROBind binds Source read-only at Path.
	ROBind Op = "ro-bind"
	// Bind binds Source read-write at Path.
	Bind Op = "bind"
	// Dev mounts a fresh minimal /dev.
	Dev Op = "dev"
	// Proc mounts a fresh procfs for the new PID namespace.
	Proc Op = "proc"
	// Tmpfs mounts an empty, writable tmpfs at Path.
	Tmpfs Op = "tmpfs"
	// RemountRO makes the mount at Path read-only (not recursively).
	RemountRO Op = "remount-ro"
	// HideDir puts an empty, read-only directory over the folder at Path.
	HideDir Op = "hide-dir"
	// HideFile puts an empty, read-only file over the file at Path.
	HideFile Op = "hide-file"
	// Pin keeps the folder at Path where it is: it cannot be renamed,
	// replaced or removed, while what is in it stays as writable as
	// before. Folders that hold a read-only path are pinned, so the path
	// cannot be moved away wholesale with its parent.
	Pin Op = "pin"
)

// Stage is one of SPEC's seven resolution stages; mounts are ordered by it.
type Stage int

// The stages of SPEC "Resolution order", in the order they are applied.
const (
	StageRoot      Stage = 1 // read-only root, /dev, /proc, namespaces
	StageTmp       Stage = 2 // /tmp per the tmp mode
	StageWorkspace Stage = 3 // workspace masking and re-binding
	StageWritable  Stage = 4 // writable roots
	StageReadOnly  Stage = 5 // read-only roots and always-read-only paths
	StageDeny      Stage = 6 // deny list
	StageChdir     Stage = 7 // working directory
)

// String names the stage as plan output shows it.
func (s Stage) String() string {
	switch s {
	case StageRoot:
		return "root"
	case StageTmp:
		return "tmp"
	case StageWorkspace:
		return "workspace"
	case StageWritable:
		return "writable"
	case StageReadOnly:
		return "read-only"
	case StageDeny:
		return "deny"
	case StageChdir:
		return "chdir"
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// Origin says which rule asked for something: a policy file, line and key,
// or a named source such as "default", "flag --writable" or "provider claude".
type Origin struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Key  string `json:"key"`
}

// String renders the origin as "file:line key", "file key" or "key".
func (o Origin) String() string {
	switch {
	case o.File != "" && o.Line > 0:
		return fmt.Sprintf("%s:%d %s", o.File, o.Line, o.Key)
	case o.File != "":
		return o.File + " " + o.Key
	}
	return o.Key
}

// Mount is one entry of the ordered mount list.
type Mount struct {
	Stage  Stage  `json:"stage"`
	Op     Op     `json:"op"`
	Source string `json:"source,omitempty"` // host path for binds; empty means Path
	Path   string `json:"path"`             // absolute path inside the sandbox
	Access Access `json:"access"`
	Origin Origin `json:"origin"`
	Note   string `json:"note,omitempty"`
	// Sockets marks a mount that keeps the host's unix sockets from the
	// box (a runtime folder replaced, a socket hidden, what the box needs
	// from them bound back). Landlock, which cannot hide a folder without
	// making the folders above it unlistable, keeps them out another way
	// and leaves these mounts out.
	Sockets bool `json:"sockets,omitempty"`
}

// Src returns the host path a bind mount reads from.
func (m Mount) Src() string {
	if m.Source != "" {
		return m.Source
	}
	return m.Path
}

// Layer is one policy layer that was considered during resolution.
type Layer struct {
	Name   string `json:"name"`           // "defaults", "user", "project", "env", "flags", "policy"
	File   string `json:"file,omitempty"` // the policy file, if the layer is a file
	Status string `json:"status"`         // "loaded", "absent", "trusted", "set"
	Note   string `json:"note,omitempty"` // what was left out of the layer, and why
}

// Skip is a rule that could not be applied and was left out, with the reason.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Origin Origin `json:"origin"`
	// Warn: a run says it in one warning line (what the policy asked for
	// and does not get, such as a writable folder that does not exist).
	Warn bool `json:"warn,omitempty"`
}

// Workspace is the resolved workspace: the masked root and the folders of the
// current workspace re-bound inside it. Root is empty when no workspace is used.
type Workspace struct {
	Root    string `json:"root,omitempty"`
	ID      string `json:"id,omitempty"`
	Task    string `json:"task,omitempty"`
	Dir     string `json:"dir,omitempty"`      // <root>/<id>
	RepoDir string `json:"repo_dir,omitempty"` // <root>/.repos/<id>
	TaskDir string `json:"task_dir,omitempty"` // <root>/<id>/<task>
}

// Tmp modes.
const (
	TmpWorkspace = "workspace"
	TmpPrivate   = "private"
	TmpHost      = "host"
)

// Tmp is how /tmp looks inside the sandbox.
type Tmp struct {
	Mode    string `json:"mode"`
	HostDir string `json:"host_dir,omitempty"` // for "workspace": the host folder bound at /tmp
	// Base is the host folder that holds every workspace's (and run's)
	// temporary folder: the user's own, hidden in the box.
	Base string `json:"base,omitempty"`
}

// Network modes.
const (
	NetOpen      = "open"
	NetNone      = "none"
	NetAllowlist = "allowlist"
)

// Network is the network policy.
type Network struct {
	Mode  string   `json:"mode"`
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// Implied says why the mode is allowlist when no layer chose a mode:
	// an allow entry turns it on.
	Implied string `json:"implied,omitempty"`
	// UnixSockets are the host's unix sockets the box may use
	// (network.unix_sockets), resolved; every other one outside the
	// writable roots is kept from it.
	UnixSockets []string `json:"unix_sockets,omitempty"`
	// Upstream is the proxy the allowlist proxy reaches allowed hosts
	// through (a corporate proxy), nil when it connects by itself.
	Upstream *Upstream `json:"upstream,omitempty"`
	// ProxyVars are variables of agentbox's environment, beyond those
	// every box gets, that held the upstream's credentials and name a
	// proxy (ftp_proxy, npm_config_proxy, PIP_PROXY, RSYNC_PROXY...): in
	// the box they name agentbox's proxy instead (see ProxyVarsEnv). A
	// name ending in ":" takes host:port, as RSYNC_PROXY does; any other
	// a URL.
	ProxyVars []string `json:"proxy_vars,omitempty"`
	// Publish are the box's loopback ports the host can open.
	Publish []Publish `json:"publish,omitempty"`
	// Secrets are the credentials the box holds only as placeholders.
	Secrets []Secret `json:"secrets,omitempty"`
	// Intercept are the allow and secret entries whose hosts' TLS the
	// proxy terminates, to swap placeholders or check methods and paths;
	// every other connection is tunnelled unread.
	Intercept []string `json:"intercept,omitempty"`
	// CABundles are the system's certificate bundles the box finds the
	// run's authority in (a backend that can bind files puts the box's
	// bundle over them), the first named in SSL_CERT_FILE and the like;
	// CABase are the files the box's bundle starts with (the trust it
	// had: the system's bundle, and the files SSL_CERT_FILE and
	// NODE_EXTRA_CA_CERTS name in agentbox's environment).
	CABundles []string `json:"ca_bundles,omitempty"`
	CABase    []string `json:"ca_base,omitempty"`
}

// CAVars are the variables that name the box's certificate bundle, for the
// programs that read a bundle of their own choosing: OpenSSL and Go
// (SSL_CERT_FILE), Node (NODE_EXTRA_CA_CERTS), Python requests
// (REQUESTS_CA_BUNDLE), curl (CURL_CA_BUNDLE) and git (GIT_SSL_CAINFO).
var CAVars = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}

// Upstream is the proxy that network mode allowlist reaches allowed hosts
// through. It never holds the credentials in a form that is printed.
type Upstream struct {
	// URL is http://host:port, without credentials.
	URL string `json:"url"`
	// Auth says where the credentials come from, never what they are:
	// "" for none.
	Auth   string `json:"auth,omitempty"`
	Origin Origin `json:"origin"`
	// NoProxy are the hosts connected to directly (NO_PROXY).
	NoProxy []string `json:"no_proxy,omitempty"`
	// Credentials are "user:password" for the proxy's basic
	// authentication: for the run only, never in plan output or JSON.
	Credentials string `json:"-"`
	// Vars are the variables the credentials came from, taken out of the
	// box's environment.
	Vars []string `json:"vars,omitempty"`
}

// Publish is one published port: the host's Addr:Port reaches the box's
// 127.0.0.1:BoxPort.
type Publish struct {
	Addr    string `json:"addr"`
	Port    int    `json:"port"`
	BoxPort int    `json:"box_port"`
	Origin  Origin `json:"origin"`
}

// String is "ADDR:PORT -> BOXPORT".
func (p Publish) String() string {
	return fmt.Sprintf("%s:%d -> %d", p.host(), p.Port, p.BoxPort)
}

// Spec is "ADDR:PORT:BOXPORT", as --publish takes it.
func (p Publish) Spec() string {
	return fmt.Sprintf("%s:%d:%d", p.host(), p.Port, p.BoxPort)
}

func (p Publish) host() string {
	if strings.Contains(p.Addr, ":") {
		return "[" + p.Addr + "]"
	}
	return p.Addr
}

// Secret is a credential the box sees only as a placeholder: the proxy
// puts the real value in its place in the request headers of TLS
// connections to Hosts, and refuses it on the way anywhere else.
type Secret struct {
	// Env is the variable the box finds the placeholder in.
	Env string `json:"env"`
	// File is where the real value comes from; "" for agentbox's own
	// environment.
	File   string   `json:"file,omitempty"`
	Hosts  []string `json:"hosts"`
	Origin Origin   `json:"origin"`
	// Value is the real value and Placeholder what the box holds instead,
	// as long as it: for the run only, never in plan output or JSON.
	Value       string `json:"-"`
	Placeholder string `json:"-"`
}

// Env is the environment CMD receives.
type Env struct {
	Mode    string            `json:"mode"` // "inherit" or "clean"
	Pass    []string          `json:"pass,omitempty"`
	Deny    []string          `json:"deny,omitempty"`
	Set     map[string]string `json:"set,omitempty"`
	Removed []string          `json:"removed,omitempty"` // names removed from the inherited environment, never values
	// Kept are the provider's own credential variables a deny glob matched
	// but did not remove.
	Kept []string `json:"kept,omitempty"`
	// Provider is a variable the provider needs set inside the box
	// (NAME=value, e.g. CLAUDE_CONFIG_DIR=/home/me/.claude).
	Provider string `json:"provider,omitempty"`
}

// Limits are resource limits set before CMD starts; zero means unlimited.
type Limits struct {
	Processes uint64 `json:"processes,omitempty"`
	OpenFiles uint64 `json:"open_files,omitempty"`
	Memory    uint64 `json:"memory,omitempty"`   // bytes of address space
	CPUTime   uint64 `json:"cpu_time,omitempty"` // seconds
	FileSize  uint64 `json:"file_size,omitempty"`
	// Cgroup is the box's own cgroup, when agentbox can create one here:
	// it holds processes and memory for the whole box, and then the
	// process rlimit (which counts every process of the user on the host)
	// is not set.
	Cgroup CgroupLimits `json:"cgroup,omitempty"`
}

// CgroupLimits are the limits of the box's own cgroup; zero means none.
type CgroupLimits struct {
	// Pids is pids.max: Processes plus a margin for the tasks of
	// agentbox's own that live in the box (bwrap, the init).
	Pids uint64 `json:"pids,omitempty"`
	// Memory is the memory limit in bytes.
	Memory uint64 `json:"memory,omitempty"`
}

// Rlimit is one resource limit set on CMD, soft and hard.
type Rlimit struct {
	Name  string // "nproc", "nofile", "as", "cpu", "fsize"
	Value uint64
}

// Rlimits returns the rlimits CMD gets: every limit but the process limit
// when the box's cgroup holds it.
func (l Limits) Rlimits() []Rlimit {
	procs := l.Processes
	if l.Cgroup.Pids > 0 {
		procs = 0
	}
	var out []Rlimit
	for _, r := range []Rlimit{{"nproc", procs}, {"nofile", l.OpenFiles}, {"as", l.Memory}, {"cpu", l.CPUTime}, {"fsize", l.FileSize}} {
		if r.Value > 0 {
			out = append(out, r)
		}
	}
	return out
}

// Provider is the agent CLI the command was recognised as.
type Provider struct {
	Name      string `json:"name"` // "" when none
	Reason    string `json:"reason,omitempty"`
	Supported bool   `json:"supported"`
	// Index is where the provider's own command is in Command (after env,
	// npx or node).
	Index int `json:"index"`
	// Adjusted says how and why the command was changed for the box, or
	// why it was left alone.
	Adjusted string `json:"adjusted,omitempty"`
	// Confined is the command as it runs when a backend confines it (a
	// confined Codex gets its own sandbox turned off); nil when it runs as
	// given. It is Command once the plan is completed for a backend.
	Confined []string `json:"confined_command,omitempty"`
	// ConfinedEnv are variables the CLI gets only when a box confines it
	// (its own folder's variable, IS_SANDBOX=1), NAME=value.
	ConfinedEnv []string `json:"confined_env,omitempty"`
	// State is the CLI's configuration the box keeps a copy of, refreshed
	// from the host's file before every confined run; nil when none.
	State *ProviderState `json:"state,omitempty"`
}

// ProviderState is how a CLI's user configuration reaches the box: Host is
// the host's file (only ever read), Box the copy the CLI uses in the box,
// Base the host's file at the last refresh (the merge's base), kept where
// the box cannot write.
type ProviderState struct {
	Host string `json:"host"`
	Box  string `json:"box"`
	Base string `json:"base"`
}

// Log is the audit log of a run: its events (start, network decisions,
// items neutralised after the run, limits hit, end) are appended to a file
// in Dir, which lies in agentbox's own state folder.
type Log struct {
	Enabled bool   `json:"enabled"`
	Dir     string `json:"dir,omitempty"`
	Origin  Origin `json:"origin"`
	// Filesystem is how the run's filesystem refusals are recorded (see
	// package fslog): "preload" (the default: the refusals of the box's
	// dynamically linked programs, reported by a library preloaded into
	// them), "seccomp-notify" or "landlock-audit" (the complete mode:
	// every refusal, static programs' too), or "" for not at all.
	// Resolution says "preload" (log.filesystem = true, the default) or
	// "complete" (log.filesystem = "complete"), and the choice of backend
	// decides.
	Filesystem string `json:"filesystem,omitempty"`
	// Reads says every open is watched, so that a read of a hidden or
	// denied path is recorded too (log.filesystem_reads, which asks for
	// the complete mode); without it only the calls that may write are
	// (Landlock's audit records reads either way).
	Reads bool `json:"reads,omitempty"`
	// Preload is the run's own folder for the preloaded log: the library
	// (PreloadLibrary) and the socket agentbox reads its records from
	// (PreloadSocket). It is made fresh for the run and removed after it,
	// and the box sees it at the same path.
	Preload string `json:"preload,omitempty"`
	// Off says why filesystem refusals are not recorded although the
	// policy asks for them.
	Off string `json:"off,omitempty"`
}

// How often a notice is shown (notice.backend).
const (
	NoticeOnce   = "once"
	NoticeAlways = "always"
	NoticeNever  = "never"
)

// Notice is how often the one line about the run's backend is shown (the
// Landlock fallback, rules enforced weaker): once per project until what
// it says changes, always, or never. Errors and the warning of an
// unconfined run are not notices: they are always shown.
type Notice struct {
	Backend string `json:"backend"`
	Origin  Origin `json:"origin"`
	// Dir keeps, per project, what the last notice said, in agentbox's
	// state folder (out of every box's reach).
	Dir string `json:"dir,omitempty"`
}

// PreloadLibrary is the preloaded log's library in Log.Preload, as
// LD_PRELOAD names it: the dynamic linker puts the process's platform
// (x86_64, i686, aarch64) for $PLATFORM, so each program gets the build
// for its own architecture.
const PreloadLibrary = "agentbox-fslog-$PLATFORM.so"

// PreloadSocket is the socket in Log.Preload that the preloaded library
// sends its records to.
const PreloadSocket = "log"

// Under Landlock, whose box may not create a unix socket, the preloaded
// library writes its records to an inherited pipe instead: agentbox hands
// the pipe's write end to every process of the box at descriptor
// PreloadFD, and writes the pipe's inode number, in decimal, to the file
// PreloadPipe in Log.Preload, so that the library writes only to that pipe
// and never to another the program has at the same number.
const (
	PreloadFD   = 1021
	PreloadPipe = "pipe"
)

// Enforcement levels.
const (
	Require    = "require"
	BestEffort = "best-effort"
)

// Identity is who runs the sandbox.
type Identity struct {
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	Home string `json:"home"`
}

// Root reports whether the sandbox is started by root.
func (id Identity) Root() bool { return id.UID == 0 }

// Prepare is a folder agentbox owns and creates before the sandbox starts
// (workspace, task, repo cache, per-workspace tmp, an empty .git/hooks). The
// backend refuses to use one that exists as a symlink or belongs to another
// user: a shared /tmp is hostile ground.
type Prepare struct {
	Path   string `json:"path"`
	Mode   uint32 `json:"mode"`
	Origin Origin `json:"origin"`
	// Fresh folders are made for this run alone: one that exists already
	// is refused, and the run removes it afterwards.
	Fresh bool `json:"fresh,omitempty"`
	// Placeholder is "file" or "dir" for an empty placeholder at a guarded
	// path that does not exist (plan.KeepBlocked): made for the run so a
	// read-only mount can cover it, and removed after the last run that
	// uses it. Content is what a placeholder file holds.
	Placeholder string `json:"placeholder,omitempty"`
	Content     string `json:"content,omitempty"`
	// Private folders are for the user alone (the temporary folders): one
	// that lets other users in is refused.
	Private bool `json:"private,omitempty"`
}

// Plan is the fully resolved sandbox: everything a backend needs and nothing
// it has to look up.
type Plan struct {
	// GOOS is the operating system the plan is for: paths are Windows paths
	// when it is "windows" and slash paths otherwise.
	GOOS string `json:"goos"`
	// RunID names one run: its events in the audit log, its cgroup, its
	// per-run folders. Every resolution draws a new one.
	RunID    string   `json:"run_id"`
	Layers   []Layer  `json:"layers"`
	Enforce  string   `json:"enforce"`
	Backend  string   `json:"backend"` // requested: auto, bwrap, landlock, windows, seatbelt
	Identity Identity `json:"identity"`
	Command  []string `json:"command,omitempty"`
	// SelfCommand says the command is agentbox itself, which the box
	// starts as /proc/self/exe (agentbox verify's probe): each backend then
	// runs its Go init or child, since the C one is not agentbox.
	SelfCommand bool      `json:"self_command,omitempty"`
	Args        []string  `json:"original_command,omitempty"` // the command as given, before provider adjustments
	Cwd         string    `json:"cwd"`                        // working directory inside the sandbox
	Mounts      []Mount   `json:"mounts"`
	Workspace   Workspace `json:"workspace"`
	Tmp         Tmp       `json:"tmp"`
	Network     Network   `json:"network"`
	Env         Env       `json:"env"`
	// Environ is the environment CMD starts with, before the backend adds its
	// truthful AGENTBOX_* variables. It holds values, so plan output never
	// prints it; Env.Removed names what was taken out.
	Environ  []string  `json:"-"`
	Limits   Limits    `json:"limits"`
	Seccomp  []string  `json:"seccomp_allow,omitempty"`
	Provider Provider  `json:"provider"`
	Prepare  []Prepare `json:"prepare,omitempty"`
	// HostExec is what host programs run or obey within the box's reach
	// and how each is kept safe; the after-run check works from it.
	HostExec HostExec `json:"host_exec"`
	Skipped  []Skip   `json:"skipped,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Log is whether the run is recorded in the audit log, and where.
	Log Log `json:"log"`
	// Notice is how often the run's notices are shown.
	Notice Notice `json:"notice"`
	// Caches are the package and build caches the box uses, per tool;
	// CacheDir is the folder holding the workspace's private ones.
	Caches   []Cache `json:"caches,omitempty"`
	CacheDir string  `json:"cache_dir,omitempty"`
	// Depth is how many boxes CMD runs in: 1 for a box started outside
	// any box, 2 for a box started inside one, and so on.
	Depth int `json:"depth,omitempty"`
	// Box is what the chosen backend makes of all of the above.
	Box Box `json:"box"`
}

// Writable returns the host paths bound read-write, in mount order. Pinned
// folders lie inside writable roots already and are not listed again.
func (p *Plan) Writable() []string {
	var out []string
	for _, m := range p.Mounts {
		if m.Op == Bind && m.Access == ReadWrite {
			out = append(out, m.Path)
		}
	}
	return out
}

// Denied returns the paths hidden by the deny stage, in mount order.
func (p *Plan) Denied() []string {
	var out []string
	for _, m := range p.Mounts {
		if m.Stage == StageDeny {
			out = append(out, m.Path)
		}
	}
	return out
}

// Outermost drops the paths that lie in another path of the list (and
// repeats): a walk or a rule of the outer one covers them. Order is kept.
func Outermost(paths []string) []string {
	var out []string
	for i, p := range paths {
		inner := false
		for j, q := range paths {
			if i != j && Within(p, q) && (p != q || j < i) {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, p)
		}
	}
	return out
}

// Within reports whether path is dir or lies below it. Both must be clean
// absolute paths, slash paths or Windows paths.
func Within(path, dir string) bool {
	switch {
	case dir == "/":
		return strings.HasPrefix(path, "/")
	case strings.HasSuffix(dir, `\`): // a drive root such as C:\
		return strings.HasPrefix(path, dir)
	}
	return path == dir || strings.HasPrefix(path, dir+"/") || strings.HasPrefix(path, dir+`\`)
}

// ProxyVarsEnv sets each of n.ProxyVars to agentbox's proxy at hostPort
// (127.0.0.1:PORT).
func (n Network) ProxyVarsEnv(hostPort string) []string {
	var out []string
	for _, v := range n.ProxyVars {
		if name, ok := strings.CutSuffix(v, ":"); ok {
			out = append(out, name+"="+hostPort)
			continue
		}
		out = append(out, v+"=http://"+hostPort)
	}
	return out
}
