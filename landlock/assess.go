package landlock

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/seccomp"
)

// Level and RuleStatus are the plan's vocabulary for how a backend
// enforces each rule; Landlock uses all three levels.
type (
	Level      = plan.Level
	RuleStatus = plan.RuleStatus
)

// The three levels.
const (
	Enforced    = plan.Enforced
	Weaker      = plan.Weaker
	NotEnforced = plan.NotEnforced
)

// Grant gives Rights on the file hierarchy at Path, except on the subtrees
// listed in Except. Landlock cannot subtract, so when Except is not empty the
// grant is applied to Path's children one by one, leaving out the excepted
// ones, recursively (see Expand); Path itself and the folders between it and
// an excepted path get nothing from this grant.
type Grant struct {
	Path     string   `json:"path"`
	Rights   Rights   `json:"rights"`
	Except   []string `json:"except,omitempty"`
	Optional bool     `json:"optional,omitempty"` // skipped when it does not exist (device nodes)
}

// Assessment is a plan translated for Landlock: what to grant, what to
// restrict besides files, the environment CMD needs, and the honest status of
// every rule.
type Assessment struct {
	// ABI is the Landlock ABI version the assessment was made for; Apply
	// refuses a kernel that has less.
	ABI int `json:"abi"`
	// HandledFS are the filesystem rights restricted: everything not granted
	// below is refused.
	HandledFS Rights `json:"handled_fs"`
	// Grants are the filesystem grants, in plan order, before carving.
	Grants []Grant `json:"grants"`
	// ReadPaths and WritePaths are the roots of the grants that give read
	// and write rights.
	ReadPaths  []string `json:"read_paths"`
	WritePaths []string `json:"write_paths"`
	// BlockTCP refuses every TCP connect(2) and bind(2) (ABI 4+).
	BlockTCP bool `json:"block_tcp,omitempty"`
	// BlockUDP refuses every UDP bind, connect and send (ABI 10+).
	BlockUDP bool `json:"block_udp,omitempty"`
	// Proxy is true in network mode allowlist: CMD reaches the network
	// only through agentbox's proxy, which listens on the host's loopback
	// at a port chosen when the run starts; TCP connect is allowed to that
	// port and to ConnectPorts, and nowhere else (BlockTCP is set too).
	Proxy bool `json:"proxy,omitempty"`
	// ConnectPorts are the ports of the host services an allow entry names
	// ("localhost:3000"), which CMD reaches directly.
	ConnectPorts []int `json:"connect_ports,omitempty"`
	// ProxyPort is the proxy's port; the supervisor knows it once the
	// proxy listens and gives it to the child, which sets it before Apply.
	ProxyPort int `json:"-"`
	// BindPorts are the published ports of the box's servers: binding TCP
	// is allowed on them and no other port, and listen(2) is let through
	// the seccomp filter (seccomp.NoNetBypassListening). Connecting to
	// them is not allowed: Landlock would allow it to every address.
	BindPorts []int `json:"bind_ports,omitempty"`
	// CABundle is the box's certificate bundle (the system's trust and the
	// run's own authority), when the proxy terminates TLS for some hosts.
	CABundle string `json:"ca_bundle,omitempty"`
	// Relays are the published ports whose host end is not the box's own
	// (another port or address): agentbox listens there and connects to
	// the box's server at 127.0.0.1:BOXPORT.
	Relays []plan.Publish `json:"relays,omitempty"`
	// ScopeSignal refuses signals to processes outside the sandbox (ABI 6+).
	ScopeSignal bool `json:"scope_signal,omitempty"`
	// ScopeAbstractUnix refuses connecting to abstract UNIX sockets outside
	// the sandbox (ABI 6+); set with network "none", as bwrap's
	// --unshare-net would cut them.
	ScopeAbstractUnix bool `json:"scope_abstract_unix,omitempty"`
	// DropCaps drops every capability before exec: a root process keeps
	// its capabilities under Landlock, and CAP_SYS_MODULE alone would let it
	// load kernel code (bwrap's --cap-drop ALL, for the same reason).
	DropCaps bool `json:"drop_caps,omitempty"`
	// Audit has Landlock report the denials of CMD and everything it
	// starts to the kernel's audit (ABI 7's LOG_NEW_EXEC_ON): the run's
	// filesystem log reads them there (package fslog).
	Audit bool `json:"audit,omitempty"`
	// Seccomp are the extra seccomp groups (package seccomp) the box's
	// filter refuses besides the plan's: what closes the ways around
	// Landlock's network rules, the socket families that leave the host,
	// UDP before ABI 10, and unix sockets.
	Seccomp []string `json:"seccomp,omitempty"`
	// Env are variables CMD must get on top of the plan's environment.
	Env map[string]string `json:"env,omitempty"`
	// Rules are the status of every mount and rule of the plan.
	Rules []RuleStatus `json:"rules"`
}

