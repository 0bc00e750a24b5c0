package winsandbox

import (
	"errors"
	"fmt"
	"path"
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
	// DefaultProxyPort is the loopback port agentbox's network proxy
	// listens on; the offline user's firewall rules let it reach this port
	// on 127.0.0.1 and ::1 and nothing else.
	DefaultProxyPort = 47080
)

// ErrCommandNotFound is returned (wrapped) by Build when the command is not
// found in the PATH of the environment it will run with; main maps it to exit
// status 127.
var ErrCommandNotFound = errors.New("command not found")

// Options is what Build needs besides the plan: facts about the calling
// process and the machine, passed in so Build stays pure.
type Options struct {
	// Environ is the caller's environment ("NAME=value"), the base of the
	// command's environment.
	Environ []string
	// ProxyPort is the loopback port of agentbox's proxy; 0 means
	// DefaultProxyPort.
	ProxyPort int
	// ReadRoots are folders the sandbox group must be able to read although
	// the plan does not name them: the folder of agentbox.exe (the runner)
	// and the folder the command lives in. Users' profiles are not readable
	// by other users on Windows, so a tool installed under the profile is
	// invisible to the sandbox users without this.
	ReadRoots []string
	// Exists reports whether a file exists; Build uses it to resolve the
	// command in the PATH of the command's environment. Nil leaves the
	// command as given and lets the runner's CreateProcessAsUser search.
	Exists func(path string) bool
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
	// moving needs. Put on the folders between a writable root and a
	// read-only path so the read-only path cannot be moved away wholesale.
	RightsDelete Rights = "delete"
	// RightsAll (deny): everything but SYNCHRONIZE.
	RightsAll Rights = "all"
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
	// already read the path, so world-readable folders keep their ACLs.
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

// Spec is everything the Windows backend does for one plan.
type Spec struct {
	Group        string         `json:"group"`
	Users        []string       `json:"users"`
	User         string         `json:"user"` // the user that runs the command
	Capabilities []Capability   `json:"capabilities"`
	ACEs         []ACE          `json:"aces"`
	Firewall     []FirewallRule `json:"firewall"`
	Spawn        SpawnRequest   `json:"spawn"`
	// Notes says where Windows does something other than what the plan
	// literally asks, so `agentbox plan` can tell the truth about it.
	Notes []string `json:"notes,omitempty"`
}

// pathRule is one path the plan gives an access, with its position in the
// mount order (later mounts cover earlier ones).
type pathRule struct {
	path   string
	index  int
	origin string
	deny   bool // from the deny stage (AGENTBOX_DENY lists only these)
}

// Build turns a plan into the Windows spec. It does no I/O: everything about
// the caller comes in opts.
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
	port := opts.ProxyPort
	if port == 0 {
		port = DefaultProxyPort
	}
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("proxy port %d out of range", port)
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

	var writable, readOnly, hidden []pathRule
	tmpDir := ""
	for i, m := range p.Mounts {
		origin := m.Origin.String()
		if m.Stage == plan.StageRoot {
			switch m.Op {
			case plan.ROBind:
				note("read-only root: no ACE; the sandbox users are ordinary users, and WRITE_RESTRICTED refuses every write outside the writable roots")
			case plan.Dev, plan.Proc:
				note("%s %s: no Windows equivalent, skipped", m.Op, m.Path)
			default:
				return nil, fmt.Errorf("mount %d (%s %s): not supported at stage root on Windows", i, m.Op, m.Path)
			}
			continue
		}
		src := m.Src()
		if m.Op == plan.Tmpfs && m.Access == plan.ReadWrite {
			return nil, fmt.Errorf("mount %d (tmpfs %s, %s): Windows has no tmpfs; the plan must give a host folder (tmp mode \"workspace\")", i, m.Path, origin)
		}
		if !winAbs(src) {
			return nil, fmt.Errorf("mount %d (%s %s, %s): %q is not an absolute Windows path", i, m.Op, m.Path, origin, src)
		}
		if m.Source != "" && winKey(m.Source) != winKey(m.Path) {
			note("%s is bound at %s on Linux; on Windows the command sees it at its own path", m.Source, m.Path)
		}
		r := pathRule{path: src, index: i, origin: origin, deny: m.Stage == plan.StageDeny}
		switch m.Access {
		case plan.ReadWrite:
			writable = append(writable, r)
			if m.Stage == plan.StageTmp {
				tmpDir = src
			}
		case plan.ReadOnly:
			readOnly = append(readOnly, r)
		case plan.Hidden:
			hidden = append(hidden, r)
			note("hidden paths keep their names visible in their parent folder; their contents are denied to the sandbox users")
		default:
			return nil, fmt.Errorf("mount %d (%s %s): unknown access %q", i, m.Op, m.Path, m.Access)
		}
	}

	// A path covered by a later hidden path stays hidden, as a later mount
	// covers an earlier one. (An explicit allow ACE on a child would beat
	// the deny ACE inherited from its hidden parent, so it must not be set.)
	covered := func(r pathRule) bool {
		for _, h := range hidden {
			if h.index > r.index && winWithin(r.path, h.path) {
				note("%s is inside %s, which is hidden after it; it stays hidden", r.path, h.path)
				return true
			}
		}
		return false
	}
	writable = dedupe(writable, covered)
	readOnly = dedupe(readOnly, covered)
	hidden = dedupe(hidden, func(pathRule) bool { return false })

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
	guarded := map[string]bool{}
	for _, r := range readOnly {
		s.ACEs = append(s.ACEs, ACE{Path: r.path, Deny: true, Trustee: GroupName, Rights: RightsWrite, Inherit: true, Origin: r.origin})
		root := innermost(writable, r.path)
		if root == "" {
			s.ACEs = append(s.ACEs, ACE{Path: r.path, Trustee: GroupName, Rights: RightsRead, Inherit: true, IfUsersCannotRead: true, Origin: r.origin})
			continue
		}
		for _, dir := range winBetween(root, r.path) {
			if guarded[winKey(dir)] {
				continue
			}
			guarded[winKey(dir)] = true
			s.ACEs = append(s.ACEs, ACE{Path: dir, Deny: true, Trustee: GroupName, Rights: RightsDelete,
				Origin: r.origin + " (keeps " + r.path + " from being moved away)"})
		}
	}
	reads := append([]string(nil), opts.ReadRoots...)
	if innermost(writable, p.Cwd) == "" {
		reads = append(reads, p.Cwd)
	}
	seen := map[string]bool{}
	for _, r := range reads {
		if !winAbs(r) {
			return nil, fmt.Errorf("read root %q is not an absolute Windows path", r)
		}
		if seen[winKey(r)] || innermost(writable, r) != "" {
			continue
		}
		seen[winKey(r)] = true
		s.ACEs = append(s.ACEs, ACE{Path: r, Trustee: GroupName, Rights: RightsRead, Inherit: true, IfUsersCannotRead: true, Origin: "runner and command folders"})
	}

	s.Firewall = FirewallRules(port)

	env, err := buildEnv(p, opts.Environ, writable, hidden, tmpDir, port, note)
	if err != nil {
		return nil, err
	}
	s.Spawn = SpawnRequest{
		Cwd:  p.Cwd,
		Env:  env,
		Args: append([]string(nil), p.Command...),
	}
	for _, c := range s.Capabilities {
		s.Spawn.RestrictingSIDs = append(s.Spawn.RestrictingSIDs, c.SID)
	}
	if err := commandLine(&s.Spawn, p.Command, env, opts.Exists); err != nil {
		return nil, err
	}
	s.Spawn.Limits = JobLimits{
		ActiveProcesses: uint32(min(p.Limits.Processes, 1<<32-1)),
		MemoryBytes:     p.Limits.Memory,
		CPUSeconds:      p.Limits.CPUTime,
	}
	if p.Limits.Memory > 0 {
		note("limits.memory caps the job's committed memory on Windows, not address space")
	}
	if p.Limits.OpenFiles > 0 || p.Limits.FileSize > 0 {
		note("limits.open_files and file size limits have no Windows job equivalent and are not enforced")
	}
	return s, nil
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

// alwaysKept are kept even in env mode "clean": Windows programs misbehave
// without them (Winsock fails to start without SystemRoot).
var alwaysKept = []string{"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT"}

func envMatch(name string, globs []string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(strings.ToUpper(g), strings.ToUpper(name)); ok {
			return true
		}
	}
	return false
}

