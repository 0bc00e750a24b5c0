package winsandbox

// These tests run only on Windows, and in CI under Wine
// (scripts/test-windows.sh). Under Wine they prove the Windows code paths
// run end to end — named pipes with a DACL, the codec over them, the
// runner's protocol loop, a restricted token being made, a job object, a
// real child process and its output and exit code — but not that anything
// is enforced: Wine accepts tokens, ACLs and job limits without applying
// them.

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

func selfSID(t *testing.T) string {
	t.Helper()
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	return u.User.Sid.String()
}

// pipePair creates a client→runner and a runner→client pipe and returns
// (client writes, runner reads, runner writes, client reads). Both ends
// are in this process, so the client and server checks expect its PID.
func pipePair(t *testing.T) (cw, rr, rw, cr *os.File) {
	t.Helper()
	sid := selfSID(t)
	me := uint32(os.Getpid())
	inName, outName := pipeName("in"), pipeName("out")
	inH, err := createPipe(inName, false, sid) // server writes, runner reads
	if err != nil {
		t.Fatal(err)
	}
	outH, err := createPipe(outName, true, sid) // server reads, runner writes
	if err != nil {
		t.Fatal(err)
	}
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan [2]opened, 1)
	go func() {
		a, errA := openPipe(inName, windows.GENERIC_READ, me)
		b, errB := openPipe(outName, windows.GENERIC_WRITE, me)
		done <- [2]opened{{a, errA}, {b, errB}}
	}()
	if err := connectPipe(inH, 0, me, 30*time.Second); err != nil {
		t.Fatalf("connecting in: %v", err)
	}
	if err := connectPipe(outH, 0, me, 30*time.Second); err != nil {
		t.Fatalf("connecting out: %v", err)
	}
	o := <-done
	if o[0].err != nil || o[1].err != nil {
		t.Fatalf("opening pipes: %v, %v", o[0].err, o[1].err)
	}
	in, out := os.NewFile(uintptr(inH), inName), os.NewFile(uintptr(outH), outName)
	t.Cleanup(func() { in.Close(); out.Close(); o[0].f.Close(); o[1].f.Close() })
	return in, o[0].f, o[1].f, out
}

// TestWindowsPipeRefusesOtherClient: a client that is not the expected
// process (another run's command racing to the pipe) is refused, and so is
// a server that is not the expected agentbox.
func TestWindowsPipeRefusesOtherClient(t *testing.T) {
	sid := selfSID(t)
	name := pipeName("in")
	h, err := createPipe(name, false, sid)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	go func() {
		f, err := openPipe(name, windows.GENERIC_READ, uint32(os.Getpid()))
		if err == nil {
			time.Sleep(time.Second)
			f.Close()
		}
	}()
	err = connectPipe(h, 0, uint32(os.Getpid())+4, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "not the runner") {
		t.Fatalf("connectPipe with a foreign client: %v, want a refusal", err)
	}
	name2 := pipeName("out")
	h2, err := createPipe(name2, true, sid)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h2)
	if _, err := openPipe(name2, windows.GENERIC_WRITE, uint32(os.Getpid())+4); err == nil || !strings.Contains(err.Error(), "not agentbox") {
		t.Fatalf("openPipe with a foreign server: %v, want a refusal", err)
	}
}

// TestWindowsConnectGivesUp: waiting for a client ends at the timeout, and
// the pipe can be closed afterwards (nothing stays blocked).
func TestWindowsConnectGivesUp(t *testing.T) {
	h, err := createPipe(pipeName("in"), false, selfSID(t))
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	if err := connectPipe(h, 0, 1, 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not connect") {
		t.Fatalf("connectPipe without a client: %v", err)
	}
}

func TestWindowsCodecOverNamedPipes(t *testing.T) {
	cw, rr, rw, cr := pipePair(t)
	for _, m := range sampleMessages() {
		go func() { WriteMessage(cw, m) }()
		got, err := ReadMessage(rr)
		if err != nil {
			t.Fatalf("%s over pipe: %v", m.Type, err)
		}
		if got.Type != m.Type {
			t.Fatalf("got %s, want %s", got.Type, m.Type)
		}
	}
	big := &Message{Type: TypeOutput, Stream: Stdout, Data: []byte(strings.Repeat("x", MaxChunk))}
	go func() { WriteMessage(rw, big) }()
	got, err := ReadMessage(cr)
	if err != nil || len(got.Data) != MaxChunk {
		t.Fatalf("64 KiB chunk over pipe: %v", err)
	}
}

