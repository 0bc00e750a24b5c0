package mount

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/seccomp"
	"github.com/agentbox/agentbox/supervise"
	"github.com/agentbox/agentbox/trace"
)

// LookBwrap finds bwrap, or says how to install it.
func LookBwrap() (string, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return "", &backend.Unavailable{
			Code:   "bwrap-missing",
			Reason: "bubblewrap (bwrap) is not installed or not on PATH",
			Fix:    "install it: sudo apt-get install bubblewrap (Debian/Ubuntu), sudo dnf install bubblewrap (Fedora)",
		}
	}
	return path, nil
}

// Available reports whether bwrap starts a sandbox here: it must be
// installed, and a trivial box with the namespaces agentbox uses must
// start (a cached probe, see CheckBwrap). The answer is needed before CMD
// runs: under best-effort a broken bwrap must be found while an unconfined
// run is still possible.
func (b *Bwrap) Available() error {
	path := b.Path
	if path == "" {
		var err error
		if path, err = LookBwrap(); err != nil {
			return err
		}
		b.Path = path
	}
	s := CheckBwrap(path)
	if !s.Works {
		return &backend.Unavailable{Code: "bwrap-unusable", Reason: "bwrap cannot create a sandbox: " + s.Reason, Fix: fixFor(s.Reason)}
	}
	return nil
}

// SelfCheck verifies what a process in a bwrap box can see for itself:
// / is a read-only mount.
func (b *Bwrap) SelfCheck() (string, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err == nil && st.Flags&unix.ST_RDONLY != 0 {
		return "/ is read-only", true
	}
	return "/ is writable", false
}

