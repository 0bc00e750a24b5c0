package verify

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"

	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/plan"
)

// ProbeCommand is the hidden subcommand that runs the checks inside the
// box; main dispatches it before building the CLI.
const ProbeCommand = "__verify"

// Status is how one check came out.
type Status string

// The statuses.
const (
	// Verified: the box did what the rule says.
	Verified Status = "verified"
	// Failed: it did not; the rule is not in force as the plan shows.
	Failed Status = "failed"
	// Consistent: refused as the rule says, by an answer the kernel gives
	// here without the rule too (no capability, file permissions), so
	// the probe cannot tell.
	Consistent Status = "consistent"
	// NotProbed: nothing to probe, or no way to; Got says why.
	NotProbed Status = "not probed"
)

// Host is what the supervisor knows from outside the box, for the checks.
type Host struct {
	// Pid is the supervisor's pid on the host.
	Pid int `json:"pid"`
	// Listener is a TCP address on the host's loopback where the
	// supervisor accepts connections for the run of the checks.
	Listener string `json:"listener,omitempty"`
	// Marker is a file the supervisor made in the host's /tmp.
	Marker string `json:"marker,omitempty"`
	// Outside are folders outside every writable root where the user
	// could create a file but for the box.
	Outside []string `json:"outside,omitempty"`
	// Hidden is, per hidden path, its size on the host: a file's bytes,
	// a folder's entries.
	Hidden map[string]int64 `json:"hidden,omitempty"`
	// Others is, per workspace root, entries of other workspaces.
	Others map[string][]string `json:"others,omitempty"`
	// Files is, per writable root, an existing file in it that no rule
	// keeps read-only.
	Files map[string]string `json:"files,omitempty"`
	// Devices are device nodes of the host's /dev outside the box's set
	// that the user could open but for the box.
	Devices []string `json:"devices,omitempty"`
	// Env is what CMD's environment must be (names, values agentbox
	// sets, names removed).
	Env EnvWant `json:"env"`
}

// EnvWant is the environment CMD must start with. Only the values agentbox
// itself sets are compared; the others are secrets and only their names
// travel.
type EnvWant struct {
	Names   []string          `json:"names"`
	Values  map[string]string `json:"values,omitempty"`
	Removed []string          `json:"removed,omitempty"`
}

// Input is what the probe reads on its stdin.
type Input struct {
	Plan *plan.Plan `json:"plan"`
	Host Host       `json:"host"`
}

// Probe is one operation the probe performs in the box.
type Probe struct {
	// Op: create (an exclusive new file in the folder Path, removed at
	// once), openw (open Path to append, writing nothing), write (create
	// in Path if it is a folder, else openw, whose codes then start with
	// "file:"), read (read Path), look (list
	// Path if it is a folder, else read it), stat, rmdir (of a folder
	// that is never empty), connect (TCP to Arg), proxy (CONNECT Path
	// through the proxy at Arg), interfaces, syscall (the probe named
	// Arg), rlimit (Arg NAME=VALUE), cgroup (Arg CONTROLLER=VALUE, Path
	// the run's cgroup name), status (Arg FIELD=VALUE of
	// /proc/self/status), env (Arg the EnvWant as JSON).
	Op   string `json:"op"`
	Path string `json:"path,omitempty"`
	Arg  string `json:"arg,omitempty"`
}

// Outcome is what a probe met: "ok" or an errno name (or MISMATCH for a
// comparison), a count (bytes read, entries listed), and what it saw.
type Outcome struct {
	Code string `json:"code"`
	N    int64  `json:"n,omitempty"`
	Text string `json:"text,omitempty"`
}

// Check is one rule of the plan and how it is probed.
type Check struct {
	// Rule names the rule as the filesystem log and plan do: "stage
	// path (origin)", or "network none", "seccomp keyring", ….
	Rule string `json:"rule"`
	// Level is how the plan says the backend enforces it.
	Level plan.Level `json:"level,omitempty"`
	// Says is what must hold, in words.
	Says  string `json:"says"`
	Probe Probe  `json:"probe"`
	// Want are the outcome codes that verify the rule.
	Want []string `json:"want"`
	// N, when set, is the count an "ok" outcome must have.
	N *int64 `json:"n,omitempty"`
	// Ambiguous are the codes among Want the kernel would give here
	// without the rule (they make the check consistent, not verified).
	Ambiguous []string `json:"ambiguous,omitempty"`
	// Why is set for a check that is not probed.
	Why string `json:"why,omitempty"`
}

