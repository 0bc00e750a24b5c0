package mount

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/seccomp"
)

// LookBwrap finds bwrap, or returns an ErrUnavailable with the fix.
func LookBwrap() (string, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return "", &unavailable{
			reason: "bubblewrap (bwrap) is not installed or not on PATH",
			fix:    "install it: sudo apt-get install bubblewrap (Debian/Ubuntu), sudo dnf install bubblewrap (Fedora)",
		}
	}
	return path, nil
}

// Prepare creates the folders agentbox owns, refusing any that exists as a
// symlink, is not a folder, or belongs to another user.
func Prepare(p *plan.Plan) error {
	for _, d := range p.Prepare {
		fi, err := os.Lstat(d.Path)
		if errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(d.Path, os.FileMode(d.Mode)); err != nil {
				return &BoxError{Op: "creating", Path: d.Path, Err: err}
			}
			continue
		}
		if err != nil {
			return &BoxError{Op: "checking", Path: d.Path, Err: err}
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return &BoxError{Op: "refusing", Path: d.Path, Err: errors.New("it is a symlink; agentbox only uses folders it owns")}
		}
		if !fi.IsDir() {
			return &BoxError{Op: "refusing", Path: d.Path, Err: errors.New("it is not a folder")}
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != p.Identity.UID {
			return &BoxError{Op: "refusing", Path: d.Path, Err: fmt.Errorf("it belongs to uid %d, not to you (uid %d)", st.Uid, p.Identity.UID)}
		}
	}
	return nil
}

// Foreground reports whether agentbox's stdin is a terminal whose
// foreground process group is agentbox's own.
func Foreground() bool {
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// Run confines p.Command with bwrap and returns its exit status. It stays as
// bwrap's parent to forward signals (bwrap forwards none) and to tell a box
// that failed to start (exit 125) from a command that failed.
func Run(p *plan.Plan, o Options) (int, error) {
	if err := Prepare(p); err != nil {
		return 0, err
	}
	fg := Foreground()
	o.Foreground = fg
	av, err := Render(p, o)
	if err != nil {
		return 0, err
	}

	infoR, infoW, err := os.Pipe()
	if err != nil {
		return 0, &BoxError{Op: "pipe", Err: err}
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return 0, &BoxError{Op: "pipe", Err: err}
	}
	self, err := os.Open(o.Self)
	if err != nil {
		return 0, &BoxError{Op: "opening", Path: o.Self, Err: err}
	}
	extra := []*os.File{infoW, readyW, self}
	if o.Seccomp {
		f, err := seccomp.Build(p.Seccomp)
		if err != nil {
			return 0, &BoxError{Op: "building the seccomp filter", Err: err}
		}
		mfd, err := f.Memfd()
		if err != nil {
			return 0, &BoxError{Op: "building the seccomp filter", Err: err}
		}
		extra = append(extra, mfd)
	} else {
		extra = append(extra, nil)
	}
	var nw *netRun
	if av.NetFD > 0 {
		if nw, err = startNet(av, o); err != nil {
			return 0, err
		}
		// Stopped at the end of the run (see below), or here if the box
		// never starts; stop is idempotent.
		defer nw.stop()
		extra = append(extra, nw.box) // fd av.NetFD: right after seccomp
	}
	for range av.NullFDs {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return 0, &BoxError{Op: "opening", Path: os.DevNull, Err: err}
		}
		extra = append(extra, f)
	}

	files := []uintptr{0, 1, 2}
	for _, f := range extra {
		if f == nil {
			files = append(files, ^uintptr(0)) // closed in bwrap
		} else {
			files = append(files, f.Fd())
		}
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

	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	// Pdeathsig follows the thread that forked, so keep it alive. And
	// syscall.ForkExec rather than os/exec: os/exec's first start forks a
	// throwaway child to probe for pidfd support, a cost on every launch.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	bwrapPid, err := syscall.ForkExec(o.Bwrap, append([]string{o.Bwrap}, av.Args...), attr)
	if err != nil {
		return 0, &BoxError{Op: "starting", Path: o.Bwrap, Err: err}
	}
	for _, f := range extra {
		if f != nil {
			f.Close()
		}
	}
	if nw != nil {
		// Only after bwrap has its copy of the box's end and ours is closed:
		// once the box's last process ends, Serve sees the end of the pair.
		go nw.serve()
	}

	pidc := make(chan int, 1)
	go func() { pidc <- readInfo(infoR) }()
	readyc := make(chan bool, 1)
	go func() {
		var b [1]byte
		n, _ := readyR.Read(b[:])
		readyc <- n == 1
	}()
	done := make(chan unix.WaitStatus, 1)
	go func() {
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(bwrapPid, &ws, 0, nil); err != unix.EINTR {
				break
			}
		}
		done <- ws
	}()

	initPid := 0
	var pending []os.Signal
	for {
		select {
		case pid := <-pidc:
			initPid = pid
			for _, s := range pending {
				unix.Kill(initPid, s.(syscall.Signal))
			}
			pending = nil
		case s := <-sigs:
			if initPid > 0 {
				unix.Kill(initPid, s.(syscall.Signal))
			} else {
				pending = append(pending, s)
			}
		case ws := <-done:
			if fg {
				RestoreForeground()
			}
			if nw != nil {
				nw.stop()
				nw.report(os.Stderr)
			}
			if !<-readyc {
				return 0, &BoxError{Op: "bwrap", Err: errors.New("the sandbox could not be set up (see bwrap's message above)")}
			}
			if ws.Signaled() {
				return 128 + int(ws.Signal()), nil
			}
			return ws.ExitStatus(), nil
		}
	}
}

