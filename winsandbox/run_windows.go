package winsandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"
	"unsafe"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
	"golang.org/x/sys/windows"
)

// machineFacts are what the spec needs from this machine: the proxy port
// setup chose, the runner's folder (agentbox.exe's), which the sandbox
// users must be able to read, a file lookup, the caller's TEMP and SID.
func machineFacts(p *plan.Plan) Options {
	o := Options{Exists: fileExists, ProxyPort: DefaultProxyPort, TempDir: os.TempDir()}
	o.User, _ = currentUserSID()
	if rec, err := loadRecord(); err == nil && rec.ProxyPort != 0 {
		o.ProxyPort = rec.ProxyPort
	}
	if exe, err := os.Executable(); err == nil {
		o.ReadRoots = append(o.ReadRoots, filepath.Dir(exe))
	}
	return o
}

// UserSID is the calling user's SID, which names agentbox's per-user
// folders on Windows (where a user has no number); "" when it cannot be
// read.
func UserSID() string {
	sid, _ := currentUserSID()
	return sid
}

// Available reports whether setup has been done, for this user too.
func (w *Windows) Available() error {
	fix := "run `agentbox setup` once (it asks for elevation), as the user who runs agentbox"
	if _, err := loadRecord(); err != nil {
		return &backend.Unavailable{Reason: err.Error(), Fix: fix}
	}
	path, err := secretsFile()
	if err == nil {
		_, err = os.Stat(path)
	}
	if err != nil {
		return &backend.Unavailable{Reason: "the Windows sandbox is set up, but not for this user", Fix: fix}
	}
	return nil
}

// SelfCheck tells whether this process runs as a sandbox user with a
// restricted token, which is what a Windows box is.
func (w *Windows) SelfCheck() (string, bool) {
	tok := windows.GetCurrentProcessToken()
	u, err := tok.GetTokenUser()
	if err != nil {
		return "cannot read this process's user: " + err.Error(), false
	}
	name, _, _, err := u.User.Sid.LookupAccount("")
	if err != nil {
		name = u.User.Sid.String()
	}
	restricted, _ := tok.IsRestricted()
	if (name == OfflineUser || name == OnlineUser) && restricted {
		return "running as " + name + " with a write-restricted token", true
	}
	return fmt.Sprintf("running as %s, restricted token: %v — not what a Windows box looks like", name, restricted), false
}

// Run runs the completed plan's command in the Windows sandbox.
func (w *Windows) Run(p *plan.Plan, c *backend.Context) (int, error) {
	spec, err := SpecOf(p)
	if err != nil {
		return 125, err
	}
	if r := spec.Refuse; r != nil {
		return r.Status, &backend.StatusError{Status: r.Status, Err: errors.New(r.Reason)}
	}
	code, err := run(p, spec, c)
	if err != nil && (code == 126 || code == 127) {
		return code, &backend.StatusError{Status: code, Err: err}
	}
	return code, err
}

