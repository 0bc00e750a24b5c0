package winsandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/plan"
	"golang.org/x/sys/windows"
)

// machineFacts are what the spec needs from this machine: the proxy port
// setup chose, and the folders of the runner (agentbox.exe) and of the
// command, which the sandbox users must be able to read.
func machineFacts(p *plan.Plan) Options {
	o := Options{Exists: fileExists, ProxyPort: DefaultProxyPort}
	if rec, err := loadRecord(); err == nil && rec.ProxyPort != 0 {
		o.ProxyPort = rec.ProxyPort
	}
	if exe, err := os.Executable(); err == nil {
		o.ReadRoots = append(o.ReadRoots, filepath.Dir(exe))
	}
	if len(p.Command) > 0 {
		if prog := lookPath(p.Command[0], p.Environ, fileExists); prog != "" {
			o.ReadRoots = append(o.ReadRoots, filepath.Dir(prog))
		}
	}
	return o
}

// Available reports whether setup has been done.
func (w *Windows) Available() error {
	if _, err := loadRecord(); err != nil {
		return &backend.Unavailable{Reason: "the Windows sandbox is not set up: " + err.Error(), Fix: "run `agentbox setup` once in an elevated terminal"}
	}
	return nil
}

// SelfCheck cannot yet verify anything from inside a Windows box.
func (w *Windows) SelfCheck() (string, bool) {
	return "nothing a process can check for itself yet on Windows", true
}

// Run runs the completed plan's command in the Windows sandbox.
func (w *Windows) Run(p *plan.Plan, c *backend.Context) (int, error) {
	spec, err := SpecOf(p)
	if err != nil {
		return 125, err
	}
	code, err := run(p, spec, Stdio{Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr})
	if err != nil && (code == 126 || code == 127) {
		return code, &backend.StatusError{Status: code, Err: err}
	}
	return code, err
}

