package winsandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The runner is agentbox itself started as a sandbox user (by Run, with
// CreateProcessWithLogonW). It reads one spawn request, starts the command
// with a restricted token inside a job object, relays stdin, output and
// console size, and reports the exit code. It lives on the sandbox user's
// side of the boundary so that the command is born with that user's identity
// (which the firewall and the ACLs recognise), never with the caller's.

// exitTerminated is the exit code the job gets when the client asks for
// termination: STATUS_CONTROL_C_EXIT, what Windows itself reports for a
// console program ended by Ctrl-C.
const exitTerminated = 0xC000013A

// RunnerMain is the runner's entry point: args are the names of the three
// named pipes Run created (client→runner, runner→client, and the runner's
// standard error) and the process ID of the agentbox that created them.
// It returns the runner's own exit status (the command's status travels
// in the exit message); when it fails before its pipes work, that status
// says where and why (runnerFailure), since the runner has no console to
// print to.
func RunnerMain(args []string) int {
	errno := func(err error) uint32 {
		var e windows.Errno
		if errors.As(err, &e) {
			return uint32(e)
		}
		return 0
	}
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "agentbox: error: runner mode takes three pipe names and a process ID; it is started by agentbox run, not by hand")
		return int(runnerFailure(runnerStageArgs, 0))
	}
	server, err := strconv.ParseUint(args[3], 10, 32)
	if err != nil {
		return int(runnerFailure(runnerStageArgs, 0))
	}
	open := func(name string, access uint32, stage int) (*os.File, int) {
		f, err := openPipe(name, access, uint32(server))
		if err != nil {
			if strings.Contains(err.Error(), "not agentbox") {
				stage = runnerStageServer
			}
			return nil, int(runnerFailure(stage, errno(err)))
		}
		return f, 0
	}
	// Standard error first: from here on a panic or a fatal error of the
	// runner, and anything it prints, reach agentbox (said.go).
	stderr, code := open(args[2], windows.GENERIC_WRITE, runnerStageErr)
	if stderr == nil {
		return code
	}
	defer stderr.Close()
	os.Stderr = stderr
	if err := debug.SetCrashOutput(stderr, debug.CrashOptions{}); err != nil {
		fmt.Fprintln(stderr, "runner: SetCrashOutput:", err)
	}
	in, code := open(args[0], windows.GENERIC_READ, runnerStageIn)
	if in == nil {
		return code
	}
	defer in.Close()
	out, code := open(args[1], windows.GENERIC_WRITE, runnerStageOut)
	if out == nil {
		return code
	}
	defer out.Close()
	if runnerTestHook != nil {
		runnerTestHook()
	}
	return serveRunner(in, out)
}

// runnerTestHook, when set (by this package's tests, in the test binary
// started as a runner), runs once the runner's pipes work: a test makes
// the runner crash there.
var runnerTestHook func()

// runnerConn is the runner's end of the protocol: every message it sends or
// receives goes through the state machine first.
type runnerConn struct {
	r  io.Reader
	w  io.Writer
	mu sync.Mutex // guards m and serialises writes
	m  Machine
}

func (c *runnerConn) send(msg *Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.m.Apply(FromRunner, msg.Type); err != nil {
		return err
	}
	return WriteMessage(c.w, msg)
}

func (c *runnerConn) recv() (*Message, error) {
	msg, err := ReadMessage(c.r)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.m.Apply(FromClient, msg.Type); err != nil {
		return nil, err
	}
	return msg, nil
}

func (c *runnerConn) fail(stage string, err error) int {
	info := &ErrorInfo{Stage: stage, Message: err.Error()}
	var errno windows.Errno
	if errors.As(err, &errno) {
		info.Code = uint32(errno)
	}
	c.send(&Message{Type: TypeError, Error: info})
	return 1
}

