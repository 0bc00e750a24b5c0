package winsandbox

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// The names `agentbox setup` creates. They are fixed so a second setup finds
// (and repairs) what the first made, and so `--uninstall` knows what to
// remove.
const (
	// GroupName is the local group both sandbox users belong to; ACEs name
	// the group, never a user, so either user gets the same file access.
	GroupName = "AgentboxSandboxUsers"
	// OfflineUser runs commands whose network is "none" or "allowlist"; the
	// firewall blocks all its traffic except loopback to the proxy port.
	OfflineUser = "AgentboxOffline"
	// OnlineUser runs commands whose network is "open"; no firewall rule
	// names it.
	OnlineUser = "AgentboxOnline"
	// DefaultProxyPort is the first of the loopback ports agentbox's
	// allowlist proxies listen on; the offline user's firewall rules let it
	// reach these ports on 127.0.0.1 and ::1 and nothing else.
	DefaultProxyPort = 47080
	// ProxyPorts is how many ports, from the first, the proxies may use:
	// one per allowlist run at a time. Each run's proxy serves only the
	// processes of that run (the peer check), so one run's box reaching
	// another's proxy gets nothing from it.
	ProxyPorts = 16
)

// PortRange is Count loopback ports from First.
type PortRange struct {
	First int `json:"first"`
	Count int `json:"count"`
}

// Last is the range's last port.
func (r PortRange) Last() int { return r.First + r.Count - 1 }

// Holds reports whether port is in the range.
func (r PortRange) Holds(port int) bool { return port >= r.First && port <= r.Last() }

// String is "FIRST-LAST", or the port alone.
func (r PortRange) String() string { return portRange(r.First, r.Last()) }

// DefaultProxyRange is the range setup opens for the offline user.
var DefaultProxyRange = PortRange{First: DefaultProxyPort, Count: ProxyPorts}

// proxyRange is r with the defaults filled in, or an error when it does
// not fit in the port space.
func proxyRange(r PortRange) (PortRange, error) {
	if r.First == 0 {
		r.First = DefaultProxyPort
	}
	if r.Count == 0 {
		r.Count = ProxyPorts
	}
	if r.First < 1 || r.Count < 1 || r.Last() > 65535 {
		return r, fmt.Errorf("proxy ports %d-%d out of range", r.First, r.Last())
	}
	return r, nil
}

// Options is what Build needs besides the plan: facts about the calling
// process and the machine, passed in so Build stays pure.
type Options struct {
	// ProxyPorts are the loopback ports setup opened for the proxies; zero
	// values mean DefaultProxyRange.
	ProxyPorts PortRange
	// ProxyPort is the port of this run's proxy (allowlist runs), one of
	// ProxyPorts that Complete reserved; 0 means the first.
	ProxyPort int
	// Runner is agentbox.exe, which runs as the sandbox user: the sandbox
	// group may read this file (only this file: readgrant.go). Users'
	// profiles are not readable by other users on Windows, so a program
	// there is invisible to the sandbox users without a grant.
	Runner string
	// Exists reports whether a file exists; Build uses it to resolve the
	// command in the PATH of the command's environment. Nil leaves the
	// command as given and lets the runner's CreateProcessAsUser search.
	Exists func(path string) bool
	// TempDir is the caller's temporary folder (%TEMP%): what tmp mode
	// "host" shares with the box, and where a private tmp is made.
	TempDir string
	// User is the caller's SID; agentbox's folder in TempDir is named
	// after it.
	User string
	// Offline is whether the offline user's firewall rules take effect on
	// this machine now, read for runs that need that user; nil when it was
	// not read (the spec is built from the plan alone).
	Offline *OfflineFacts
	// Git is the caller's global git configuration, of which the box's
	// git gets a part (gitconfig.go); nil when it was not read.
	Git *GitFacts
	// PathReadable reports whether the sandbox users may read a folder of
	// the command's PATH (known false when that could not be read); nil
	// when it was not read (pathread.go).
	PathReadable func(dir string) (ok, known bool)
	// ReadFile reads a small file (a .cmd the command resolves to, to
	// tell an npm shim: npmshim.go); nil runs every batch file as one.
	ReadFile func(path string) ([]byte, error)
	// IsDir reports whether a path is a folder (not a link to one); nil
	// when it was not read (controlfolder.go).
	IsDir func(path string) bool
}

// Rights is a named set of file access rights an ACE grants or denies.
type Rights string