func TestWindowsRestrictedToken(t *testing.T) {
	tok, err := restrictedToken([]string{CapabilitySID(`C:\agentbox-test`)})
	if err != nil {
		t.Fatal(err)
	}
	tok.Close()
}

func TestWindowsJob(t *testing.T) {
	job, err := newJob(JobLimits{ActiveProcesses: 8, MemoryBytes: 1 << 30, CPUSeconds: 60, UI: JobUILimits})
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(job)
	// The UI restrictions read back as set.
	var info windows.JOBOBJECT_BASIC_UI_RESTRICTIONS
	if err := windows.QueryInformationJobObject(job, windows.JobObjectBasicUIRestrictions, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		if underWine() {
			// Wine accepts the restrictions and cannot report them.
			t.Logf("QueryInformationJobObject(JobObjectBasicUIRestrictions) under Wine: %v", err)
			return
		}
		t.Fatalf("QueryInformationJobObject(JobObjectBasicUIRestrictions): %v", err)
	}
	if info.UIRestrictionsClass != JobUILimits {
		t.Errorf("the job's UI restrictions are %s, want %s", uiLimitText(info.UIRestrictionsClass), uiLimitText(JobUILimits))
	}
}

// TestWindowsUILimitValues: the UI restriction values station.go declares
// are Windows' own.
func TestWindowsUILimitValues(t *testing.T) {
	want := uint32(windows.JOB_OBJECT_UILIMIT_HANDLES | windows.JOB_OBJECT_UILIMIT_READCLIPBOARD | windows.JOB_OBJECT_UILIMIT_WRITECLIPBOARD |
		windows.JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS | windows.JOB_OBJECT_UILIMIT_DISPLAYSETTINGS | windows.JOB_OBJECT_UILIMIT_GLOBALATOMS |
		windows.JOB_OBJECT_UILIMIT_DESKTOP | windows.JOB_OBJECT_UILIMIT_EXITWINDOWS)
	if JobUILimits != want {
		t.Errorf("JobUILimits = %#x, Windows' flags give %#x", JobUILimits, want)
	}
}

// TestWindowsRunnerRefusesUserDesktop: the runner starts nothing on the
// user's desktop, nor in a job without the UI restrictions.
func TestWindowsRunnerRefusesUserDesktop(t *testing.T) {
	_, _, e := runRunnerOn(t, desktopName(), `cmd.exe /d /c echo on the user's desktop`, "", false)
	if e == nil || e.Stage != "desktop" {
		t.Fatalf("a spawn on %q gave %+v, want a desktop error", desktopName(), e)
	}
}

// runRunner runs serveRunner over real pipes with a spawn request for
// cmdline, on a window station and desktop of its own as every run is,
// and returns the output and exit code the client saw.
func runRunner(t *testing.T, cmdline string, stdin string, terminate bool) (string, uint32, *ErrorInfo) {
	t.Helper()
	cwd, _ := os.Getwd()
	d, closeDesktop, err := privateDesktop(stationSDDL(selfSID(t), selfSID(t), []string{CapabilitySID(cwd)}))
	if err != nil {
		t.Fatal(err)
	}
	defer closeDesktop()
	return runRunnerOn(t, d, cmdline, stdin, terminate)
}