// run applies the spec's ACEs (recorded, released at exit), starts the
// runner as the sandbox user in a kill-on-close job of its own, sends the
// spawn request and relays stdio until the exit message.
func run(p *plan.Plan, spec *Spec, stdio Stdio) (int, error) {
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
		return 125, fmt.Errorf("sandbox user %s: %v; run `agentbox setup` in an elevated terminal", spec.User, err)
	}
	release, err := applyACEs(spec, rec.GroupSID)
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

	inName, outName := pipeName("in"), pipeName("out")
	toRunner, err := createPipe(inName, false, userSID)
	if err != nil {
		return 125, err
	}
	defer toRunner.Close()
	fromRunner, err := createPipe(outName, true, userSID)
	if err != nil {
		return 125, err
	}
	defer fromRunner.Close()

	proc, err := startRunner(exe, spec.User, password, inName, outName, job)
	if err != nil {
		return 125, fmt.Errorf("starting the runner as %s: %w", spec.User, err)
	}
	defer windows.CloseHandle(proc)

	connected := make(chan error, 1)
	go func() {
		if err := connectPipe(toRunner); err != nil {
			connected <- err
			return
		}
		connected <- connectPipe(fromRunner)
	}()
	select {
	case err := <-connected:
		if err != nil {
			return 125, fmt.Errorf("runner pipes: %w", err)
		}
	case <-time.After(30 * time.Second):
		windows.TerminateProcess(proc, 1)
		return 125, errors.New("the runner did not connect within 30s")
	}

	req := spec.Spawn
	console, restore := consoleMode(stdio)
	defer restore()
	if console {
		req.Console = true
		req.Cols, req.Rows = consoleSize()
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
			n, err := stdio.Stdin.Read(buf)
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
		go watchResize(toRunner, req.Cols, req.Rows)
	}
	for {
		msg, err := ReadMessage(fromRunner)
		if err != nil {
			return 125, fmt.Errorf("runner: %w", err)
		}
		if err := m.Apply(FromRunner, msg.Type); err != nil {
			return 125, fmt.Errorf("runner broke the protocol: %w", err)
		}
		switch msg.Type {
		case TypeOutput:
			w := stdio.Stdout
			if msg.Stream == Stderr {
				w = stdio.Stderr
			}
			w.Write(msg.Data)
		case TypeExit:
			return int(msg.Code), nil
		case TypeError:
			if msg.Error.Stage == "spawn" && (msg.Error.Code == uint32(windows.ERROR_FILE_NOT_FOUND) || msg.Error.Code == uint32(windows.ERROR_PATH_NOT_FOUND)) {
				return 127, msg.Error
			}
			if msg.Error.Stage == "spawn" {
				return 126, msg.Error
			}
			return 125, msg.Error
		}
	}
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// startRunner starts agentbox in runner mode as the sandbox user, suspended,
// puts it in job and resumes it. LOGON_WITH_PROFILE loads the user's profile
// so HKCU and %USERPROFILE% exist for the tools it runs.
func startRunner(exe, user, password, in, out string, job windows.Handle) (windows.Handle, error) {
	u, _ := windows.UTF16PtrFromString(user)
	dot, _ := windows.UTF16PtrFromString(".")
	pw, err := windows.UTF16PtrFromString(password)
	if err != nil {
		return 0, err
	}
	app, _ := windows.UTF16PtrFromString(exe)
	line, err := CommandLine([]string{exe, RunnerArg, in, out})
	if err != nil {
		return 0, err
	}
	cmd, _ := windows.UTF16PtrFromString(line)
	cwd, _ := windows.UTF16PtrFromString(filepath.Dir(exe))
	si := &windows.StartupInfo{Cb: uint32(unsafe.Sizeof(windows.StartupInfo{}))}
	var pi windows.ProcessInformation
	flags := uint32(windows.CREATE_SUSPENDED | windows.CREATE_NO_WINDOW | windows.CREATE_UNICODE_ENVIRONMENT)
	if err := createProcessWithLogon(u, dot, pw, logonWithProfile, app, cmd, flags, nil, cwd, si, &pi); err != nil {
		return 0, fmt.Errorf("CreateProcessWithLogonW: %w", err)
	}
	defer windows.CloseHandle(pi.Thread)
	// If the assignment fails (a job of the secondary logon service that
	// forbids nesting), the runner still ends itself when its pipes break.
	windows.AssignProcessToJobObject(job, pi.Process)
	if _, err := windows.ResumeThread(pi.Thread); err != nil {
		windows.TerminateProcess(pi.Process, 1)
		windows.CloseHandle(pi.Process)
		return 0, err
	}
	return pi.Process, nil
}

// consoleMode reports whether stdin is a console and, if so, puts it in raw
// VT input mode (so Ctrl-C travels as input to the pseudo console) and
// returns the function that restores it.
func consoleMode(stdio Stdio) (bool, func()) {
	f, ok := stdio.Stdin.(*os.File)
	if !ok {
		return false, func() {}
	}
	h := windows.Handle(f.Fd())
	var old uint32
	if windows.GetConsoleMode(h, &old) != nil {
		return false, func() {}
	}
	windows.SetConsoleMode(h, windows.ENABLE_VIRTUAL_TERMINAL_INPUT)
	out := windows.Handle(os.Stdout.Fd())
	var oldOut uint32
	windows.GetConsoleMode(out, &oldOut)
	windows.SetConsoleMode(out, oldOut|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING|windows.DISABLE_NEWLINE_AUTO_RETURN)
	return true, func() { windows.SetConsoleMode(h, old); windows.SetConsoleMode(out, oldOut) }
}

func consoleSize() (uint16, uint16) {
	var info windows.ConsoleScreenBufferInfo
	if windows.GetConsoleScreenBufferInfo(windows.Handle(os.Stdout.Fd()), &info) != nil {
		return 80, 25
	}
	return uint16(info.Window.Right - info.Window.Left + 1), uint16(info.Window.Bottom - info.Window.Top + 1)
}

// watchResize polls the console size (Windows has no SIGWINCH for this) and
// sends a resize message when it changes.
func watchResize(w io.Writer, cols, rows uint16) {
	for range time.Tick(250 * time.Millisecond) {
		c, r := consoleSize()
		if c != cols || r != rows {
			cols, rows = c, r
			if WriteMessage(w, &Message{Type: TypeResize, Cols: c, Rows: r}) != nil {
				return
			}
		}
	}
}
