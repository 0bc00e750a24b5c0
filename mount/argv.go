package mount

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
)

// Backend is the name this backend reports in AGENTBOX_BACKEND.
const Backend = "bwrap"

// The file descriptors bwrap and the init inherit, in this order.
const (
	infoFD    = 3 // bwrap --info-fd: bwrap writes the init's host pid here
	readyFD   = 4 // the init writes one byte here once the box is set up
	selfFD    = 5 // the agentbox executable, run as the init through /proc/self/fd
	seccompFD = 6 // the seccomp program (a sealed memfd), for --add-seccomp-fd
	firstFD   = 7 // then, in network mode allowlist, the box's end of the
	// proxy's socket pair (so fd 7; the init's --net-fd), and then one
	// /dev/null per hidden file (--ro-bind-data)
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
	// NetLog is the file the allowlist proxy logs every allowed and denied
	// connection to (--net-log); "" for none.
	NetLog string
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
	// NetFD is the fd that must hold the box's end of the proxy's socket
	// pair (netproxy.Pair), or 0 when the network mode is not allowlist.
	NetFD int
	// LogFD is the fd that must hold the box's end of the filesystem
	// log's socket, or 0 when the plan does not record refusals this way.
	LogFD int
	// Allow and Deny are the proxy's rules, and Forward the targets of the
	// box's port forwards in the order of the init's --forward arguments.
	Allow, Deny, Forward []string
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
	var nr netRender
	if p.Network.Mode == plan.NetAllowlist {
		var err error
		if nr, err = renderNet(p); err != nil {
			return Argv{}, err
		}
		nr.fd = next
		next++
	}
	logFD := 0
	if p.Log.Filesystem == fslog.Notify {
		logFD = next
		next++
	}
	for _, m := range p.Mounts {
		switch m.Op {
		case plan.ROBind:
			add("--ro-bind", m.Src(), m.Path)
		case plan.Bind:
			add("--bind", m.Src(), m.Path)
		case plan.Pin:
			// Bound onto itself: a mount point cannot be renamed or
			// removed (EBUSY), so the folder stays where it is.
			add("--bind", m.Path, m.Path)
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
			// The kernel's tunables under the fresh /proc stay read-only.
			// bwrap does this itself only for those it can write to, and
			// /proc/sys is mode 0555, so as root it was skipped: root in
			// the box could then write /proc/sys/kernel/core_pattern and
			// have the host run its program as root at the next crash.
			add("--ro-bind", "/proc/sys", "/proc/sys")
			for _, p := range []string{"/proc/sysrq-trigger", "/proc/irq", "/proc/bus"} {
				add("--ro-bind-try", p, p)
			}
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
				// Own network namespace with only loopback, too: the proxy
				// is the only way out, so a program that ignores the proxy
				// variables fails closed (package netproxy).
				add("--unshare-net")
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
	// What the backend tells CMD: the proxy variables (Box.Env) and the
	// truthful AGENTBOX_* variables, set by bwrap so that bwrap itself
	// runs with the caller's environment.
	for _, kv := range append(append([]string(nil), p.Box.Env...), p.Truthful()...) {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PWD" {
			continue // bwrap sets it itself, after --chdir
		}
		add("--setenv", k, v)
	}
	add("--info-fd", strconv.Itoa(infoFD))
	// agentbox's init is pid 1 in the box: it forwards signals to CMD, hands
	// it the terminal, reaps orphans and reports CMD's exit status.
	add("--as-pid-1", "--", "/proc/self/fd/"+strconv.Itoa(selfFD), InitCommand, "--ready-fd", strconv.Itoa(readyFD))
	if o.Foreground {
		add("--foreground")
	}
	if logFD > 0 {
		// The init arms the filesystem log right before it starts CMD
		// (package fslog).
		add("--log-fd", strconv.Itoa(logFD))
	}
	if nr.fd > 0 {
		add("--net-fd", strconv.Itoa(nr.fd), "--net-port", strconv.Itoa(plan.ProxyPort))
		for _, f := range nr.forward {
			add("--forward", f)
		}
	}
	for _, r := range supervise.RlimitArgs(p.Limits) {
		add("--rlimit", r)
	}
	add("--")
	add(p.Command...)
	return Argv{Args: a, NullFDs: nulls, Seccomp: o.Seccomp, SeccompAllow: p.Seccomp,
		NetFD: nr.fd, LogFD: logFD, Allow: nr.allow, Deny: p.Network.Deny, Forward: nr.forward}, nil
}

// netRender is what network mode allowlist adds to the box.
type netRender struct {
	fd      int      // the box's end of the proxy's socket pair
	allow   []string // the proxy's allow rules
	forward []string // the port forwards' targets, in order
	env     []string // the proxy variables
}

// renderNet checks the allowlist and derives the proxy's rules, the port
// forwards and the variables that point programs at the proxy.
func renderNet(p *plan.Plan) (netRender, error) {
	// The provider's domains are in the plan's allow list already.
	allow := p.Network.Allow
	if _, err := netproxy.Compile(allow, p.Network.Deny); err != nil {
		return netRender{}, fmt.Errorf("network: %w", err)
	}
	forward := p.Network.Forwards()
	for _, f := range forward {
		if strings.HasSuffix(f, ":"+strconv.Itoa(plan.ProxyPort)) {
			return netRender{}, fmt.Errorf("network: allow entry %q: port %d is the proxy's own port in the box", f, plan.ProxyPort)
		}
	}
	proxy := "http://127.0.0.1:" + strconv.Itoa(plan.ProxyPort)
	// socks5h: the proxy resolves names, the box has no DNS.
	socks := "socks5h://127.0.0.1:" + strconv.Itoa(plan.ProxyPort)
	// localhost is reached directly: through the port forwards when the
	// policy allows a host service, else it is simply the box's own.
	noProxy := "localhost,127.0.0.1,::1"
	return netRender{allow: allow, forward: forward, env: []string{
		"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "http_proxy=" + proxy, "https_proxy=" + proxy,
		"ALL_PROXY=" + socks, "all_proxy=" + socks,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
	}}, nil
}

// Shell renders the bwrap command line of d with POSIX shell quoting,
// followed by the fd redirections bwrap and the init expect, so it can be
// pasted and run. self is the agentbox executable; the seccomp program
// comes from `agentbox __seccomp`, through bash process substitution.
func Shell(self string, d Detail) string {
	words := []string{quote(d.Bwrap)}
	for _, s := range d.Args {
		words = append(words, quote(s))
	}
	words = append(words, fmt.Sprintf("%d>/dev/null", infoFD), fmt.Sprintf("%d>/dev/null", readyFD), fmt.Sprintf("%d<%s", selfFD, quote(self)))
	gen := []string{quote(self), SeccompCommand}
	for _, g := range d.Seccomp {
		gen = append(gen, quote(g))
	}
	words = append(words, fmt.Sprintf("%d< <(%s)", seccompFD, strings.Join(gen, " ")))
	for _, fd := range d.NullFDs {
		words = append(words, fmt.Sprintf("%d</dev/null", fd))
	}
	if d.NetFD > 0 {
		// A shell cannot make the socket pair or run the proxy: without
		// them the init refuses to start the command.
		words = append(words, fmt.Sprintf("# fd %d: the proxy's socket pair, which only agentbox run provides", d.NetFD))
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
