package mount

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/seccomp"
	"github.com/agentbox/agentbox/supervise"
)

// Bwrap is the bubblewrap backend.
type Bwrap struct {
	// Path is the bwrap executable; Available finds it in PATH when empty.
	Path string
	// Cgroups says what cgroups agentbox can make here; cgroup.Probe when
	// nil. Tests give fixed answers.
	Cgroups func() cgroup.Availability
	// LandlockABI is the kernel's Landlock ABI (0: none); probed when
	// nil. Tests give fixed answers.
	LandlockABI func() int

	// completed is the detail Complete made last, and its JSON form: Run
	// takes it rather than decoding the plan's copy again when the plan's
	// bytes are these.
	completed     Detail
	completedJSON []byte
}

// New returns the bubblewrap backend.
func New() *Bwrap { return &Bwrap{} }

// Name is "bwrap".
func (b *Bwrap) Name() string { return Backend }

// Detail is what `agentbox plan --json` shows of a bwrap run under
// box.detail: the arguments bwrap is given, exactly (through --args; the
// init gets --foreground in addition when agentbox owns the terminal), and
// the descriptors it inherits.
type Detail struct {
	Bwrap string   `json:"bwrap"`
	Args  []string `json:"args"`
	// CommandAt is where the command (the init and CMD) begins in Args:
	// bwrap reads the options before it from --args, the command after it
	// from its command line.
	CommandAt int `json:"command_at"`
	// Self says the command is agentbox itself (plan.Plan.SelfCommand).
	Self bool `json:"self,omitempty"`
	// NullFDs are the descriptors open on /dev/null (hidden files).
	NullFDs []int `json:"null_fds,omitempty"`
	// Binds are the descriptors open on the host paths bwrap binds.
	Binds []Bind `json:"binds,omitempty"`
	// Checks are the mounts the init verifies before CMD starts.
	Checks []Check `json:"checks,omitempty"`
	// Seccomp are the syscall groups the policy reopened; the filter on
	// fd 6 blocks the others, and the extra groups SeccompExtra.
	Seccomp      []string `json:"seccomp_reopened,omitempty"`
	SeccompExtra []string `json:"seccomp_extra,omitempty"`
	// NetFD is the descriptor of the box's end of the proxy's socket pair.
	NetFD int `json:"net_fd,omitempty"`
	// LogFD is the descriptor of the box's end of the filesystem log's
	// socket.
	LogFD int `json:"log_fd,omitempty"`
	// PreloadFD is the descriptor of the write end of the preloaded
	// log's pipe.
	PreloadFD int `json:"preload_fd,omitempty"`
	// Allow, Deny and Forward are the proxy's rules and port forwards.
	Allow   []string `json:"allow,omitempty"`
	Deny    []string `json:"deny,omitempty"`
	Forward []string `json:"forward,omitempty"`
	// CAFDs are the descriptors of the box's certificate bundle, one per
	// system bundle it covers.
	CAFDs []int `json:"ca_fds,omitempty"`
	// DevNodes says bwrap is started in a mount namespace of its own
	// with a tmpfs over /dev holding device nodes of the box's own, which
	// bwrap's --dev binds (a root box: see Render).
	DevNodes bool `json:"dev_nodes,omitempty"`
	// InitMounts are the binds the C init makes in bwrap's place where
	// the kernel allows (InitMount); Args keeps bwrap's words for them.
	InitMounts []InitMount `json:"init_mounts,omitempty"`
}