// run prepares the plan's folders, applies the spec's ACEs (recorded; they
// stay for the project's next run), starts the allowlist proxy when the
// plan has one, starts the runner as the sandbox user in a kill-on-close
// job of its own, sends the spawn request and relays stdio until the exit
// message.
func run(p *plan.Plan, spec *Spec, c *backend.Context) (int, error) {
	rec, err := loadRecord()
	if err != nil {
		return 125, err
	}
	exe, err := os.Executable()
	if err != nil {
		return 125, err
	}
	userSID := rec.Users[spec.User]
	password, err := loadPassword(spec.User)
	if err != nil || userSID == "" {
		return 125, fmt.Errorf("sandbox user %s: %v; run `agentbox setup`", spec.User, err)
	}
	// The folders agentbox owns exist by now, and are the user's own, not
	// a link planted by someone else (supervise.Run prepared them) before
	// an ACL is put on them.
	release, err := applyACEs(spec, supervise.Project(p), rec.GroupSID)
	if err != nil {
		return 125, err
	}
	defer release()

	// The runner's own job: when agentbox exits or dies, closing this handle
	// kills the runner and, through it, the command's nested job.
	job, err := newJob(JobLimits{})
	if err != nil {
		return 125, err
	}
	defer windows.CloseHandle(job)

	if spec.ProxyPort != 0 {
		stop, err := startProxy(p, spec.ProxyPort, job, c)
		if err != nil {
			return 125, err
		}
		defer stop()
	}

	inName, outName := pipeName("in"), pipeName("out")
	toRunnerH, err := createPipe(inName, false, userSID)
	if err != nil {
		return 125, err
	}
	fromRunnerH, err := createPipe(outName, true, userSID)
	if err != nil {
		windows.CloseHandle(toRunnerH)
		return 125, err
	}
	proc, pid, err := launchRunner(exe, spec.User, password, inName, outName, job)
	if err != nil {
		windows.CloseHandle(toRunnerH)
		windows.CloseHandle(fromRunnerH)
		return 125, fmt.Errorf("starting the runner as %s: %w", spec.User, err)
	}
	defer windows.CloseHandle(proc)
	if c.Started != nil {
		c.Started(int(pid))
	}
	for _, h := range []windows.Handle{toRunnerH, fromRunnerH} {
		if err := connectPipe(h, proc, pid, 30*time.Second); err != nil {
			windows.CloseHandle(toRunnerH)
			windows.CloseHandle(fromRunnerH)
			if errors.Is(err, errRunnerGone) {
				var code uint32
				windows.GetExitCodeProcess(proc, &code)
				return 125, errors.New(RunnerExitReason(code))
			}
			windows.TerminateProcess(proc, 1)
			return 125, fmt.Errorf("runner pipes: %w", err)
		}
	}
	toRunner := os.NewFile(uintptr(toRunnerH), inName)
	defer toRunner.Close()
	fromRunner := os.NewFile(uintptr(fromRunnerH), outName)
	defer fromRunner.Close()

	req := spec.Spawn
	req.Desktop = desktopName()
	console, restore := consoleMode(c.Stdin, c.Stdout)
	defer restore()
	if console {
		req.Console = true
		req.Cols, req.Rows = consoleSize(c.Stdout)
	}
	var m Machine
	send := func(msg *Message) error {
		if err := m.Apply(FromClient, msg.Type); err != nil {
			return err
		}
		return WriteMessage(toRunner, msg)
	}
	if err := send(&Message{Type: TypeSpawn, Spawn: &req}); err != nil {
		return 125, err
	}
	go func() {
		buf := make([]byte, MaxChunk)
		for {
			n, err := c.Stdin.Read(buf)
			if n > 0 && WriteMessage(toRunner, &Message{Type: TypeStdin, Data: append([]byte(nil), buf[:n]...)}) != nil {
				return
			}
			if err != nil {
				WriteMessage(toRunner, &Message{Type: TypeCloseStdin})
				return
			}
		}
	}()
	if !console {
		// Without a console, Ctrl-C reaches agentbox, not the command:
		// ask the runner to end the command's job.
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		defer signal.Stop(sig)
		go func() {
			for range sig {
				WriteMessage(toRunner, &Message{Type: TypeTerminate})
			}
		}()
	} else {
		go watchResize(toRunner, c.Stdout, req.Cols, req.Rows)
	}
	for {
		msg, err := ReadMessage(fromRunner)
		if err != nil {
			var code uint32
			if windows.GetExitCodeProcess(proc, &code) == nil && code != 259 && code&0xff000000 == runnerFailBit {
				return 125, errors.New(RunnerExitReason(code))
			}
			return 125, fmt.Errorf("runner: %w", err)
		}
		if err := m.Apply(FromRunner, msg.Type); err != nil {
			return 125, fmt.Errorf("runner broke the protocol: %w", err)
		}
		switch msg.Type {
		case TypeOutput:
			w := io.Writer(c.Stdout)
			if msg.Stream == Stderr {
				w = c.Stderr
			}
			w.Write(msg.Data)
		case TypeExit:
			return int(msg.Code), nil
		case TypeError:
			return spawnStatus(msg.Error), msg.Error
		}
	}
}

