package verify

import (
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/seccomp"
)

// groupProbe is how a seccomp group is probed: one call (run by the probe
// under this name) whose arguments are harmless, and the answers the
// kernel gives it without the filter. Where those include the filter's
// own errno, a refusal proves nothing and the check is consistent.
type groupProbe struct {
	call   string
	kernel []string
}

// groupProbes are the groups the probe knows how to try.
var groupProbes = map[string]groupProbe{
	// ioctl(-1, TIOCSTI): a bad descriptor.
	"tiocsti": {"ioctl-tiocsti", []string{"EBADF"}},
	// keyctl(KEYCTL_GET_KEYRING_ID, the session keyring): its ID.
	"keyring": {"keyctl", []string{"ok", "ENOKEY", "EACCES"}},
	// bpf(-1, NULL, 0): an unknown command.
	"bpf": {"bpf", []string{"EINVAL"}},
	// perf_event_open(NULL, …): the attributes cannot be read.
	"perf": {"perf_event_open", []string{"EFAULT"}},
	// userfaultfd(UFFD_USER_MODE_ONLY | an unknown flag).
	"userfaultfd": {"userfaultfd", []string{"EINVAL"}},
	// kexec_load(0, 0, NULL, 0): no CAP_SYS_BOOT.
	"kexec": {"kexec_load", []string{"EPERM"}},
	// init_module(NULL, 0, ""): no CAP_SYS_MODULE.
	"modules": {"init_module", []string{"EPERM"}},
	// ptrace(PTRACE_GETREGS, a pid that does not exist).
	"ptrace": {"ptrace", []string{"ESRCH"}},
	// io_uring_enter(-1, …): a bad descriptor.
	"io_uring": {"io_uring_enter", []string{"EBADF"}},
	// clone3(NULL, 0): a bad size.
	"userns": {"clone3", []string{"EINVAL"}},
	// socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP).
	"no-net-bypass": {"mptcp-socket", []string{"ok", "EPROTONOSUPPORT", "EINVAL"}},
	// socket(AF_VSOCK, SOCK_STREAM, 0).
	"socket-families": {"vsock-socket", []string{"ok", "EAFNOSUPPORT", "ENODEV"}},
	// prlimit64(a pid that does not exist, RLIMIT_NOFILE, NULL, NULL).
	"other-processes": {"prlimit-other", []string{"ESRCH"}},
	// fchmodat(-1, "x", 04755): a bad descriptor.
	"setuid": {"chmod-setuid", []string{"EBADF"}},
	// socket(AF_INET, SOCK_DGRAM, 0).
	"no-udp": {"udp-socket", []string{"ok"}},
	// socket(AF_UNIX, SOCK_STREAM, 0).
	"no-unix-sockets": {"unix-socket", []string{"ok"}},
}

// blockedGroups returns the seccomp groups the box's filter blocks: every
// group the policy did not reopen, and the backend's extra ones.
func blockedGroups(p *plan.Plan) []seccomp.Group {
	open := map[string]bool{}
	for _, g := range p.Seccomp {
		open[g] = true
	}
	var out []seccomp.Group
	for _, g := range seccomp.Groups() {
		if !open[g.Name] {
			out = append(out, g)
		}
	}
	if p.Box.Backend == landlock.Backend {
		if a, err := landlock.AssessmentOf(p); err == nil {
			for _, name := range a.Seccomp {
				if g, ok := seccomp.Extra(name); ok {
					out = append(out, g)
				}
			}
		}
	}
	return out
}

func (b *builder) seccomp() {
	for _, g := range blockedGroups(b.p) {
		name := "seccomp " + g.Name
		gp, ok := groupProbes[g.Name]
		if !ok || len(g.Rules) == 0 {
			b.add(Check{Rule: name, Why: "the probe has no call for this group"})
			continue
		}
		errno := ruleErrno(g, gp.call)
		c := Check{Rule: name, Says: "the filter refuses " + g.Name, Probe: Probe{Op: "syscall", Arg: gp.call}, Want: []string{errno}}
		if contains(gp.kernel, errno) {
			c.Ambiguous = []string{errno}
		}
		b.add(c)
	}
}

// ruleErrno is the errno the group's filter answers the probe's call with.
func ruleErrno(g seccomp.Group, call string) string {
	sys := map[string]string{"ioctl-tiocsti": "ioctl", "mptcp-socket": "socket", "vsock-socket": "socket", "kexec_load": "kexec_load",
		"prlimit-other": "prlimit64", "chmod-setuid": "fchmodat", "udp-socket": "socket", "unix-socket": "socket",
		"init_module": "init_module", "clone3": "clone3", "io_uring_enter": "io_uring_enter"}[call]
	if sys == "" {
		sys = call
	}
	for _, r := range g.Rules {
		if r.Syscall == sys {
			return r.Errno
		}
	}
	return g.Rules[0].Errno
}
