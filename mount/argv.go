package mount

import (
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/seccomp"
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
	argsFD    = 7 // the arguments below, NUL-separated (a sealed memfd), for --args
	checkFD   = 8 // what the init checks before CMD starts (a sealed memfd; see Check)
	firstFD   = 9 // then, in network mode allowlist or with published
	// ports, the box's end of the proxy's socket pair (so fd 9; the init's
	// --net-fd), and then, in
	// mount order, one descriptor per mount that takes one: the host path
	// of a bind (--bind-fd, --ro-bind-fd) or /dev/null for a hidden file
	// (--ro-bind-data)
)

// MaxArgs is the most arguments bwrap accepts in all (MAX_ARGS in
// bubblewrap's bwrap.c), --args or not.
const MaxArgs = 9000

// Check is one mount the init verifies in the box before CMD starts.
//
// bwrap binds a descriptor by resolving it (/proc/self/fd/N) and mounting
// what that resolves to, and it finds each mount's destination by name: a
// second box that swaps a folder for a symlink at that moment can have
// another folder mounted, or a mount land somewhere else (bwrap's own
// check after the mount compares the destination path again, which the
// swap can pass). So the init looks at the result, not at the names: each
// mount that no later mount covers must be at its path, reached without
// following a link, as the root of a mount, and be the file that was
// opened (for a bind: its device and inode) or what bwrap makes (for a
// hidden path: an empty read-only tmpfs or file). Any difference and the
// box does not start.
//
// Kind "ro" is a path bwrap itself makes read-only (procChecks): if it is
// there at all, it must be on a read-only mount.
type Check struct {
	// Kind is "bind", "bind-ro" (a bind that must also be read-only),
	// "tmpfs", "hide-dir", "hide-file" or "ro"; in the check file also
	// "make-ro" (InitMount).
	Kind string `json:"kind"`
	Path string `json:"path"`
	// FD is the bind's descriptor: its device and inode are what Path
	// must show. 0 for the other kinds.
	FD int `json:"fd,omitempty"`
}

// checks lists what the init verifies: every mount agentbox makes after
// stage 1 that no later mount covers (a later mount at the same path or
// above it hides it).
func checks(p *plan.Plan, bindFDs map[int]int) []Check {
	var out []Check
	for i, m := range p.Mounts {
		if m.Stage == plan.StageRoot {
			if m.Op == plan.Proc && p.Identity.Root() {
				out = append(out, procChecks(m.Path)...)
			}
			continue
		}
		kind := ""
		switch m.Op {
		case plan.Bind, plan.Pin:
			kind = "bind"
		case plan.ROBind:
			kind = "bind-ro"
		case plan.Tmpfs:
			kind = "tmpfs"
		case plan.HideDir:
			kind = "hide-dir"
		case plan.HideFile:
			kind = "hide-file"
		default:
			continue
		}
		covered := false
		for _, later := range p.Mounts[i+1:] {
			if later.Op != plan.RemountRO && plan.Within(m.Path, later.Path) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, Check{Kind: kind, Path: m.Path, FD: bindFDs[i]})
		}
	}
	return out
}