// The rights agentbox puts in ACEs. Masks are in FileRights.
const (
	// RightsModify (allow): read, write, execute and delete; not
	// FILE_DELETE_CHILD, so deleting a child needs DELETE on the child
	// itself, where a deny ACE can refuse it; not WRITE_DAC or WRITE_OWNER,
	// so the sandbox cannot rewrite a root's ACL.
	RightsModify Rights = "modify"
	// RightsRead (allow): read and execute.
	RightsRead Rights = "read"
	// RightsWrite (deny): every way to change a file or folder: write and
	// append data (add file and add subfolder for folders), extended
	// attributes, attributes, delete, delete child, change permissions, take
	// ownership. Not SYNCHRONIZE: denying it would break reading too.
	RightsWrite Rights = "write"
	// RightsDelete (deny): DELETE only, which is also what renaming or
	// moving needs. A pinned folder gets it, without inheritance: the folder
	// itself cannot be renamed, moved away or removed (and so cannot be
	// replaced by one without the protections), while what is in it keeps
	// the access it had.
	RightsDelete Rights = "delete"
	// RightsAll (deny): everything but SYNCHRONIZE.
	RightsAll Rights = "all"
	// RightsCreate (deny): adding a file or a subfolder to a folder
	// (FILE_ADD_FILE, FILE_ADD_SUBDIRECTORY), without inheritance: what is
	// in the folder keeps the access it had (controlfolder.go).
	RightsCreate Rights = "create"
)

// Access mask bits (winnt.h), repeated here so the pure half needs no
// x/sys/windows.
const (
	fileReadData        = 0x0001
	fileWriteData       = 0x0002
	fileAppendData      = 0x0004
	fileReadEA          = 0x0008
	fileWriteEA         = 0x0010
	fileExecute         = 0x0020
	fileDeleteChild     = 0x0040
	fileReadAttributes  = 0x0080
	fileWriteAttributes = 0x0100
	accessDelete        = 0x00010000
	readControl         = 0x00020000
	writeDAC            = 0x00040000
	writeOwner          = 0x00080000
	synchronize         = 0x00100000
)

// FileRights returns the access mask of r, or 0 for an unknown name.
func FileRights(r Rights) uint32 {
	read := uint32(fileReadData | fileReadEA | fileReadAttributes | readControl | synchronize)
	switch r {
	case RightsModify:
		return read | fileExecute | fileWriteData | fileAppendData | fileWriteEA | fileWriteAttributes | accessDelete
	case RightsRead:
		return read | fileExecute
	case RightsWrite:
		return fileWriteData | fileAppendData | fileWriteEA | fileWriteAttributes | accessDelete | fileDeleteChild | writeDAC | writeOwner
	case RightsDelete:
		return accessDelete
	case RightsCreate:
		return fileWriteData | fileAppendData
	case RightsAll:
		return fileReadData | fileWriteData | fileAppendData | fileReadEA | fileWriteEA | fileExecute |
			fileDeleteChild | fileReadAttributes | fileWriteAttributes | accessDelete | readControl | writeDAC | writeOwner
	}
	return 0
}

// ACE is one access control entry agentbox puts on a path.
type ACE struct {
	Path string `json:"path"`
	// Deny is true for a deny ACE, false for an allow ACE.
	Deny bool `json:"deny,omitempty"`
	// Trustee is GroupName or a capability SID ("S-1-5-21-…").
	Trustee string `json:"trustee"`
	Rights  Rights `json:"rights"`
	// Inherit makes the ACE apply to everything below the path (object and
	// container inherit).
	Inherit bool `json:"inherit,omitempty"`
	// IfUsersCannotRead applies a read grant only when BUILTIN\Users cannot
	// already read the path, so world-readable folders (C:\Windows\System32,
	// C:\Program Files) are never touched.
	IfUsersCannotRead bool `json:"if_users_cannot_read,omitempty"`
	// Origin is the plan rule that asked for this ACE.
	Origin string `json:"origin"`
}

// Capability is the capability SID of one writable root.
type Capability struct {
	Root string `json:"root"`
	SID  string `json:"sid"`
}

// FirewallRule is one Windows Firewall rule, as INetFwRule3 properties.
type FirewallRule struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Direction   string `json:"direction"` // "in" or "out"
	Action      string `json:"action"`    // "block"
	Protocol    string `json:"protocol"`  // "any", "tcp", "udp"
	// RemoteAddresses is "*" or a comma-separated list of addresses and
	// ranges, as INetFwRule.RemoteAddresses takes it.
	RemoteAddresses string `json:"remote_addresses"`
	// RemotePorts is "" (any) or a comma-separated list of ports and ranges;
	// only for tcp and udp.
	RemotePorts string `json:"remote_ports,omitempty"`
	// LocalUserAuthorizedList is the SDDL naming the user the rule applies
	// to, with the user's SID written as {AgentboxOffline}; setup replaces
	// it with the real SID (FirewallSDDL).
	LocalUserAuthorizedList string `json:"local_user_authorized_list"`
}

// Refusal is why the command cannot be started, found while the spec was
// built: the run ends with Status (127: not found, 126: cannot be executed)
// before anything is applied, as a shell would report it.
type Refusal struct {
	Status int    `json:"status"`
	Reason string `json:"reason"`
}

