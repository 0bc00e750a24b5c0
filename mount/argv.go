package mount

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Backend is the name this backend reports in AGENTBOX_BACKEND.
const Backend = "bwrap"

// The file descriptors bwrap and the init inherit, in this order.
const (
	infoFD    = 3 // bwrap --info-fd: bwrap writes the init's host pid here
	readyFD   = 4 // the init writes one byte here once the box is set up
	selfFD    = 5 // the agentbox executable, run as the init through /proc/self/fd
	seccompFD = 6 // the seccomp program (a sealed memfd), for --add-seccomp-fd
	firstFD   = 7 // then one /dev/null per hidden file (--ro-bind-data)
)

// Options are the facts about the run that are not in the plan.
type Options struct {
	Bwrap string // the bwrap executable
	// Self is the agentbox executable, run as the init inside the box. It
	// is passed as an open file (fd 5) and started as /proc/self/fd/5, so
	// the init runs even when agentbox's own folder is hidden or replaced
	// in the box (an agentbox in /tmp, in a denied or masked folder).
	Self string
	// Foreground is true when agentbox owns the terminal's foreground: the
	// init then hands the terminal's foreground to CMD.
	Foreground bool
	// Seccomp is true when a seccomp program is passed on fd 6.
	Seccomp bool
}

// Argv is a rendered bwrap command: the arguments and the file descriptors
// it expects to inherit.
type Argv struct {
	Args []string
	// NullFDs are the fds that must be open on /dev/null (hidden files).
	NullFDs []int
	// Seccomp is true when fd 6 must hold the seccomp program built with
	// the reopened groups SeccompAllow.
	Seccomp      bool
	SeccompAllow []string
}

// Render turns the plan into bwrap's argument list (without argv[0]).
func Render(p *plan.Plan, o Options) (Argv, error) {
	if err := plan.Validate(p); err != nil {
		return Argv{}, err
	}
	var a []string
	add := func(s ...string) { a = append(a, s...) }
	var nulls []int
	next := firstFD
	for _, m := range p.Mounts {
		switch m.Op {
		case plan.ROBind:
			add("--ro-bind", m.Src(), m.Path)
		case plan.Bind:
			add("--bind", m.Src(), m.Path)
		case plan.Dev:
			add("--dev", m.Path)
		case plan.Proc:
			add("--proc", m.Path)
		case plan.Tmpfs:
			add("--tmpfs", m.Path)
		case plan.RemountRO:
			add("--remount-ro", m.Path)
		case plan.HideDir:
			// An empty tmpfs, then read-only: the folder looks empty and
			// nothing can be put into it.
			add("--tmpfs", m.Path, "--remount-ro", m.Path)
		case plan.HideFile:
			// bwrap copies the fd's content (nothing: /dev/null) into a file
			// of its own and binds it read-only over the path.
			add("--ro-bind-data", strconv.Itoa(next), m.Path)
			nulls = append(nulls, next)
			next++
		default:
			return Argv{}, fmt.Errorf("mount %s %s: operation not supported by bwrap", m.Op, m.Path)
		}
		if m.Stage == plan.StageRoot && m.Op == plan.Proc {
			// A new PID namespace: the box cannot see or signal host
			// processes, and its init's death ends every process in it.
			add("--unshare-pid")
			// If agentbox (bwrap's parent) dies, even by kill -9, the kernel
			// kills bwrap and so the whole box (PR_SET_PDEATHSIG).
			add("--die-with-parent")
			if p.Identity.Root() {
				// Run as root, bwrap creates no user namespace and keeps every
				// capability, so `mount -o remount,rw /` inside would make
				// the host's / writable. Drop them all.
				add("--cap-drop", "ALL")
			}
			switch p.Network.Mode {
			case plan.NetNone:
				// Own network namespace with only loopback.
				add("--unshare-net")
			case plan.NetAllowlist:
				return Argv{}, fmt.Errorf("network mode allowlist is not available yet (issue 5): use open or none")
			}
		}
	}
	if o.Seccomp {
		// The syscall filter (package seccomp): no TIOCSTI keystroke
		// injection into the user's terminal, no foreign-architecture
		// syscalls, no keyring, bpf, ptrace, io_uring or new user
		// namespaces unless the policy reopens a group. Because TIOCSTI is
		// refused here, the box keeps the terminal's session
		// (no --new-session) and job control works.
		add("--add-seccomp-fd", strconv.Itoa(seccompFD))
	}
	add("--chdir", p.Cwd)
	for _, name := range p.Env.Removed {
		add("--unsetenv", name)
	}
	for _, kv := range Truthful(p) {
		k, v, _ := strings.Cut(kv, "=")
		add("--setenv", k, v)
	}
	add("--info-fd", strconv.Itoa(infoFD))
	// agentbox's init is pid 1 in the box: it forwards signals to CMD, hands
	// it the terminal, reaps orphans and reports CMD's exit status.
	add("--as-pid-1", "--", "/proc/self/fd/"+strconv.Itoa(selfFD), InitCommand, "--ready-fd", strconv.Itoa(readyFD))
	if o.Foreground {
		add("--foreground")
	}
	for _, r := range rlimits(p.Limits) {
		add("--rlimit", r)
	}
	add("--")
	add(p.Command...)
	return Argv{Args: a, NullFDs: nulls, Seccomp: o.Seccomp, SeccompAllow: p.Seccomp}, nil
}

// rlimits renders the plan's limits as the init's --rlimit NAME=VALUE
// arguments; the init sets them on itself before it starts CMD.
func rlimits(l plan.Limits) []string {
	var out []string
	for _, r := range []struct {
		name string
		v    uint64
	}{{"nproc", l.Processes}, {"nofile", l.OpenFiles}, {"as", l.Memory}, {"cpu", l.CPUTime}, {"fsize", l.FileSize}} {
		if r.v > 0 {
			out = append(out, fmt.Sprintf("%s=%d", r.name, r.v))
		}
	}
	return out
}

// Truthful returns the AGENTBOX_* variables (and TMPDIR) that say what is in
// force. They are set only when the box really runs.
func Truthful(p *plan.Plan) []string {
	return []string{
		"AGENTBOX=1",
		"AGENTBOX_BACKEND=" + Backend,
		"AGENTBOX_WRITABLE=" + strings.Join(p.Writable(), ","),
		"AGENTBOX_DENY=" + strings.Join(p.Denied(), ","),
		"AGENTBOX_NETWORK=" + p.Network.Mode,
		"TMPDIR=/tmp",
	}
}

// Shell renders a command line with POSIX shell quoting, followed by the fd
// redirections bwrap and the init expect, so it can be pasted and run.
// The seccomp program comes from `agentbox __seccomp`, through bash process
// substitution.
func Shell(bwrap, self string, av Argv) string {
	words := []string{quote(bwrap)}
	for _, s := range av.Args {
		words = append(words, quote(s))
	}
	words = append(words, fmt.Sprintf("%d>/dev/null", infoFD), fmt.Sprintf("%d>/dev/null", readyFD), fmt.Sprintf("%d<%s", selfFD, quote(self)))
	if av.Seccomp {
		gen := []string{quote(self), SeccompCommand}
		for _, g := range av.SeccompAllow {
			gen = append(gen, quote(g))
		}
		words = append(words, fmt.Sprintf("%d< <(%s)", seccompFD, strings.Join(gen, " ")))
	}
	for _, fd := range av.NullFDs {
		words = append(words, fmt.Sprintf("%d</dev/null", fd))
	}
	return strings.Join(words, " ")
}

func quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:,+@%", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
