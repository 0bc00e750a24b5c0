package doctor

import (
	"fmt"
	"io"

	"github.com/agentbox/agentbox/backend"
	"maps"
	"slices"
	"strings"
)

// Schema is the version of the JSON `agentbox doctor --json` prints.
const Schema = 1

// NoBackend is Auto.Backend when no backend can confine commands here.
const NoBackend = "none"

// Report is what `agentbox doctor` shows; its JSON form is `doctor --json`.
type Report struct {
	Schema    int       `json:"schema"`
	OS        string    `json:"os"`
	Kernel    string    `json:"kernel,omitempty"`
	UID       int       `json:"uid"`
	Bwrap     Bwrap     `json:"bwrap"`
	UserNS    UserNS    `json:"user_namespaces"`
	AppArmor  AppArmor  `json:"apparmor"`
	Landlock  Landlock  `json:"landlock"`
	Seccomp   Seccomp   `json:"seccomp"`
	Cgroup    Cgroup    `json:"cgroup"`
	Container Container `json:"container"`
	Proc      Proc      `json:"proc"`
	Auto      Auto      `json:"auto"`
	Problems  []Problem `json:"problems"`
}

// Bwrap is what was found out about bubblewrap.
type Bwrap struct {
	Path    string `json:"path"`              // "" when not in PATH
	Version string `json:"version,omitempty"` // "bubblewrap 0.8.0"
	// Works is true when a trivial sandbox with the namespaces agentbox
	// uses (mount, PID, and a user namespace when not root) started.
	Works bool   `json:"works"`
	Error string `json:"error,omitempty"` // bwrap's own message when it failed
	Probe string `json:"probe,omitempty"` // the command that was tried
	// NetworkNone is the same probe with --unshare-net, which network =
	// "none" needs (it fails alone when the loopback cannot be set up).
	NetworkNone      bool   `json:"network_none_works"`
	NetworkNoneError string `json:"network_none_error,omitempty"`
	// Init is the box's pid 1 a run starts: agentbox's C init, or its Go
	// init and why.
	Init string `json:"init,omitempty"`
}

// UserNS is the state of unprivileged user namespaces.
type UserNS struct {
	// Sysctls are the user namespace knobs this kernel has, by sysctl name:
	// kernel.unprivileged_userns_clone (Debian/Ubuntu patch),
	// user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns.
	Sysctls map[string]string `json:"sysctls"`
	// Works is true when a child could be started in a new user namespace.
	Works bool   `json:"works"`
	Error string `json:"error,omitempty"`
}

// AppArmor is the AppArmor state that matters for bwrap.
type AppArmor struct {
	Enabled bool `json:"enabled"`
	// RestrictUserns is kernel.apparmor_restrict_unprivileged_userns ("" when
	// the kernel has no such sysctl): "1" confines the user namespaces of
	// every program that has no profile allowing `userns`.
	RestrictUserns string `json:"restrict_unprivileged_userns,omitempty"`
	// BwrapProfile is the loaded profile that names bwrap, if any.
	BwrapProfile string `json:"bwrap_profile,omitempty"`
}

// Landlock is the kernel's Landlock support.
type Landlock struct {
	ABI   int    `json:"abi"` // 0: not available
	Error string `json:"error,omitempty"`
}

// Seccomp is the kernel's seccomp support.
type Seccomp struct {
	Available bool     `json:"available"`
	Actions   []string `json:"actions,omitempty"` // /proc/sys/kernel/seccomp/actions_avail
	Error     string   `json:"error,omitempty"`
}

