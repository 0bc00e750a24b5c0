package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
)

// forwarded are the signals the init passes on to CMD. The host-side
// supervisor forwards the same set to the init.
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2}

// Init is pid 1 inside the box:
//
//	agentbox __init --ready-fd N [--foreground] [--rlimit NAME=VALUE]...
//	    [--net-fd N --net-port PORT [--forward HOST:PORT]...] -- CMD ARGS...
//
// It tells the supervisor the box is up, starts CMD (in its own process
// group, given the terminal's foreground when agentbox had it, so that Ctrl-C
// and job control reach CMD and not bwrap), forwards signals to it, reaps
// every orphan, and exits with CMD's status: its own code, or 128+N when a
// signal N killed it. A pid 1 cannot die of a signal it has no handler for,
// which is why the init reports 128+N instead of re-raising.
//
// With --net-fd (network mode allowlist) it first listens on
// 127.0.0.1:PORT, and on 127.0.0.1:P for each --forward target with port P,
// and hands every connection to the proxy on the host over fd N (see
// netproxy.Relay); CMD starts only once these listen, so its first
// connection finds them.
func Init(args []string) int {
	readyFD, foreground := -1, false
	netFD, netPort := -1, 0
	var forwards, limits []string
	i := 0
	for ; i < len(args) && args[i] != "--"; i++ {
		switch args[i] {
		case "--ready-fd":
			if i+1 < len(args) {
				readyFD, _ = strconv.Atoi(args[i+1])
				i++
			}
		case "--foreground":
			foreground = true
		case "--net-fd", "--net-port", "--forward":
			if i+1 < len(args) {
				switch args[i] {
				case "--net-fd":
					netFD, _ = strconv.Atoi(args[i+1])
				case "--net-port":
					netPort, _ = strconv.Atoi(args[i+1])
				default:
					forwards = append(forwards, args[i+1])
				}
				i++
			}
		case "--rlimit":
			if i+1 < len(args) {
				if _, _, err := parseRlimit(args[i+1]); err != nil {
					fmt.Fprintf(os.Stderr, "agentbox: error: init: %v\n", err)
					return 125
				}
				limits = append(limits, args[i+1])
				i++
			}
		}
	}
	cmdArgs := args[min(i+1, len(args)):]
	if netFD >= 0 {
		// Before the ready byte: a box whose network cannot be set up
		// fails to start, as one whose mounts cannot.
		if err := relayNet(netFD, netPort, forwards); err != nil {
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
	if len(cmdArgs) == 0 {
		fmt.Fprintln(os.Stderr, "agentbox: error: init: no command")
		return 125
	}

	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)

	path, err := exec.LookPath(cmdArgs[0])
	if err != nil {
		return execError(cmdArgs[0], err)
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return execError(cmdArgs[0], &fs.PathError{Op: "exec", Path: path, Err: err})
	}
	argv0, argv := path, cmdArgs
	if len(limits) > 0 {
		// The limits are for CMD, not for this Go process, which must keep
		// running under them: a small exec of agentbox itself sets them and
		// becomes CMD.
		argv0 = "/proc/self/exe"
		argv = append(append(append([]string{"agentbox", RlimitCommand}, limits...), "--", path), cmdArgs...)
	}
	attr := &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		// Its own process group always, so the host can signal it alone;
		// the terminal's foreground when agentbox had it (set in the child
		// while signals are blocked, so no SIGTTOU stops it).
		Sys: &syscall.SysProcAttr{Setpgid: true, Foreground: foreground, Ctty: 0},
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
			fmt.Fprintf(os.Stderr, "agentbox: error: %s: cannot execute: its interpreter (#! line) or loader is missing\n", cmdArgs[0])
			return 126
		}
		return execError(cmdArgs[0], &fs.PathError{Op: "exec", Path: path, Err: err})
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
func relayNet(netFD, port int, forwards []string) error {
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
	ls := []listener{{addr: "127.0.0.1:" + strconv.Itoa(port)}}
	for i, fw := range forwards {
		_, p, err := net.SplitHostPort(fw)
		if err != nil || i+1 > 255 {
			return fmt.Errorf("bad --forward %q", fw)
		}
		ls = append(ls, listener{addr: "127.0.0.1:" + p, tag: byte(i + 1)})
	}
	for _, l := range ls {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return fmt.Errorf("listening in the box: %w", err)
		}
		go netproxy.Relay(ln, ch, l.tag)
		if l.tag > 0 {
			// localhost is also ::1, which programs may try first; the
			// box's loopback may have no IPv6, so this one is optional.
			if ln6, err := net.Listen("tcp", "[::1]"+strings.TrimPrefix(l.addr, "127.0.0.1")); err == nil {
				go netproxy.Relay(ln6, ch, l.tag)
			}
		}
	}
	return nil
}

