package mount

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
)

// Init is pid 1 inside the box:
//
//	agentbox __init --ready-fd N [--check-fd N] [--private-mounts] [--foreground] [--scope-abstract-unix] [--log-fd N [--log-reads]] [--preload-fd N] [--rlimit NAME=VALUE]...
//	    [--net-fd N [--net-port PORT] [--forward HOST:PORT]... [--publish PORT]...] -- CMD ARGS...
//
// It first checks that the box's mounts are what agentbox asked for (the
// records on --check-fd, see Check): a path swapped while bwrap set the
// box up fails it. Then it tells the supervisor the box is up, starts CMD (in its own process
// group, given the terminal's foreground when agentbox had it, so that Ctrl-C
// and job control reach CMD and not bwrap), forwards signals to it, reaps
// every orphan, and exits with CMD's status: its own code, or 128+N when a
// signal N killed it. A pid 1 cannot die of a signal it has no handler for,
// which is why the init reports 128+N instead of re-raising.
//
// With --net-fd (network mode allowlist, or published ports) it first
// listens on 127.0.0.1:PORT (--net-port, allowlist only), and on
// 127.0.0.1:P for each --forward target with port P, and hands every
// connection to the proxy on the host over fd N (see netproxy.Relay); CMD
// starts only once these listen, so its first connection finds them. With
// --publish it also answers agentbox's requests for sockets to reach the
// box's servers on the published ports (netproxy.AnswerSockets).
func Init(args []string) int {
	// Before anything else: no host mount reaches the box from here on
	// (--private-mounts), and the init holds no capability.
	private := false
	for _, a := range args {
		if a == "--" {
			break
		}
		private = private || a == "--private-mounts"
	}
	if err := privatize(private); err != nil {
		fmt.Fprintf(os.Stderr, "agentbox: error: init: %v\n", err)
		return 125
	}
	// First of all: the init holds no limits and the box's descriptors;
	// no process of the box may open its memory (/proc/1/mem) or its
	// descriptors (/proc/1/fd).
	supervise.NotDumpable()
	// What bwrap passed on that the init has no use for: the info pipe
	// to the supervisor, the agentbox executable and the seccomp program.
	for _, fd := range []int{infoFD, selfFD, seccompFD} {
		unix.Close(fd)
	}
	readyFD, checkFD, foreground, logFD, scope := -1, -1, false, -1, false
	logReads, preloadFD := false, -1
	netFD, netPort := -1, 0
	var forwards, publish, limits []string
	i := 0
	for ; i < len(args) && args[i] != "--"; i++ {
		switch args[i] {
		case "--ready-fd":
			if i+1 < len(args) {
				readyFD, _ = strconv.Atoi(args[i+1])
				i++
			}
		case "--check-fd":
			if i+1 < len(args) {
				checkFD, _ = strconv.Atoi(args[i+1])
				i++
			}
		case "--foreground":
			foreground = true
		case "--scope-abstract-unix":
			scope = true
		case "--private-mounts":
			// done above
		case "--log-reads":
			logReads = true
		case "--log-fd":
			if i+1 < len(args) {
				logFD, _ = strconv.Atoi(args[i+1])
				i++
			}
		case "--preload-fd":
			if i+1 < len(args) {
				preloadFD, _ = strconv.Atoi(args[i+1])
				i++
			}
		case "--net-fd", "--net-port", "--forward", "--publish":
			if i+1 < len(args) {
				switch args[i] {
				case "--net-fd":
					netFD, _ = strconv.Atoi(args[i+1])
				case "--net-port":
					netPort, _ = strconv.Atoi(args[i+1])
				case "--publish":
					publish = append(publish, args[i+1])
				default:
					forwards = append(forwards, args[i+1])
				}
				i++
			}
		case "--rlimit":
			if i+1 < len(args) {
				if _, _, err := supervise.ParseRlimit(args[i+1]); err != nil {
					fmt.Fprintf(os.Stderr, "agentbox: error: init: %v\n", err)
					return 125
				}
				limits = append(limits, args[i+1])
				i++
			}
		}
	}
	cmdArgs := args[min(i+1, len(args)):]
	// Before the ready byte: from then on the supervisor forwards signals
	// here, and one that found no handler would be dropped (the kernel
	// ignores a default-action signal sent to a PID namespace's init).
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, supervise.Signals...)
	if checkFD >= 0 {
		// Before the ready byte: a box that is not as planned failed to
		// start.
		f := os.NewFile(uintptr(checkFD), "checks")
		data, err := io.ReadAll(f)
		f.Close()
		if err == nil {
			err = verifyMounts(data)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "agentbox: error: init: %v\n", err)
			return 125
		}
	}
	if netFD >= 0 {
		// Before the ready byte: a box whose network cannot be set up
		// fails to start, as one whose mounts cannot.
		if err := relayNet(netFD, netPort, forwards, len(publish) > 0); err != nil {
			fmt.Fprintf(os.Stderr, "agentbox: error: init: network: %v\n", err)
			return 125
		}
	}
	if readyFD >= 0 {
		ready := os.NewFile(uintptr(readyFD), "ready")
		ready.Write([]byte{'R'})
		ready.Close()
	}
	// CMD inherits only stdin, stdout and stderr: nothing bwrap or agentbox
	// had open (such as bwrap's info pipe) leaks into the box.
	unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if preloadFD >= 0 {
		// The preloaded log's pipe at plan.PreloadFD for CMD: a box
		// whose connects agentbox judges may not make the datagram
		// socket the library would send on otherwise.
		if err := unix.Dup3(preloadFD, plan.PreloadFD, 0); err != nil {
			fmt.Fprintf(os.Stderr, "agentbox: warning: the filesystem log's pipe: %v; this run's refusals are not recorded\n", err)
		}
		unix.Close(preloadFD)
	}
	if len(cmdArgs) == 0 {
		fmt.Fprintln(os.Stderr, "agentbox: error: init: no command")
		return 125
	}

	path, err := exec.LookPath(cmdArgs[0])
	if err != nil {
		return supervise.ExecError(cmdArgs[0], err)
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return supervise.ExecError(cmdArgs[0], &fs.PathError{Op: "exec", Path: path, Err: err})
	}
	argv0, argv := path, cmdArgs
	if len(limits) > 0 {
		// The limits are for CMD, not for this Go process, which must keep
		// running under them: a small exec of agentbox itself sets them and
		// becomes CMD.
		argv0 = "/proc/self/exe"
		argv = append(append(append([]string{"agentbox", supervise.RlimitCommand}, limits...), "--", path), cmdArgs...)
	}
	attr := &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		// Its own process group always, so the host can signal it alone;
		// the terminal's foreground when agentbox had it (set in the child
		// while signals are blocked, so no SIGTTOU stops it).
		Sys: &syscall.SysProcAttr{Setpgid: true, Foreground: foreground, Ctty: 0},
	}
	if scope {
		// On this thread, which forks CMD: CMD and everything it starts
		// may not connect to the host's abstract unix sockets (network
		// mode open shares the host's network namespace, and with it
		// them). The init's other threads need nothing of the kind.
		runtime.LockOSThread()
		if err := scopeAbstract(); err != nil {
			fmt.Fprintf(os.Stderr, "agentbox: error: init: landlock: keeping the host's abstract unix sockets from the box: %v\n", err)
			return 125
		}
	}
	if logFD >= 0 {
		// The filesystem log's filter goes on this thread, which forks
		// CMD, so CMD and everything it starts carry it; the init keeps
		// no listener (package fslog). The filter also judges every
		// connect of the box: CMD never starts without it.
		runtime.LockOSThread()
		if err := fslog.Arm(logFD, logReads); err != nil && (fslog.SocketsSupported || errors.Is(err, fslog.ErrOrphan)) {
			fmt.Fprintf(os.Stderr, "agentbox: error: init: %v\n", err)
			return 125
		}
	}
	// syscall.ForkExec rather than os/exec: os/exec's first start forks a
	// throwaway child to probe for pidfd support, a cost on every launch.
	child, err := syscall.ForkExec(argv0, argv, attr)
	if err != nil && foreground {
		// The terminal may refuse (stdin is not its controlling terminal
		// after all): run without handing it over.
		attr.Sys = &syscall.SysProcAttr{Setpgid: true}
		child, err = syscall.ForkExec(argv0, argv, attr)
	}
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			// The file is there (LookPath found it): what is missing is
			// its interpreter (#!) or its loader.
			return supervise.NoInterpreter(cmdArgs[0])
		}
		return supervise.ExecError(cmdArgs[0], &fs.PathError{Op: "exec", Path: path, Err: err})
	}

	go func() {
		for s := range sigs {
			unix.Kill(child, s.(syscall.Signal))
		}
	}()

	// Reap everything; CMD's end is the box's end.
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WUNTRACED, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "agentbox: error: init: wait: %v\n", err)
			return 125
		}
		if pid != child {
			continue
		}
		switch {
		case ws.Stopped():
			// Nothing outside the box can resume a stopped CMD (the
			// shell that started agentbox waits for agentbox, not for
			// CMD), so a stop would hang the terminal: continue it.
			// Job control inside a shell in the box is unaffected.
			unix.Kill(child, unix.SIGCONT)
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}

