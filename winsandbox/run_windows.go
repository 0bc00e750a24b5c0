package winsandbox

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
	"golang.org/x/sys/windows"
)

// machineFacts are what the spec needs from this machine: the proxy ports
// setup opened, the runner (agentbox.exe), which the sandbox users must be
// able to read, a file lookup, the caller's TEMP and SID, for offline
// runs the firewall's state, and which PATH folders the sandbox users may
// read.
func machineFacts(p *plan.Plan) Options {
	o := Options{Exists: fileExists, TempDir: os.TempDir(), ReadFile: readSmall}
	o.User, _ = currentUserSID()
	rec, err := loadRecord()
	if err == nil {
		o.ProxyPorts = rec.proxyRange()
	}
	// Read per run, not trusted from setup: the firewall can be turned
	// off (by an antivirus) at any time after it.
	if p.Network.Mode != plan.NetOpen {
		o.Offline = offlineFacts(rec)
	}
	if exe, err := os.Executable(); err == nil {
		o.Runner = exe
	}
	o.Git = readGitFacts(p.Environ, p.Identity.Home)
	o.IsDir = func(path string) bool {
		fi, err := os.Lstat(path)
		return err == nil && fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 && fi.Mode()&os.ModeIrregular == 0
	}
	group := ""
	if rec != nil {
		group = rec.GroupSID
	}
	o.PathReadable = func(dir string) (bool, bool) {
		d, ok, err := readDACL(dir, true)
		if err != nil {
			return false, false
		}
		if !ok {
			return true, true // not there: nothing of it runs anywhere
		}
		return sandboxCanRead(d.aces, d.null, group), true
	}
	return o
}