// Run confines p.Command with bwrap and returns its exit status. It stays as
// bwrap's parent to forward signals (bwrap forwards none) and to tell a box
// that failed to start (exit 125) from a command that failed.
func (b *Bwrap) Run(p *plan.Plan, c *backend.Context) (int, error) {
	// The box phase's parts (AGENTBOX_TRACE): box.start until bwrap
	// is started, box.built until the init says the box is set up (bwrap's
	// mounts, the init's checks), box.command until the box has ended.
	ph := trace.Begin("box.start")
	started := false
	defer func() {
		if !started {
			ph.End()
		}
	}()
	d, err := b.detailOf(p)
	if err != nil {
		return 0, err
	}
	// No process of the box may open this one's memory or descriptors.
	supervise.NotDumpable()
	pins := supervise.PinsOf(c.Prepared)
	defer pins.Close()
	fg := supervise.Foreground()
	args, commandAt := d.Args, d.CommandAt
	if fg {
		args = withForeground(args)
	}
	var nodes *devNodes
	if p.Identity.Root() != d.DevNodes {
		return 0, &BoxError{Op: "making the box's device nodes", Err: fmt.Errorf("the plan's bwrap detail says dev_nodes %v for a run as uid %d", d.DevNodes, p.Identity.UID)}
	}
	if d.DevNodes {
		// The box's own device nodes (see Render): made fresh for the
		// run in a tmpfs over /dev in a mount namespace of bwrap's own,
		// so that bwrap's --dev binds them instead of the host's
		// (devNodes, forkWithNodes).
		if dir := DevDir(p); dir != "" {
			sweepDevDirs(filepath.Dir(dir))
		}
		if nodes, err = hostDevNodes(isTerminal(1)); err != nil {
			return 0, &BoxError{Op: "making the box's device nodes", Err: err}
		}
		for _, b := range d.Binds {
			if b.Source != "/dev" && plan.Within(b.Source, "/dev") {
				nodes.grants = append(nodes.grants, b.Source)
			}
		}
		if nodes.console != nil {
			// bwrap binds the terminal on stdout at /dev/console when
			// it finds it, which a root box would own: a node of its
			// own there.
			args = append(args[:commandAt:commandAt], append([]string{"--dev-bind", consoleNode, "/dev/console"}, args[commandAt:]...)...)
			commandAt += 3
		}
	}

	infoR, infoW, err := os.Pipe()
	if err != nil {
		return 0, &BoxError{Op: "pipe", Err: err}
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return 0, &BoxError{Op: "pipe", Err: err}
	}
	// The box's pid 1: the C init, or this executable (the Go init).
	self, cInit, err := initFile(d)
	if err != nil {
		return 0, &BoxError{Op: "opening", Path: c.Self, Err: err}
	}
	// The binds the C init makes in bwrap's place, where the kernel has
	// the mount API (InitMount).
	var makes []InitMount
	if cInit && len(d.InitMounts) > 0 && MountAPI() {
		makes = d.InitMounts
		if args, commandAt, err = WithoutInitMounts(args, commandAt, makes, p.Identity.Root()); err != nil {
			self.Close()
			return 0, &BoxError{Op: "passing the arguments", Err: err}
		}
	}
	f, err := seccomp.Build(d.Seccomp, extraGroups(d.SeccompExtra)...)
	if err != nil {
		return 0, &BoxError{Op: "building the seccomp filter", Err: err}
	}
	mfd, err := f.Memfd()
	if err != nil {
		return 0, &BoxError{Op: "building the seccomp filter", Err: err}
	}
	// The options through a descriptor: no limit on their length, and
	// no other process sees them in /proc/PID/cmdline. bwrap takes the
	// command (the init and CMD, which fit: CMD came on agentbox's own
	// command line) only from its command line.
	if commandAt <= 0 || commandAt >= len(args) || args[commandAt] != "--" {
		return 0, &BoxError{Op: "passing the arguments", Err: errors.New("the plan's bwrap detail does not say where the command starts")}
	}
	afd, err := argsFile(args[:commandAt])
	if err != nil {
		return 0, &BoxError{Op: "passing the arguments", Err: err}
	}
	fixed := []*os.File{infoW, readyW, self, mfd, afd}
	var nw *netRun
	if d.NetFD > 0 {
		if nw, err = startNet(d, p, c); err != nil {
			return 0, err
		}
		// Stopped at the end of the run (see below), or here if the box
		// never starts; stop is idempotent.
		defer nw.stop()
	}
	if d.LogFD > 0 && c.FSLog == nil {
		return 0, &BoxError{Op: "starting", Err: errors.New("the box's seccomp notification filter (the filesystem log, the judge of unix socket connects) could not start: see the warning above")}
	}
	slots, err := mountFiles(d, pins, nw, c.FSLog, c.PreloadPipe)
	if err != nil {
		return 0, err
	}
	// What the init verifies before CMD starts: every bind is the very
	// file opened here, every hidden path is hidden.
	cfd, err := checkFile(d, makes, slots)
	if err != nil {
		closeAll(slots)
		return 0, &BoxError{Op: "listing the mounts to check", Err: err}
	}
	opened := append(append(fixed, cfd), slots...)
	defer func() {
		for _, f := range opened {
			if f != nil {
				f.Close()
			}
		}
	}()

	files := []uintptr{0, 1, 2}
	for _, f := range opened {
		if f == nil {
			files = append(files, ^uintptr(0)) // a gap: closed in bwrap
			continue
		}
		files = append(files, f.Fd())
	}
	// Only the descriptors listed reach bwrap: whatever agentbox inherited
	// from what started it (a shell redirection, an IDE, a CI runner,
	// make's jobserver) is closed at exec.
	if err := supervise.CloseOnExec(); err != nil {
		return 0, &BoxError{Op: "closing inherited descriptors", Err: err}
	}
	attr := &syscall.ProcAttr{
		Env:   p.Environ,
		Files: files,
		Sys: &syscall.SysProcAttr{
			// Out of the terminal's foreground group: a Ctrl-C typed at the
			// terminal goes to CMD (or to agentbox, which forwards it), never
			// to bwrap, whose death would SIGKILL CMD before it can clean up.
			Setpgid: true,
			// When agentbox dies, even by kill -9, bwrap gets SIGKILL, and
			// bwrap's --die-with-parent takes the whole box with it.
			Pdeathsig: syscall.SIGKILL,
		},
	}

	w := supervise.Watch(fg)
	defer w.Stop()

	// Pdeathsig follows the thread that forked, so keep it alive. And
	// syscall.ForkExec rather than os/exec: os/exec's first start forks a
	// throwaway child to probe for pidfd support, a cost on every launch.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	argv := append([]string{d.Bwrap, "--args", strconv.Itoa(argsFD)}, args[commandAt:]...)
	var bwrapPid int
	if nodes != nil {
		release := make(chan struct{})
		defer close(release)
		bwrapPid, err = forkWithNodes(d.Bwrap, argv, attr, nodes, release)
	} else {
		bwrapPid, err = syscall.ForkExec(d.Bwrap, argv, attr)
	}
	if c.Started != nil {
		c.Started(bwrapPid)
	}
	for _, f := range opened {
		if f != nil {
			f.Close()
		}
	}
	opened = nil
	pins.Close()
	if err != nil {
		if errors.As(err, new(nodesError)) {
			// The probe made the same namespace (probeWithNodes):
			// what it said no longer holds.
			Forget()
			why := nodesPrefix + err.Error()
			return 0, &backend.Unavailable{Code: CodeStale, Reason: "bubblewrap cannot create the sandbox: " + why, Fix: fixFor(why)}
		}
		return 0, &BoxError{Op: "starting", Path: d.Bwrap, Err: err}
	}
	ph.End()
	started = true
	built := trace.Begin("box.built")
	var command *trace.Phase
	if nw != nil {
		// Only after bwrap has its copy of the box's end and ours is closed:
		// once the box's last process ends, Serve sees the end of the pair.
		nw.serve(p)
	}

	// Signals go to the init once it has written the ready byte, not as
	// soon as bwrap names its pid: until the init has blocked them or has
	// handlers (both inits do before the ready byte), the kernel drops a
	// signal sent to a PID namespace's init with the default action, so a
	// Ctrl-C in that moment would be lost. Wait holds them until then.
	pidc := make(chan int, 1)
	readyc := make(chan bool, 1)
	infoc := make(chan int, 1)
	go func() { infoc <- readInfo(infoR) }()
	go func() {
		var b [1]byte
		n, _ := readyR.Read(b[:])
		if n == 1 {
			built.End()
			command = trace.Begin("box.command")
		}
		readyc <- n == 1
		if n == 1 {
			if pid := <-infoc; pid > 0 {
				pidc <- pid
			}
		}
	}()
	ws := w.Wait(bwrapPid, pidc)
	if nw != nil {
		nw.stop()
	}
	if !<-readyc {
		return 0, b.diagnose(d.Bwrap)
	}
	command.End()
	return supervise.Status(ws), nil
}