// Cgroup is the cgroup setup.
type Cgroup struct {
	V2          bool     `json:"v2"`     // /sys/fs/cgroup is a cgroup2 file system
	Layout      string   `json:"layout"` // "unified", "hybrid", "legacy" or "none"
	Path        string   `json:"path,omitempty"`
	Controllers []string `json:"controllers,omitempty"` // available in our cgroup
	Delegated   bool     `json:"delegated"`             // our cgroup is writable by us
	// Top: our cgroup is the top of a cgroup namespace and not the
	// host's root cgroup (a container's own): its parent is outside it,
	// out of reach, so a run's cgroup can only be made inside it.
	Top bool `json:"namespace_top,omitempty"`
	// Pids and Memory say where a run's cgroup for the processes and
	// memory limits would be made, or why it cannot be (then those limits
	// are per-process rlimits). Nothing needs them without [limits].
	Pids   string `json:"pids"`
	Memory string `json:"memory"`
}

// Container says whether agentbox runs inside a container, and why it thinks so.
type Container struct {
	Detected bool     `json:"detected"`
	Kind     string   `json:"kind,omitempty"` // docker, podman, lxc, kubernetes, ...
	Evidence []string `json:"evidence,omitempty"`
	// Chroot: this process's root is not the root of PID 1's (it runs
	// chrooted), where the kernel refuses new user namespaces whatever the
	// sysctls say. False when it cannot be told.
	Chroot bool `json:"chroot,omitempty"`
}

// Proc is what covers parts of this process's /proc. Container runtimes
// mask /proc (Kubernetes' default procMount, Docker's and Podman's default
// paths): files and folders under it are covered by other mounts. The
// kernel then refuses a fresh /proc mount in a new user namespace, as it
// would show what the mask hides, and that is the /proc bwrap mounts.
type Proc struct {
	// Masked are the mount points below /proc, with the file system that
	// covers each ("/proc/kcore (tmpfs)"); the empty automount point
	// /proc/sys/fs/binfmt_misc does not count.
	Masked []string `json:"masked,omitempty"`
}

// Auto is the backend `backend = "auto"` picks here, and why every better
// one was passed over.
type Auto struct {
	Backend string   `json:"backend"` // "bwrap", "landlock" or "none"
	Reason  string   `json:"reason"`
	Passed  []string `json:"passed_over,omitempty"`
}

// Problem is something wrong with a fix.
type Problem struct {
	Problem  string `json:"problem"`
	Fix      string `json:"fix"`
	TradeOff string `json:"trade_off,omitempty"`
}

// auto is what `backend = "auto"` picks here for an ordinary plan: the
// first backend that is available, and why each one before it was passed
// over (backend.FirstAvailable, the same rule agentbox run uses).
func auto(all []backend.Backend) Auto {
	b, passed := backend.FirstAvailable(all)
	if b == nil {
		return Auto{Backend: NoBackend, Reason: "no backend works here: under enforce = \"require\" agentbox run refuses (exit 125); under \"best-effort\" it warns and runs unconfined", Passed: passed}
	}
	return Auto{Backend: b.Name(), Reason: "the first backend that is available here", Passed: passed}
}

// appArmorProfile is the profile that lets bwrap create user namespaces
// while the kernel restricts them for everything else. Ubuntu ships the
// same kind of profile for programs that need user namespaces.
func appArmorProfile(bwrap string) string {
	return `abi <abi/4.0>,
include <tunables/global>

profile bwrap ` + bwrap + ` flags=(unconfined) {
  userns,

  # Site-specific additions and overrides.
  include if exists <local/bwrap>
}
`
}