// serveRunner runs the protocol over r and w until the command exits, the
// client goes away or something fails.
func serveRunner(r io.Reader, w io.Writer) int {
	c := &runnerConn{r: r, w: w}
	var req *SpawnRequest
	for req == nil {
		msg, err := c.recv()
		if err != nil {
			return c.fail("request", err)
		}
		switch msg.Type {
		case TypeTerminate:
			return c.fail("request", errors.New("terminated before the command started"))
		case TypeSpawn:
			req = msg.Spawn
		}
	}
	ch, stage, err := startChild(req)
	if err != nil {
		return c.fail(stage, err)
	}
	defer ch.close()
	if err := c.send(&Message{Type: TypeReady, PID: ch.pid}); err != nil {
		ch.kill()
		return 1
	}

	var pumps sync.WaitGroup
	pump := func(stream string, f *os.File) {
		defer pumps.Done()
		buf := make([]byte, MaxChunk)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				if c.send(&Message{Type: TypeOutput, Stream: stream, Data: append([]byte(nil), buf[:n]...)}) != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	pumps.Add(len(ch.outputs))
	for stream, f := range ch.outputs {
		go pump(stream, f)
	}

	// Client messages. A read error means agentbox is gone: the command must
	// not outlive it, so the whole job is killed.
	go func() {
		for {
			msg, err := c.recv()
			if err != nil {
				ch.kill()
				return
			}
			switch msg.Type {
			case TypeStdin:
				if ch.stdin != nil {
					ch.stdin.Write(msg.Data)
				}
			case TypeCloseStdin:
				if ch.stdin != nil {
					ch.stdin.Close()
				}
			case TypeResize:
				ch.resize(msg.Cols, msg.Rows)
			case TypeTerminate:
				ch.kill()
			}
		}
	}()

	code, err := ch.wait()
	if err != nil {
		return c.fail("wait", err)
	}
	// The command has exited: end whatever it left running (as the PID
	// namespace does on Linux), then let the output drain.
	ch.kill()
	ch.closeConsole()
	pumps.Wait()
	if err := c.send(&Message{Type: TypeExit, Code: code}); err != nil {
		return 1
	}
	return 0
}

// child is a started command and what the runner holds for it.
type child struct {
	pid     uint32
	process windows.Handle
	job     windows.Handle
	pty     windows.Handle // 0 when the command uses pipes
	stdin   *os.File
	outputs map[string]*os.File
	once    sync.Once
}

func (ch *child) kill() {
	// TerminateJobObject ends every process in the job, the command and all
	// it started, in one step; nothing can escape by breaking away because
	// the job does not allow breakaway.
	windows.TerminateJobObject(ch.job, exitTerminated)
}

func (ch *child) resize(cols, rows uint16) {
	if ch.pty != 0 {
		windows.ResizePseudoConsole(ch.pty, windows.Coord{X: int16(cols), Y: int16(rows)})
	}
}

func (ch *child) closeConsole() {
	ch.once.Do(func() {
		if ch.pty != 0 {
			// Closing the pseudo console ends its output stream so the
			// output pump sees EOF.
			windows.ClosePseudoConsole(ch.pty)
		}
	})
}

func (ch *child) wait() (uint32, error) {
	if _, err := windows.WaitForSingleObject(ch.process, windows.INFINITE); err != nil {
		return 0, err
	}
	var code uint32
	if err := windows.GetExitCodeProcess(ch.process, &code); err != nil {
		return 0, err
	}
	return code, nil
}

func (ch *child) close() {
	ch.closeConsole()
	if ch.stdin != nil {
		ch.stdin.Close()
	}
	for _, f := range ch.outputs {
		f.Close()
	}
	windows.CloseHandle(ch.process)
	// Closing the last handle to the job kills anything still in it
	// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE).
	windows.CloseHandle(ch.job)
}

// startChild makes the restricted token, the job and the stdio, and starts
// the command suspended, puts it in the job and resumes it. On failure it
// names the stage that failed.
func startChild(req *SpawnRequest) (*child, string, error) {
	if err := checkSpawnUI(req); err != nil {
		return nil, "desktop", err
	}
	token, err := restrictedToken(req.RestrictingSIDs)
	if err != nil {
		return nil, "token", err
	}
	defer token.Close()

	job, err := newJob(req.Limits)
	if err != nil {
		return nil, "job", err
	}
	ch := &child{job: job, outputs: map[string]*os.File{}}
	ok := false
	defer func() {
		if !ok {
			ch.close()
		}
	}()

	attrs, err := windows.NewProcThreadAttributeList(1)
	if err != nil {
		return nil, "spawn", err
	}
	defer attrs.Delete()
	si := &windows.StartupInfoEx{}
	si.Cb = uint32(unsafe.Sizeof(*si))
	inherit := false
	var childEnds []windows.Handle
	defer func() {
		for _, h := range childEnds {
			windows.CloseHandle(h)
		}
	}()

	if req.Console {
		// ConPTY: the command gets a real console whose input and output
		// are our two pipes; nothing is inherited.
		var ptyIn, ptyOut, inW, outR windows.Handle
		if err := windows.CreatePipe(&ptyIn, &inW, nil, 0); err != nil {
			return nil, "console", err
		}
		if err := windows.CreatePipe(&outR, &ptyOut, nil, 0); err != nil {
			windows.CloseHandle(ptyIn)
			windows.CloseHandle(inW)
			return nil, "console", err
		}
		childEnds = append(childEnds, ptyIn, ptyOut)
		ch.stdin = os.NewFile(uintptr(inW), "console-in")
		ch.outputs[Stdout] = os.NewFile(uintptr(outR), "console-out")
		size := windows.Coord{X: int16(max(req.Cols, 1)), Y: int16(max(req.Rows, 1))}
		if err := windows.CreatePseudoConsole(size, ptyIn, ptyOut, 0, &ch.pty); err != nil {
			return nil, "console", err
		}
		// STARTF_USESTDHANDLES with no handles: the command's standard
		// handles are the pseudo console's, never anything of the
		// runner's.
		si.Flags = windows.STARTF_USESTDHANDLES
		// The attribute's value is the HPCON itself, passed by value.
		if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE, *(*unsafe.Pointer)(unsafe.Pointer(&ch.pty)), unsafe.Sizeof(ch.pty)); err != nil {
			return nil, "console", err
		}
	} else {
		// Pipes: three anonymous pipes, of which only the command's ends
		// are inheritable, and PROC_THREAD_ATTRIBUTE_HANDLE_LIST makes sure
		// those three and nothing else are inherited.
		sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), InheritHandle: 1}
		mk := func(childReads bool) (ours windows.Handle, theirs windows.Handle, err error) {
			var r, w windows.Handle
			if err := windows.CreatePipe(&r, &w, sa, 0); err != nil {
				return 0, 0, err
			}
			ours, theirs = w, r
			if !childReads {
				ours, theirs = r, w
			}
			windows.SetHandleInformation(ours, windows.HANDLE_FLAG_INHERIT, 0)
			return ours, theirs, nil
		}
		inW, inR, err := mk(true)
		if err != nil {
			return nil, "stdio", err
		}
		ch.stdin = os.NewFile(uintptr(inW), "stdin")
		childEnds = append(childEnds, inR)
		for _, s := range []string{Stdout, Stderr} {
			r, w, err := mk(false)
			if err != nil {
				return nil, "stdio", err
			}
			ch.outputs[s] = os.NewFile(uintptr(r), s)
			childEnds = append(childEnds, w)
		}
		si.Flags = windows.STARTF_USESTDHANDLES
		si.StdInput, si.StdOutput, si.StdErr = childEnds[0], childEnds[1], childEnds[2]
		if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_HANDLE_LIST, unsafe.Pointer(&childEnds[0]), uintptr(len(childEnds))*unsafe.Sizeof(childEnds[0])); err != nil {
			return nil, "stdio", err
		}
		inherit = true
	}
	si.ProcThreadAttributeList = attrs.List()
	if req.Desktop != "" {
		if si.Desktop, err = windows.UTF16PtrFromString(req.Desktop); err != nil {
			return nil, "spawn", err
		}
	}

	env, err := envBlock(req.Env)
	if err != nil {
		return nil, "spawn", err
	}
	var app *uint16
	if req.Application != "" {
		if app, err = windows.UTF16PtrFromString(req.Application); err != nil {
			return nil, "spawn", err
		}
	}
	cmdline, err := windows.UTF16PtrFromString(req.CommandLine)
	if err != nil {
		return nil, "spawn", err
	}
	cwd, err := windows.UTF16PtrFromString(req.Cwd)
	if err != nil {
		return nil, "spawn", err
	}
	// CREATE_SUSPENDED: the command must not run a single instruction
	// before it is in the job, or it could start children outside it.
	flags := uint32(windows.CREATE_SUSPENDED | windows.CREATE_UNICODE_ENVIRONMENT | windows.EXTENDED_STARTUPINFO_PRESENT)
	var pi windows.ProcessInformation
	if err := windows.CreateProcessAsUser(token, app, cmdline, nil, nil, inherit, flags, &env[0], cwd, &si.StartupInfo, &pi); err != nil {
		return nil, "spawn", err
	}
	ch.process, ch.pid = pi.Process, pi.ProcessId
	if err := windows.AssignProcessToJobObject(job, pi.Process); err != nil {
		windows.TerminateProcess(pi.Process, 1)
		windows.CloseHandle(pi.Thread)
		return nil, "job", err
	}
	if _, err := windows.ResumeThread(pi.Thread); err != nil {
		windows.CloseHandle(pi.Thread)
		return nil, "spawn", err
	}
	windows.CloseHandle(pi.Thread)
	ok = true
	return ch, "", nil
}