// mountFiles opens what bwrap inherits from fd firstFD on: the box's end of
// the proxy's socket pair (allowlist), the box's end of the filesystem
// log's socket, then /dev/null for each hidden file
// and the pinned host path of each bind, at the numbers the rendering gave
// them. A bind's path is opened without following a link (Pins.Open), and
// a pinned folder must still be a folder.
func mountFiles(d Detail, pins *supervise.Pins, nw *netRun, fsLog, preload *os.File) ([]*os.File, error) {
	last := firstFD - 1
	for _, fd := range d.NullFDs {
		last = max(last, fd)
	}
	for _, b := range d.Binds {
		last = max(last, b.FD)
	}
	if d.NetFD > 0 {
		last = max(last, d.NetFD)
	}
	for _, fd := range d.CAFDs {
		last = max(last, fd)
	}
	if d.LogFD > 0 {
		last = max(last, d.LogFD)
	}
	if d.PreloadFD > 0 {
		last = max(last, d.PreloadFD)
	}
	slots := make([]*os.File, last-firstFD+1)
	if d.PreloadFD > 0 {
		// A copy, as for the log; /dev/null when the log has no pipe
		// (it said why): the library's records are then lost.
		var f *os.File
		var err error
		if preload != nil {
			f, err = dupFile(preload)
		} else {
			f, err = os.Open(os.DevNull)
		}
		if err != nil {
			return nil, &BoxError{Op: "passing the filesystem log's pipe", Err: err}
		}
		slots[d.PreloadFD-firstFD] = f
	}
	if d.LogFD > 0 {
		// A copy: the supervisor closes its own once the box has started.
		f, err := dupFile(fsLog)
		if err != nil {
			return nil, &BoxError{Op: "passing the filesystem log's socket", Err: err}
		}
		slots[d.LogFD-firstFD] = f
	}
	if d.NetFD > 0 {
		// Closed here with the other slots once bwrap has its copy: once
		// the box's last process ends, the proxy sees the end of the pair.
		slots[d.NetFD-firstFD] = nw.box
	}
	if len(d.CAFDs) > 0 {
		if nw == nil || nw.ca == nil {
			return nil, &BoxError{Op: "making the box's certificate bundle", Err: errors.New("the run has no certificate authority")}
		}
		bundle, err := netproxy.Bundle(nw.caBase, nw.ca)
		if err != nil {
			return nil, &BoxError{Op: "making the box's certificate bundle", Err: err}
		}
		for _, fd := range d.CAFDs {
			f, err := supervise.SealedFile("agentbox-ca-bundle", bundle)
			if err != nil {
				closeAll(slots)
				return nil, &BoxError{Op: "making the box's certificate bundle", Err: err}
			}
			slots[fd-firstFD] = f
		}
	}
	for _, fd := range d.NullFDs {
		f, err := os.Open(os.DevNull)
		if err != nil {
			closeAll(slots)
			return nil, &BoxError{Op: "opening", Path: os.DevNull, Err: err}
		}
		slots[fd-firstFD] = f
	}
	for _, b := range d.Binds {
		open := pins.Open
		if b.Dir {
			open = pins.Dir
		}
		f, err := open(b.Source)
		if err == nil {
			f, err = dupFile(f)
		}
		if err != nil {
			closeAll(slots)
			return nil, &BoxError{Op: "opening", Path: b.Source, Err: err}
		}
		slots[b.FD-firstFD] = f
	}
	return slots, nil
}