// Spec is everything the Windows backend does for one plan.
type Spec struct {
	Group        string         `json:"group"`
	Users        []string       `json:"users"`
	User         string         `json:"user"` // the user that runs the command
	Capabilities []Capability   `json:"capabilities"`
	ACEs         []ACE          `json:"aces"`
	Firewall     []FirewallRule `json:"firewall"`
	// Filters are the WFP filters setup installs for the offline user.
	Filters []WFPFilter `json:"wfp_filters"`
	// ProxyPort is the loopback port agentbox's allowlist proxy listens on
	// for this run; 0 when the network mode is not allowlist.
	ProxyPort int `json:"proxy_port,omitempty"`
	// Tmp is the folder TEMP, TMP and TMPDIR name; "" leaves them as they
	// are.
	Tmp string `json:"tmp,omitempty"`
	// Added are the variables the backend adds to the plan's environment
	// (TEMP, TMP, the proxy, git's safe.directory), NAME=value.
	Added []string `json:"added_env,omitempty"`
	// Git are the files of the box's global git configuration, which Run
	// writes into the box's temporary folder (gitconfig.go).
	Git []GitFile `json:"git_files,omitempty"`
	// Placeholders are the missing control folders Run makes, empty and
	// read-only for the box, before the command starts, and removes after
	// it when still empty (controlfolder.go).
	Placeholders []string `json:"placeholders,omitempty"`
	// GitPlaceholders are the missing commondir and config.worktree files
	// of the git folders in the writable roots, which Run makes before the
	// command starts, read-only for the box, and removes after it
	// (gitfiles.go).
	GitPlaceholders []GitPlaceholder `json:"git_placeholders,omitempty"`
	// Home is the box's own home folder (boxhome.go); nil when the box
	// keeps the user's USERPROFILE and HOME.
	Home *BoxHome `json:"home,omitempty"`
	// Refuse, when set, says why the command cannot run at all.
	Refuse *Refusal          `json:"refuse,omitempty"`
	Spawn  SpawnRequest      `json:"spawn"`
	Rules  []plan.RuleStatus `json:"-"`
	// Notes say where Windows does something other than what the plan
	// literally asks, so `agentbox plan` can tell the truth about it.
	Notes []string `json:"notes,omitempty"`
}

// pathRule is one path the plan gives an access, with its position in the
// mount order (later mounts cover earlier ones).
type pathRule struct {
	path   string
	index  int
	origin string
}