// restrictedToken returns a primary token for the command: the runner's own
// token (the sandbox user's) made restricted with
//   - DISABLE_MAX_PRIVILEGE: every privilege but SeChangeNotifyPrivilege is
//     removed, so no backup/restore/debug privilege can bypass ACLs;
//   - LUA_TOKEN: a UAC-filtered (least-privilege) token;
//   - WRITE_RESTRICTED with restricting SIDs = the capability SIDs of this
//     run's writable roots, the runner's logon SID and Everyone: every
//     write access must be granted both to the user's normal SIDs and to
//     one of these, so the command can write only where a capability ACE
//     says so, even in folders Users may write (C:\ProgramData,
//     C:\Users\Public). Reads are not restricted, so the toolchain stays
//     usable.
//
// The logon SID is there because the window station, desktop and console
// objects of the session grant access through it; Everyone because the
// NUL device (`>nul` in every batch file) grants write to Everyone and to
// nothing a restricted token could otherwise carry. This is the set and
// order Codex's Windows sandbox uses (capability, logon, Everyone). The
// price: an object whose DACL grants Everyone write is writable from the
// box; Windows grants that on devices such as NUL, not on folders.
//
// SeChangeNotifyPrivilege ("bypass traverse checking") is enabled again
// explicitly: without it, reaching a writable root inside a profile the
// sandbox user may not list (C:\Users\me\proj) fails.
//
// The token's default DACL and the token object's own DACL are replaced
// by one granting the user, SYSTEM, the logon SID and the capability SIDs
// full access (token.go): objects the command creates without inheritance
// (named pipes, events, its processes) get that DACL, and without a
// restricting SID in it the command could not open its own objects for
// writing, nor adjust its own token as MSYS2 programs do.
//
// Reference: "Restricted Tokens" and CreateRestrictedToken,
// https://learn.microsoft.com/windows/win32/secauthz/restricted-tokens
func restrictedToken(capabilities []string) (windows.Token, error) {
	var self windows.Token
	access := uint32(windows.TOKEN_DUPLICATE | windows.TOKEN_QUERY | windows.TOKEN_ASSIGN_PRIMARY | windows.TOKEN_ADJUST_DEFAULT | windows.TOKEN_ADJUST_PRIVILEGES)
	if err := windows.OpenProcessToken(windows.CurrentProcess(), access, &self); err != nil {
		return 0, fmt.Errorf("OpenProcessToken: %w", err)
	}
	defer self.Close()
	var sids []windows.SIDAndAttributes
	for _, s := range capabilities {
		sid, err := windows.StringToSid(s)
		if err != nil {
			return 0, fmt.Errorf("capability SID %q: %w", s, err)
		}
		sids = append(sids, windows.SIDAndAttributes{Sid: sid})
	}
	logon, err := logonSID(self)
	if err != nil {
		return 0, err
	}
	everyone, err := windows.CreateWellKnownSid(windows.WinWorldSid)
	if err != nil {
		return 0, err
	}
	sids = append(sids, windows.SIDAndAttributes{Sid: logon}, windows.SIDAndAttributes{Sid: everyone})
	tok, err := createRestrictedToken(self, disableMaxPrivilege|luaToken|writeRestricted, sids)
	// The SIDs live in Go memory that the call reads through pointers the
	// garbage collector does not see.
	runtime.KeepAlive(sids)
	if err != nil {
		return 0, err
	}
	if err := enablePrivilege(tok, "SeChangeNotifyPrivilege"); err != nil {
		tok.Close()
		return 0, err
	}
	user, err := self.GetTokenUser()
	if err != nil {
		tok.Close()
		return 0, fmt.Errorf("GetTokenInformation(TokenUser): %w", err)
	}
	// The token's own DACL and its default DACL (token.go).
	var entries []windows.EXPLICIT_ACCESS
	var owners []*windows.SID
	for _, s := range tokenDACLSIDs(user.User.Sid.String(), logon.String(), capabilities) {
		sid, err := windows.StringToSid(s)
		if err != nil {
			tok.Close()
			return 0, fmt.Errorf("token DACL SID %q: %w", s, err)
		}
		owners = append(owners, sid)
		entries = append(entries, windows.EXPLICIT_ACCESS{
			AccessPermissions: windows.GENERIC_ALL,
			AccessMode:        windows.GRANT_ACCESS,
			Trustee:           windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeType: windows.TRUSTEE_IS_UNKNOWN, TrusteeValue: windows.TrusteeValueFromSID(sid)},
		})
	}
	acl, err := windows.ACLFromEntries(entries, nil)
	runtime.KeepAlive(owners) // TrusteeValueFromSID keeps only a uintptr
	if err != nil {
		tok.Close()
		return 0, fmt.Errorf("default DACL: %w", err)
	}
	dd := struct{ DefaultDacl *windows.ACL }{acl}
	if err := windows.SetTokenInformation(tok, windows.TokenDefaultDacl, (*byte)(unsafe.Pointer(&dd)), uint32(unsafe.Sizeof(dd))); err != nil {
		tok.Close()
		return 0, fmt.Errorf("SetTokenInformation(TokenDefaultDacl): %w", err)
	}
	// A handle with WRITE_DAC, whatever access CreateRestrictedToken's
	// handle has: the runner's own default DACL grants its user full
	// access to the token object it made.
	var wd windows.Handle
	me := windows.CurrentProcess()
	if err := windows.DuplicateHandle(me, windows.Handle(tok), me, &wd, windows.WRITE_DAC, false, 0); err != nil {
		tok.Close()
		return 0, fmt.Errorf("DuplicateHandle(token, WRITE_DAC): %w", err)
	}
	err = windows.SetSecurityInfo(wd, windows.SE_KERNEL_OBJECT, windows.DACL_SECURITY_INFORMATION, nil, nil, acl, nil)
	windows.CloseHandle(wd)
	if err != nil {
		tok.Close()
		return 0, fmt.Errorf("SetSecurityInfo(token DACL): %w", err)
	}
	return tok, nil
}