// initMade says, for each mount of p, whether the C init may make it
// instead of bwrap (see InitMount): a read-only bind of a path onto itself
// (a read-only path, a placeholder), which the init makes as a read-only
// clone of what the box already shows there, a pinned folder inside a
// writable bind of a path onto itself (a clone of what the box shows
// there, writable as that bind is), or a hidden folder or file
// (a deny path), which it covers with an empty read-only folder or file
// of a tmpfs of its own; each when it can be made after every mount bwrap
// keeps without changing what the box sees: no mount bwrap makes after
// it (nor a certificate bundle it binds) is at its path, above or below
// it, and before it the box shows the host's own file there (no earlier
// mount above it but binds of paths onto themselves: a project in /tmp,
// under the box's own /tmp, stays bwrap's). The order among the mounts
// the init makes is the plan's. bwrap reads and parses the whole mount
// table after each mount; the init's are a handful of system calls each.
func initMade(p *plan.Plan) []bool {
	made := make([]bool, len(p.Mounts))
	var kept []string
	if p.Network.Mode == plan.NetAllowlist && len(p.Network.Intercept) > 0 {
		kept = append(kept, p.Network.CABundles...)
	}
	related := func(path string) bool {
		for _, k := range kept {
			if plan.Within(path, k) || plan.Within(k, path) {
				return true
			}
		}
		return false
	}
	selfBind := func(m plan.Mount) bool {
		return m.Op == plan.Pin || (m.Op == plan.Bind || m.Op == plan.ROBind) && m.Src() == m.Path
	}
	// hostView: before the mount, the box shows the host's own file at
	// the path (what the init clones): every earlier mount at the path or
	// above it is the host's root or a bind of a path onto itself.
	hostView := func(i int) bool {
		for _, k := range p.Mounts[:i] {
			if plan.Within(p.Mounts[i].Path, k.Path) && !selfBind(k) {
				return false
			}
		}
		return true
	}
	// writableView: the last earlier mount at or above the path, what the
	// box shows there before the mount, is a writable bind of a path
	// onto itself (the project), so a clone of it is writable too.
	writableView := func(i int) bool {
		for j := i - 1; j >= 0; j-- {
			if k := p.Mounts[j]; plan.Within(p.Mounts[i].Path, k.Path) {
				return k.Op == plan.Pin || k.Op == plan.Bind && k.Src() == k.Path
			}
		}
		return false
	}
	for i := len(p.Mounts) - 1; i >= 0; i-- {
		m := p.Mounts[i]
		kind := m.Op == plan.ROBind && m.Src() == m.Path || m.Op == plan.HideDir || m.Op == plan.HideFile ||
			m.Op == plan.Pin && writableView(i)
		if m.Stage != plan.StageRoot && kind && m.Path != "/" && !related(m.Path) && hostView(i) {
			made[i] = true
			continue
		}
		kept = append(kept, m.Path)
	}
	return made
}

// initWords are bwrap's words for the init mount m as Render writes them
// at args[m.From:] (a hidden file's descriptor is read from there): what
// a run leaves out of bwrap's options when the init makes m. Nil for a
// kind the init does not make.
func initWords(m InitMount, args []string) []string {
	switch m.Kind {
	case "make-ro":
		return []string{"--ro-bind-fd", strconv.Itoa(m.FD), m.Path}
	case "make-pin":
		return []string{"--bind-fd", strconv.Itoa(m.FD), m.Path}
	case "make-hide-dir":
		return []string{"--tmpfs", m.Path, "--remount-ro", m.Path}
	case "make-hide-file":
		if m.From >= 0 && m.From+1 < len(args) {
			if _, err := strconv.ParseUint(args[m.From+1], 10, 31); err == nil {
				return []string{"--ro-bind-data", args[m.From+1], m.Path}
			}
		}
	}
	return nil
}

// initKind is the check file's record kind of mount op when the C init
// makes it (InitMount).
func initKind(op plan.Op) string {
	switch op {
	case plan.HideDir:
		return "make-hide-dir"
	case plan.HideFile:
		return "make-hide-file"
	case plan.Pin:
		return "make-pin"
	}
	return "make-ro"
}

// procCovered are the entries of a fresh /proc that bwrap binds read-only
// itself when the box could write them (cover_proc_dirs in bubblewrap's
// bwrap.c). /proc/sys is not among them: bwrap's test of it fails even as
// root (the kernel answers EACCES for writing the folder itself), so
// agentbox binds it.
var procCovered = []string{"sysrq-trigger", "irq", "bus"}

// procChecks are the checks of bwrap's own read-only binds over the fresh
// /proc at dir, for a root box: a root box keeps the ownership of every
// file in them, so without the bind it could write them (an interrupt's
// CPUs, the PCI bus's configuration, the magic SysRq key). The init
// refuses to start CMD if one is there and writable, so a bwrap that did
// not bind one fails closed.
func procChecks(dir string) []Check {
	out := make([]Check, 0, len(procCovered))
	for _, n := range procCovered {
		out = append(out, Check{Kind: "ro", Path: path.Join(dir, n)})
	}
	return out
}