// spawnStatus is the exit status of a runner error: 127 when the program
// was not found, 126 when it could not be started otherwise, 125 for a
// failure of the runner itself.
func spawnStatus(e *ErrorInfo) int {
	if e.Stage != "spawn" {
		return 125
	}
	switch windows.Errno(e.Code) {
	case windows.ERROR_FILE_NOT_FOUND, windows.ERROR_PATH_NOT_FOUND:
		return 127
	}
	return 126
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// launchRunner is startRunner; a test under Wine, whose
// CreateProcessWithLogonW is a stub, starts the runner as the caller
// instead to exercise the rest of the run path.
var launchRunner = startRunner

// startRunner starts agentbox in runner mode as the sandbox user, suspended,
// puts it in job and resumes it. LOGON_WITH_PROFILE loads the user's profile
// so HKCU and %USERPROFILE% exist for the tools it runs. lpDesktop is left
// empty: the new process gets agentbox's own window station and desktop,
// and the secondary logon service grants the new logon access to them
// (CreateProcessWithLogonW, remarks), whether agentbox runs on the
// interactive desktop or in an SSH session.
func startRunner(exe, user, password, in, out string, job windows.Handle) (windows.Handle, uint32, error) {
	u, _ := windows.UTF16PtrFromString(user)
	dot, _ := windows.UTF16PtrFromString(".")
	pw, err := windows.UTF16PtrFromString(password)
	if err != nil {
		return 0, 0, err
	}
	app, _ := windows.UTF16PtrFromString(exe)
	line, err := CommandLine([]string{exe, RunnerArg, in, out, strconv.Itoa(os.Getpid())})
	if err != nil {
		return 0, 0, err
	}
	cmd, _ := windows.UTF16PtrFromString(line)
	cwd, _ := windows.UTF16PtrFromString(filepath.Dir(exe))
	si := &windows.StartupInfo{Cb: uint32(unsafe.Sizeof(windows.StartupInfo{}))}
	var pi windows.ProcessInformation
	flags := uint32(windows.CREATE_SUSPENDED | windows.CREATE_NO_WINDOW | windows.CREATE_UNICODE_ENVIRONMENT)
	if err := createProcessWithLogon(u, dot, pw, logonWithProfile, app, cmd, flags, nil, cwd, si, &pi); err != nil {
		return 0, 0, err
	}
	defer windows.CloseHandle(pi.Thread)
	// If the assignment fails (a job of the secondary logon service that
	// forbids nesting), the runner still ends itself when its pipes break.
	windows.AssignProcessToJobObject(job, pi.Process)
	if _, err := windows.ResumeThread(pi.Thread); err != nil {
		windows.TerminateProcess(pi.Process, 1)
		windows.CloseHandle(pi.Process)
		return 0, 0, err
	}
	return pi.Process, pi.ProcessId, nil
}

// startProxy serves the allowlist proxy on 127.0.0.1:port for this run. The
// firewall lets the offline user reach that port and nothing else, but any
// local process can connect to a loopback port, so each connection is
// served only when the process that opened it is in job (the runner's job,
// which holds the command's nested job and every process the command
// starts).
func startProxy(p *plan.Plan, port int, job windows.Handle, c *backend.Context) (func(), error) {
	rules, err := netproxy.Compile(p.Network.Allow, p.Network.Deny)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	popts, err := netproxy.OptionsFor(p.Network)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	popts.Decided = func(dec netproxy.Decided) {
		c.Emit(event.Event{Kind: event.Net, Allowed: event.Bool(dec.Allowed), Proto: dec.Proto, Target: dec.Target, Reason: dec.Reason})
	}
	var logf *os.File
	if c.NetLog != "" {
		if logf, err = os.OpenFile(c.NetLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
			return nil, fmt.Errorf("opening the network log %s: %w", c.NetLog, err)
		}
		popts.Log = logf
	}
	proxy, err := netproxy.New(rules, popts)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		proxy.Close()
		return nil, fmt.Errorf("network allowlist: the proxy cannot listen on 127.0.0.1:%d (another allowlist run holds it, or another program does): %w", port, err)
	}
	go proxy.ServeListener(ln, func(conn net.Conn) error { return inJob(conn, job) })
	return func() {
		proxy.Close()
		ln.Close()
		if logf != nil {
			logf.Close()
		}
	}, nil
}