// enablePrivilege enables a privilege the token holds.
func enablePrivilege(tok windows.Token, name string) error {
	var luid windows.LUID
	n, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return err
	}
	if err := windows.LookupPrivilegeValue(nil, n, &luid); err != nil {
		return fmt.Errorf("LookupPrivilegeValue(%s): %w", name, err)
	}
	tp := windows.Tokenprivileges{PrivilegeCount: 1}
	tp.Privileges[0] = windows.LUIDAndAttributes{Luid: luid, Attributes: windows.SE_PRIVILEGE_ENABLED}
	// AdjustTokenPrivileges succeeds without enabling anything when the
	// token lacks the privilege and says so only in the last error, which
	// Call captures right after the call.
	r, _, e := procAdjustTokenPrivileges.Call(uintptr(tok), 0, uintptr(unsafe.Pointer(&tp)), 0, 0, 0)
	if r == 0 {
		return failed("AdjustTokenPrivileges("+name+")", e)
	}
	if e == windows.ERROR_NOT_ALL_ASSIGNED {
		return fmt.Errorf("AdjustTokenPrivileges(%s): the token does not hold it", name)
	}
	return nil
}

// logonSID returns the logon SID in a token's groups.
func logonSID(t windows.Token) (*windows.SID, error) {
	groups, err := t.GetTokenGroups()
	if err != nil {
		return nil, fmt.Errorf("GetTokenInformation(TokenGroups): %w", err)
	}
	for _, g := range groups.AllGroups() {
		if g.Attributes&windows.SE_GROUP_LOGON_ID == windows.SE_GROUP_LOGON_ID {
			return g.Sid.Copy()
		}
	}
	return nil, errors.New("the runner's token has no logon SID")
}

