package landlock

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/seccomp"
	"github.com/agentbox/agentbox/supervise"
)

// planFD is the descriptor the child reads the frozen plan from; logFD
// holds the box's end of the filesystem log's socket, when there is one.
const (
	planFD = 3
	logFD  = 4
)

// armLog arms the filesystem log from the child, on the thread that execs
// CMD: the notification filter (its listener goes to the supervisor), or,
// for Landlock's own audit records, the word that this process makes the
// run's domain. A log that cannot start is the supervisor's warning.
func armLog(mode string) error {
	switch mode {
	case fslog.Notify:
		return fslog.Arm(logFD)
	case fslog.Audit:
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
	if _, err := AssessmentOf(p); err != nil {
		return 0, err
	}
	if err := supervise.Prepare(p); err != nil {
		return 0, err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	fg := supervise.Foreground()
	files := []uintptr{0, 1, 2, r.Fd()}
	if c.FSLog != nil {
		files = append(files, c.FSLog.Fd()) // logFD
	}
	attr := &syscall.ProcAttr{
		// CMD's environment: the child execs CMD with its own.
		Env:   p.BoxEnviron(),
		Files: files,
		// Its own process group, with the terminal's foreground when
		// agentbox had it, so Ctrl-C reaches CMD and not agentbox; SIGKILL
		// when agentbox dies. There is no PID namespace: processes CMD
		// leaves in the background can outlive it (plan says so).
		Sys: &syscall.SysProcAttr{Setpgid: true, Foreground: fg, Pdeathsig: syscall.SIGKILL},
	}
	watch := supervise.Watch(fg)
	defer watch.Stop()
	// Pdeathsig follows the thread that forked, so keep it alive.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, err := syscall.ForkExec(c.Self, []string{"agentbox", ChildCommand}, attr)
	if err != nil && fg {
		// The terminal may refuse (stdin is not its controlling terminal
		// after all): run without handing it over.
		attr.Sys = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		pid, err = syscall.ForkExec(c.Self, []string{"agentbox", ChildCommand}, attr)
	}
	if c.Started != nil {
		c.Started()
	}
	r.Close()
	if err != nil {
		w.Close()
		return 0, fmt.Errorf("starting the landlock child: %w", err)
	}
	go func() {
		w.Write(data)
		w.Close()
	}()
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
	f := os.NewFile(planFD, "plan")
	var p plan.Plan
	if err := json.NewDecoder(f).Decode(&p); err != nil {
		return fail("reading the plan: %v", err)
	}
	f.Close()
	a, err := AssessmentOf(&p)
	if err != nil {
		return fail("%v", err)
	}
	if err := os.Chdir(p.Cwd); err != nil {
		return fail("changing to %s: %v", p.Cwd, err)
	}
	// The environment is not part of the plan's JSON form (it holds
	// values); the supervisor passes it as the child's own.
	env := os.Environ()
	bin, err := lookPath(p.Command[0], env)
	if strings.Contains(p.Command[0], "/") {
		bin, err = p.Command[0], nil
		if _, serr := os.Stat(bin); serr != nil {
			err = serr
		}
	}
	if err != nil {
		return supervise.ExecError(p.Command[0], err)
	}
	var extra []seccomp.Group
	if p.Network.Mode == plan.NetNone {
		// Landlock checks connect(2) only: refuse the ways around it.
		extra = append(extra, seccomp.NoNetBypass)
	}
	filter, err := seccomp.Build(p.Seccomp, extra...)
	if err != nil {
		return fail("%v", err)
	}
	// Apply locks this goroutine to its thread; the seccomp filter and
	// execve must happen on the same thread.
	if err := Apply(a); err != nil {
		return fail("%v", err)
	}
	if err := installSeccomp(filter.Bytes()); err != nil {
		return fail("installing the seccomp filter: %v", err)
	}
	if err := armLog(p.Log.Filesystem); errors.Is(err, fslog.ErrOrphan) {
		return fail("%v", err)
	}
	// Last, so this Go process does not have to live under a memory limit
	// meant for CMD: nothing is allocated between here and execve.
	if err := supervise.ApplyLimits(p.Limits); err != nil {
		return fail("%v", err)
	}
	err = syscall.Exec(bin, p.Command, env)
	if errors.Is(err, syscall.ENOENT) {
		// The file is there (it was found): what is missing is its
		// interpreter (#!) or its loader.
		return supervise.NoInterpreter(p.Command[0])
	}
	return supervise.ExecError(p.Command[0], err)
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