// Build turns a plan into the Windows spec. It does no I/O: everything about
// the caller comes in opts. p is not changed.
func Build(p *plan.Plan, opts Options) (*Spec, error) {
	if p == nil {
		return nil, errors.New("no plan")
	}
	if len(p.Command) == 0 || p.Command[0] == "" {
		return nil, errors.New("empty command")
	}
	if !winAbs(p.Cwd) {
		return nil, fmt.Errorf("working directory %q is not an absolute Windows path", p.Cwd)
	}
	ports, err := proxyRange(opts.ProxyPorts)
	if err != nil {
		return nil, err
	}
	port := opts.ProxyPort
	if port == 0 {
		port = ports.First
	}
	if !ports.Holds(port) {
		return nil, fmt.Errorf("proxy port %d is not one of the ports setup opened (%s)", port, ports)
	}
	s := &Spec{Group: GroupName, Users: []string{OfflineUser, OnlineUser}, User: OfflineUser}
	if p.Network.Mode == plan.NetOpen {
		s.User = OnlineUser
	}
	note := func(format string, a ...any) {
		n := fmt.Sprintf(format, a...)
		for _, have := range s.Notes {
			if have == n {
				return
			}
		}
		s.Notes = append(s.Notes, n)
	}
	rule := func(m plan.Mount, lv plan.Level, how string) {
		s.Rules = append(s.Rules, plan.RuleStatus{Rule: m.Stage.String(), Path: m.Path, Origin: m.Origin.String(), Level: lv, How: how})
	}

	var writable, readOnly, hidden, pins, covers []pathRule
	for i, m := range p.Mounts {
		origin := m.Origin.String()
		if m.Stage == plan.StageRoot {
			switch m.Op {
			case plan.ROBind:
				rule(m, plan.Enforced, "no ACE: the sandbox users are ordinary users, and the command's write-restricted token refuses every write outside the writable roots")
			case plan.Dev, plan.Proc:
				rule(m, plan.Weaker, "no Windows equivalent of "+string(m.Op)+": the host's devices and processes are what the sandbox users may see")
			default:
				return nil, fmt.Errorf("mount %d (%s %s): not supported at stage root on Windows", i, m.Op, m.Path)
			}
			continue
		}
		src := m.Src()
		if m.Stage == plan.StageTmp {
			switch {
			case m.Op == plan.Tmpfs:
				// Complete gives a private tmp a fresh folder of this run
				// (Tmp.HostDir); a plan without one cannot run here.
				if p.Tmp.HostDir == "" {
					return nil, fmt.Errorf("mount %d (tmpfs %s, %s): Windows has no tmpfs, and the plan names no folder for this run's tmp", i, m.Path, origin)
				}
				src = p.Tmp.HostDir
			case p.Tmp.Mode == plan.TmpHost:
				if opts.TempDir == "" {
					return nil, fmt.Errorf("mount %d (%s): tmp mode host needs the caller's TEMP folder", i, origin)
				}
				src = opts.TempDir
			}
			s.Tmp = src
			rule(m, plan.Enforced, "the folder itself, at its own path (Windows has no /tmp): TEMP, TMP and TMPDIR name it")
		}
		if !winAbs(src) {
			return nil, fmt.Errorf("mount %d (%s %s, %s): %q is not an absolute Windows path", i, m.Op, m.Path, origin, src)
		}
		if winUNC(src) {
			return nil, fmt.Errorf("mount %d (%s %s, %s): %s is a network path; the server enforces its own ACLs there, so agentbox cannot confine access to it", i, m.Op, m.Path, origin, src)
		}
		r := pathRule{path: src, index: i, origin: origin}
		switch {
		case m.Op == plan.Pin:
			pins = append(pins, r)
			rule(m, plan.Enforced, "deny-DELETE ACE for the sandbox group on the folder itself, not inherited: it cannot be renamed, moved or removed; its contents keep their access")
		case m.Op == plan.RemountRO:
			// The workspace root is already denied as a whole (the
			// tmpfs before it); the re-bound workspace folders stay
			// writable, as a non-recursive remount leaves them on Linux.
			rule(m, plan.Enforced, "covered by the deny ACE on the folder: nothing can be written beside the workspace folders")
		case m.Access == plan.ReadWrite:
			writable = append(writable, r)
			if m.Stage != plan.StageTmp {
				rule(m, plan.Enforced, "allow ACE (modify) for the sandbox group and the root's capability SID, inherited")
			}
		case m.Access == plan.ReadOnly:
			readOnly = append(readOnly, r)
			rule(m, plan.Enforced, "deny-write ACE for the sandbox group, inherited")
		case m.Access == plan.Hidden:
			hidden = append(hidden, r)
			covers = append(covers, r)
			rule(m, plan.Weaker, "deny ACE (all access) for the sandbox group, inherited: the name stays visible in its folder, the content is refused")
		default:
			return nil, fmt.Errorf("mount %d (%s %s): unknown access %q", i, m.Op, m.Path, m.Access)
		}
	}

	// A path covered by a later hidden path stays hidden, as a later mount
	// covers an earlier one. (An explicit allow ACE on a child would beat
	// the deny ACE inherited from its hidden parent, so it must not be set.)
	covered := func(r pathRule) bool {
		for _, h := range covers {
			if h.index > r.index && winWithin(r.path, h.path) {
				note("%s is inside %s, which is hidden after it; it stays hidden", r.path, h.path)
				return true
			}
		}
		return false
	}
	writable = dedupe(writable, covered)
	readOnly = dedupe(readOnly, covered)
	pins = dedupe(pins, covered)
	hidden = dedupe(hidden, func(pathRule) bool { return false })

	// Reads are checked against the sandbox users' own SIDs, which every
	// workspace's box shares (the capability SIDs restrict writes only);
	// a writable root's grants last only while a run that has them runs
	// (acl.go), so only a box running at the same time can read it.
	var kept []string
	for _, w := range writable {
		if s.Tmp == "" || winKey(w.path) != winKey(s.Tmp) {
			kept = append(kept, w.path)
		}
	}
	if len(kept) > 0 {
		note("the writable roots (%s) are granted to the sandbox group only while a run that has them runs (the grants are removed when it ends, and a killed run's by the next run), but reads are checked against the sandbox users every workspace's box runs as (the capability SIDs restrict writes only): while this run runs, the box of another workspace can read them (not write them) by their paths; Linux hides other workspaces and their caches", strings.Join(kept, ", "))
	}
	// Hidden paths first: the order of ACEs on one path does not matter
	// (SetEntriesInAcl puts explicit denies first), but the golden files
	// read best in plan order, stage by stage.
	for _, h := range hidden {
		s.ACEs = append(s.ACEs, ACE{Path: h.path, Deny: true, Trustee: GroupName, Rights: RightsAll, Inherit: true, Origin: h.origin})
	}
	for _, w := range writable {
		sid := CapabilitySID(w.path)
		s.Capabilities = append(s.Capabilities, Capability{Root: w.path, SID: sid})
		s.ACEs = append(s.ACEs,
			ACE{Path: w.path, Trustee: GroupName, Rights: RightsModify, Inherit: true, Origin: w.origin},
			ACE{Path: w.path, Trustee: sid, Rights: RightsModify, Inherit: true, Origin: w.origin})
	}
	// Pins: the plan's own (folders between a writable root and a
	// read-only path, git folders), then, should a plan lack one, every
	// folder between a read-only path and its writable root. A pin never
	// becomes a writable root: its contents are as writable as they were.
	pinned := map[string]bool{}
	pin := func(dir, origin string) {
		if pinned[winKey(dir)] {
			return
		}
		pinned[winKey(dir)] = true
		s.ACEs = append(s.ACEs, ACE{Path: dir, Deny: true, Trustee: GroupName, Rights: RightsDelete, Origin: origin})
	}
	for _, r := range pins {
		pin(r.path, r.origin)
	}
	for _, r := range readOnly {
		s.ACEs = append(s.ACEs, ACE{Path: r.path, Deny: true, Trustee: GroupName, Rights: RightsWrite, Inherit: true, Origin: r.origin})
		root := innermost(writable, r.path)
		if root == "" {
			s.ACEs = append(s.ACEs, ACE{Path: r.path, Trustee: GroupName, Rights: RightsRead, Inherit: true, IfUsersCannotRead: true, Origin: r.origin})
			continue
		}
		for _, dir := range winBetween(root, r.path) {
			pin(dir, r.origin+" (keeps "+r.path+" from being moved away)")
		}
	}
	// Missing control folders and files, kept during the run too
	// (controlfolder.go).
	placeholders, controlACEs := controlKeep(p.HostExec.Guards, opts.IsDir)
	s.Placeholders = placeholders
	s.ACEs = append(s.ACEs, controlACEs...)
	// Missing commondir and config.worktree files of the git folders,
	// kept during the run too (gitfiles.go).
	gitFiles, gitACEs := gitKeep(p.HostExec.GitDirs, p.HostExec.Guards, func(x string) bool {
		return innermost(writable, x) != "" && innermost(readOnly, x) == "" && innermost(hidden, x) == ""
	})
	s.GitPlaceholders = gitFiles
	s.ACEs = append(s.ACEs, gitACEs...)
	// What the sandbox users must read besides the plan's paths: the
	// runner, the command's program, a working directory outside the
	// writable roots, each no broader than it must be (readgrant.go).
	if opts.Runner != "" && !winAbs(opts.Runner) {
		return nil, fmt.Errorf("runner %q is not an absolute Windows path", opts.Runner)
	}
	program := ""
	if opts.Exists != nil {
		if prog := lookPath(p.Command[0], p.Environ, opts.Exists); prog != "" && winAbs(prog) {
			program = prog
		}
	}
	grants, err := readGrants(opts.Runner, program, p.Cwd, p.Identity.Home, opts.TempDir, func(x string) bool { return innermost(writable, x) != "" })
	if err != nil {
		return nil, err
	}
	for _, g := range grants {
		s.ACEs = append(s.ACEs, ACE{Path: g.Path, Trustee: GroupName, Rights: RightsRead, Inherit: g.Folder, IfUsersCannotRead: true, Origin: g.Origin})
	}

	s.Firewall = FirewallRules(ports)
	s.Filters = WFPFilters()
	s.Rules = append(s.Rules, networkRule(p, ports, port, opts.Offline))
	if p.Network.Mode == plan.NetAllowlist {
		s.ProxyPort = port
		if f := p.Network.Forwards(); len(f) > 0 {
			note("port forwards (%s) are not available on Windows: the offline user reaches no loopback port but the proxy's", strings.Join(f, ", "))
		}
		if len(p.Network.Intercept) > 0 {
			note("the box is not given the run's certificate authority on Windows: TLS to the hosts the proxy reads (%s: secrets, request rules) fails in the box", strings.Join(p.Network.Intercept, ", "))
		}
	}
	for _, pub := range p.Network.Publish {
		s.Rules = append(s.Rules, plan.RuleStatus{Rule: "publish", Path: pub.String(), Origin: pub.Origin.String(), Level: plan.NotEnforced,
			How: "published ports are not available on Windows: nothing listens on the host's port"})
	}
	s.Rules = append(s.Rules, limitRules(p)...)

	for _, w := range writable {
		s.Spawn.RestrictingSIDs = append(s.Spawn.RestrictingSIDs, CapabilitySID(w.path))
	}
	s.Added = addedEnv(p, s, writable)
	if h := boxHome(p); h != nil {
		s.Home = h
		s.Added = append(s.Added, h.Env...)
		s.Rules = append(s.Rules, plan.RuleStatus{Rule: "home", Path: h.Path, Origin: "caches.appdata", Level: plan.Enforced,
			How: "USERPROFILE, HOME, HOMEDRIVE and HOMEPATH name the workspace's own home folder (the sandbox users cannot read yours): empty at first, kept between the workspace's runs, read by no host program"})
	}
	if s.Tmp != "" {
		id := "agentbox-git"
		if p.RunID != "" {
			id += "-" + p.RunID
		}
		files, env := boxGit(p.Environ, opts.Git, winJoin(s.Tmp, id))
		s.Git = files
		s.Added = append(s.Added, env...)
	}
	env := spawnEnv(p, s)
	s.Spawn.Cwd = p.Cwd
	s.Spawn.Env = env
	s.Spawn.Args = append([]string(nil), p.Command...)
	pathCovered := func(x string) bool {
		if innermost(writable, x) != "" {
			return true
		}
		for _, g := range grants {
			if g.Folder && winWithin(x, g.Path) {
				return true
			}
		}
		return false
	}
	pathGrants, pathNotes := pathReadGrants(env, opts.PathReadable, func(x string) bool {
		return pathCovered(x) || innermost(hidden, x) != ""
	}, p.Identity.Home, opts.TempDir)
	for _, g := range pathGrants {
		s.ACEs = append(s.ACEs, ACE{Path: g.Path, Trustee: GroupName, Rights: RightsRead, Inherit: g.Folder, IfUsersCannotRead: true, Origin: g.Origin})
	}
	for _, n := range pathNotes {
		note("%s", n)
	}
	if r := commandLine(&s.Spawn, p.Command, env, opts.Exists, opts.ReadFile); r != nil {
		s.Refuse = r
	}
	s.Spawn.Limits = JobLimits{
		ActiveProcesses: uint32(min(p.Limits.Processes, 1<<32-1)),
		MemoryBytes:     p.Limits.Memory,
		CPUSeconds:      p.Limits.CPUTime,
		UI:              JobUILimits,
	}
	return s, nil
}