// Bind is a host path bwrap binds from a descriptor. agentbox opens Source
// once, without following a symbolic link anywhere along it, and passes the
// descriptor as FD: bwrap mounts what was opened, never what the path names
// a moment later, when another box may have swapped it for a symlink.
type Bind struct {
	FD     int    `json:"fd"`
	Source string `json:"source"`
	// Dir is true when the source must be a folder (a pinned one).
	Dir bool `json:"dir,omitempty"`
}

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
	// ScopeAbstract has the init keep the host's abstract unix sockets
	// from CMD (Landlock's scope, ABI 6): for network mode open, where the
	// box shares the host's network namespace and so its abstract sockets.
	ScopeAbstract bool
}

// devNodeNames are the device nodes bwrap's --dev binds from the host's /dev
// (bubblewrap's bwrap.c, devnodes).
var devNodeNames = []string{"null", "zero", "full", "random", "urandom", "tty"}

// DevDir is where earlier versions of agentbox, and a shell running their
// agentbox plan --argv, made a root box's own device nodes:
// <state>/dev/<run>, in agentbox's state folder. A root run removes what
// is left there (sweepDevDirs).
func DevDir(p *plan.Plan) string {
	if p.HostExec.State == "" {
		return ""
	}
	return filepath.Join(p.HostExec.State, "dev", p.RunID)
}

// Argv is a rendered bwrap command: the arguments and the file descriptors
// it expects to inherit.
type Argv struct {
	Args []string
	// CommandAt is where the command begins in Args (at its "--"): the
	// options before it travel through --args, the command after it on
	// bwrap's command line.
	CommandAt int
	// NullFDs are the fds that must be open on /dev/null (hidden files).
	NullFDs []int
	// Binds are the fds that must be open on host paths.
	Binds []Bind
	// Checks are what the init verifies before CMD starts (fd 8).
	Checks []Check
	// Seccomp is true when fd 6 must hold the seccomp program built with
	// the reopened groups SeccompAllow and the extra groups SeccompExtra.
	Seccomp      bool
	SeccompAllow []string
	SeccompExtra []string
	// NetFD is the fd that must hold the box's end of the proxy's socket
	// pair (netproxy.Pair), or 0 when the network mode is not allowlist
	// and no port is published.
	NetFD int
	// LogFD is the fd that must hold the box's end of the filesystem
	// log's socket, or 0 when the plan does not record refusals this way.
	LogFD int
	// PreloadFD is the fd that must hold the write end of the preloaded
	// log's pipe, or 0 when the plan does not record refusals this way.
	PreloadFD int
	// Allow and Deny are the proxy's rules, and Forward the targets of the
	// box's port forwards in the order of the init's --forward arguments.
	Allow, Deny, Forward []string
	// CAFDs are the fds that must hold the box's certificate bundle, one
	// per path of plan.Network.CABundles.
	CAFDs []int
	// DevNodes is true when bwrap must start in a mount namespace of its
	// own with a tmpfs over /dev holding the box's own device nodes
	// (root's box).
	DevNodes bool
	// InitMounts are the binds the C init may make instead of bwrap, in
	// the plan's order (see InitMount).
	InitMounts []InitMount
}