// relayNet listens on the proxy port and the forwards' ports on the box's
// loopback and relays their connections to the proxy over fd netFD. The
// relays run until the init exits; the kernel then closes everything.
func relayNet(netFD, port int, forwards []string, publish bool) error {
	f := os.NewFile(uintptr(netFD), "proxy")
	if f == nil {
		return fmt.Errorf("bad --net-fd %d", netFD)
	}
	ch, err := netproxy.Channel(f) // a close-on-exec copy: CMD never holds it
	f.Close()
	if err != nil {
		return err
	}
	type listener struct {
		addr string
		tag  byte
	}
	var ls []listener
	if port > 0 {
		ls = append(ls, listener{addr: "127.0.0.1:" + strconv.Itoa(port)})
	}
	for i, fw := range forwards {
		_, p, err := net.SplitHostPort(fw)
		if err != nil || i+1 > 255 {
			return fmt.Errorf("bad --forward %q", fw)
		}
		ls = append(ls, listener{addr: "127.0.0.1:" + p, tag: byte(i + 1)})
	}
	for _, l := range ls {
		ln, err := listenLoopback(ch, l.addr)
		if err != nil {
			return fmt.Errorf("listening in the box: %w", err)
		}
		go netproxy.Relay(ln, ch, l.tag)
		if l.tag > 0 {
			// localhost is also ::1, which programs may try first; the
			// box's loopback may have no IPv6, so this one is optional.
			if ln6, err := listenLoopback(ch, "[::1]"+strings.TrimPrefix(l.addr, "127.0.0.1")); err == nil {
				go netproxy.Relay(ln6, ch, l.tag)
			}
		}
	}
	if publish {
		// A published port's connections reach the box's servers on
		// sockets the proxy asks for (netproxy.DialBox).
		go netproxy.AnswerSockets(ch)
	}
	return nil
}