// networkRule says how the network mode is enforced on Windows, and what it
// does not stop.
//
// When the machine's facts show the offline user's rules would do nothing
// (offlineProblem), offline mode is not enforced at all: under "require"
// the run is refused with the reason, and `agentbox plan` says so.
func networkRule(p *plan.Plan, ports PortRange, port int, offline *OfflineFacts) plan.RuleStatus {
	r := plan.RuleStatus{Rule: "network", Path: p.Network.Mode}
	if p.Network.Mode != plan.NetOpen && offline != nil {
		if why := offlineProblem(*offline); why != "" {
			r.Level, r.How = plan.NotEnforced, "offline mode cannot be kept here: "+why+"; runs with network \"open\" work"
			return r
		}
	}
	const leaks = "; not stopped: DNS lookups made for it by the DNS Client service, SMB (\\\\server\\share) through the kernel's redirector"
	switch p.Network.Mode {
	case plan.NetOpen:
		r.Level, r.How = plan.Enforced, "the online sandbox user has the host's network"
	case plan.NetNone:
		r.Level, r.How = plan.Weaker, fmt.Sprintf("firewall rules for the offline sandbox user block every address but loopback ports %s (the allowlist proxies'), and WFP filters its DNS, SMB and ICMP sockets", ports)+leaks
	case plan.NetAllowlist:
		r.Level, r.How = plan.Weaker, fmt.Sprintf("HTTP and SOCKS5 proxy at 127.0.0.1:%d, serving this run's processes only; firewall rules block the offline sandbox user's every other address", port)+leaks
	}
	return r
}

