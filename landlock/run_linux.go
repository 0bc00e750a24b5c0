package landlock

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/cinit"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/seccomp"
	"github.com/agentbox/agentbox/supervise"
	"github.com/agentbox/agentbox/trace"
)

// The descriptors the child inherits: what it needs of the frozen plan and
// the pinned folders (childInput) on planFD, the box's end of the filesystem log's
// socket on logFD when there is one, then the pinned folders themselves
// from pinFD on, then the preloaded log's pipe when there is one
// (childInput.PreloadFD).
const (
	planFD = 3
	logFD  = 4
	pinFD  = 5
)

// childInput is what the supervisor writes to the child on planFD: the
// parts of the frozen plan the child uses, not the whole plan, which the
// child would decode (and then decode its rule set from again) on every
// launch.
type childInput struct {
	// Rules is the plan's rule set (its Box.Detail).
	Rules   Assessment  `json:"rules"`
	Cwd     string      `json:"cwd"`
	Command []string    `json:"command"`
	Seccomp []string    `json:"seccomp,omitempty"`
	Network string      `json:"network"`
	LogFS   string      `json:"log_fs,omitempty"`    // the plan's Log.Filesystem
	LogRead bool        `json:"log_reads,omitempty"` // and Log.Reads
	Limits  plan.Limits `json:"limits"`
	// Pins are the folders Prepare made and checked, in the order of
	// their descriptors from pinFD on.
	Pins []string `json:"pins,omitempty"`
	// PreloadFD is the descriptor of the preloaded log's pipe, which the
	// child puts at plan.PreloadFD for CMD; 0 for none.
	PreloadFD int `json:"preload_fd,omitempty"`
}

// armLog arms the filesystem log and the broker from the child, on the
// thread that execs CMD: the notification filter (its listener goes to the
// supervisor), and, for Landlock's own audit records, the word that this
// process makes the run's domain. A log that cannot start is the
// supervisor's warning; the broker's calls then fail (the main filter
// answers them ENOSYS).
func armLog(mode string, reads, broker bool) error {
	switch {
	case broker && mode == fslog.Audit:
		if err := fslog.ArmWith(logFD, false, false, true, true); err != nil {
			unix.Close(logFD)
			return err
		}
		return fslog.Announce(logFD)
	case broker || mode == fslog.Notify:
		return fslog.ArmWith(logFD, mode == fslog.Notify, reads, broker, false)
	case mode == fslog.Audit:
		return fslog.Announce(logFD)
	}
	return nil
}

// SelfCheck verifies what a process confined by Landlock can see for
// itself: there is no mount to look at, but agentbox's child always sets
// no_new_privs and a seccomp filter before it execs, which an unconfined
// process does not have.
func (l *Landlock) SelfCheck() (string, bool) {
	status, _ := os.ReadFile("/proc/self/status")
	nnp := strings.Contains(string(status), "NoNewPrivs:\t1")
	filtered := strings.Contains(string(status), "Seccomp:\t2")
	if nnp && filtered {
		return "no_new_privs and a seccomp filter are set", true
	}
	return "this process has no no_new_privs or no seccomp filter", false
}