// netRun is the host side of network mode allowlist: the proxy, the host's
// end of its socket pair and the log.
type netRun struct {
	proxy  *netproxy.Proxy
	host   *net.UnixConn
	box    *os.File // the box's end, passed to bwrap and closed here
	log    *os.File
	path   string // the log's path as given
	served chan error
	once   sync.Once
}

// startNet creates the proxy for av's rules and its socket pair, and opens
// the log. Nothing listens anywhere on the host: the box's end of the pair
// is the only way to the proxy.
func startNet(av Argv, o Options) (*netRun, error) {
	rules, err := netproxy.Compile(av.Allow, av.Deny)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	nw := &netRun{path: o.NetLog, served: make(chan error, 1)}
	popts := netproxy.Options{Forward: av.Forward}
	if o.NetLog != "" {
		nw.log, err = os.OpenFile(o.NetLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, &BoxError{Op: "opening the network log", Path: o.NetLog, Err: err}
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
	return nw, nil
}

// serve runs the proxy until the box ends or stop.
func (nw *netRun) serve() { nw.served <- nw.proxy.Serve(nw.host) }

// stop ends the proxy (every connection still open, every goroutine) and
// closes the log. It is safe to call more than once, and before serve.
func (nw *netRun) stop() {
	nw.once.Do(func() {
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

// report writes one line when connections were denied, so that a failure
// inside the box is never a mystery: the count and where to look, or the
// first denial when there is no log.
func (nw *netRun) report(w io.Writer) {
	st := nw.proxy.Stats()
	if st.Denied == 0 {
		return
	}
	what := "connections"
	if st.Denied == 1 {
		what = "connection"
	}
	if nw.path != "" {
		fmt.Fprintf(w, "agentbox: network: %d %s denied (see --net-log %s)\n", st.Denied, what, nw.path)
		return
	}
	fmt.Fprintf(w, "agentbox: network: %d %s denied, first %s; --net-log FILE lists every connection\n", st.Denied, what, st.FirstDenied)
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

// RestoreForeground gives the terminal back to agentbox's process group
// after CMD had it, ignoring the SIGTTOU a background group would get.
func RestoreForeground() {
	signal.Ignore(unix.SIGTTOU)
	defer signal.Reset(unix.SIGTTOU)
	unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
}

// Probe starts a trivial box with the namespaces agentbox uses and reports
// why it fails, with the fix, or nil when bwrap works.
func Probe(bwrap string) error {
	cmd := exec.Command(bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--unshare-pid", "--die-with-parent", "--", "true")
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(string(out))
	if msg == "" {
		msg = err.Error()
	}
	fix := "run `agentbox doctor` to see what this machine can enforce"
	switch {
	case strings.Contains(msg, "uid map") || strings.Contains(msg, "RTM_NEWADDR") || strings.Contains(msg, "Permission denied"):
		fix = "unprivileged user namespaces are restricted; on Ubuntu 23.10+/24.04 AppArmor does this: " +
			"add an AppArmor profile that grants bwrap `userns` (see README), or " +
			"sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0 (weaker: for every program)"
	case strings.Contains(msg, "No permissions to create") || strings.Contains(msg, "Operation not permitted"):
		fix = "user namespaces are disabled here (a container or sysctl user.max_user_namespaces=0): " +
			"enable them, run on the host, or use --backend landlock once available"
	}
	return &unavailable{reason: "bwrap cannot create a sandbox: " + msg, fix: fix}
}