// NotEnforced returns the rules Landlock cannot honour at all. Under
// enforce = "require" each one is an error.
func (a Assessment) NotEnforced() []RuleStatus {
	var out []RuleStatus
	for _, r := range a.Rules {
		if r.Level == NotEnforced {
			out = append(out, r)
		}
	}
	return out
}

// Weaker returns the rules that are enforced less strictly than bubblewrap
// would; `agentbox run` names them in one stderr line.
func (a Assessment) Weaker() []RuleStatus {
	var out []RuleStatus
	for _, r := range a.Rules {
		if r.Level == Weaker {
			out = append(out, r)
		}
	}
	return out
}

// devNodes are the device files CMD may open under /dev, each by its exact
// node: the set bubblewrap's --dev creates, but for /dev/pts. Every other
// node of the host's /dev (disks, /dev/mem, GPUs) stays inaccessible, which
// matters most for root: with its capabilities dropped it still owns
// /dev/sda. /dev/pts is the host's, with a node for every terminal of the
// machine (other sessions of the same user among them): of it, only
// pts/ptmx (where /dev/ptmx links to it) and the terminal agentbox runs on
// (grantTerminals, at run time) can be opened. A pty the box makes through
// ptmx cannot be opened by its path either (Landlock has no rule for a
// node that appears later): a box that needs one of its own runs under
// bubblewrap, whose /dev/pts is the box's.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts/ptmx"}

// layer is one step of the plan seen by Landlock: Rights on the hierarchy at
// path, covering what earlier layers said about it.
type layer struct {
	path     string
	rights   Rights
	optional bool
	mount    int // index in plan.Mounts
}

// Options change how Assess trades protection for function where Landlock
// cannot have both.
type Options struct {
	// KeepRootsWritable leaves every writable root fully writable instead of
	// carving the read-only paths a policy names (filesystem.read_only)
	// out of it. Landlock rights reach everything below a folder, so keeping
	// such a path read-only means that nothing can be created, removed or
	// renamed directly in the folders above it. With this option those
	// paths are not enforced at all (and marked so, which enforce =
	// "require" refuses). Deny paths are carved either way.
	//
	// What host programs run or obey (.git/hooks, .git/config, agent
	// control files, loaded policies: plan.HostExec's guards) is never
	// carved, with or without this option: carving it would stop files
	// being created at the top of the project and git from committing.
	// It is kept by the after-run check instead (recorded before the run,
	// put back after it), and marked enforced-weaker with exactly that.
	KeepRootsWritable bool
}

// guardPaths are the paths the plan's registry keeps by recording and
// restoring under Landlock: never carved out of a writable root.
func guardPaths(p *plan.Plan) map[string]bool {
	out := map[string]bool{}
	for _, g := range p.HostExec.Guards {
		if g.Rule == plan.RuleUnlisted {
			// What is in it is unknown, so it cannot be recorded: it is
			// carved out of the write grant like a read-only path.
			continue
		}
		switch g.Keep {
		case plan.KeepReadOnly, plan.KeepBlocked, plan.KeepRestored:
			out[g.Path] = true
		}
	}
	return out
}

// guardHow is how Landlock keeps a guard: the rule text of `plan`.
const guardHow = "writable during the run: Landlock rights reach everything below a writable root, and keeping this read-only would stop files " +
	"being created in the folders above it and git from committing; agentbox records it before the run and, with every process of the run ended, " +
	"puts back any change and moves what the box added to quarantine (a host program that reads it while the box runs can see the box's version)"

// Assess translates p for a kernel with Landlock ABI abi, keeping read-only
// paths inside writable roots read-only (see Options). It is pure: no system
// calls, so `agentbox plan` can show it on every OS.
func Assess(p *plan.Plan, abi int) Assessment {
	return AssessWith(p, abi, Options{})
}