// newJob creates the job object the command runs in.
//
//   - JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: when the runner's handle closes
//     (it exits or dies), every process in the job is killed, so no
//     orphan outlives agentbox.
//   - No JOB_OBJECT_LIMIT_BREAKAWAY_OK or SILENT_BREAKAWAY_OK: a process in
//     the job cannot start children outside it (CREATE_BREAKAWAY_FROM_JOB
//     fails), so nothing escapes the kill.
//   - JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION: a crashing process dies
//     instead of waiting on an error dialog no one sees.
//   - limits.UI: the UI restrictions (station.go), JobUILimits on both
//     jobs of every run; a job that cannot get them is not used.
//
// Model: Tailscale's createJob in util/winutil/s4u/s4u_windows.go.
func newJob(limits JobLimits) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("CreateJobObject: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION
	if limits.ActiveProcesses > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		info.BasicLimitInformation.ActiveProcessLimit = limits.ActiveProcesses
	}
	if limits.MemoryBytes > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_MEMORY
		info.JobMemoryLimit = uintptr(limits.MemoryBytes)
	}
	if limits.CPUSeconds > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_TIME
		info.BasicLimitInformation.PerJobUserTimeLimit = int64(limits.CPUSeconds) * 10_000_000 // 100 ns units
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("SetInformationJobObject: %w", err)
	}
	if limits.UI != 0 {
		if err := setUILimits(job, limits.UI); err != nil {
			windows.CloseHandle(job)
			return 0, err
		}
	}
	return job, nil
}

// envBlock encodes an environment as CreateProcess wants it with
// CREATE_UNICODE_ENVIRONMENT: NUL-terminated UTF-16 strings and a final NUL.
func envBlock(env []string) ([]uint16, error) {
	var b []uint16
	for _, kv := range env {
		u, err := windows.UTF16FromString(kv)
		if err != nil {
			return nil, fmt.Errorf("environment entry %q: %w", kv, err)
		}
		b = append(b, u...)
	}
	if len(b) == 0 {
		b = append(b, 0)
	}
	return append(b, 0), nil
}