// limitRules says how the plan's limits are enforced by the command's job
// object.
func limitRules(p *plan.Plan) []plan.RuleStatus {
	var out []plan.RuleStatus
	add := func(name string, v uint64, lv plan.Level, how string) {
		if v > 0 {
			out = append(out, plan.RuleStatus{Rule: "limits", Path: name, Origin: "limits." + name, Level: lv, How: how})
		}
	}
	l := p.Limits
	add("processes", l.Processes, plan.Enforced, "the job's active process limit, for the whole box")
	add("memory", l.Memory, plan.Enforced, "the job's memory limit: committed memory of the whole box")
	add("cpu_time", l.CPUTime, plan.Enforced, "the job's user-mode CPU time limit, for the whole box")
	add("open_files", l.OpenFiles, plan.NotEnforced, "Windows has no per-process handle limit a job can set")
	add("file_size", l.FileSize, plan.NotEnforced, "Windows has no file size limit a job can set")
	return out
}

// addedEnv is what the backend adds to the plan's environment: TEMP and TMP
// at the box's tmp folder, the proxy in allowlist mode, and git's
// safe.directory for every writable root.
func addedEnv(p *plan.Plan, s *Spec, writable []pathRule) []string {
	var out []string
	if s.Tmp != "" {
		out = append(out, "TEMP="+s.Tmp, "TMP="+s.Tmp)
	}
	if s.ProxyPort != 0 {
		// One spelling each: Windows names are case-insensitive, so the
		// lower-case forms would be the same variables.
		proxy := "http://127.0.0.1:" + strconv.Itoa(s.ProxyPort)
		out = append(out, "HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy,
			"ALL_PROXY=socks5h://127.0.0.1:"+strconv.Itoa(s.ProxyPort), "NO_PROXY=localhost,127.0.0.1,::1")
		out = append(out, p.Network.ProxyVarsEnv("127.0.0.1:"+strconv.Itoa(s.ProxyPort))...)
	}
	return append(out, safeDirectories(p, writable)...)
}