// Complete fills p.Box: every rule is enforced as the contract says (a
// mount per rule), the limits as this machine's cgroups allow, and the
// detail is the rendered bwrap command line.
func (b *Bwrap) Complete(p *plan.Plan) error {
	probe := b.Cgroups
	if probe == nil {
		probe = cgroup.Probe
	}
	var av cgroup.Availability
	if p.Limits.Processes > 0 || p.Limits.Memory > 0 {
		av = probe()
	}
	box := plan.Box{Backend: Backend, Writable: p.Writable(), Tmpdir: "/tmp", Passed: p.Box.Passed}
	for _, m := range p.Mounts {
		box.Rules = append(box.Rules, plan.RuleStatus{Rule: m.Stage.String(), Path: m.Path, Origin: m.Origin.String(), Level: plan.Enforced, How: how(m)})
	}
	box.Rules = append(box.Rules, supervise.AssessLimits(p, av)...)
	box.Rules = append(box.Rules, networkRule(p))
	abi := b.LandlockABI
	if abi == nil {
		abi = landlockABI
	}
	scope := false
	sockets := plan.RuleStatus{Rule: "unix-sockets", Level: plan.Enforced}
	sockets.How = "the host's runtime folders (/run, $XDG_RUNTIME_DIR) are empty folders of the box's own and every other host socket the plan finds is hidden (see the mounts); sockets in the writable roots work"
	if fslog.SocketsSupported {
		sockets.How = "agentbox judges every connect of the box: a socket answers only in the writable roots or a folder of the box's own (/tmp), or when network.unix_sockets names it; " +
			"no datagram unix socket can be made; the host's runtime folders (/run, $XDG_RUNTIME_DIR) are empty folders of the box's own and every other host socket the plan finds is hidden (see the mounts)"
		if slices.Contains(p.Seccomp, "io_uring") {
			sockets.Level = plan.Weaker
			sockets.How += "; io_uring is reopened (seccomp.allow): the connects it makes are not judged"
		}
	}
	switch p.Network.Mode {
	case plan.NetNone, plan.NetAllowlist:
		sockets.How += "; abstract sockets: the box's own network namespace has none of the host's"
	case plan.NetOpen, "":
		if fslog.SocketsSupported {
			// The judge refuses them all; the scope stays, below it.
			scope = abi() >= 6
			sockets.How += "; abstract sockets: every connect to one is refused (the box shares the host's network namespace)"
			break
		}
		fallthrough
	default:
		// The host's network namespace, and its abstract sockets.
		if scope = abi() >= 6; scope {
			sockets.How += "; abstract sockets of the host are refused by Landlock's scope (ABI 6), which the init sets on CMD"
		} else {
			sockets.Level = plan.Weaker
			sockets.How += "; abstract sockets of the host (an X server, a session bus, containerd's) stay reachable: the box shares the host's network namespace, and refusing them needs Landlock ABI 6"
		}
	}
	box.Rules = append(box.Rules, sockets)
	if p.Network.Mode == plan.NetAllowlist {
		nr, err := renderNet(p)
		if err != nil {
			return err
		}
		box.Env = nr.env
		if len(p.Network.Intercept) > 0 && len(p.Network.CABundles) > 0 {
			for _, v := range plan.CAVars {
				box.Env = append(box.Env, v+"="+p.Network.CABundles[0])
			}
			box.Rules = append(box.Rules, plan.RuleStatus{Rule: "ca", Path: strings.Join(p.Network.CABundles, ", "), Level: plan.Enforced,
				How: "the box's certificate bundle (the system's trust and this run's own authority) is bound read-only over the system's, and " +
					strings.Join(plan.CAVars, ", ") + " name it; the authority's key stays in agentbox"})
		}
	}
	// bwrap sets PWD to the working folder itself once it has changed to
	// it, whatever the environment says (agentbox verify found it).
	box.Env = append(box.Env, "PWD="+p.Cwd)
	p.Box = box
	path := b.Path
	if path == "" {
		path = "bwrap"
	}
	av2, err := Render(p, Options{Bwrap: path, Seccomp: true, ScopeAbstract: scope})
	if err != nil {
		return err
	}
	d := Detail{Bwrap: path, Args: av2.Args, CommandAt: av2.CommandAt, Self: p.SelfCommand, NullFDs: av2.NullFDs, Binds: av2.Binds, Checks: av2.Checks, Seccomp: p.Seccomp, SeccompExtra: av2.SeccompExtra,
		NetFD: av2.NetFD, LogFD: av2.LogFD, PreloadFD: av2.PreloadFD, Allow: av2.Allow, Deny: av2.Deny, Forward: av2.Forward, CAFDs: av2.CAFDs, DevNodes: av2.DevNodes, InitMounts: av2.InitMounts}
	if p.Box.Detail, err = json.Marshal(d); err != nil {
		return err
	}
	b.completed, b.completedJSON = d, p.Box.Detail
	return nil
}

// how says how bwrap enforces one mount.
func how(m plan.Mount) string {
	switch m.Op {
	case plan.ROBind:
		return "read-only bind mount (writes fail with EROFS)"
	case plan.Bind:
		return "read-write bind mount"
	case plan.Pin:
		return "bound onto itself: a mount point cannot be renamed or replaced"
	case plan.Dev:
		return "a fresh /dev with only the basic device nodes"
	case plan.Proc:
		return "a fresh /proc for the box's own PID namespace; /proc/sys, sysrq-trigger, irq and bus read-only"
	case plan.Tmpfs:
		return "an empty tmpfs"
	case plan.RemountRO:
		return "remounted read-only"
	case plan.HideDir:
		return "an empty read-only folder in its place"
	case plan.HideFile:
		return "an empty read-only file in its place"
	}
	return string(m.Op)
}

func networkRule(p *plan.Plan) plan.RuleStatus {
	r := plan.RuleStatus{Rule: "network", Path: p.Network.Mode, Level: plan.Enforced}
	switch p.Network.Mode {
	case plan.NetOpen:
		r.How = "the box shares the host's network"
	case plan.NetNone:
		r.How = "own network namespace, loopback only"
	case plan.NetAllowlist:
		r.How = fmt.Sprintf("own network namespace, loopback only; HTTP and SOCKS5 proxy at 127.0.0.1:%d in the box", plan.ProxyPort)
	}
	if len(p.Network.Publish) > 0 && p.Network.Mode != plan.NetOpen {
		r.How += "; published ports are served by agentbox on the host and reach the box's loopback through the init, which opens no way out"
	}
	return r
}

// Describe prints how the network is reached and the seccomp filter; the
// mounts are the plan's own table.
func (b *Bwrap) Describe(p *plan.Plan, w io.Writer) {
	if p.Network.Mode == plan.NetAllowlist {
		if p.Network.Upstream != nil {
			fmt.Fprintln(w, "  how:     the box's init hands each connection to agentbox's proxy on the host over an inherited socket pair; the proxy checks every host as written and reaches the allowed ones through the upstream")
		} else {
			fmt.Fprintln(w, "  how:     the box's init hands each connection to agentbox's proxy on the host over an inherited socket pair; the proxy resolves names and checks every host and address")
		}
	}
	seccomp.Describe(p.Seccomp, seccomp.ForNetwork(p.Network.Mode, false), w)
}

// detailOf is DetailOf, without decoding when p's detail is the one b
// completed last: the same bytes are the same detail.
func (b *Bwrap) detailOf(p *plan.Plan) (Detail, error) {
	if p.Box.Backend == Backend && b.completedJSON != nil && bytes.Equal(p.Box.Detail, b.completedJSON) {
		return b.completed, nil
	}
	return DetailOf(p)
}

// DetailOf reads the bwrap detail of a completed plan.
func DetailOf(p *plan.Plan) (Detail, error) {
	var d Detail
	if p.Box.Backend != Backend {
		return d, fmt.Errorf("the plan is not for bwrap (backend %q)", p.Box.Backend)
	}
	err := json.Unmarshal(p.Box.Detail, &d)
	return d, err
}