func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// argsFile returns a sealed memory file holding args, each ended by a NUL,
// for bwrap's --args.
func argsFile(args []string) (*os.File, error) {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(a)
		b.WriteByte(0)
	}
	return supervise.SealedFile("agentbox-bwrap-args", []byte(b.String()))
}

// WithoutInitMounts leaves out of args (options before commandAt) bwrap's
// words for the mounts the C init makes (makes, from Render: each range
// must still hold bwrap's words for that mount of that path), and for a root run gives the
// init CAP_SYS_ADMIN to make them (a box of another user has it already,
// in the box's own user namespace, for --private-mounts). The init drops
// it with every other capability before CMD starts. These are bwrap's
// words in a run with the C init where MountAPI holds: what the plan's
// detail says, less its InitMounts.
func WithoutInitMounts(args []string, commandAt int, makes []InitMount, root bool) ([]string, int, error) {
	out := make([]string, 0, len(args))
	at := 0
	for _, m := range makes {
		want := initWords(m, args)
		ok := want != nil && m.From >= at && m.To == m.From+len(want) && m.To <= commandAt && m.FD >= 0 &&
			(m.Kind == "make-ro" || m.Kind == "make-pin") == (m.FD > 0) && slices.Equal(args[m.From:m.To], want)
		if !ok {
			return nil, 0, fmt.Errorf("the plan's bwrap detail does not hold the mount of %s the init would make", m.Path)
		}
		out = append(out, args[at:m.From]...)
		at = m.To
	}
	out = append(out, args[at:commandAt]...)
	if root {
		out = append(out, "--cap-add", "CAP_SYS_ADMIN")
	}
	n := len(out)
	return append(out, args[commandAt:]...), n, nil
}

// withForeground adds the init's --foreground flag: agentbox owns the
// terminal, so the init hands its foreground to CMD.
func withForeground(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for i, a := range args {
		out = append(out, a)
		if a == InitCommand && i > 0 && strings.HasPrefix(args[i-1], "/proc/self/fd/") {
			out = append(out, "--foreground")
		}
	}
	return out
}

// isTerminal reports whether fd is a terminal.
func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// CodeStale is the code of the error Run returns when bwrap, which the
// probe said works, could not make the box because it no longer works here
// at all (a trivial box fails too): the command never started, and the
// probe's cached answer is forgotten.
const CodeStale = "bwrap-stale"

// diagnose explains a box that bwrap could not set up: when a trivial box
// fails too, bwrap itself cannot work here (the cached answer that said it
// could is forgotten) and the error says why, with the fix.
func (b *Bwrap) diagnose(bwrap string) error {
	err := &BoxError{Op: "setting up the box", Err: errors.New("bwrap failed (see its message above)")}
	if why := probe(bwrap); why != "" {
		Forget()
		return &backend.Unavailable{Code: CodeStale, Reason: "bubblewrap cannot create the sandbox: " + why, Fix: fixFor(why)}
	}
	return err
}