// Run confines p.Command with Landlock and returns its exit status. agentbox
// itself is never restricted: it starts a child (itself, as ChildCommand)
// that restricts itself with the plan's rule set right before it execs CMD,
// and goes on supervising — forwarding signals, giving the terminal back,
// reporting the status.
func (l *Landlock) Run(p *plan.Plan, c *backend.Context) (int, error) {
	// The box phase's parts (AGENTBOX_TRACE): box.start until the child
	// is started (its rule set and filter built), box.command until it
	// has ended.
	ph := trace.Begin("box.start")
	defer func() { ph.End() }()
	a, err := l.assessmentOf(p)
	if err != nil {
		return 0, err
	}
	pins := supervise.PinsOf(c.Prepared)
	defer pins.Close()
	env := p.BoxEnviron()
	args := []string{"agentbox", ChildCommand}
	proxyPort := 0
	if len(a.Relays) > 0 {
		pubs, err := startRelays(a.Relays)
		if err != nil {
			return 0, err
		}
		defer func() {
			for _, pb := range pubs {
				pb.Close()
			}
		}()
	}
	if a.Proxy {
		px, err := startProxy(p, c)
		if err != nil {
			return 0, err
		}
		defer px.Stop()
		if a.CABundle != "" {
			remove, err := writeBundle(a.CABundle, p.Network.CABase, px.CA)
			if err != nil {
				return 0, err
			}
			defer remove()
		}
		env = netproxy.WithVars(env, px.Env)
		args = append(args, strconv.Itoa(px.Port))
		proxyPort = px.Port
	}
	// The child: agentbox's C helper when it can do the job (all but
	// announcing a domain for Landlock's audit records), with the rule set
	// built here; else agentbox itself (ChildMain), which builds it from
	// the plan
	argv0 := "/proc/self/exe"
	var files []uintptr
	var r, w *os.File
	var data []byte
	dir := ""
	// (agentbox verify's probe is agentbox itself, /proc/self/exe: the
	// child's own executable, so it needs the Go child too.)
	if helper := cinit.Helper(); helper != nil && p.Log.Filesystem != fslog.Audit && !p.SelfCommand {
		defer helper.Close()
		if a.Proxy {
			a.ProxyPort = proxyPort
		}
		ruleset, flags, err := newRuleset(a, pins)
		if err != nil {
			return 0, err
		}
		rs := os.NewFile(uintptr(ruleset), "landlock-ruleset")
		defer rs.Close()
		filter, err := seccomp.Build(p.Seccomp, a.extraSeccomp()...)
		if err != nil {
			return 0, err
		}
		mfd, err := filter.Memfd()
		if err != nil {
			return 0, err
		}
		defer mfd.Close()
		// The helper on fd 3 (run as /proc/self/fd/3), the rule set on
		// 4, the filter on 5, the log's socket on 6 (or nothing), the
		// preloaded log's pipe on 7 (or nothing); it closes them all
		// before it execs CMD, the pipe moved to plan.PreloadFD.
		logSlot := ^uintptr(0)
		if c.FSLog != nil {
			logSlot = c.FSLog.Fd()
		}
		files = []uintptr{0, 1, 2, helper.Fd(), rs.Fd(), mfd.Fd(), logSlot}
		if c.PreloadPipe != nil {
			// The preloaded log's pipe on 7, which the helper puts
			// at plan.PreloadFD for CMD.
			files = append(files, c.PreloadPipe.Fd())
		}
		argv0 = "/proc/self/fd/3"
		args = []string{"agentbox-landlock", ChildCommand, "--ruleset-fd", "4", "--restrict-flags", strconv.FormatUint(uint64(flags), 10), "--seccomp-fd", "5"}
		if a.DropCaps || os.Geteuid() == 0 {
			args = append(args, "--drop-caps")
		}
		if c.FSLog != nil {
			args = append(args, "--log-fd", "6")
		}
		if c.PreloadPipe != nil {
			args = append(args, "--preload-fd", "7")
		}
		for _, l := range supervise.RlimitArgs(p.Limits) {
			args = append(args, "--rlimit", l)
		}
		args = append(append(args, "--"), p.Command...)
		dir = p.Cwd
	} else {
		paths, pinned := pins.List()
		preloadSlot := 0
		if c.PreloadPipe != nil {
			// After the pinned folders.
			preloadSlot = pinFD + len(pinned)
		}
		var err error
		if data, err = json.Marshal(childInput{Rules: a, Cwd: p.Cwd, Command: p.Command, Seccomp: p.Seccomp,
			Network: p.Network.Mode, LogFS: p.Log.Filesystem, LogRead: p.Log.Reads, Limits: p.Limits, Pins: paths,
			PreloadFD: preloadSlot}); err != nil {
			return 0, err
		}
		if r, w, err = os.Pipe(); err != nil {
			return 0, err
		}
		// The plan's pipe, the log's socket (or nothing: closed), then the
		// pinned folders.
		logSlot := ^uintptr(0)
		if c.FSLog != nil {
			logSlot = c.FSLog.Fd()
		}
		files = []uintptr{0, 1, 2, r.Fd(), logSlot}
		for _, f := range pinned {
			files = append(files, f.Fd())
		}
		if c.PreloadPipe != nil {
			files = append(files, c.PreloadPipe.Fd())
		}
	}
	// Only the descriptors listed reach the child and CMD: whatever
	// agentbox inherited from what started it is closed at exec.
	if err := supervise.CloseOnExec(); err != nil {
		return 0, fmt.Errorf("closing inherited descriptors: %w", err)
	}
	// No process of the box may open this one's memory or descriptors:
	// from here on, before the box's first process exists. (Not earlier,
	// so that a tracer of the user's own, such as strace, can still read
	// the rule set being built above; no box exists yet.)
	supervise.NotDumpable()
	fg := supervise.Foreground()
	attr := &syscall.ProcAttr{
		// CMD's environment: the child execs CMD with its own. A name
		// set twice (an inherited TMPDIR, then the box's) keeps its last
		// value: C programs read the first.
		Env:   lastWins(env),
		Files: files,
		Dir:   dir,
		// Its own process group, with the terminal's foreground when
		// agentbox had it, so Ctrl-C reaches CMD and not agentbox; SIGKILL
		// when agentbox dies. There is no PID namespace: processes CMD
		// leaves in the background can outlive it (plan says so).
		Sys: &syscall.SysProcAttr{Setpgid: true, Foreground: fg, Pdeathsig: syscall.SIGKILL},
	}
	if c.CgroupFD > 0 {
		// The run's own cgroup, which agentbox kills at the end.
		attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, c.CgroupFD
	}
	watch := supervise.Watch(fg)
	defer watch.Stop()
	// Pdeathsig follows the thread that forked, so keep it alive. The
	// running executable itself, not the file at its path now.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, err := syscall.ForkExec(argv0, args, attr)
	if err != nil && fg {
		// The terminal may refuse (stdin is not its controlling terminal
		// after all): run without handing it over.
		attr.Sys.Foreground = false
		pid, err = syscall.ForkExec(argv0, args, attr)
	}
	if c.Started != nil {
		c.Started(pid)
	}
	ph.End()
	ph = trace.Begin("box.command")
	pins.Close()
	if r != nil {
		r.Close()
	}
	if err != nil {
		if w != nil {
			w.Close()
		}
		return 0, fmt.Errorf("starting the landlock child: %w", err)
	}
	if w != nil {
		go func() {
			w.Write(data)
			w.Close()
		}()
	}
	target := make(chan int, 1)
	target <- pid
	ws := watch.Wait(pid, target)
	return supervise.Status(ws), nil
}