// runRunnerOn is runRunner with the command on desktop.
func runRunnerOn(t *testing.T, desktop, cmdline string, stdin string, terminate bool) (string, uint32, *ErrorInfo) {
	t.Helper()
	cw, rr, rw, cr := pipePair(t)
	served := make(chan int, 1)
	go func() { served <- serveRunner(rr, rw); rw.Close() }()
	cwd, _ := os.Getwd()
	req := &SpawnRequest{
		CommandLine:     cmdline,
		Args:            strings.Fields(cmdline),
		Cwd:             cwd,
		Env:             sortEnv(os.Environ()),
		RestrictingSIDs: []string{CapabilitySID(cwd)},
		Limits:          JobLimits{UI: JobUILimits},
		Desktop:         desktop,
	}
	var m Machine
	send := func(msg *Message) {
		if err := m.Apply(FromClient, msg.Type); err != nil {
			t.Fatal(err)
		}
		if err := WriteMessage(cw, msg); err != nil {
			t.Fatal(err)
		}
	}
	send(&Message{Type: TypeSpawn, Spawn: req})
	var out strings.Builder
	deadline := time.AfterFunc(60*time.Second, func() { cw.Close(); cr.Close() })
	defer deadline.Stop()
	for {
		msg, err := ReadMessage(cr)
		if err == io.EOF {
			t.Fatal("runner closed the pipe without exit or error")
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Apply(FromRunner, msg.Type); err != nil {
			t.Fatal(err)
		}
		switch msg.Type {
		case TypeReady:
			if msg.PID == 0 {
				t.Error("ready without a pid")
			}
			if stdin != "" {
				send(&Message{Type: TypeStdin, Data: []byte(stdin)})
			}
			send(&Message{Type: TypeCloseStdin})
			if terminate {
				send(&Message{Type: TypeTerminate})
			}
		case TypeOutput:
			out.Write(msg.Data)
		case TypeExit:
			<-served
			return out.String(), msg.Code, nil
		case TypeError:
			<-served
			return out.String(), 0, msg.Error
		}
	}
}

func TestWindowsRunnerEndToEnd(t *testing.T) {
	out, code, e := runRunner(t, `cmd.exe /d /c echo hello from the runner& exit 3`, "", false)
	if e != nil {
		t.Fatal(e)
	}
	if !strings.Contains(out, "hello from the runner") || code != 3 {
		t.Errorf("output %q, exit %d; want the greeting and 3", out, code)
	}
}

func TestWindowsRunnerStdin(t *testing.T) {
	// cmd.exe without /c reads its commands from stdin.
	out, code, e := runRunner(t, `cmd.exe /d /q`, "echo read from stdin\r\nexit 5\r\n", false)
	if e != nil {
		t.Fatal(e)
	}
	// Wine's cmd.exe ignores the code of an `exit 5` read from stdin, so
	// only the output is checked.
	if !strings.Contains(out, "read from stdin") {
		t.Errorf("cmd.exe fed by stdin gave %q, exit %d", out, code)
	}
}

func TestWindowsRunnerTerminate(t *testing.T) {
	_, code, e := runRunner(t, `cmd.exe /d /c ping -n 30 127.0.0.1`, "", true)
	if e != nil {
		t.Fatal(e)
	}
	if code != exitTerminated {
		t.Errorf("terminated command exited %#x, want %#x", code, exitTerminated)
	}
}

func TestWindowsRunnerSpawnError(t *testing.T) {
	_, _, e := runRunner(t, `C:\no\such\program.exe`, "", false)
	if e == nil || e.Stage != "spawn" || e.Code == 0 {
		t.Fatalf("error = %+v, want a spawn error with a Windows code", e)
	}
}

func TestWindowsDPAPIRoundTrip(t *testing.T) {
	pw, err := newPassword()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := protect([]byte(pw))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(blob), pw) {
		t.Fatal("the protected blob holds the password in clear")
	}
	got, err := unprotect(blob)
	if err != nil || string(got) != pw {
		t.Fatalf("unprotect = %q, %v", got, err)
	}
}

// TestWindowsDesktopName: desktopName reads this process's window station
// and desktop ("WinSta0\Default" on an interactive desktop), the one a
// spawn request may never name.
func TestWindowsDesktopName(t *testing.T) {
	d := desktopName()
	if ws, desk, ok := strings.Cut(d, `\`); !ok || ws == "" || desk == "" {
		t.Fatalf("desktopName() = %q, want STATION\\DESKTOP", d)
	}
	t.Logf("desktop: %s", d)
}

// TestWindowsPrivateDesktop: the window station and desktop every run
// makes can be made, and the runner starts a command on it that loads
// user32 (cmd.exe does), with its output and exit code as on any other.
// Under Wine this shows the calls and the command's start; that the
// sandbox user gets access there only through the DACL is for Windows.
func TestWindowsPrivateDesktop(t *testing.T) {
	cwd, _ := os.Getwd()
	d, closeDesktop, err := privateDesktop(stationSDDL(selfSID(t), selfSID(t), []string{CapabilitySID(cwd)}))
	if err != nil {
		t.Fatal(err)
	}
	defer closeDesktop()
	if !isPrivateDesktop(d) || strings.HasSuffix(d, `\Default`) {
		t.Errorf("private desktop %q, want agentbox-…\\agentbox", d)
	}
	out, code, e := runRunnerOn(t, d, `cmd.exe /d /c echo on a desktop of its own& exit 4`, "", false)
	if e != nil {
		t.Fatal(e)
	}
	if !strings.Contains(out, "on a desktop of its own") || code != 4 {
		t.Errorf("output %q, exit %d; want the greeting and 4", out, code)
	}
}
