package landlock

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/seccomp"
)

// ChildCommand is the hidden subcommand of the child that confines itself
// and becomes CMD.
const ChildCommand = "__landlock"

// Backend is the name this backend reports in AGENTBOX_BACKEND.
const Backend = "landlock"

// payload is what the supervisor hands the child on fd 3.
type payload struct {
	Plan    *plan.Plan `json:"plan"`
	Environ []string   `json:"environ"`
}

// forwarded are the signals passed on to CMD, as the bwrap backend does.
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2}

// Check assesses p for this kernel and returns the assessment, or an error
// naming every rule Landlock cannot enforce at all (SPEC: under require, a
// rule that cannot be honoured is an error).
func Check(p *plan.Plan) (Assessment, error) {
	abi, err := ABI()
	if err != nil {
		return Assessment{}, err
	}
	a := Assess(p, abi)
	if ne := a.NotEnforced(); len(ne) > 0 {
		var lines []string
		for _, r := range ne {
			lines = append(lines, fmt.Sprintf("%s %s: %s", r.Rule, r.Path, r.How))
		}
		return a, fmt.Errorf("landlock cannot enforce: %s", strings.Join(lines, "; "))
	}
	return a, nil
}

// Run confines p.Command with Landlock and returns its exit status. agentbox
// itself is never restricted: it starts a child (itself, as ChildCommand)
// that restricts itself right before it execs CMD, and goes on supervising —
// forwarding signals, giving the terminal back, reporting the status.
func Run(p *plan.Plan, self string) (int, error) {
	if p.Tmp.Mode == plan.TmpPrivate && p.Tmp.HostDir == "" {
		// Landlock cannot mount a fresh /tmp: a fresh folder for this run,
		// reached through TMPDIR, removed afterwards.
		base := filepath.Join(os.TempDir(), "agentbox-"+strconv.Itoa(p.Identity.UID))
		if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return 0, err
		}
		dir, err := os.MkdirTemp(base, "private-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		p.Tmp.HostDir = dir
	}
	if err := mount.Prepare(p); err != nil {
		return 0, err
	}
	data, err := json.Marshal(payload{Plan: p, Environ: p.Environ})
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	fg := mount.Foreground()
	cmd := exec.Command(self, ChildCommand)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r}
	cmd.Env = []string{}
	// Its own process group, with the terminal's foreground when agentbox
	// had it, so Ctrl-C reaches CMD and not agentbox; SIGKILL when agentbox
	// dies. There is no PID namespace: processes CMD leaves in the
	// background can outlive it (plan says so).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: fg, Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting the landlock child: %w", err)
	}
	r.Close()
	w.Write(data)
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			unix.Kill(cmd.Process.Pid, s.(syscall.Signal))
		case err := <-done:
			if fg {
				mount.RestoreForeground()
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal()), nil
				}
				return ee.ExitCode(), nil
			}
			return 0, err
		}
	}
}

// ChildMain is the child: it reads the plan, sets the limits, restricts
// itself with Landlock and the seccomp filter, and execs CMD. It returns
// only on failure: 125 for agentbox's own, 126/127 for CMD.
func ChildMain() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "agentbox: error: landlock: "+format+"\n", args...)
		return 125
	}
	f := os.NewFile(3, "plan")
	var pl payload
	if err := json.NewDecoder(f).Decode(&pl); err != nil {
		return fail("reading the plan: %v", err)
	}
	f.Close()
	p := pl.Plan
	a, err := Check(p)
	if err != nil && p.Enforce == plan.Require {
		return fail("%v", err)
	}
	if err := os.Chdir(p.Cwd); err != nil {
		return fail("changing to %s: %v", p.Cwd, err)
	}
	env := append([]string(nil), pl.Environ...)
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	env = append(env, Truthful(p, a)...)
	bin, err := lookPath(p.Command[0], env)
	if strings.Contains(p.Command[0], "/") {
		bin, err = p.Command[0], nil
		if _, serr := os.Stat(bin); serr != nil {
			err = serr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentbox: error: %s: command not found\n", p.Command[0])
		return 127
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
	// Last, so this Go process does not have to live under a memory limit
	// meant for CMD: nothing is allocated between here and execve.
	if err := mount.ApplyLimits(p.Limits); err != nil {
		return fail("%v", err)
	}
	err = syscall.Exec(bin, p.Command, env)
	if errors.Is(err, syscall.ENOENT) {
		fmt.Fprintf(os.Stderr, "agentbox: error: %s: command not found\n", p.Command[0])
		return 127
	}
	fmt.Fprintf(os.Stderr, "agentbox: error: %s: cannot execute: %v\n", p.Command[0], err)
	return 126
}

// Truthful returns the AGENTBOX_* variables for a Landlock box. TMPDIR is
// the per-workspace (or per-run) folder, since /tmp cannot be remapped.
func Truthful(p *plan.Plan, a Assessment) []string {
	var writable []string
	for _, w := range a.WritePaths {
		// Device nodes are not folders one writes work to; /dev/shm is,
		// and it is the host's, so it is listed.
		if strings.HasPrefix(w, "/dev/") && w != "/dev/shm" {
			continue
		}
		writable = append(writable, w)
	}
	out := []string{
		"AGENTBOX=1",
		"AGENTBOX_BACKEND=" + Backend,
		"AGENTBOX_WRITABLE=" + strings.Join(writable, ","),
		"AGENTBOX_DENY=" + strings.Join(p.Denied(), ","),
		"AGENTBOX_NETWORK=" + p.Network.Mode,
	}
	return out
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