// AssessWith is Assess with options.
func AssessWith(p *plan.Plan, abi int, o Options) Assessment {
	a := Assessment{ABI: abi, HandledFS: handledFS(abi)}
	if abi < 1 {
		a.Rules = unavailable(p, abi)
		return a
	}
	guards := guardPaths(p)
	ls := layers(p, a.HandledFS, o, guards)
	a.Grants = grants(ls)
	for _, g := range a.Grants {
		if g.Rights&readRights != 0 {
			a.ReadPaths = append(a.ReadPaths, g.Path)
		}
		if g.Rights&writeRights != 0 {
			a.WritePaths = append(a.WritePaths, g.Path)
		}
	}
	a.DropCaps = p.Identity.Root()
	a.Audit = p.Log.Filesystem == fslog.Audit && abi >= 7
	a.ScopeSignal = abi >= 6
	// Abstract unix sockets outside the box are refused in every network
	// mode: a host service behind one (an X server, a D-Bus daemon,
	// containerd's shims) is no more the box's than one on the filesystem.
	a.ScopeAbstractUnix = abi >= 6
	if p.Network.Mode == plan.NetNone || (p.Network.Mode == plan.NetAllowlist && abi >= 4) {
		a.BlockTCP = abi >= 4
		a.BlockUDP = abi >= 10
	}
	for _, g := range seccomp.ForNetwork(p.Network.Mode, true) {
		a.Seccomp = append(a.Seccomp, g.Name)
	}
	if (p.Network.Mode == plan.NetNone || p.Network.Mode == plan.NetAllowlist) && !a.BlockUDP {
		a.Seccomp = append(a.Seccomp, seccomp.NoUDP.Name)
	}
	if len(p.Network.UnixSockets) == 0 {
		a.Seccomp = append(a.Seccomp, seccomp.NoUnixSockets.Name)
	}
	// Landlock has no right for a file's metadata: the supervisor decides
	// those calls (package broker).
	a.Seccomp = append(a.Seccomp, seccomp.Metadata.Name)
	if p.Network.Mode == plan.NetAllowlist && abi >= 4 {
		a.Proxy = true
		a.ConnectPorts = forwardPorts(p.Network)
	}
	if a.BlockTCP {
		for _, pub := range p.Network.Publish {
			if !slices.Contains(a.BindPorts, pub.BoxPort) {
				a.BindPorts = append(a.BindPorts, pub.BoxPort)
			}
			if pub.Addr != "127.0.0.1" || pub.Port != pub.BoxPort {
				a.Relays = append(a.Relays, pub)
			}
		}
	}
	if len(a.BindPorts) > 0 {
		// A published port's server needs listen(2).
		for i, n := range a.Seccomp {
			if n == seccomp.NoNetBypass.Name {
				a.Seccomp[i] = seccomp.NoNetBypassListening.Name
			}
		}
	}
	if dir := tmpDir(p); dir != "" {
		a.Env = map[string]string{"TMPDIR": dir}
	}
	if a.Proxy && len(p.Network.Intercept) > 0 {
		// Landlock cannot put a file over the system's bundle: the box's
		// bundle is a file of the run in its TMPDIR, which the variables
		// name (written when the run starts, removed after it).
		a.CABundle = caBundlePath(p)
		if a.Env == nil {
			a.Env = map[string]string{}
		}
		for _, v := range plan.CAVars {
			a.Env[v] = a.CABundle
		}
	}
	a.Rules = classify(p, a, ls, o, guards)
	return a
}

// tmpDir is the folder TMPDIR points at: the per-workspace (or per-run)
// folder, since Landlock cannot put it at /tmp.
func tmpDir(p *plan.Plan) string {
	switch p.Tmp.Mode {
	case plan.TmpWorkspace, plan.TmpPrivate:
		return p.Tmp.HostDir
	case plan.TmpHost:
		return "/tmp"
	}
	return ""
}

func accessRights(a plan.Access) Rights {
	switch a {
	case plan.ReadOnly:
		return readRights
	case plan.ReadWrite:
		return readRights | writeRights
	}
	return 0
}