// InitMount is a mount the C init can make in place of bwrap, when the
// kernel has the mount API (fsopen, fsmount, open_tree, move_mount,
// mount_setattr: Linux 5.12): Args[From:To] are bwrap's words for it,
// which a run then leaves out. bwrap reads and parses the whole mount
// table after each mount (0.2 ms or more each); the init's are a handful
// of system calls each.
//
// Kind "make-ro" is a read-only bind of a path onto itself (a read-only
// path, a placeholder). The init first checks that the path, reached
// without following a link, is the file or folder agentbox opened (FD's
// device and inode), clones it with everything mounted below it, makes
// the clone read-only, nosuid, nodev and private, mounts it there, and
// then makes the same checks as for bwrap's read-only binds. (A writable
// bind stays bwrap's: the box shows the path read-only before, and a box
// that is not root's may not clear a read-only flag its mount namespace
// inherited.)
//
// Kind "make-pin" is a pinned folder (bound onto itself so that it cannot
// be renamed or removed: .git, .git/info) inside a writable bind of a path
// onto itself (the project): the same checks, a clone of the box's view
// there made nosuid, nodev and private (writable, as the project's bind it
// is cloned from), mounted there.
//
// Kinds "make-hide-dir" and "make-hide-file" hide a path (a deny path)
// as bwrap's --tmpfs and --remount-ro, and --ro-bind-data of nothing, do:
// the init makes one tmpfs of its own, never attached anywhere, holding an
// empty folder (mode 0755) and an empty file (mode 0600), and mounts a
// read-only, nosuid, nodev, private bind of the one or the other at the
// path, reached without following a link (FD is 0); then the same checks
// as for bwrap's hidden paths (an empty read-only folder or file of a
// tmpfs, mounted there).
//
// A shell's command line (ShellWords), the Go init and a kernel without
// the API keep bwrap's words.
type InitMount struct {
	Kind string `json:"kind"` // "make-ro", "make-pin", "make-hide-dir" or "make-hide-file"
	Path string `json:"path"`
	FD   int    `json:"fd"`
	From int    `json:"from"`
	To   int    `json:"to"`
}