// safeDirectories lets git work in the writable roots. The repositories
// belong to the real user and git runs as a sandbox user, so git refuses
// them ("detected dubious ownership") unless safe.directory names them.
// safe.directory is read only from protected configuration, of which the
// command-line scope is one: GIT_CONFIG_COUNT/KEY_n/VALUE_n (git 2.31 and
// later) are that scope, added after any the caller set. Each root is named
// as itself and, for repositories below it, with "/*" (git 2.46 and later
// match that as a prefix; older ones ignore it), and each git folder's
// worktree by name.
func safeDirectories(p *plan.Plan, writable []pathRule) []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		d = strings.ReplaceAll(d, `\`, "/")
		if !seen[strings.ToLower(d)] {
			seen[strings.ToLower(d)] = true
			dirs = append(dirs, d)
		}
	}
	for _, w := range writable {
		add(w.path)
		add(strings.TrimSuffix(strings.ReplaceAll(w.path, `\`, "/"), "/") + "/*")
	}
	for _, g := range p.HostExec.GitDirs {
		if strings.EqualFold(winBase(g), ".git") {
			add(winDir(g))
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	n, _ := strconv.Atoi(envGet(p.Environ, "GIT_CONFIG_COUNT"))
	if n < 0 {
		n = 0
	}
	out := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(n+len(dirs))}
	for i, d := range dirs {
		out = append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=safe.directory", n+i), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n+i, d))
	}
	return out
}

// spawnEnv is the command's whole environment: the plan's resolved
// environment, the backend's additions and the truthful variables, as
// plan.BoxEnviron makes them for every backend, in the sorted form
// CreateProcess wants.
func spawnEnv(p *plan.Plan, s *Spec) []string {
	q := *p
	q.Box = boxOf(p, s)
	q.Network.Publish = nil // nothing is published on Windows: status must not say so
	return sortEnv(q.BoxEnviron())
}

// boxOf is what the spec makes of the plan, as plan.Box records it (without
// the detail).
func boxOf(p *plan.Plan, s *Spec) plan.Box {
	box := plan.Box{Backend: Backend, Passed: p.Box.Passed, Tmpdir: s.Tmp, Env: s.Added, Rules: s.Rules}
	for _, c := range s.Capabilities {
		box.Writable = append(box.Writable, c.Root)
	}
	for _, n := range s.Notes {
		box.Rules = append(box.Rules, plan.RuleStatus{Rule: "windows", Level: plan.Weaker, How: n})
	}
	return box
}

// dedupe drops repeated paths (keeping the first) and paths drop says are
// covered.
func dedupe(rs []pathRule, drop func(pathRule) bool) []pathRule {
	var out []pathRule
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[winKey(r.path)] || drop(r) {
			continue
		}
		seen[winKey(r.path)] = true
		out = append(out, r)
	}
	return out
}

// innermost returns the deepest writable root that holds p, or "".
func innermost(writable []pathRule, p string) string {
	best := ""
	for _, w := range writable {
		if winWithin(p, w.path) && len(winKey(w.path)) > len(winKey(best)) {
			best = w.path
		}
	}
	return best
}

// commandLine fills in the program and command line of req, or says why
// the command cannot run: not found in the sandbox's PATH (127), or not
// something a Windows command line can start (126).
func commandLine(req *SpawnRequest, argv, env []string, exists func(string) bool, read func(string) ([]byte, error)) *Refusal {
	prog := argv[0]
	if exists != nil {
		prog = lookPath(argv[0], env, exists)
		if prog == "" {
			return &Refusal{Status: 127, Reason: argv[0] + ": command not found in the sandbox's PATH"}
		}
		if alias(prog) {
			return &Refusal{Status: 126, Reason: prog + ": an App Execution Alias (a link to a Microsoft Store app), which only the user who installed the app can start; name the program's real .exe, or install it outside the Store"}
		}
	}
	if isBatch(prog) && exists != nil && read != nil {
		// An npm shim runs as what it runs: node on its script
		// (npmshim.go), so % and " reach the script intact.
		if data, err := read(prog); err == nil {
			if script, ok := npmShimScript(string(data)); ok {
				dir := winDir(prog)
				js := winJoin(dir, script)
				node := winJoin(dir, "node.exe")
				if !exists(node) {
					node = lookPath("node", env, exists)
				}
				if node != "" && exists(js) {
					line, err := CommandLine(append([]string{node, js}, argv[1:]...))
					if err != nil {
						return &Refusal{Status: 126, Reason: err.Error()}
					}
					req.Application, req.CommandLine = node, line
					return nil
				}
			}
		}
	}
	if isBatch(prog) {
		comspec := envGet(env, "COMSPEC")
		if comspec == "" {
			comspec = `C:\Windows\System32\cmd.exe`
		}
		line, err := batchCommandLine(comspec, prog, argv[1:])
		if err != nil {
			return &Refusal{Status: 126, Reason: err.Error()}
		}
		req.Application, req.CommandLine = comspec, line
		return nil
	}
	line, err := CommandLine(append([]string{argv[0]}, argv[1:]...))
	if err != nil {
		return &Refusal{Status: 126, Reason: err.Error()}
	}
	if exists != nil {
		req.Application = prog
	}
	req.CommandLine = line
	return nil
}

// alias reports whether a resolved program is an App Execution Alias: the
// zero-byte reparse points Windows puts in %LOCALAPPDATA%\Microsoft\WindowsApps
// for Store apps. They open only for the user who installed the app.
func alias(prog string) bool {
	return strings.Contains(winKey(prog), `\microsoft\windowsapps\`)
}

// FirewallRules returns the rules setup installs for the offline user.
//
// Windows Firewall evaluates block rules before allow rules (an allow rule
// cannot punch a hole in a block rule unless it is an authenticated-bypass
// rule), so "block everything except loopback to the proxy ports" is
// written as block rules that together cover exactly the complement:
//   - every remote address except 127.0.0.0/8 and ::1, any protocol;
//   - loopback TCP on every port but the proxy ports;
//   - loopback UDP on every port;
//   - all inbound traffic.
//
// Other IP protocols to loopback (ICMP echo to 127.0.0.1) stay open; they
// reach nothing outside the machine.
func FirewallRules(proxy PortRange) []FirewallRule {
	const (
		sddl      = "O:LSD:(A;;CC;;;{" + OfflineUser + "})"
		loopback  = "127.0.0.0/255.0.0.0,::1"
		notLoopV4 = "0.0.0.0-126.255.255.255,128.0.0.0-255.255.255.255"
		notLoopV6 = "::,::2-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
	)
	ports := []string{}
	if proxy.First > 1 {
		ports = append(ports, portRange(1, proxy.First-1))
	}
	if proxy.Last() < 65535 {
		ports = append(ports, portRange(proxy.Last()+1, 65535))
	}
	return []FirewallRule{
		{Name: "agentbox offline: block outbound", Description: "agentbox: the offline sandbox user reaches no address but loopback",
			Direction: "out", Action: "block", Protocol: "any", RemoteAddresses: notLoopV4 + "," + notLoopV6, LocalUserAuthorizedList: sddl},
		{Name: "agentbox offline: block loopback tcp", Description: "agentbox: the offline sandbox user reaches only the proxy ports on loopback",
			Direction: "out", Action: "block", Protocol: "tcp", RemoteAddresses: loopback, RemotePorts: strings.Join(ports, ","), LocalUserAuthorizedList: sddl},
		{Name: "agentbox offline: block loopback udp", Description: "agentbox: the offline sandbox user sends no UDP, not even on loopback",
			Direction: "out", Action: "block", Protocol: "udp", RemoteAddresses: loopback, LocalUserAuthorizedList: sddl},
		{Name: "agentbox offline: block inbound", Description: "agentbox: nothing reaches the offline sandbox user",
			Direction: "in", Action: "block", Protocol: "any", RemoteAddresses: "*", LocalUserAuthorizedList: sddl},
	}
}

func portRange(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return strconv.Itoa(lo) + "-" + strconv.Itoa(hi)
}

// stagingRuleName is the name a rule is added under while setup replaces
// it (setFirewallRules): the old rule goes only once the new one is there.
func stagingRuleName(name string) string { return name + " (being replaced)" }

// FirewallSDDL returns a rule's LocalUserAuthorizedList with the offline
// user's SID filled in.
func FirewallSDDL(r FirewallRule, offlineSID string) string {
	return strings.ReplaceAll(r.LocalUserAuthorizedList, "{"+OfflineUser+"}", offlineSID)
}

// SDDLNamesSID reports whether a LocalUserAuthorizedList, as Windows reads
// it back, grants the SID (an "(A;…;SID)" entry). Windows may rewrite the
// rest of the SDDL (owner, flags, order), so the rule is compared by SID.
func SDDLNamesSID(sddl, sid string) bool {
	for _, part := range strings.Split(sddl, "(")[1:] {
		fields := strings.Split(strings.TrimSuffix(strings.TrimSpace(part), ")"), ";")
		if len(fields) == 6 && fields[0] == "A" && strings.EqualFold(fields[5], sid) {
			return true
		}
	}
	return false
}