// listenLoopback listens on addr, a loopback address and port in the
// box. A port below the namespace's ip_unprivileged_port_start needs a
// capability the init does not have, as root neither (bwrap drops them
// all): agentbox binds that socket from the host (netproxy.HostBind).
func listenLoopback(ch *net.UnixConn, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if !errors.Is(err, syscall.EACCES) {
		return ln, err
	}
	ap, perr := netip.ParseAddrPort(addr)
	if perr != nil {
		return nil, err
	}
	family := unix.AF_INET
	if ap.Addr().Is6() {
		family = unix.AF_INET6
	}
	fd, serr := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if serr != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	if err := netproxy.HostBind(ch, fd, int(ap.Port())); err != nil {
		return nil, err
	}
	return net.FileListener(f)
}

// privatize makes every mount of the box's namespace private when told
// (--private-mounts), then drops every capability of every thread (the
// bounding set, ambient, inheritable, permitted, effective) and reads them
// back; an error means CMD must not start.
//
// bwrap makes the box's mount namespace a slave of the host's, so a mount
// the host makes later under a path the box sees read-only (a USB disk, an
// sshfs or FUSE mount, an automount the box itself triggers) would reach
// the box writable: bwrap's read-only flags only cover the mounts it saw.
// A run that is not root has bwrap leave CAP_SYS_ADMIN and CAP_SETPCAP of
// the box's user namespace to the init alone, for this (see Render); a
// root run's namespace is made private by agentbox before bwrap starts.
// Capabilities belong to each thread, so they are dropped on all of them
// (syscall.AllThreadsSyscall, which needs a build without cgo).
func privatize(private bool) error {
	if private {
		// bwrap's last step is a user namespace of its own for CMD's
		// user, which does not own the box's mount namespace: a copy of
		// it that this namespace owns, then every mount private. The
		// mount namespace belongs to each thread: every thread moves
		// to a copy of its own, all alike and all private.
		if _, _, e := syscall.AllThreadsSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWNS, 0, 0); e != 0 {
			return fmt.Errorf("a mount namespace of the box's own (so no host mount reaches the box): %w", e)
		}
		root := []byte("/\x00")
		_, _, e := syscall.AllThreadsSyscall6(unix.SYS_MOUNT, 0, uintptr(unsafe.Pointer(&root[0])), 0, unix.MS_REC|unix.MS_PRIVATE, 0, 0)
		runtime.KeepAlive(root)
		if e != 0 {
			return fmt.Errorf("making the box's mounts private (so no host mount reaches the box): %w", e)
		}
	}
	for c := uintptr(0); c < 64; c++ {
		r, _, e := syscall.RawSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_READ, c, 0)
		if e == syscall.EINVAL {
			break
		}
		if e != 0 {
			return fmt.Errorf("reading the capability bounding set: %w", e)
		}
		if r == 1 {
			if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); e != 0 {
				return fmt.Errorf("dropping the capability bounding set: %w", e)
			}
		}
	}
	if _, _, e := syscall.AllThreadsSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 && e != syscall.EINVAL {
		return fmt.Errorf("clearing the ambient capabilities: %w", e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	if e != 0 {
		return fmt.Errorf("dropping capabilities: %w", e)
	}
	// Read back: anything left and CMD does not start.
	hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("a capability is left after dropping them all")
		}
	}
	for c := uintptr(0); c < 64; c++ {
		r, _, e := syscall.RawSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_READ, c, 0)
		if e == syscall.EINVAL {
			break
		}
		if e != 0 || r != 0 {
			return errors.New("a capability is left in the bounding set")
		}
		r, _, e = syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, c, 0, 0, 0)
		if e != syscall.EINVAL && (e != 0 || r != 0) {
			return errors.New("an ambient capability is left")
		}
	}
	return nil
}