// Render turns the plan into bwrap's argument list (without argv[0]).
func Render(p *plan.Plan, o Options) (Argv, error) {
	if err := plan.Validate(p); err != nil {
		return Argv{}, err
	}
	var a []string
	add := func(s ...string) { a = append(a, s...) }
	var nulls []int
	var binds []Bind
	next := firstFD
	bindFDs := map[int]int{} // mount index -> descriptor
	// bindFD gives the host path src of mount i the next descriptor.
	bindFD := func(i int, src string, dir bool) string {
		binds = append(binds, Bind{FD: next, Source: src, Dir: dir})
		bindFDs[i] = next
		next++
		return strconv.Itoa(next - 1)
	}
	devNodes := false
	privateMounts := false
	var nr netRender
	if p.Network.Mode == plan.NetAllowlist {
		var err error
		if nr, err = renderNet(p); err != nil {
			return Argv{}, err
		}
	}
	if p.Network.Mode == plan.NetAllowlist || p.Network.Mode == plan.NetNone && len(p.Network.Publish) > 0 {
		// The socket pair: the proxy's connections, and the sockets
		// that reach the box's servers on published ports.
		nr.fd = next
		next++
	}
	preloadFD := 0
	if p.Log.Filesystem == fslog.Preload && fslog.SocketsSupported {
		// The preloaded log's pipe: a box whose connects are judged
		// may not make the datagram socket it would send on.
		preloadFD = next
		next++
	}
	logFD := 0
	// The log's socket carries the box's filter: the filesystem log's
	// calls, and every connect, which the supervisor judges (package
	// fslog).
	if p.Log.Filesystem == fslog.Notify || fslog.SocketsSupported {
		logFD = next
		next++
	}
	made := initMade(p)
	var inits []InitMount
	for i, m := range p.Mounts {
		from := len(a)
		switch op := m.Op; {
		case op == plan.ROBind && m.Src() == "/" && m.Path == "/":
			// The host's root: no box can swap it.
			add("--ro-bind", "/", "/")
		case op == plan.ROBind:
			add("--ro-bind-fd", bindFD(i, m.Src(), false), m.Path)
		case op == plan.Bind:
			add("--bind-fd", bindFD(i, m.Src(), false), m.Path)
		case op == plan.Pin:
			// Bound onto itself: a mount point cannot be renamed or
			// removed (EBUSY), so the folder stays where it is.
			add("--bind-fd", bindFD(i, m.Path, true), m.Path)
		case op == plan.Dev:
			add("--dev", m.Path)
			if p.Identity.Root() {
				// bwrap binds the host's own device nodes into the fresh
				// /dev, and a root box owns them: without a capability it
				// could still chmod or touch them, on the host (chmod 000
				// /dev/null breaks every other user's programs). A
				// read-only bind would not do: bwrap remounts it nodev,
				// and no device could be opened. So bwrap is started in a
				// mount namespace of its own with a tmpfs over /dev that
				// holds nodes of the box's own, the same devices, made
				// for the run: those are what --dev binds (DevNodes;
				// agentbox run: forkWithNodes, a shell: ShellWords). No
				// bind of them over bwrap's, each of which would cost
				// bwrap a read of the whole mount table. (A node of the
				// box's own over the terminal bwrap would bind at
				// /dev/console is added at run time.)
				devNodes = true
			}
		case op == plan.Proc:
			add("--proc", m.Path)
		case op == plan.Tmpfs:
			add("--tmpfs", m.Path)
		case op == plan.RemountRO:
			add("--remount-ro", m.Path)
		case op == plan.HideDir:
			// An empty tmpfs, then read-only: the folder looks empty and
			// nothing can be put into it.
			add("--tmpfs", m.Path, "--remount-ro", m.Path)
		case op == plan.HideFile:
			// bwrap copies the fd's content (nothing: /dev/null) into a file
			// of its own and binds it read-only over the path.
			add("--ro-bind-data", strconv.Itoa(next), m.Path)
			nulls = append(nulls, next)
			next++
		default:
			return Argv{}, fmt.Errorf("mount %s %s: operation not supported by bwrap", m.Op, m.Path)
		}
		if made[i] {
			inits = append(inits, InitMount{Kind: initKind(m.Op), Path: m.Path, FD: bindFDs[i], From: from, To: len(a)})
		}
		if m.Stage == plan.StageRoot && m.Op == plan.Proc {
			// The kernel's tunables under the fresh /proc stay read-only.
			// bwrap does this itself only for those it can write to, and
			// /proc/sys is mode 0555, so as root it was skipped: root in
			// the box could then write /proc/sys/kernel/core_pattern and
			// have the host run its program as root at the next crash.
			add("--ro-bind", "/proc/sys", "/proc/sys")
			// The other old entries bwrap covers itself (sysrq-trigger,
			// irq, bus: it binds read-only each one the box could
			// write, which as root is each one there is), so agentbox
			// does not bind them a second time: every bind costs the box
			// a read of the whole mount table. As root the init checks
			// that each one there is read-only (procChecks); as another
			// user everything in them belongs to the host's root, which
			// the box's user namespace cannot write.
			// A new PID namespace: the box cannot see or signal host
			// processes, and its init's death ends every process in it.
			add("--unshare-pid")
			// If agentbox (bwrap's parent) dies, even by kill -9, the kernel
			// kills bwrap and so the whole box (PR_SET_PDEATHSIG).
			add("--die-with-parent")
			if p.Identity.Root() {
				// Run as root, bwrap creates no user namespace and keeps every
				// capability, so `mount -o remount,rw /` inside would make
				// the host's / writable. Drop them all but CAP_SETPCAP,
				// which the init needs to empty the bounding set before it
				// starts CMD (it drops every capability and checks that
				// none is left, or CMD does not start).
				add("--cap-drop", "ALL", "--cap-add", "CAP_SETPCAP")
			} else {
				// bwrap makes the box's mount namespace a slave of the
				// host's, so a mount the host makes later under a path the
				// box sees read-only (a USB disk, sshfs, an automount the
				// box triggers) would reach the box writable. The init
				// makes the box's mounts private first (--private-mounts):
				// bwrap leaves it CAP_SYS_ADMIN of the box's own user
				// namespace for that, and CAP_SETPCAP to empty the
				// bounding set; then it drops every capability and checks
				// that none is left, or CMD does not start. (A root run's
				// namespace is made private before bwrap starts.)
				add("--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")
				privateMounts = true
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
	// The box's certificate bundle (the system's trust and the run's own
	// authority) over the system's, when the proxy terminates TLS for
	// some hosts: bwrap copies each descriptor's content (a sealed memory
	// file per path, as bwrap reads each to its end) into a read-only
	// file of its own. They lie outside every writable root (resolution
	// checks), where no box can swap them, so the init need not check.
	var caFDs []int
	if p.Network.Mode == plan.NetAllowlist && len(p.Network.Intercept) > 0 {
		for _, b := range p.Network.CABundles {
			add("--ro-bind-data", strconv.Itoa(next), b)
			caFDs = append(caFDs, next)
			next++
		}
	}
	var extra []string
	if o.Seccomp {
		// The syscall filter (package seccomp): no TIOCSTI keystroke
		// injection into the user's terminal, no foreign-architecture
		// syscalls, no keyring, bpf, ptrace, io_uring or new user
		// namespaces unless the policy reopens a group, and with the
		// network cut or filtered no socket family but the ones the box
		// needs. Because TIOCSTI is refused here, the box keeps the
		// terminal's session (no --new-session) and job control works.
		add("--add-seccomp-fd", strconv.Itoa(seccompFD))
		for _, g := range seccomp.ForNetwork(p.Network.Mode, false) {
			extra = append(extra, g.Name)
		}
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
	add("--as-pid-1")
	// bwrap takes the options from --args but the command only from its
	// own command line: the command starts here.
	commandAt := len(a)
	add("--", "/proc/self/fd/"+strconv.Itoa(selfFD), InitCommand, "--ready-fd", strconv.Itoa(readyFD), "--check-fd", strconv.Itoa(checkFD))
	if privateMounts {
		add("--private-mounts")
	}
	if o.Foreground {
		add("--foreground")
	}
	if o.ScopeAbstract {
		add("--scope-abstract-unix")
	}
	if logFD > 0 {
		// The init arms the filesystem log right before it starts CMD
		// (package fslog).
		add("--log-fd", strconv.Itoa(logFD))
		if p.Log.Reads {
			add("--log-reads")
		}
	}
	if preloadFD > 0 {
		// The init puts it at plan.PreloadFD for CMD.
		add("--preload-fd", strconv.Itoa(preloadFD))
	}
	if nr.fd > 0 {
		add("--net-fd", strconv.Itoa(nr.fd))
		if p.Network.Mode == plan.NetAllowlist {
			add("--net-port", strconv.Itoa(plan.ProxyPort))
		}
		for _, f := range nr.forward {
			add("--forward", f)
		}
		for _, pub := range p.Network.Publish {
			add("--publish", strconv.Itoa(pub.BoxPort))
		}
	}
	for _, r := range supervise.RlimitArgs(p.Limits) {
		add("--rlimit", r)
	}
	add("--")
	add(p.Command...)
	if len(a) > MaxArgs {
		return Argv{}, fmt.Errorf("the plan needs %d bwrap arguments (%d mounts); bubblewrap accepts at most %d", len(a), len(p.Mounts), MaxArgs)
	}
	return Argv{Args: a, CommandAt: commandAt, NullFDs: nulls, Binds: binds, Checks: checks(p, bindFDs), InitMounts: inits, Seccomp: o.Seccomp, SeccompAllow: p.Seccomp, SeccompExtra: extra,
		NetFD: nr.fd, LogFD: logFD, PreloadFD: preloadFD, Allow: nr.allow, Deny: p.Network.Deny, Forward: nr.forward, CAFDs: caFDs, DevNodes: devNodes}, nil
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
	return netRender{allow: allow, forward: forward, env: append([]string{
		"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "http_proxy=" + proxy, "https_proxy=" + proxy,
		"ALL_PROXY=" + socks, "all_proxy=" + socks,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
	}, p.Network.ProxyVarsEnv("127.0.0.1:"+strconv.Itoa(plan.ProxyPort))...)}, nil
}

// Shell renders the bwrap command line of d with POSIX shell quoting (the
// arguments on the command line rather than through --args), followed by
// the fd redirections bwrap and the init expect, so it can be pasted into
// bash and run. self is the agentbox executable; the seccomp program comes
// from `agentbox __seccomp`, through bash process substitution. The shell
// opens the bound paths by name, following links, as agentbox itself
// never does.
func Shell(self string, d Detail) string {
	return strings.Join(ShellWords(self, d), " ")
}

// ShellWords is Shell's command line as its shell words, each quoted, in
// order; the last may be comments ("# fd 9: …") on what a shell cannot
// provide.
func ShellWords(self string, d Detail) []string {
	var words []string
	// Root's box has device nodes of its own (Render): the shell makes
	// them as agentbox run does, in a mount namespace of bwrap's own
	// (unshare, private), copying the host's (cp -a makes
	// a node, with its mode) into a tmpfs on an empty folder of its own
	// that it then moves over /dev. The empty folder stays. Unlike
	// agentbox run, it does not put a node of the box's own over the
	// terminal bwrap binds at /dev/console.
	// A granted path under /dev is bound into the tmpfs, the host's own
	// (bwrap finds it by its path), and the host's /dev then stays.
	if d.DevNodes {
		script := `mount -t tmpfs -o nosuid,noexec,mode=755 tmpfs "$0" && cp -a`
		for _, n := range devNodeNames {
			script += " /dev/" + n
		}
		script += ` "$0"/`
		grants := false
		for _, b := range d.Binds {
			if b.Source == "/dev" || !plan.Within(b.Source, "/dev") {
				continue
			}
			grants = true
			at := `"$0"` + quote(strings.TrimPrefix(b.Source, "/dev"))
			script += ` && mkdir -p "$(dirname ` + at + `)" && { if [ -d ` + quote(b.Source) + ` ]; then mkdir -p ` + at + `; else : > ` + at + `; fi; } && mount --rbind ` + quote(b.Source) + " " + at
		}
		if grants {
			script += ` && mount --move "$0" /dev && exec "$@"`
		} else {
			script += ` && { umount -l /dev 2>/dev/null; mount --move "$0" /dev; } && exec "$@"`
		}
		words = append(words, "unshare", "--mount", "--propagation", "private", "sh", "-c", quote(script), `"$(mktemp -d)"`)
	}
	words = append(words, quote(d.Bwrap))
	for _, s := range d.Args {
		words = append(words, quote(s))
	}
	words = append(words, fmt.Sprintf("%d>/dev/null", infoFD), fmt.Sprintf("%d>/dev/null", readyFD), fmt.Sprintf("%d<%s", selfFD, quote(self)))
	gen := []string{quote(self), SeccompCommand}
	for _, g := range seccomp.Args(d.Seccomp, extraGroups(d.SeccompExtra)) {
		gen = append(gen, quote(g))
	}
	words = append(words, fmt.Sprintf("%d< <(%s)", seccompFD, strings.Join(gen, " ")))
	// No checks: the shell has not opened the paths before bwrap did.
	words = append(words, fmt.Sprintf("%d</dev/null", checkFD))
	for _, fd := range d.NullFDs {
		words = append(words, fmt.Sprintf("%d</dev/null", fd))
	}
	for _, b := range d.Binds {
		words = append(words, fmt.Sprintf("%d<%s", b.FD, quote(b.Source)))
	}
	if d.NetFD > 0 {
		// A shell cannot make the socket pair or run the proxy: without
		// them the init refuses to start the command.
		words = append(words, fmt.Sprintf("# fd %d: the proxy's socket pair, which only agentbox run provides", d.NetFD))
	}
	for _, fd := range d.CAFDs {
		words = append(words, fmt.Sprintf("# fd %d: the box's certificate bundle with the run's own authority, which only agentbox run makes", fd))
	}
	return words
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

// extraGroups looks up the extra seccomp groups named in a detail.
func extraGroups(names []string) []seccomp.Group {
	var out []seccomp.Group
	for _, n := range names {
		if g, ok := seccomp.Extra(n); ok {
			out = append(out, g)
		}
	}
	return out
}

// Annotated is the argument list one per line, with the host path each
// bind descriptor holds after its number: what the golden files record.
func Annotated(av Argv) []string {
	src := map[string]string{}
	for _, b := range av.Binds {
		src[strconv.Itoa(b.FD)] = b.Source
	}
	out := make([]string, len(av.Args))
	for i, a := range av.Args {
		out[i] = a
		if i > 0 && (av.Args[i-1] == "--bind-fd" || av.Args[i-1] == "--ro-bind-fd") {
			out[i] = a + " = " + src[a]
		}
	}
	return out
}