// rlimitNames maps the init's --rlimit names to the kernel's resources.
var rlimitNames = map[string]int{
	"nproc":  unix.RLIMIT_NPROC,
	"nofile": unix.RLIMIT_NOFILE,
	"as":     unix.RLIMIT_AS,
	"cpu":    unix.RLIMIT_CPU,
	"fsize":  unix.RLIMIT_FSIZE,
}

// parseRlimit reads one NAME=VALUE limit.
func parseRlimit(spec string) (int, uint64, error) {
	name, val, _ := strings.Cut(spec, "=")
	res, ok := rlimitNames[name]
	n, err := strconv.ParseUint(val, 10, 64)
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("bad --rlimit %q", spec)
	}
	return res, n, nil
}

// ApplyLimits sets the plan's limits, soft and hard, on the calling
// process. The Landlock child calls it right before it execs CMD; under
// bwrap, RlimitExec does the same in the box.
func ApplyLimits(l plan.Limits) error {
	for _, spec := range rlimits(l) {
		res, n, err := parseRlimit(spec)
		if err == nil {
			err = unix.Setrlimit(res, &unix.Rlimit{Cur: n, Max: n})
		}
		if err != nil {
			return fmt.Errorf("setting limit %s: %w", spec, err)
		}
	}
	return nil
}

// RlimitExec is `agentbox __rlimit NAME=VALUE... -- PATH ARGV0 ARGS...`: it
// sets each limit, soft and hard, on itself and execs PATH, so CMD and
// everything it starts inherit limits they cannot raise again. Nothing is
// allocated between the limits and execve, so a memory limit far below what
// a Go program needs still works.
func RlimitExec(args []string) int {
	i := 0
	for ; i < len(args) && args[i] != "--"; i++ {
		res, n, err := parseRlimit(args[i])
		if err == nil {
			err = unix.Setrlimit(res, &unix.Rlimit{Cur: n, Max: n})
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "agentbox: error: limits: %s: %v\n", args[i], err)
			return 125
		}
	}
	if i+2 >= len(args) {
		fmt.Fprintln(os.Stderr, "agentbox: error: limits: no command")
		return 125
	}
	err := syscall.Exec(args[i+1], args[i+2:], os.Environ())
	fmt.Fprintf(os.Stderr, "agentbox: error: %s: cannot execute: %v\n", args[i+2], err)
	return 126
}

// execError reports a command that cannot be started: 127 when it is not
// found, 126 when it cannot be executed (as shells do).
func execError(name string, err error) int {
	var ee *exec.Error
	if errors.As(err, &ee) && errors.Is(ee.Err, exec.ErrNotFound) {
		fmt.Fprintf(os.Stderr, "agentbox: error: %s: command not found\n", name)
		return 127
	}
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "agentbox: error: %s: command not found\n", name)
		return 127
	}
	fmt.Fprintf(os.Stderr, "agentbox: error: %s: cannot execute: %v\n", name, unwrapPath(err))
	return 126
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}