// layers turns the mount list into Landlock layers. A bind whose source is
// not its path cannot be remapped: the path gets nothing and the source gets
// the access in place.
func layers(p *plan.Plan, handled Rights, o Options, guards map[string]bool) []layer {
	var ls []layer
	add := func(i int, path string, r Rights, optional bool) {
		ls = append(ls, layer{path: path, rights: r & handled, optional: optional, mount: i})
	}
	for i, m := range p.Mounts {
		if (o.KeepRootsWritable || guards[m.Path]) && keptWritable(ls, m) {
			continue
		}
		if m.Sockets {
			// Hiding a runtime folder or a socket would leave the
			// folders above it unlistable (/ itself for /run); the
			// seccomp filter refuses unix sockets instead (see
			// unix-sockets in classifyRest).
			continue
		}
		switch m.Op {
		case plan.ROBind, plan.Bind, plan.Pin:
			if m.Src() != m.Path {
				add(i, m.Path, 0, false)
			}
			add(i, m.Src(), accessRights(m.Access), false)
		case plan.Dev:
			add(i, m.Path, rightReadDir, false)
			for _, n := range devNodes {
				add(i, path.Join(m.Path, n), devRights, true)
			}
			// POSIX shared memory and semaphores live here; it is the
			// host's, unlike the fresh one bwrap makes (see classify).
			add(i, path.Join(m.Path, "shm"), readRights|writeRights, true)
		case plan.Proc:
			add(i, m.Path, readRights, false)
		case plan.Tmpfs:
			// An empty tmpfs cannot be made; what was there becomes
			// inaccessible instead. A private /tmp uses Tmp.HostDir when
			// the caller made a fresh folder for it.
			add(i, m.Path, 0, false)
			if m.Stage == plan.StageTmp && m.Access == plan.ReadWrite && p.Tmp.HostDir != "" {
				add(i, p.Tmp.HostDir, readRights|writeRights, false)
			}
		case plan.RemountRO:
			// Non-recursive in bwrap: it affects the mount at this very
			// path, not the ones bound below it later or earlier.
			for j := len(ls) - 1; j >= 0; j-- {
				if ls[j].path == m.Path {
					ls[j].rights &^= writeRights
					break
				}
			}
		default: // HideDir, HideFile and anything unknown: nothing
			add(i, m.Path, 0, false)
		}
	}
	return ls
}

// keptWritable reports whether m is a read-only path that lies in a
// writable layer, which KeepRootsWritable leaves writable.
func keptWritable(ls []layer, m plan.Mount) bool {
	if m.Op != plan.ROBind || m.Stage != plan.StageReadOnly {
		return false
	}
	for j := len(ls) - 1; j >= 0; j-- {
		if plan.Within(m.Path, ls[j].path) {
			return ls[j].rights&rightWriteFile != 0
		}
	}
	return false
}

// grants computes the grant list so that the union of all grants gives
// every path exactly the rights of the last layer covering it, which is the
// bwrap semantics "later mounts cover earlier ones". A layer covered as a
// whole by a later one grants nothing; otherwise it excepts every later
// layer inside it that has fewer rights (a later layer with at least its
// rights needs no carving: the union already gives the later rights there).
func grants(ls []layer) []Grant {
	var out []Grant
	for i, l := range ls {
		if l.rights == 0 || coveredLater(ls, i) {
			continue
		}
		var except []string
		for _, n := range ls[i+1:] {
			if n.path != l.path && plan.Within(n.path, l.path) && n.rights&l.rights != l.rights {
				except = append(except, n.path)
			}
		}
		out = append(out, Grant{Path: l.path, Rights: l.rights, Except: plan.Outermost(except), Optional: l.optional})
	}
	return out
}

func coveredLater(ls []layer, i int) bool {
	for _, n := range ls[i+1:] {
		if plan.Within(ls[i].path, n.path) {
			return true
		}
	}
	return false
}