// Result is a check and how it came out.
type Result struct {
	Check
	Status Status  `json:"status"`
	Got    Outcome `json:"got"`
}

// Judge decides how a check came out from what its probe met.
func Judge(c Check, o Outcome) Result {
	r := Result{Check: c, Got: o}
	switch {
	case c.Why != "":
		r.Status = NotProbed
	case !contains(c.Want, o.Code):
		r.Status = Failed
	case o.Code == "ok" && c.N != nil && o.N != *c.N:
		r.Status = Failed
	case contains(c.Ambiguous, o.Code):
		r.Status = Consistent
	default:
		r.Status = Verified
	}
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func n(v int64) *int64 { return &v }

// builder collects the checks of one plan.
type builder struct {
	p      *plan.Plan
	h      Host
	ll     *landlock.Assessment
	bwrap  bool
	denied string // the errno of a write the box refuses: EROFS or EACCES
	out    []Check
	// tmpDone: /tmp's probes were added, under the first rule that makes
	// the box's /tmp; each probe is made once.
	tmpDone bool
}

// Build derives the checks of a completed plan, with the host's facts.
func Build(p *plan.Plan, h Host) []Check {
	b := &builder{p: p, h: h, bwrap: p.Box.Backend == "bwrap", denied: "EROFS"}
	if p.Box.Backend == landlock.Backend {
		if a, err := landlock.AssessmentOf(p); err == nil {
			b.ll = &a
		}
		b.denied = "EACCES"
	}
	for i, m := range p.Mounts {
		b.mount(i, m)
	}
	b.rest()
	b.limits()
	b.network()
	b.seccomp()
	b.environment()
	b.identity()
	return b.out
}

func (b *builder) add(c Check) { b.out = append(b.out, c) }

// rule returns the name and level of mount i.
func (b *builder) rule(i int) (string, plan.Level) {
	m := b.p.Mounts[i]
	name := m.Stage.String() + " " + m.Path + " (" + m.Origin.String() + ")"
	lv := plan.Enforced
	if i < len(b.p.Box.Rules) && b.p.Box.Rules[i].Path == m.Path {
		lv = b.p.Box.Rules[i].Level
	}
	return name, lv
}

// coveredLater reports the later mount that covers m's path whole.
func (b *builder) coveredLater(i int) (plan.Mount, bool) {
	m := b.p.Mounts[i]
	for _, n := range b.p.Mounts[i+1:] {
		if n.Op == plan.RemountRO || n.Op == plan.Pin {
			continue
		}
		if plan.Within(m.Path, n.Path) {
			return n, true
		}
	}
	return plan.Mount{}, false
}

// canCreate says what a create in dir must meet under Landlock, from the
// rights the rule set gives there.
func (b *builder) llCreate(dir string) []string {
	if len(b.ll.Missing(dir, "make_reg")) > 0 {
		return []string{"EACCES"}
	}
	return []string{"ok"}
}

func (b *builder) mount(i int, m plan.Mount) {
	name, lv := b.rule(i)
	if later, ok := b.coveredLater(i); ok && m.Stage != plan.StageRoot {
		b.add(Check{Rule: name, Level: lv, Why: "covered by a later rule: " + later.Stage.String() + " " + later.Path})
		return
	}
	ro := []string{b.denied}
	if lv == plan.NotEnforced {
		b.add(Check{Rule: name, Level: lv, Why: "the plan says this backend does not enforce it"})
		return
	}
	if b.keptByRestoring(m, lv) {
		// Landlock keeps it by recording it before the run and restoring
		// it after (what host programs run or obey): the plan says it is
		// writable during the run, so there is nothing to refuse.
		b.add(Check{Rule: name, Level: lv, Why: "kept by recording and restoring after the run: writable during it under Landlock, as the plan says"})
		return
	}
	switch {
	case m.Stage == plan.StageRoot && m.Op == plan.ROBind:
		if len(b.h.Outside) == 0 {
			b.add(Check{Rule: name, Level: lv, Why: "no folder outside the writable roots where you could create a file without the box"})
		}
		for _, dir := range b.h.Outside {
			b.add(Check{Rule: name, Level: lv, Says: dir + " is read-only: a new file there is refused", Probe: Probe{Op: "create", Path: dir}, Want: ro})
		}
	case m.Op == plan.Dev:
		b.add(Check{Rule: name, Level: lv, Says: "/dev/null can be written", Probe: Probe{Op: "openw", Path: "/dev/null"}, Want: []string{"ok"}})
		for _, d := range b.h.Devices {
			if b.bwrap {
				b.add(Check{Rule: name, Level: lv, Says: d + " is not in the box's /dev", Probe: Probe{Op: "stat", Path: d}, Want: []string{"ENOENT"}})
			} else {
				b.add(Check{Rule: name, Level: lv, Says: d + " cannot be opened", Probe: Probe{Op: "read", Path: d, Arg: "1"}, Want: []string{"EACCES"}})
			}
		}
	case m.Op == plan.Proc:
		if b.bwrap {
			b.add(Check{Rule: name, Level: lv, Says: "agentbox's own process on the host is not in the box's /proc (its own PID namespace)",
				Probe: Probe{Op: "stat", Path: "/proc/" + strconv.Itoa(b.h.Pid)}, Want: []string{"ENOENT"}})
		}
		c := Check{Rule: name, Level: lv, Says: "the kernel's settings in /proc/sys are read-only",
			Probe: Probe{Op: "openw", Path: "/proc/sys/kernel/hostname"}, Want: ro}
		if !b.p.Identity.Root() {
			// Without root the file's own permissions refuse it too.
			if !contains(c.Want, "EACCES") {
				c.Want = append(c.Want, "EACCES")
			}
			c.Ambiguous = []string{"EACCES"}
		}
		b.add(c)
	case m.Stage == plan.StageTmp:
		b.tmp(name, lv, m)
	case m.Stage == plan.StageWorkspace && m.Op == plan.Tmpfs:
		others := b.h.Others[m.Path]
		if len(others) == 0 {
			b.add(Check{Rule: name, Level: lv, Why: "no other workspace in " + m.Path + " to look for"})
		}
		for _, o := range others {
			p := path.Join(m.Path, o)
			if b.bwrap {
				b.add(Check{Rule: name, Level: lv, Says: "the other workspace " + p + " is not there", Probe: Probe{Op: "stat", Path: p}, Want: []string{"ENOENT"}})
			} else {
				b.add(Check{Rule: name, Level: lv, Says: "the other workspace " + p + " cannot be listed", Probe: Probe{Op: "list", Path: p}, Want: []string{"EACCES"}})
			}
		}
	case m.Op == plan.RemountRO:
		b.add(Check{Rule: name, Level: lv, Says: "nothing can be created in " + m.Path, Probe: Probe{Op: "create", Path: m.Path}, Want: ro})
	case m.Op == plan.Pin:
		want := []string{"EBUSY"}
		if !b.bwrap {
			want = []string{"EACCES"}
		}
		b.add(Check{Rule: name, Level: lv, Says: m.Path + " cannot be removed or replaced", Probe: Probe{Op: "rmdir", Path: m.Path}, Want: want})
	case (m.Op == plan.Bind || m.Op == plan.ROBind) && m.Src() != m.Path:
		b.add(Check{Rule: name, Level: lv, Why: "a folder bound at another path"})
	case m.Op == plan.Bind && m.Access == plan.ReadWrite:
		b.writable(name, lv, m)
	case m.Op == plan.ROBind && m.Access == plan.ReadOnly:
		b.add(b.readOnly(name, lv, m.Path))
	case m.Op == plan.HideDir:
		b.hidden(name, lv, m.Path, true)
	case m.Op == plan.HideFile:
		b.hidden(name, lv, m.Path, false)
	default:
		b.add(Check{Rule: name, Level: lv, Why: "no probe for " + string(m.Op)})
	}
}

// keptByRestoring reports whether, under Landlock, mount m is one the
// after-run check keeps rather than the kernel: a guard of what host
// programs run or obey that the plan keeps by restoring, or a pinned
// folder the plan says is put back rather than kept in place; and the
// rule set really leaves it writable. Any other read-only rule is probed.
func (b *builder) keptByRestoring(m plan.Mount, lv plan.Level) bool {
	if b.ll == nil || len(b.ll.Missing(m.Path, "write_file", "make_reg")) > 0 {
		return false
	}
	switch m.Op {
	case plan.ROBind:
		for _, g := range b.p.HostExec.Guards {
			if g.Path == m.Path && g.Keep == plan.KeepRestored {
				return true
			}
		}
	case plan.Pin:
		return lv == plan.Weaker
	}
	return false
}

func (b *builder) readOnly(name string, lv plan.Level, p string) Check {
	return Check{Rule: name, Level: lv, Says: p + " cannot be written (nothing created in it, if a folder)", Probe: Probe{Op: "write", Path: p},
		Want: []string{b.denied, "file:" + b.denied}}
}

func (b *builder) writable(name string, lv plan.Level, m plan.Mount) {
	p := m.Path
	want := []string{"ok", "file:ok"}
	says := p + " can be written (a file created in it, if a folder)"
	if b.ll != nil && b.llCreate(p)[0] != "ok" {
		// As weak as the plan says: Landlock keeps this folder's own
		// entries unchangeable to keep a read-only path below it so.
		want = []string{"EACCES", "file:ok"}
		says = "nothing can be created directly in " + p + " (as the plan says Landlock enforces it)"
	}
	b.add(Check{Rule: name, Level: lv, Says: says, Probe: Probe{Op: "write", Path: p}, Want: want})
	if f := b.h.Files[p]; f != "" {
		b.add(Check{Rule: name, Level: lv, Says: "an existing file in it, " + f + ", can be opened for writing", Probe: Probe{Op: "openw", Path: f}, Want: []string{"ok"}})
	}
}

func (b *builder) hidden(name string, lv plan.Level, p string, dir bool) {
	size, known := b.h.Hidden[p]
	if !b.bwrap {
		b.add(Check{Rule: name, Level: lv, Says: p + " cannot be read", Probe: Probe{Op: "look", Path: p}, Want: []string{"EACCES"}})
		return
	}
	c := Check{Rule: name, Level: lv, N: n(0)}
	if dir {
		c.Says = p + " is an empty folder in the box"
	} else {
		c.Says = p + " is an empty file in the box"
	}
	c.Probe = Probe{Op: "look", Path: p}
	c.Want = []string{"ok"}
	if known && size == 0 {
		// Empty on the host as well: reading nothing proves nothing.
		c.Ambiguous = []string{"ok"}
	}
	b.add(c)
	b.add(Check{Rule: name, Level: lv, Says: p + " cannot be written", Probe: Probe{Op: "write", Path: p}, Want: []string{"EROFS", "file:EROFS"}})
}

func (b *builder) tmp(name string, lv plan.Level, m plan.Mount) {
	switch {
	case m.Path != "/tmp":
		// Another folder of the stage (/run): /tmp's probes say
		// nothing about it.
		b.add(Check{Rule: name, Level: lv, Why: m.Path + " is the box's own; the probes of /tmp do not apply to it"})
		return
	case b.tmpDone:
		b.add(Check{Rule: name, Level: lv, Why: "/tmp is probed under the rule above"})
		return
	}
	b.tmpDone = true
	hostTmp := m.Op == plan.Bind && m.Src() == m.Path
	if b.h.Marker != "" {
		switch {
		case hostTmp:
			b.add(Check{Rule: name, Level: lv, Says: "/tmp is the host's", Probe: Probe{Op: "stat", Path: b.h.Marker}, Want: []string{"ok"}})
		case b.bwrap:
			b.add(Check{Rule: name, Level: lv, Says: "the host's /tmp is not the box's", Probe: Probe{Op: "stat", Path: b.h.Marker}, Want: []string{"ENOENT"}})
		default:
			b.add(Check{Rule: name, Level: lv, Says: "the host's /tmp cannot be read", Probe: Probe{Op: "read", Path: b.h.Marker, Arg: "1"}, Want: []string{"EACCES"}})
		}
	}
	dir := b.p.Box.Tmpdir
	if dir == "" {
		dir = "/tmp"
	}
	b.add(Check{Rule: name, Level: lv, Says: "a file can be created in TMPDIR " + dir, Probe: Probe{Op: "create", Path: dir}, Want: []string{"ok"}})
}

// rest covers the backend's rules that are not mounts, limits or the
// network (Landlock's: no PID namespace, metadata, an old ABI).
func (b *builder) rest() {
	for _, r := range b.p.Box.Rules[min(len(b.p.Mounts), len(b.p.Box.Rules)):] {
		switch r.Rule {
		case "limits", "network", "capabilities":
			continue
		case "pid-namespace":
			if b.ll != nil && b.ll.ScopeSignal {
				b.add(Check{Rule: r.Rule, Level: r.Level, Says: "a signal to agentbox's own process outside the box is refused (Landlock's signal scope)",
					Probe: Probe{Op: "signal", Arg: strconv.Itoa(b.h.Pid)}, Want: []string{"EPERM"}})
				continue
			}
		}
		b.add(Check{Rule: r.Rule, Level: r.Level, Why: "nothing the plan says is enforced here to probe: " + r.How})
	}
}

func (b *builder) boxRule(rule, p string) plan.Level {
	for _, r := range b.p.Box.Rules {
		if r.Rule == rule && r.Path == p {
			return r.Level
		}
	}
	return plan.Enforced
}

func (b *builder) limits() {
	for _, r := range b.p.Limits.Rlimits() {
		key := map[string]string{"nproc": "processes", "nofile": "open_files", "as": "memory", "cpu": "cpu_time", "fsize": "file_size"}[r.Name]
		b.add(Check{Rule: "limits " + key, Level: b.boxRule("limits", key), Says: fmt.Sprintf("the %s rlimit is %d, soft and hard", r.Name, r.Value),
			Probe: Probe{Op: "rlimit", Arg: r.Name + "=" + strconv.FormatUint(r.Value, 10)}, Want: []string{"ok"}})
	}
	cg := b.p.Limits.Cgroup
	for _, c := range []struct {
		ctl, key string
		v        uint64
	}{{"pids", "processes", cg.Pids}, {"memory", "memory", cg.Memory}} {
		if c.v > 0 {
			b.add(Check{Rule: "limits " + c.key, Level: b.boxRule("limits", c.key), Says: fmt.Sprintf("the box's own cgroup holds %s to %d", c.ctl, c.v),
				Probe: Probe{Op: "cgroup", Path: "agentbox-" + b.p.RunID, Arg: c.ctl + "=" + strconv.FormatUint(c.v, 10)}, Want: []string{"ok"}})
		}
	}
}

func (b *builder) network() {
	mode := b.p.Network.Mode
	name := "network " + mode
	lv := b.boxRule("network", mode)
	if !b.bwrap {
		lv = plan.Enforced
		for _, r := range b.p.Box.Rules {
			if r.Rule == "network" {
				lv = r.Level
			}
		}
	}
	if lv == plan.NotEnforced {
		b.add(Check{Rule: name, Level: lv, Why: "the plan says this backend does not enforce it"})
		return
	}
	if b.h.Listener == "" {
		b.add(Check{Rule: name, Level: lv, Why: "no listener on the host's loopback to try"})
		return
	}
	switch mode {
	case plan.NetOpen:
		b.add(Check{Rule: name, Level: lv, Says: "the host's loopback can be reached", Probe: Probe{Op: "connect", Arg: b.h.Listener}, Want: []string{"ok"}})
	case plan.NetNone, plan.NetAllowlist:
		if b.bwrap {
			b.add(Check{Rule: name, Level: lv, Says: "the host's loopback cannot be reached (own network namespace)", Probe: Probe{Op: "connect", Arg: b.h.Listener},
				Want: []string{"ECONNREFUSED", "ENETUNREACH", "EHOSTUNREACH"}})
			b.add(Check{Rule: name, Level: lv, Says: "the box has no network interface but loopback", Probe: Probe{Op: "interfaces"}, Want: []string{"ok"}})
		} else {
			b.add(Check{Rule: name, Level: lv, Says: "a TCP connection to the host's loopback is refused", Probe: Probe{Op: "connect", Arg: b.h.Listener}, Want: []string{"EACCES"}})
		}
		if mode == plan.NetAllowlist && b.bwrap {
			b.add(Check{Rule: name, Level: lv, Says: "the proxy refuses a host no allow entry names",
				Probe: Probe{Op: "proxy", Path: "agentbox-verify.invalid:443", Arg: "127.0.0.1:" + strconv.Itoa(plan.ProxyPort)}, Want: []string{"ok"}})
		}
	}
}

func (b *builder) environment() {
	want, err := jsonString(b.h.Env)
	if err != nil {
		return
	}
	b.add(Check{Rule: "env " + b.p.Env.Mode, Says: fmt.Sprintf("CMD's environment is the %d variables listed, agentbox's own with their values, none of those removed", len(b.h.Env.Names)),
		Probe: Probe{Op: "env", Arg: want}, Want: []string{"ok"}})
}

func (b *builder) identity() {
	b.add(Check{Rule: "no_new_privs", Says: "no program can gain privileges by exec (setuid, file capabilities)",
		Probe: Probe{Op: "status", Arg: "NoNewPrivs=1"}, Want: []string{"ok"}})
	if b.p.Identity.Root() {
		b.add(Check{Rule: "capabilities", Says: "root in the box has no capability",
			Probe: Probe{Op: "status", Arg: "CapEff=0000000000000000"}, Want: []string{"ok"}})
	}
}

func jsonString(v any) (string, error) {
	data, err := json.Marshal(v)
	return string(data), err
}