// ChildMain is the child: it reads the frozen plan, restricts itself with
// the plan's Landlock rule set and the seccomp filter, sets the limits,
// and execs CMD. It returns only on failure: 125 for agentbox's own, 126/127
// for CMD.
func ChildMain() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "agentbox: error: landlock: "+format+"\n", args...)
		return supervise.ExitFailure
	}
	// Unlike agentbox's other processes this one stays dumpable: it is
	// the first process of its box and becomes CMD, no box process exists
	// before it, and Landlock refuses every other box access to it (a
	// Landlock domain reaches only processes in itself or below).
	f := os.NewFile(planFD, "plan")
	var in childInput
	if err := json.NewDecoder(f).Decode(&in); err != nil || len(in.Command) == 0 {
		return fail("reading the plan: %v", err)
	}
	f.Close()
	pins := supervise.NewPins()
	for i, path := range in.Pins {
		pins.Adopt(path, pinFD+i)
	}
	a := in.Rules
	if a.Proxy {
		// The proxy's port, which the supervisor learnt once it listened.
		if len(os.Args) > 2 {
			a.ProxyPort, _ = strconv.Atoi(os.Args[2])
		}
	}
	if err := os.Chdir(in.Cwd); err != nil {
		return fail("changing to %s: %v", in.Cwd, err)
	}
	// The environment is not part of the plan's JSON form (it holds
	// values); the supervisor passes it as the child's own.
	env := os.Environ()
	// As the inits and the C child look it up: exec.LookPath in CMD's
	// PATH (the child's own), nothing found through a relative entry.
	bin, err := exec.LookPath(in.Command[0])
	if err != nil {
		return supervise.ExecError(in.Command[0], err)
	}
	// Under network "none" and with the allowlist's proxy, Landlock checks
	// connect(2) only: refuse the ways around it, and the socket families
	// that leave the host.
	filter, err := seccomp.Build(in.Seccomp, a.extraSeccomp()...)
	if err != nil {
		return fail("%v", err)
	}
	// apply locks this goroutine to its thread; the seccomp filter and
	// execve must happen on the same thread.
	if err := apply(a, pins); err != nil {
		return fail("%v", err)
	}
	pins.Close()
	if err := installSeccomp(filter.Bytes()); err != nil {
		return fail("installing the seccomp filter: %v", err)
	}
	if err := armLog(in.LogFS, in.LogRead, slices.Contains(a.Seccomp, seccomp.Metadata.Name)); errors.Is(err, fslog.ErrOrphan) {
		return fail("%v", err)
	}
	if in.PreloadFD > 0 {
		preloadPipe(in.PreloadFD)
	}
	// Last, so this Go process does not have to live under a memory limit
	// meant for CMD: nothing is allocated between here and execve.
	if err := supervise.ApplyLimits(in.Limits); err != nil {
		return fail("%v", err)
	}
	err = syscall.Exec(bin, in.Command, env)
	if errors.Is(err, syscall.ENOENT) {
		// The file is there (it was found): what is missing is its
		// interpreter (#!) or its loader.
		return supervise.NoInterpreter(in.Command[0])
	}
	return supervise.ExecError(in.Command[0], err)
}