// carved returns the folders that get none of g's rights because something
// below them is excepted: g.Path and every folder between it and an
// excepted path.
func carved(g Grant) []string {
	var out []string
	for _, e := range g.Except {
		for d := path.Dir(e); plan.Within(d, g.Path); d = path.Dir(d) {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
			if d == g.Path {
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// parentsOf returns the folders left without g-rights because x is excepted,
// over all grants that except x.
func parentsOf(gs []Grant, x string) []string {
	var out []string
	for _, g := range gs {
		if !slices.Contains(g.Except, x) {
			continue
		}
		for d := path.Dir(x); plan.Within(d, g.Path); d = path.Dir(d) {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
			if d == g.Path {
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func grantAt(gs []Grant, p string, r Rights) (Grant, bool) {
	for _, g := range gs {
		if g.Path == p && g.Rights&r != 0 {
			return g, true
		}
	}
	return Grant{}, false
}

func list(paths []string) string {
	const max = 4
	if len(paths) > max {
		return strings.Join(paths[:max], ", ") + fmt.Sprintf(" and %d more", len(paths)-max)
	}
	return strings.Join(paths, ", ")
}

// classify gives every mount of the plan, and the rules that are not
// mounts, their Landlock level.
func classify(p *plan.Plan, a Assessment, ls []layer, o Options, guards map[string]bool) []RuleStatus {
	var out []RuleStatus
	add := func(m plan.Mount, rule string, lv Level, how string) {
		out = append(out, RuleStatus{Rule: rule, Path: m.Path, Origin: m.Origin.String(), Level: lv, How: how})
	}
	for i, m := range p.Mounts {
		switch {
		case m.Sockets && len(p.Network.UnixSockets) > 0:
			add(m, m.Stage.String(), Weaker, "not hidden: Landlock cannot hide it without making the folders above it unlistable (see unix-sockets)")
		case m.Sockets:
			add(m, m.Stage.String(), Enforced, "not hidden (Landlock cannot hide a folder without making the folders above it unlistable): the seccomp filter refuses every unix socket instead (see unix-sockets)")
		case guards[m.Path] && keptWritable(ls[:layerCount(ls, i)], m):
			add(m, m.Stage.String(), Weaker, guardHow)
		case m.Op == plan.Pin && !carvedBelow(a, m.Path):
			add(m, m.Stage.String(), Weaker, "not kept in place: Landlock cannot stop a folder inside a writable root from being renamed; "+
				"what lies below it is recorded before the run and put back after it")
		case o.KeepRootsWritable && keptWritable(ls[:layerCount(ls, i)], m):
			add(m, m.Stage.String(), NotEnforced, "writable: the writable root around it is kept fully writable (KeepRootsWritable), "+
				"because Landlock can only keep it read-only by making the folders above it unchangeable")
		case m.Stage == plan.StageRoot && m.Op == plan.ROBind:
			how := "read and execute; nothing outside the writable roots can be changed"
			if g, ok := grantAt(a.Grants, m.Path, readRights); ok && len(g.Except) > 0 {
				how += "; " + list(carved(g)) + " cannot be listed, because Landlock cannot grant a folder without everything below it and " +
					list(g.Except) + " are left out"
			}
			add(m, "root", Enforced, how)
		case m.Op == plan.Dev:
			add(m, "dev", Weaker, "the host's /dev: only "+strings.Join(devNodes, ", ")+
				", shm and the terminal agentbox runs on can be opened (other device nodes, other terminals and the ptys the box makes are visible but refused); /dev/shm is shared with the host")
		case m.Op == plan.Proc:
			add(m, "proc", Weaker, "the host's /proc, read-only: no PID namespace, so other processes are visible (Landlock refuses to ptrace them)")
		case m.Stage == plan.StageTmp && m.Op == plan.HideDir:
			add(m, "tmp", Weaker, "the temporary folders of other workspaces are inaccessible (EACCES) rather than hidden: stat still shows they exist")
		case m.Stage == plan.StageTmp:
			classifyTmp(p, m, add)
		case m.Stage == plan.StageWorkspace && m.Op == plan.Tmpfs:
			add(m, "workspace", Weaker, "other workspaces are inaccessible (EACCES) rather than absent: stat still shows that "+
				m.Path+" and the folders in it exist, and "+m.Path+" cannot be listed")
		case m.Stage == plan.StageWorkspace && m.Op == plan.RemountRO:
			add(m, "workspace", Enforced, "nothing can be created in "+m.Path)
		case m.Op == plan.Pin:
			add(m, m.Stage.String(), Enforced, "it cannot be renamed or removed: a read-only path lies below it, so the folder above it gets no right to remove or rename entries")
		case m.Op == plan.Bind || m.Op == plan.ROBind:
			classifyBind(a, m, add)
		case m.Op == plan.HideDir || m.Op == plan.HideFile:
			how := "inaccessible (EACCES) rather than an empty " + map[plan.Op]string{plan.HideDir: "folder", plan.HideFile: "file"}[m.Op] +
				": stat still shows it exists"
			if ps := parentsOf(a.Grants, m.Path); len(ps) > 0 {
				how += "; " + list(ps) + " cannot be listed, because Landlock cannot grant a folder without everything below it"
			}
			add(m, "deny", Weaker, how)
		case m.Op == plan.Tmpfs:
			add(m, m.Stage.String(), Weaker, "an empty tmpfs cannot be mounted: "+m.Path+" is inaccessible instead")
		default:
			add(m, m.Stage.String(), NotEnforced, fmt.Sprintf("Landlock has no equivalent of %s", m.Op))
		}
	}
	return append(out, classifyRest(p, a)...)
}

// carvedBelow reports whether a grant excepts a path at or below dir:
// then dir gets no right to remove or rename entries on the way to it.
func carvedBelow(a Assessment, dir string) bool {
	for _, g := range a.Grants {
		for _, e := range g.Except {
			if plan.Within(e, dir) {
				return true
			}
		}
	}
	return false
}

// layerCount is the number of layers made from the mounts before mount i.
func layerCount(ls []layer, i int) int {
	n := 0
	for n < len(ls) && ls[n].mount < i {
		n++
	}
	return n
}

func classifyTmp(p *plan.Plan, m plan.Mount, add func(plan.Mount, string, Level, string)) {
	switch {
	case m.Op == plan.Bind && m.Src() == m.Path:
		add(m, "tmp", Enforced, "the host's /tmp, writable; TMPDIR=/tmp")
	case m.Op == plan.Bind:
		add(m, "tmp", Weaker, "/tmp cannot be remapped: TMPDIR="+m.Src()+" (writable); the host's /tmp is neither readable nor writable, so programs that ignore TMPDIR fail to use /tmp")
	case p.Tmp.HostDir != "":
		add(m, "tmp", Weaker, "/tmp cannot be remapped or replaced by a tmpfs: TMPDIR="+p.Tmp.HostDir+", a fresh folder for this run; the host's /tmp is neither readable nor writable")
	default:
		add(m, "tmp", NotEnforced, "a private /tmp needs a fresh folder in plan Tmp.HostDir (Landlock cannot mount a tmpfs); none was given, so there is no writable temporary folder")
	}
}

func classifyBind(a Assessment, m plan.Mount, add func(plan.Mount, string, Level, string)) {
	rule := m.Stage.String()
	if m.Src() != m.Path {
		add(m, rule, NotEnforced, "Landlock cannot show "+m.Src()+" at "+m.Path)
		return
	}
	if m.Access == plan.ReadOnly {
		add(m, rule, Enforced, "read-only: nothing in it can be written, created, removed or renamed, and it cannot be moved away (the folders above it get no write right)")
		return
	}
	g, ok := grantAt(a.Grants, m.Path, writeRights)
	if !ok {
		add(m, rule, Enforced, "covered by a later rule")
		return
	}
	if len(g.Except) == 0 {
		add(m, rule, Enforced, "writable")
		return
	}
	folders := carved(g)
	how := "writable, except that nothing can be created, removed or renamed directly in " + list(folders) +
		" (existing files there stay writable): Landlock rights reach everything below a folder, so these folders get no write right to keep " +
		list(g.Except) + " read-only or hidden"
	for _, f := range folders {
		if path.Base(f) == ".git" {
			how += "; git cannot create its lock files in " + f + ", so commits fail"
			break
		}
	}
	add(m, rule, Weaker, how)
}

// classifyRest covers the rules that are not mounts.
func classifyRest(p *plan.Plan, a Assessment) []RuleStatus {
	var out []RuleStatus
	add := func(rule string, lv Level, how string) {
		out = append(out, RuleStatus{Rule: rule, Level: lv, How: how})
	}
	signals := "it cannot signal them (ABI 6 scope)"
	if !a.ScopeSignal {
		signals = "it can signal those of the same user (signal scoping needs ABI 6)"
	}
	add("pid-namespace", Weaker, "no PID namespace: CMD sees the host's processes; Landlock refuses to ptrace them and "+signals)
	add("die-with-parent", Weaker, "no PID namespace: agentbox is the reaper of every process the box leaves behind (PR_SET_CHILD_SUBREAPER) and ends them all when CMD ends, "+
		"before its after-run check and before it returns, so none can change a file after the check or take the terminal; "+
		"if agentbox itself is killed (kill -9), CMD gets SIGKILL (PR_SET_PDEATHSIG) and the next run ends what is left in the box's process group (or cgroup) first; "+
		"a process the box has a service outside it start (systemd --user, at) is not the box's")
	// Landlock has no right for changing a file's metadata: the seccomp
	// filter hands those calls to the supervisor (package broker).
	if p.Depth > 1 && os.Getenv(plan.VarBackend) == "bwrap" {
		add("metadata", Enforced, "chmod, chown, utimes, extended attributes (ACLs) and chattr's flags: Landlock has no right for them, and inside a bubblewrap box of agentbox, "+
			"whose filter lets no process take another box's calls, agentbox cannot decide them: every such call is refused (ENOSYS)")
	} else {
		add("metadata", Enforced, "chmod, chown, utimes, extended attributes (ACLs) and chattr's flags: Landlock has no right for them, so the seccomp filter hands each such call to agentbox, "+
			"which resolves what it names once, to a descriptor, and performs it itself (with the box's credentials) when that lies in the writable roots, "+
			"or refuses it (EACCES); a setuid or setgid bit is refused everywhere. What it costs: a round trip to agentbox per such call (tar as root makes three per file it unpacks; builds, npm and git hardly any); "+
			"a process that made itself non-dumpable cannot be read, so its calls are refused")
	}
	if a.DropCaps {
		add("capabilities", Enforced, "root: every capability dropped (bounding set, ambient, effective, permitted, inheritable) and no_new_privs set before exec")
	}
	switch p.Network.Mode {
	case plan.NetOpen, "":
		add("network", Enforced, "open: not restricted")
	case plan.NetNone:
		switch {
		case a.ABI >= 10:
			add("network", Weaker, "none: TCP and UDP connect, bind and send are refused; TCP Fast Open, MPTCP/SCTP and ICMP sockets, which get past Landlock's checks, are refused by the seccomp filter, and so is listen(2) on every socket (it takes a port without bind), unix sockets included: a server in the box cannot listen, as it could on a private loopback under bwrap")
		case a.ABI >= 4:
			how := "none: TCP connect and bind are refused (ABI 4); Landlock has no UDP rule before ABI 10, so the seccomp filter refuses every IPv4 and IPv6 datagram socket (no DNS, and no UDP on loopback either); TCP Fast Open, MPTCP/SCTP and ICMP sockets, which get past Landlock's checks, are refused by the seccomp filter, and so is listen(2) on every socket (it takes a port without bind): a server in the box cannot listen, as it could on a private loopback under bwrap"
			add("network", Weaker, how)
		default:
			add("network", NotEnforced, fmt.Sprintf("none: Landlock ABI %d has no network rules (TCP needs ABI 4)", a.ABI))
		}
	case plan.NetAllowlist:
		if !a.Proxy {
			add("network", NotEnforced, fmt.Sprintf("allowlist: Landlock ABI %d has no network rules (TCP needs ABI 4)", a.ABI))
			break
		}
		how := "allowlist: TCP may connect only to the port of agentbox's proxy on the host's loopback (chosen when the run starts; HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name it), " +
			"which checks every request against the rules and serves only this user's connections"
		if len(a.ConnectPorts) > 0 {
			how += fmt.Sprintf(", and to the allowed host services' ports %v", a.ConnectPorts)
		}
		how += "; but Landlock filters TCP by port, not by address, so a program that deliberately connects elsewhere on one of those ports " +
			"gets through; binding TCP is refused, and listen(2) on every socket (it takes a port without bind), unix sockets included, so a server in the box cannot listen; TCP Fast Open, MPTCP/SCTP and ICMP sockets are refused by the seccomp filter"
		if a.BlockUDP {
			how += "; UDP is refused"
		} else {
			how += "; Landlock has no UDP rule before ABI 10, so the seccomp filter refuses every IPv4 and IPv6 datagram socket (the proxy resolves names)"
		}
		add("network", Weaker, how)
	default:
		add("network", NotEnforced, "unknown network mode "+p.Network.Mode)
	}
	if a.CABundle != "" {
		add("ca", Weaker, "the box's certificate bundle (the system's trust and this run's own authority) is "+a.CABundle+", which "+strings.Join(plan.CAVars, ", ")+
			" name; Landlock cannot put it over the system's bundle, so a program that reads only the system's does not trust the intercepted hosts' certificates and fails on them; the authority's key stays in agentbox")
	}
	for _, pub := range p.Network.Publish {
		if p.Network.Mode == plan.NetOpen {
			break
		}
		rs := RuleStatus{Rule: "publish", Path: pub.String(), Origin: pub.Origin.String()}
		switch {
		case !a.BlockTCP:
			rs.Level, rs.How = NotEnforced, fmt.Sprintf("Landlock ABI %d has no network rules (TCP needs ABI 4)", a.ABI)
		case pub.Port == pub.BoxPort && pub.Addr != "127.0.0.1":
			rs.Level, rs.How = NotEnforced, "the box shares the host's ports under Landlock: agentbox cannot listen on the host's port the box's server takes; publish another host port (PORT:BOXPORT)"
		default:
			rs.Level = Weaker
			rs.How = fmt.Sprintf("the box's server listens on the host's own network: Landlock lets it bind port %d and no other, but restricts ports, not addresses, so a server that binds 0.0.0.0 is reachable from other machines, "+
				"and listen(2), let through the seccomp filter for it, takes a random port on every address from a socket that was never bound; the box cannot connect to its own server (the port would be allowed to every address)", pub.BoxPort)
			if pub.Addr != "127.0.0.1" || pub.Port != pub.BoxPort {
				rs.How = fmt.Sprintf("agentbox listens on the host's %s:%d and connects to 127.0.0.1:%d; ", pub.Addr, pub.Port, pub.BoxPort) + rs.How
			}
		}
		out = append(out, rs)
	}
	unixHow := "no unix socket can be created in the box, inside the writable roots too (seccomp refuses socket(AF_UNIX); socketpair works): Landlock does not restrict connecting to a socket on the filesystem, so this is what keeps every host service behind one (a session bus, docker.sock, ssh-agent) from answering the box. " +
		"What it costs: a program that talks to a local daemon or serves one over a unix socket (ssh-add, gpg, a database or language server on a socket, syslog) fails in the box; glibc's lookups through nscd or systemd fall back to the files"
	if a.ScopeAbstractUnix {
		unixHow += "; abstract unix sockets outside the box are refused too (ABI 6)"
	}
	if len(p.Network.UnixSockets) > 0 {
		add("unix-sockets", NotEnforced, "network.unix_sockets names "+strings.Join(p.Network.UnixSockets, ", ")+
			": Landlock cannot restrict connecting to a socket on the filesystem, so letting the box reach these means letting it create unix sockets, "+
			"and then every host service behind one (a session bus, docker.sock) answers it too; use bubblewrap, which binds only the sockets named")
	} else {
		add("unix-sockets", Enforced, unixHow)
	}
	if a.ABI < 2 {
		add("landlock-abi", Weaker, "ABI 1: files cannot be moved or linked between folders at all (EXDEV)")
	}
	if a.ABI < 3 {
		add("landlock-abi", Weaker, fmt.Sprintf("ABI %d: truncate(2) is not restricted, so files outside the writable roots that the user owns can be emptied", a.ABI))
	}
	return out
}

// unavailable marks every rule not enforced when the kernel has no Landlock.
func unavailable(p *plan.Plan, abi int) []RuleStatus {
	why := fmt.Sprintf("Landlock is not available (ABI %d): the kernel lacks it or it is not enabled in the lsm= boot list", abi)
	var out []RuleStatus
	for _, m := range p.Mounts {
		out = append(out, RuleStatus{Rule: m.Stage.String(), Path: m.Path, Origin: m.Origin.String(), Level: NotEnforced, How: why})
	}
	return append(out, RuleStatus{Rule: "network", Level: NotEnforced, How: why})
}

// forwardPorts are the ports of the allow entries that name a service on
// the host's loopback, in order, once each.
func forwardPorts(n plan.Network) []int {
	var out []int
	for _, f := range n.Forwards() {
		port, err := strconv.Atoi(f[strings.LastIndex(f, ":")+1:])
		if err == nil && !slices.Contains(out, port) {
			out = append(out, port)
		}
	}
	return out
}

// caBundlePath is where a run's certificate bundle is: in its TMPDIR (or
// the host's /tmp), named after the run.
func caBundlePath(p *plan.Plan) string {
	dir := tmpDir(p)
	if dir == "" {
		dir = "/tmp"
	}
	return path.Join(dir, "agentbox-ca-"+p.RunID+".pem")
}