// readGitFacts reads the caller's global git configuration (gitconfig.go):
// the global files with the plain include.path files they name (at most
// 8 deep, 1 MiB each), and the global ignore and attributes files.
func readGitFacts(environ []string, home string) *GitFacts {
	f := &GitFacts{}
	config, xdgGit := gitGlobalFiles(environ, home)
	var read func(path string, depth int)
	read = func(path string, depth int) {
		data, err := readSmall(path)
		if err != nil || depth > 8 {
			return
		}
		vars := hostexec.ParseConfig(data).Vars
		for _, v := range vars {
			f.Vars = append(f.Vars, v)
			if v.Section == "include" && v.Sub == "" && v.Key == "path" && !v.Bool {
				inc := strings.ReplaceAll(v.Value, "/", `\`)
				if rest, ok := strings.CutPrefix(inc, `~\`); ok && home != "" {
					inc = winJoin(home, rest)
				} else if !winAbs(inc) {
					inc = winJoin(winDir(path), inc)
				}
				read(inc, depth+1)
			}
		}
	}
	for _, c := range config {
		read(c, 0)
	}
	ignore, attributes := gitSideFiles(f.Vars, xdgGit, home)
	if data, err := readSmall(ignore); err == nil {
		f.Ignore = string(data)
	}
	if data, err := readSmall(attributes); err == nil {
		f.Attributes = string(data)
	}
	return f
}

// readSmall reads a regular file of at most 1 MiB.
func readSmall(path string) ([]byte, error) {
	if path == "" {
		return nil, os.ErrNotExist
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return nil, fmt.Errorf("%s: not a small regular file", path)
	}
	return os.ReadFile(path)
}

// writeGitFiles writes the box's git configuration (spec.Git) into a new
// folder of the box's temporary folder and returns the function that
// removes it. The folder is made new (a name the box planted first is
// not written into): then the box's git finds no configuration of the
// caller's, as before, and the run goes on.
func writeGitFiles(files []GitFile) func() {
	if len(files) == 0 {
		return func() {}
	}
	dir := winDir(files[0].Path)
	if os.Mkdir(dir, 0o700) != nil {
		return func() {}
	}
	for _, f := range files {
		w, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			continue
		}
		w.WriteString(f.Content)
		w.Close()
	}
	return func() {
		// By name, one by one: what the box put there instead is its own.
		for _, f := range files {
			os.Remove(f.Path)
		}
		os.Remove(dir)
	}
}

// reserveProxy listens on a free port of r for this run's allowlist
// proxy and keeps the listener for Run. It starts at a random port of the
// range, so runs that start together rarely try the same one first.
func (w *Windows) reserveProxy(r PortRange) (int, error) {
	if ln, ok := w.proxy.(net.Listener); ok {
		if a, ok := ln.Addr().(*net.TCPAddr); ok && r.Holds(a.Port) {
			return a.Port, nil
		}
		ln.Close()
		w.proxy = nil
	}
	start := rand.IntN(r.Count)
	var errs []error
	for i := 0; i < r.Count; i++ {
		port := r.First + (start+i)%r.Count
		ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			w.proxy = ln
			return port, nil
		}
		errs = append(errs, err)
	}
	return 0, fmt.Errorf("network allowlist: no proxy port is free (%s: one per allowlist run at a time, and other programs may hold some): %w", r, errs[0])
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
	code, err := w.run(p, spec, c)
	if err != nil && (code == 126 || code == 127) {
		return code, &backend.StatusError{Status: code, Err: err}
	}
	return code, err
}

// run prepares the plan's folders, applies the spec's ACEs (recorded;
// grants last for the run, denials stay for the project's next run), starts the allowlist proxy when the
// plan has one, starts the runner as the sandbox user in a kill-on-close
// job of its own, sends the spawn request and relays stdio until the exit
// message.
func (w *Windows) run(p *plan.Plan, spec *Spec, c *backend.Context) (int, error) {
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
	if errors.Is(err, errDPAPINoKey) {
		return 125, err
	}
	if err != nil || userSID == "" {
		return 125, fmt.Errorf("sandbox user %s: %v; run `agentbox setup`", spec.User, err)
	}
	if n, known := badPasswordCount(spec.User); known {
		if err := logonGate(spec.User, n); err != nil {
			return 125, err
		}
	}
	// Placeholders for missing control folders (controlfolder.go) and for
	// the git folders' missing commondir and config.worktree
	// (gitfiles.go), made before their deny ACE is applied and removed,
	// when untouched, once every process of the run has ended (this defer
	// runs after the job's) and before the after-run check. Each is
	// recorded with its identity, so that one a killed run left is known
	// for agentbox's own by the next run (leftover.go).
	// What the plan took for there and is gone now gets one too
	// (keptExisting).
	dirs, files := slices.Clone(spec.Placeholders), slices.Clone(spec.GitPlaceholders)
	keptDirs, keptFiles := keptExisting(spec)
	for _, d := range keptDirs {
		if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
			dirs = append(dirs, d)
		}
	}
	for _, f := range keptFiles {
		_, err := os.Lstat(f.Path)
		if _, derr := os.Lstat(winDir(f.Path)); errors.Is(err, os.ErrNotExist) && derr == nil {
			files = append(files, f)
		}
	}
	var roots []string
	for _, c := range spec.Capabilities {
		roots = append(roots, c.Root)
	}
	made, err := holdPlaceholders(dirs, files, roots, rec.GroupSID)
	defer func() { leaveToOthers(&p.HostExec, releasePlaceholders(made, rec.GroupSID)) }()
	if err != nil {
		return 125, err
	}
	// The folders agentbox owns exist by now, and are the user's own, not
	// a link planted by someone else (supervise.Run prepared them) before
	// an ACL is put on them.
	release, err := applyACEs(spec, supervise.Project(p), rec.GroupSID)
	if err != nil {
		return 125, err
	}
	// Grants last for the run (acl.go): removed when it ends, once every
	// process of the run has (this defer runs after the job's). One that
	// cannot be removed stays recorded, and the next run removes it or
	// refuses to start.
	defer func() {
		if err := release(); err != nil && c.Stderr != nil {
			fmt.Fprintf(c.Stderr, "agentbox: %v\n", err)
		}
	}()

	// The runner's own job: when agentbox exits or dies, closing this handle
	// kills the runner and, through it, the command's nested job.
	job, err := newJob(JobLimits{UI: JobUILimits})
	if err != nil {
		return 125, err
	}
	defer windows.CloseHandle(job)
	// Every process of the run has ended when Run returns: the after-run
	// check (package supervise) comes next, and nothing of the box may
	// change a file behind it.
	defer endJob(job, c)

	if spec.ProxyPort != 0 {
		ln, ok := w.proxy.(net.Listener)
		w.proxy = nil
		if !ok || ln.Addr().(*net.TCPAddr).Port != spec.ProxyPort {
			if ok {
				ln.Close()
			}
			return 125, fmt.Errorf("network allowlist: the proxy's port %d was not reserved when the plan was made", spec.ProxyPort)
		}
		stop, err := startProxy(p, ln, job, c)
		if err != nil {
			return 125, err
		}
		defer stop()
	}

	inName, outName, errName := pipeName("in"), pipeName("out"), pipeName("err")
	toRunnerH, err := createPipe(inName, false, userSID)
	if err != nil {
		return 125, err
	}
	fromRunnerH, err := createPipe(outName, true, userSID)
	if err != nil {
		windows.CloseHandle(toRunnerH)
		return 125, err
	}
	errH, err := createPipe(errName, true, userSID)
	if err != nil {
		windows.CloseHandle(toRunnerH)
		windows.CloseHandle(fromRunnerH)
		return 125, err
	}
	// The window station and desktop: the run's own, on the interactive
	// desktop too (station.go); the runner and the command both start
	// there, and the box never runs on the user's desktop.
	me, _ := currentUserSID()
	desktop, closeDesktop, err := privateDesktop(stationSDDL(rec.GroupSID, me, spec.Spawn.RestrictingSIDs))
	if err != nil {
		windows.CloseHandle(toRunnerH)
		windows.CloseHandle(fromRunnerH)
		windows.CloseHandle(errH)
		return 125, fmt.Errorf("a window station and desktop of the run's own could not be made (the box never runs on your desktop): %w", err)
	}
	defer closeDesktop()
	proc, pid, err := launchRunner(exe, spec.User, password, []string{inName, outName, errName}, desktop, job)
	if err != nil {
		windows.CloseHandle(toRunnerH)
		windows.CloseHandle(fromRunnerH)
		windows.CloseHandle(errH)
		return 125, fmt.Errorf("starting the runner as %s: %w", spec.User, logonError(spec.User, err))
	}
	defer windows.CloseHandle(proc)
	if c.Started != nil {
		c.Started(int(pid))
	}
	// The runner's standard error first: from the moment it is connected,
	// whatever the runner writes there is kept, and every failure of the
	// runner after that is reported with it (a runner that crashes early
	// closes its other pipes before agentbox is done connecting them).
	var stderr said
	stderrDone := make(chan struct{})
	// broke is the error of a runner that broke off, with what it wrote:
	// once it has exited its pipe ends, and all it wrote is there.
	broke := func(err error) error {
		windows.WaitForSingleObject(proc, 5000)
		select {
		case <-stderrDone:
		case <-time.After(5 * time.Second):
		}
		return withSaid(err, stderr.String())
	}
	for i, h := range []windows.Handle{errH, toRunnerH, fromRunnerH} {
		if err := connectPipe(h, proc, pid, 30*time.Second); err != nil {
			windows.CloseHandle(toRunnerH)
			windows.CloseHandle(fromRunnerH)
			if i == 0 {
				windows.CloseHandle(errH)
				close(stderrDone)
			}
			if errors.Is(err, errRunnerGone) {
				var code uint32
				windows.GetExitCodeProcess(proc, &code)
				return 125, broke(errors.New(RunnerExitReason(code)))
			}
			windows.TerminateProcess(proc, 1)
			return 125, broke(fmt.Errorf("runner pipes: %w", err))
		}
		if i == 0 {
			go func() {
				f := os.NewFile(uintptr(errH), errName)
				io.Copy(&stderr, f)
				f.Close()
				close(stderrDone)
			}()
		}
	}
	toRunner := os.NewFile(uintptr(toRunnerH), inName)
	defer toRunner.Close()
	fromRunner := os.NewFile(uintptr(fromRunnerH), outName)
	defer fromRunner.Close()

	defer writeGitFiles(spec.Git)()
	req := spec.Spawn
	req.Desktop = desktop
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
		return 125, broke(fmt.Errorf("runner: %w", err))
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
			return 125, broke(fmt.Errorf("runner: %w", err))
		}
		if err := m.Apply(FromRunner, msg.Type); err != nil {
			return 125, broke(fmt.Errorf("runner broke the protocol: %w", err))
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
// so HKCU and %USERPROFILE% exist for the tools it runs. desktop is the
// run's own window station and desktop (station.go), named in the call's
// STARTUPINFO: named explicitly, it gets no grant from the Secondary Logon
// service (which grants the new logon the caller's desktop only when none
// is named), and its own DACL grants the sandbox group.
func startRunner(exe, user, password string, pipes []string, desktop string, job windows.Handle) (windows.Handle, uint32, error) {
	u, _ := windows.UTF16PtrFromString(user)
	dot, _ := windows.UTF16PtrFromString(".")
	pw, err := windows.UTF16PtrFromString(password)
	if err != nil {
		return 0, 0, err
	}
	app, _ := windows.UTF16PtrFromString(exe)
	line, err := CommandLine(append(append([]string{exe, RunnerArg}, pipes...), strconv.Itoa(os.Getpid())))
	if err != nil {
		return 0, 0, err
	}
	cmd, _ := windows.UTF16PtrFromString(line)
	// The runner's folder may be one the sandbox user cannot open (it may
	// read agentbox.exe alone): it starts in the system folder.
	sysdir, err := windows.GetSystemDirectory()
	if err != nil {
		return 0, 0, err
	}
	cwd, _ := windows.UTF16PtrFromString(sysdir)
	if !isPrivateDesktop(desktop) {
		return 0, 0, fmt.Errorf("the runner's desktop %q is not a window station and desktop of the run's own", desktop)
	}
	si := &windows.StartupInfo{Cb: uint32(unsafe.Sizeof(windows.StartupInfo{}))}
	if si.Desktop, err = windows.UTF16PtrFromString(desktop); err != nil {
		return 0, 0, err
	}
	var pi windows.ProcessInformation
	flags := uint32(windows.CREATE_SUSPENDED | windows.CREATE_NO_WINDOW | windows.CREATE_UNICODE_ENVIRONMENT)
	if err := createProcessWithLogon(u, dot, pw, logonWithProfile, app, cmd, flags, nil, cwd, si, &pi); err != nil {
		return 0, 0, err
	}
	if err := resumeInJob(job, pi.Process, pi.Thread); err != nil {
		windows.CloseHandle(pi.Process)
		return 0, 0, err
	}
	return pi.Process, pi.ProcessId, nil
}

// resumeInJob puts a process started suspended in job and resumes it, or
// ends it. A runner outside agentbox's job would outlive agentbox (closing
// the job's handle would not kill it, nor the command it started), and the
// allowlist proxy, which serves only processes of that job, would refuse
// every connection of the run: so a failed assignment fails the run.
// thread is closed either way.
func resumeInJob(job, process, thread windows.Handle) error {
	defer windows.CloseHandle(thread)
	if err := windows.AssignProcessToJobObject(job, process); err != nil {
		windows.TerminateProcess(process, 1)
		return fmt.Errorf("putting the runner in agentbox's job object: %w; without it the runner could outlive agentbox", err)
	}
	if _, err := windows.ResumeThread(thread); err != nil {
		windows.TerminateProcess(process, 1)
		return fmt.Errorf("resuming the runner: %w", err)
	}
	return nil
}

// startProxy serves the allowlist proxy on ln (127.0.0.1, a port setup
// opened) for this run, and closes ln when stopped. The firewall lets the
// offline user reach the proxy ports and nothing else, but any local
// process can connect to a loopback port, so each connection is served
// only when the process that opened it is in job (the runner's job, which
// holds the command's nested job and every process the command starts).
func startProxy(p *plan.Plan, ln net.Listener, job windows.Handle, c *backend.Context) (func(), error) {
	rules, err := netproxy.Compile(p.Network.Allow, p.Network.Deny)
	if err != nil {
		ln.Close()
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
			ln.Close()
			return nil, fmt.Errorf("opening the network log %s: %w", c.NetLog, err)
		}
		popts.Log = logf
	}
	proxy, err := netproxy.New(rules, popts)
	if err != nil {
		ln.Close()
		if logf != nil {
			logf.Close()
		}
		return nil, fmt.Errorf("network: %w", err)
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
// our remote) is in job. The owner is asked again for a short while when
// the TCP table lists the connection without one (askOwner).
func inJob(conn net.Conn, job windows.Handle) error {
	ra, ok := conn.RemoteAddr().(*net.TCPAddr)
	la, ok2 := conn.LocalAddr().(*net.TCPAddr)
	if !ok || !ok2 || ra.IP.To4() == nil || la.IP.To4() == nil {
		return errors.New("not an IPv4 TCP connection")
	}
	pid, err := askOwner(func() (uint32, error) {
		rows, err := tcpTable()
		if err != nil {
			return 0, err
		}
		return connOwner(rows, [4]byte(ra.IP.To4()), uint16(ra.Port), [4]byte(la.IP.To4()), uint16(la.Port))
	}, ownerTries, ownerWait, time.Sleep)
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

// endJob ends every process in job and waits, at most 30 seconds, until
// none is left; a process that outlives the wait is reported.
func endJob(job windows.Handle, c *backend.Context) {
	windows.TerminateJobObject(job, 1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var info struct {
			TotalUserTime, TotalKernelTime, ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime int64
			TotalPageFaultCount, TotalProcesses, ActiveProcesses, TotalTerminatedProcesses     uint32
		}
		err := windows.QueryInformationJobObject(job, windows.JobObjectBasicAccountingInformation,
			uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil)
		if err != nil || info.ActiveProcesses == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.Emit(event.Event{Kind: event.Warning, Detail: fmt.Sprintf("%d processes of the run were still ending 30 s after agentbox ended them", info.ActiveProcesses)})
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
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