// preloadPipe puts the preloaded log's pipe (fd) at plan.PreloadFD, not
// closed on exec, for CMD and every program it starts, as the C helper
// does: before the limits (a lower limit on open files keeps the
// descriptor), under this process's soft limit, which the Go runtime
// raised to the hard one. A pipe that cannot be put there costs the
// records only: said, and run.
func preloadPipe(fd int) {
	if err := unix.Dup3(fd, plan.PreloadFD, 0); err != nil {
		fmt.Fprintf(os.Stderr, "agentbox: warning: landlock: the filesystem log's pipe: %v; this run's refusals are not recorded\n", err)
	}
	unix.Close(fd)
}

// installSeccomp loads a classic BPF program (the raw sock_filter array) on
// the calling thread; no_new_privs is already set by Apply.
func installSeccomp(raw []byte) error {
	n := len(raw) / 8
	if n == 0 || len(raw)%8 != 0 {
		return errors.New("bad program length")
	}
	prog := make([]unix.SockFilter, n)
	for i := range prog {
		b := raw[i*8:]
		prog[i] = unix.SockFilter{Code: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.LittleEndian.Uint32(b[4:])}
	}
	fprog := unix.SockFprog{Len: uint16(n), Filter: &prog[0]}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
}

// lastWins drops every variable that is set again later in env.
func lastWins(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		last[name] = i
	}
	out := make([]string, 0, len(last))
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if last[name] == i {
			out = append(out, kv)
		}
	}
	return out
}