// Text writes the report for humans.
func (r Report) Text(w io.Writer) {
	p := func(label, format string, a ...any) {
		fmt.Fprintf(w, "%-12s %s\n", label, fmt.Sprintf(format, a...))
	}
	cont := func(format string, a ...any) { fmt.Fprintf(w, "%-12s %s\n", "", fmt.Sprintf(format, a...)) }
	osLine := r.OS
	if r.Kernel != "" {
		osLine += " " + r.Kernel
	}
	p("system", "%s, uid %d", osLine, r.UID)
	switch {
	case r.Bwrap.Path == "":
		p("bwrap", "not installed (not found in PATH)")
	case r.Bwrap.Works:
		p("bwrap", "%s (%s): works", r.Bwrap.Path, r.Bwrap.Version)
	default:
		p("bwrap", "%s (%s): does not work: %s", r.Bwrap.Path, r.Bwrap.Version, r.Bwrap.Error)
	}
	if r.Bwrap.Path != "" {
		if r.Bwrap.Init != "" {
			cont("box init: %s", r.Bwrap.Init)
		}
		if r.Bwrap.NetworkNone {
			cont("with --unshare-net (network none): works")
		} else {
			cont("with --unshare-net (network none): does not work: %s", r.Bwrap.NetworkNoneError)
		}
	}
	state := "allowed"
	if !r.UserNS.Works {
		state = "denied: " + r.UserNS.Error
	}
	p("user ns", "%s", state)
	for _, k := range sortedKeys(r.UserNS.Sysctls) {
		cont("%s = %s", k, r.UserNS.Sysctls[k])
	}
	switch {
	case !r.AppArmor.Enabled:
		p("apparmor", "not enabled")
	case r.AppArmor.RestrictUserns == "1":
		p("apparmor", "enabled, restricts unprivileged user namespaces")
	default:
		p("apparmor", "enabled, does not restrict user namespaces")
	}
	if r.AppArmor.BwrapProfile != "" {
		cont("profile for bwrap: %s", r.AppArmor.BwrapProfile)
	}
	if r.Landlock.ABI >= 1 {
		p("landlock", "ABI %d", r.Landlock.ABI)
	} else {
		p("landlock", "not available: %s", r.Landlock.Error)
	}
	if r.Seccomp.Available {
		p("seccomp", "available (%s)", strings.Join(r.Seccomp.Actions, " "))
	} else {
		p("seccomp", "not available: %s", r.Seccomp.Error)
	}
	cg := "cgroup v1 (" + r.Cgroup.Layout + ")"
	if r.Cgroup.V2 {
		cg = "cgroup v2"
	}
	if r.Cgroup.Path != "" {
		cg += ", in " + r.Cgroup.Path
	}
	if r.Cgroup.Top {
		cg += ", the top of its cgroup namespace"
	}
	if r.Cgroup.Delegated {
		cg += ", delegated to us"
	}
	p("cgroup", "%s", cg)
	if r.Cgroup.Pids != "" || r.Cgroup.Memory != "" {
		cont("for [limits] processes: %s", r.Cgroup.Pids)
		cont("for [limits] memory: %s", r.Cgroup.Memory)
	}
	chroot := ""
	if r.Container.Chroot {
		chroot = "; agentbox runs in a chroot"
	}
	if r.Container.Detected {
		p("container", "%s (%s)%s", r.Container.Kind, strings.Join(r.Container.Evidence, "; "), chroot)
	} else {
		p("container", "none detected%s", chroot)
	}
	if len(r.Proc.Masked) > 0 {
		p("proc", "masked: %s", listShort(r.Proc.Masked))
	}
	p("auto", "%s: %s", r.Auto.Backend, r.Auto.Reason)
	for _, s := range r.Auto.Passed {
		cont("passed over %s", s)
	}
	if len(r.Problems) == 0 {
		return
	}
	fmt.Fprintln(w, "\nproblems")
	for _, pr := range r.Problems {
		fmt.Fprintf(w, "- %s\n", pr.Problem)
		fmt.Fprintf(w, "  fix: %s\n", indent(pr.Fix, "       "))
		if pr.TradeOff != "" {
			fmt.Fprintf(w, "  trade-off: %s\n", pr.TradeOff)
		}
	}
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// The sysctls that decide whether unprivileged user namespaces work.
const (
	sysctlUsernsClone   = "kernel.unprivileged_userns_clone"
	sysctlMaxUserns     = "user.max_user_namespaces"
	sysctlAppArmorUsern = "kernel.apparmor_restrict_unprivileged_userns"
)

const usernsTradeOff = "user namespaces let every unprivileged program reach kernel code that used to need root, " +
	"a frequent source of privilege-escalation bugs; that is why distributions restrict them"

// diagnose lists every problem the facts show, each with a fix. It is pure
// so that machines we cannot be (Ubuntu 24.04 with AppArmor, a locked-down
// container) are tested from hand-made facts.
func diagnose(r Report) []Problem {
	var out []Problem
	add := func(problem, fix, tradeOff string) {
		out = append(out, Problem{Problem: problem, Fix: fix, TradeOff: tradeOff})
	}
	restricted := r.AppArmor.RestrictUserns == "1"
	bwrapPath := r.Bwrap.Path
	if bwrapPath == "" {
		bwrapPath = "/usr/bin/bwrap"
	}
	appArmorFix := "either let bwrap alone create user namespaces with an AppArmor profile:\n" +
		"  sudo tee /etc/apparmor.d/bwrap <<'EOF'\n" + appArmorProfile(bwrapPath) + "EOF\n" +
		"  sudo apparmor_parser -r /etc/apparmor.d/bwrap\n" +
		"or lift the restriction for every program:\n" +
		"  sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\n" +
		"  echo kernel.apparmor_restrict_unprivileged_userns=0 | sudo tee /etc/sysctl.d/60-agentbox-userns.conf"
	appArmorTradeOff := "the profile is the narrow fix: only " + bwrapPath + " (and whoever runs it) may create user namespaces; " +
		"the sysctl re-opens them to every program: " + usernsTradeOff
	switch BwrapCause(r) {
	case CauseMissing:
		add("bubblewrap is not installed (bwrap is not in PATH)",
			"sudo apt install bubblewrap (Debian, Ubuntu), sudo dnf install bubblewrap (Fedora), sudo pacman -S bubblewrap (Arch); until then auto uses Landlock",
			"")
	case CauseAppArmor:
		profile := "no loaded profile names bwrap"
		if r.AppArmor.BwrapProfile != "" {
			profile = "the loaded profile " + r.AppArmor.BwrapProfile + " names bwrap but does not let it make them (that needs the rule userns,)"
		}
		add(bwrapProblem(r)+" (AppArmor restricts unprivileged user namespaces: kernel.apparmor_restrict_unprivileged_userns = 1, "+
			"Ubuntu 24.04's default, and "+profile+")", appArmorFix, appArmorTradeOff)
	case CauseMaxUserns:
		add(bwrapProblem(r)+" (user.max_user_namespaces is 0)",
			"sudo sysctl -w user.max_user_namespaces=15000, and persist it in /etc/sysctl.d/60-agentbox-userns.conf",
			usernsTradeOff)
	case CauseUsernsClone:
		add(bwrapProblem(r)+" (kernel.unprivileged_userns_clone is 0)",
			"sudo sysctl -w kernel.unprivileged_userns_clone=1, and persist it in /etc/sysctl.d/60-agentbox-userns.conf",
			usernsTradeOff)
	case CauseProcMasked:
		add(bwrapProblem(r)+" (this container's /proc is masked: "+listShort(r.Proc.Masked)+" are covered, and the kernel refuses a fresh /proc that would show them)",
			"Kubernetes: give the pod its own user namespace and an unmasked /proc: spec.hostUsers: false and the container's securityContext.procMount: Unmasked "+
				"(with seccompProfile and appArmorProfile Unconfined, so bwrap may make namespaces and mounts); "+
				"Docker or Podman: --security-opt systempaths=unconfined; "+
				"or keep the Landlock backend, which auto picks here and which needs neither (it cannot filter the network by host)",
			"unmasked, the container can read what the runtime hid in /proc (the host's /proc/kcore, /proc/timer_list, …), inside its own user namespace")
	case CauseChroot:
		add(bwrapProblem(r)+" (agentbox runs in a chroot, where the kernel refuses new user namespaces, whatever user.max_user_namespaces says)",
			"run agentbox outside the chroot (a container or the host), or keep the Landlock backend, which auto picks here and which needs no namespaces", "")
	case CauseContainer:
		add(bwrapProblem(r)+" (inside a "+r.Container.Kind+" container, which forbids namespaces)",
			"allow user namespaces in the container (docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined, or podman, which allows them), run agentbox on the host, or keep the Landlock backend",
			"a looser container profile lets everything in the container reach more of the kernel")
	case CauseSetuid:
		add(bwrapProblem(r)+" (this bwrap is setuid root: it refuses --cap-add to every user but root, and a box keeps CAP_SYS_ADMIN and CAP_SETPCAP for its init, which makes the box's mounts private and drops every capability before the command)",
			"where user namespaces are allowed, use a bwrap that is not setuid (chmod u-s on it), or keep the Landlock backend, which auto picks here", "")
	case CauseOther:
		add(bwrapProblem(r), "read bwrap's message above; `agentbox run --backend landlock` needs no namespaces", "")
	case CauseNone:
		if r.Bwrap.NetworkNone {
			break
		}
		fix := `network = "none" cannot use bwrap here; use the landlock backend (it blocks TCP only) or network = "open"`
		tradeOff := ""
		if restricted && r.UID != 0 {
			fix, tradeOff = appArmorFix, appArmorTradeOff
		}
		add("bwrap --unshare-net fails: "+r.Bwrap.NetworkNoneError, fix, tradeOff)
	}
	switch {
	case r.Landlock.ABI < 1:
		add("Landlock is not available: "+r.Landlock.Error,
			"use Linux 5.13 or later with landlock in the lsm= boot parameter (e.g. lsm=landlock,lockdown,yama,integrity,apparmor,bpf)", "")
	case r.Landlock.ABI < 4:
		add(fmt.Sprintf("Landlock ABI %d cannot restrict TCP: with the landlock backend, network = \"none\" is not enforced", r.Landlock.ABI),
			"use Linux 6.7 or later (Landlock ABI 4)", "")
	}
	if !r.Seccomp.Available {
		add("seccomp is not available: "+r.Seccomp.Error, "use a kernel built with CONFIG_SECCOMP_FILTER", "")
	}
	// No cgroup for limits is a problem of the machine only where it
	// cannot be had at all without changing how the container is made:
	// elsewhere only a policy with [limits] needs one, and plan and run
	// say what that policy gets (the cgroup line shows it for every
	// policy).
	if pr, ok := limitsProblem(r); ok {
		out = append(out, pr)
	}
	if r.Auto.Backend == NoBackend {
		add("no backend can confine commands here",
			"fix one of the problems above; until then `agentbox run --best-effort` runs commands unconfined and says so", "")
	}
	return out
}

// limitsProblem is what a policy's [limits] processes meets in a cgroup
// namespace's top cgroup that offers no pids controller to use (a container
// without cgroup delegation, most CI containers): it cannot be enforced
// there, as root not at all, and the fix lies in how the container is
// made.
func limitsProblem(r Report) (Problem, bool) {
	if !r.Cgroup.Top || r.Cgroup.Pids == "" || strings.HasPrefix(r.Cgroup.Pids, "cgroup ") {
		return Problem{}, false
	}
	where := "a container"
	if r.Container.Kind != "" {
		where = "a " + r.Container.Kind + " container"
	}
	what := "a policy's [limits] processes cannot be enforced here: agentbox runs in the top cgroup of its cgroup namespace " +
		"(" + where + " without cgroup delegation), whose parent is out of reach, and the box's own cgroup cannot be made in it (" +
		strings.TrimPrefix(r.Cgroup.Pids, "unavailable: ") + ")"
	if r.UID == 0 {
		what += "; as root there is no fallback: the kernel never applies RLIMIT_NPROC to root"
	} else {
		what += fmt.Sprintf("; the fallback, RLIMIT_NPROC, counts every process of uid %d, not only the box's", r.UID)
	}
	fix := "limit the whole container instead: docker run --pids-limit N, podman run --pids-limit N (Kubernetes: the kubelet's podPidsLimit); " +
		"or give the container a cgroup it may divide (a writable cgroup2 mount, and an entrypoint that moves its own processes into a child " +
		"cgroup and enables +pids in the top's cgroup.subtree_control); " +
		"or take [limits] processes out of the policy (examples/ci.toml leaves it out); [limits] memory falls back to RLIMIT_AS"
	return Problem{Problem: what, Fix: fix}, true
}

func bwrapProblem(r Report) string { return "bwrap cannot start a sandbox: " + r.Bwrap.Error }

// Cause is why bwrap cannot start a sandbox here, as doctor decides it.
type Cause int

// The causes, in the order doctor checks them.
const (
	CauseNone        Cause = iota // bwrap works
	CauseMissing                  // not installed
	CauseAppArmor                 // AppArmor restricts unprivileged user namespaces
	CauseMaxUserns                // user.max_user_namespaces is 0
	CauseUsernsClone              // kernel.unprivileged_userns_clone is 0
	CauseProcMasked               // a container's masked /proc
	CauseContainer                // a container that forbids namespaces
	CauseOther                    // anything else: bwrap's own message says
	CauseChroot                   // a chroot: the kernel refuses user namespaces there
	CauseSetuid                   // a setuid-root bwrap, which refuses the init's capabilities
)

// Short says the cause in a few words, for the one line a run prints when
// Landlock confines it instead (doctor gives the whole story).
func (c Cause) Short() string {
	switch c {
	case CauseMissing:
		return "bwrap is not installed"
	case CauseAppArmor:
		return "AppArmor denies bwrap user namespaces"
	case CauseMaxUserns, CauseUsernsClone:
		return "user namespaces are disabled"
	case CauseProcMasked:
		return "/proc is masked, bwrap cannot mount its own"
	case CauseContainer:
		return "this container forbids namespaces"
	case CauseChroot:
		return "a chroot, where the kernel allows no user namespaces"
	case CauseSetuid:
		return "bwrap is setuid root and refuses the box's init its capabilities"
	case CauseOther:
		return "bwrap cannot start a box here"
	}
	return ""
}

// BwrapCause decides why bwrap does not work, from the report's facts:
// the first that holds of its installation, a chroot, AppArmor (for
// anybody but root), the user-namespace sysctls, a masked /proc, a
// container.
func BwrapCause(r Report) Cause {
	switch {
	case r.Bwrap.Path == "":
		return CauseMissing
	case r.Bwrap.Works:
		return CauseNone
	case strings.Contains(r.Bwrap.Error, "--cap-add in setuid mode"):
		return CauseSetuid
	case r.Container.Chroot:
		return CauseChroot
	case r.AppArmor.RestrictUserns == "1" && r.UID != 0:
		return CauseAppArmor
	case r.UserNS.Sysctls[sysctlMaxUserns] == "0":
		return CauseMaxUserns
	case r.UserNS.Sysctls[sysctlUsernsClone] == "0":
		return CauseUsernsClone
	case procMasked(r):
		return CauseProcMasked
	case r.Container.Detected:
		return CauseContainer
	}
	return CauseOther
}

// procMasked reports whether bwrap failed because /proc is masked: its own
// message says it could not mount proc, or user namespaces work and /proc
// has mounts over parts of it.
func procMasked(r Report) bool {
	if strings.Contains(r.Bwrap.Error, "Can't mount proc") {
		return true
	}
	return r.UserNS.Works && len(r.Proc.Masked) > 0 && strings.Contains(r.Bwrap.Error, "proc")
}

// listShort lists the first few of a long list, and how many more.
func listShort(list []string) string {
	const max = 4
	if len(list) > max {
		return strings.Join(list[:max], ", ") + fmt.Sprintf(" and %d more", len(list)-max)
	}
	return strings.Join(list, ", ")
}