// inJob checks that the process that opened conn (from its side, local is
// our remote) is in job.
func inJob(conn net.Conn, job windows.Handle) error {
	ra, ok := conn.RemoteAddr().(*net.TCPAddr)
	la, ok2 := conn.LocalAddr().(*net.TCPAddr)
	if !ok || !ok2 || ra.IP.To4() == nil || la.IP.To4() == nil {
		return errors.New("not an IPv4 TCP connection")
	}
	pid, err := tcpOwner([4]byte(ra.IP.To4()), uint16(ra.Port), [4]byte(la.IP.To4()), uint16(la.Port))
	if err != nil {
		return err
	}
	pids, err := jobPIDs(job)
	if err != nil {
		return err
	}
	for _, p := range pids {
		if p == pid {
			return nil
		}
	}
	return fmt.Errorf("process %d is not part of this run", pid)
}

// jobPIDs lists the processes in a job (nested jobs included).
func jobPIDs(job windows.Handle) ([]uint32, error) {
	n := 256
	for tries := 0; tries < 4; tries++ {
		buf := make([]uintptr, 2+n)
		err := windows.QueryInformationJobObject(job, windows.JobObjectBasicProcessIdList,
			uintptr(unsafe.Pointer(&buf[0])), uint32(len(buf))*uint32(unsafe.Sizeof(buf[0])), nil)
		if err == windows.ERROR_MORE_DATA {
			n *= 4
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("QueryInformationJobObject: %w", err)
		}
		// JOBOBJECT_BASIC_PROCESS_ID_LIST: two DWORDs (assigned, in
		// list), then ULONG_PTR process IDs from byte 8.
		head := (*[2]uint32)(unsafe.Pointer(&buf[0]))
		count := min(int(head[1]), len(buf)-2)
		start := 8 / int(unsafe.Sizeof(uintptr(0)))
		var out []uint32
		for _, id := range buf[start : start+count] {
			out = append(out, uint32(id))
		}
		return out, nil
	}
	return nil, errors.New("QueryInformationJobObject: too many processes")
}

// consoleMode reports whether stdin and stdout are both consoles (only
// then does the command get a pseudo console) and, if so, puts stdin in raw
// VT input mode (so Ctrl-C travels as input to the pseudo console) and
// returns the function that restores both.
func consoleMode(stdin, stdout *os.File) (bool, func()) {
	if stdin == nil || stdout == nil {
		return false, func() {}
	}
	in, out := windows.Handle(stdin.Fd()), windows.Handle(stdout.Fd())
	var oldIn, oldOut uint32
	if windows.GetConsoleMode(in, &oldIn) != nil || windows.GetConsoleMode(out, &oldOut) != nil {
		return false, func() {}
	}
	windows.SetConsoleMode(in, windows.ENABLE_VIRTUAL_TERMINAL_INPUT)
	windows.SetConsoleMode(out, oldOut|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING|windows.DISABLE_NEWLINE_AUTO_RETURN)
	return true, func() { windows.SetConsoleMode(in, oldIn); windows.SetConsoleMode(out, oldOut) }
}

func consoleSize(stdout *os.File) (uint16, uint16) {
	var info windows.ConsoleScreenBufferInfo
	if windows.GetConsoleScreenBufferInfo(windows.Handle(stdout.Fd()), &info) != nil {
		return 80, 25
	}
	return uint16(info.Window.Right - info.Window.Left + 1), uint16(info.Window.Bottom - info.Window.Top + 1)
}

// watchResize polls the console size (Windows has no SIGWINCH for this) and
// sends a resize message when it changes.
func watchResize(w io.Writer, stdout *os.File, cols, rows uint16) {
	for range time.Tick(250 * time.Millisecond) {
		c, r := consoleSize(stdout)
		if c != cols || r != rows {
			cols, rows = c, r
			if WriteMessage(w, &Message{Type: TypeResize, Cols: c, Rows: r}) != nil {
				return
			}
		}
	}
}