func buildEnv(p *plan.Plan, environ []string, writable, hidden []pathRule, tmpDir string, port int, note func(string, ...any)) ([]string, error) {
	var env []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if strings.HasPrefix(kv, "=") {
			env = append(env, kv) // per-drive current folders; not names anyone sets
			continue
		}
		if !ok || name == "" {
			continue
		}
		up := strings.ToUpper(name)
		if strings.HasPrefix(up, "AGENTBOX") {
			continue // only agentbox sets its own variables
		}
		if envMatch(name, p.Env.Deny) {
			continue
		}
		if p.Env.Mode == "clean" && !envMatch(name, p.Env.Pass) && !envMatch(up, alwaysKept) {
			continue
		}
		env = append(env, kv)
	}
	if p.Env.Mode == "clean" {
		note("env mode clean keeps SystemRoot, SystemDrive, windir, ComSpec and PATHEXT, without which Windows programs fail")
	}
	set := func(k, v string) { env = append(env, k+"="+v) }
	for _, k := range sortedKeys(p.Env.Set) {
		set(k, p.Env.Set[k])
	}
	switch p.Tmp.Mode {
	case plan.TmpHost:
		note("tmp mode host: TEMP and TMP stay the caller's, which the sandbox users cannot write unless they are in a writable root")
	default:
		if tmpDir == "" && p.Tmp.HostDir != "" {
			tmpDir = p.Tmp.HostDir
			if innermost(writable, tmpDir) == "" {
				return nil, fmt.Errorf("tmp folder %q is not a writable root of the plan", tmpDir)
			}
		}
		if tmpDir != "" {
			set("TEMP", tmpDir)
			set("TMP", tmpDir)
		}
	}
	if p.Network.Mode == plan.NetAllowlist {
		proxy := "http://127.0.0.1:" + strconv.Itoa(port)
		set("HTTP_PROXY", proxy)
		set("HTTPS_PROXY", proxy)
		set("ALL_PROXY", proxy)
		note("network allowlist: the offline user can reach only 127.0.0.1:%d and [::1]:%d; the allowlist itself is enforced by agentbox's proxy there", port, port)
	}
	var ws, hs []string
	for _, w := range writable {
		ws = append(ws, w.path)
	}
	for _, h := range hidden {
		if h.deny {
			hs = append(hs, h.path)
		}
	}
	set("AGENTBOX", "1")
	set("AGENTBOX_BACKEND", "windows")
	set("AGENTBOX_WRITABLE", strings.Join(ws, ";"))
	set("AGENTBOX_DENY", strings.Join(hs, ";"))
	set("AGENTBOX_NETWORK", p.Network.Mode)
	return sortEnv(env), nil
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ { // insertion sort: tiny maps, no extra import
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

// commandLine fills in the program and command line of req.
func commandLine(req *SpawnRequest, argv, env []string, exists func(string) bool) error {
	prog := argv[0]
	if exists != nil {
		prog = lookPath(argv[0], env, exists)
		if prog == "" {
			return fmt.Errorf("%s: %w in the sandbox's PATH", argv[0], ErrCommandNotFound)
		}
	}
	if isBatch(prog) {
		comspec := envGet(env, "COMSPEC")
		if comspec == "" {
			comspec = `C:\Windows\System32\cmd.exe`
		}
		line, err := batchCommandLine(comspec, prog, argv[1:])
		if err != nil {
			return err
		}
		req.Application, req.CommandLine = comspec, line
		return nil
	}
	line, err := CommandLine(argv)
	if err != nil {
		return err
	}
	if exists != nil {
		req.Application = prog
	}
	req.CommandLine = line
	return nil
}

// FirewallRules returns the rules setup installs for the offline user.
//
// Windows Firewall evaluates block rules before allow rules (an allow rule
// cannot punch a hole in a block rule unless it is an authenticated-bypass
// rule), so "block everything except loopback to the proxy port" is written
// as block rules that together cover exactly the complement:
//   - every remote address except 127.0.0.0/8 and ::1, any protocol;
//   - loopback TCP on every port but the proxy port;
//   - loopback UDP on every port;
//   - all inbound traffic.
//
// Other IP protocols to loopback (ICMP echo to 127.0.0.1) stay open; they
// reach nothing outside the machine.
func FirewallRules(port int) []FirewallRule {
	const (
		sddl      = "O:LSD:(A;;CC;;;{" + OfflineUser + "})"
		loopback  = "127.0.0.0/255.0.0.0,::1"
		notLoopV4 = "0.0.0.0-126.255.255.255,128.0.0.0-255.255.255.255"
		notLoopV6 = "::,::2-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
	)
	ports := []string{}
	if port > 1 {
		ports = append(ports, portRange(1, port-1))
	}
	if port < 65535 {
		ports = append(ports, portRange(port+1, 65535))
	}
	return []FirewallRule{
		{Name: "agentbox offline: block outbound", Description: "agentbox: the offline sandbox user reaches no address but loopback",
			Direction: "out", Action: "block", Protocol: "any", RemoteAddresses: notLoopV4 + "," + notLoopV6, LocalUserAuthorizedList: sddl},
		{Name: "agentbox offline: block loopback tcp", Description: "agentbox: the offline sandbox user reaches only the proxy port on loopback",
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

// FirewallSDDL returns a rule's LocalUserAuthorizedList with the offline
// user's SID filled in.
func FirewallSDDL(r FirewallRule, offlineSID string) string {
	return strings.ReplaceAll(r.LocalUserAuthorizedList, "{"+OfflineUser+"}", offlineSID)
}