// netRun is the host side of network mode allowlist and of published
// ports: the proxy, the host's end of its socket pair, the published
// ports' listeners and the log.
type netRun struct {
	proxy   *netproxy.Proxy
	host    *net.UnixConn
	box     *os.File // the box's end, passed to bwrap and closed here
	log     *os.File
	path    string // the log's path as given
	served  chan error
	publish []net.Listener // the host's ends of the published ports
	pubs    []*netproxy.Publisher
	ca      *netproxy.Authority // the run's own, when the proxy terminates TLS
	caBase  []string            // what the box's bundle starts with
	once    sync.Once
}

// startNet creates the proxy for av's rules and its socket pair, and opens
// the log. Nothing listens anywhere on the host: the box's end of the pair
// is the only way to the proxy.
func startNet(d Detail, p *plan.Plan, c *backend.Context) (*netRun, error) {
	rules, err := netproxy.Compile(d.Allow, d.Deny)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	nw := &netRun{path: c.NetLog, served: make(chan error, 1)}
	popts, err := netproxy.OptionsFor(p.Network)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	popts.Forward = d.Forward
	nw.ca, nw.caBase = popts.Authority, p.Network.CABase
	popts.Decided = func(dec netproxy.Decided) {
		c.Emit(event.Event{Kind: event.Net, Allowed: event.Bool(dec.Allowed), Proto: dec.Proto, Target: dec.Target, Reason: dec.Reason,
			Unreachable: dec.Unreachable})
	}
	if c.NetLog != "" {
		// A file agentbox writes on the host: never one the box can
		// replace with a link to ~/.bashrc, never through a link.
		nw.log, err = supervise.OpenHostFile(c.NetLog, p)
		if err != nil {
			return nil, &BoxError{Op: "opening the network log", Path: c.NetLog, Err: err}
		}
		popts.Log = nw.log
	}
	if nw.proxy, err = netproxy.New(rules, popts); err != nil {
		nw.stop()
		return nil, fmt.Errorf("network: %w", err)
	}
	if nw.host, nw.box, err = netproxy.Pair(); err != nil {
		nw.stop()
		return nil, &BoxError{Op: "network", Err: err}
	}
	// The published ports listen before the box starts: a port that is
	// taken fails the run here, not its first connection.
	for _, pub := range p.Network.Publish {
		addr := net.JoinHostPort(pub.Addr, strconv.Itoa(pub.Port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			nw.stop()
			return nil, &BoxError{Op: "publishing port " + strconv.Itoa(pub.BoxPort) + " of the box", Err: err}
		}
		nw.publish = append(nw.publish, ln)
	}
	return nw, nil
}

// serve runs the proxy until the box ends or stop, and the published
// ports: each connection reaches the box's loopback port on a socket the
// init makes in the box's network namespace (netproxy.DialBox).
func (nw *netRun) serve(p *plan.Plan) {
	for i, ln := range nw.publish {
		port := p.Network.Publish[i].BoxPort
		nw.pubs = append(nw.pubs, netproxy.Publish(ln, func(ctx context.Context) (net.Conn, error) {
			return nw.proxy.DialBox(ctx, port)
		}))
	}
	go func() { nw.served <- nw.proxy.Serve(nw.host) }()
}

// stop ends the proxy (every connection still open, every goroutine) and
// closes the log. It is safe to call more than once, and before serve.
func (nw *netRun) stop() {
	nw.once.Do(func() {
		for _, pb := range nw.pubs {
			pb.Close()
		}
		for _, ln := range nw.publish {
			ln.Close()
		}
		if nw.proxy != nil {
			nw.proxy.Close() // returns once every goroutine it started has ended
		}
		if nw.host != nil {
			nw.host.Close() // in case serve never ran
		}
		if nw.box != nil {
			nw.box.Close()
		}
		if nw.log != nil {
			nw.log.Close()
		}
	})
}

// readInfo reads bwrap's --info-fd JSON and returns the init's host pid.
func readInfo(r io.ReadCloser) int {
	defer r.Close()
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(bufio.NewReader(r)).Decode(&info); err != nil {
		return 0
	}
	io.Copy(io.Discard, r)
	return info.ChildPid
}
