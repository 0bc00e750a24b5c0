package winsandbox

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
)

// TestWindowsRunUnderWine runs a plan through the Windows backend's whole
// run path under Wine: the setup record and this user's passwords (made
// here, as setup would), Complete with the machine's facts, Prepare, the
// ACE record and DACL writes, the runner's job, the named pipes with their
// process checks, CreateProcessWithLogonW (which Wine runs as the caller),
// the runner's restricted token and job, the spawn request, the output
// relay and the exit status; then a command that is not found (127). Wine
// enforces none of the security calls, and real Windows needs `agentbox
// setup` first, which the Windows CI workflow runs before its real runs;
// so this test runs under Wine only.
func TestWindowsRunUnderWine(t *testing.T) {
	me := wineSetup(t)
	// The real launcher fails there, and says so (not "success").
	if _, _, err := startRunner(os.Args[0], OnlineUser, "x", []string{`\\.\pipe\none`, `\\.\pipe\none`, `\\.\pipe\none`}, "", 0); err == nil || strings.Contains(err.Error(), "completed successfully") {
		t.Errorf("CreateProcessWithLogonW under Wine: %v, want a failure that does not read as success", err)
	}
	w := New()
	if err := w.Available(); err != nil {
		t.Fatalf("Available after setup: %v", err)
	}
	project := tempDir(t)
	tmp := filepath.Join(tempDir(t), "agentbox-"+me)
	run := func(net plan.Network, command ...string) (int, string, error) {
		p := winePlan(project, tmp, "RUN", net, command...)
		if err := w.Complete(p); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		return wineRun(w, p)
	}
	open := plan.Network{Mode: plan.NetOpen}
	code, out, err := run(open, "cmd", "/d", "/c", "echo hello from the box& exit 3")
	if err != nil || code != 3 || !strings.Contains(out, "hello from the box") {
		t.Errorf("run: status %d, output %q, error %v; want 3 and the greeting", code, out, err)
	}
	// The run's fresh folder was made for it (its ACL could not be set
	// otherwise: the run would fail) and is gone after it.
	if _, err := os.Stat(filepath.Join(tmp, "RUN")); !os.IsNotExist(err) {
		t.Errorf("the run's fresh folder is still there after the run: %v", err)
	}
	code, _, err = run(open, "nosuch-agentbox-command")
	var se *backend.StatusError
	if code != 127 || err == nil || !strings.Contains(err.Error(), "command not found") || !errorsAs(err, &se) {
		t.Errorf("missing command: status %d, error %v; want 127 with a StatusError", code, err)
	}
	// git in the box reads a global configuration of its own with the
	// caller's identity, not the caller's profile (which the sandbox users
	// cannot read), and none of the caller's other settings.
	fakeHome := tempDir(t)
	if err := os.WriteFile(filepath.Join(fakeHome, ".gitconfig"), []byte("[user]\n\tname = Ada Lovelace\n[credential]\n\thelper = secret-helper\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gp := winePlan(project, tmp, "RUN", open, "cmd", "/d", "/c", "type %GIT_CONFIG_GLOBAL%")
	gp.Identity.Home = fakeHome
	if err := w.Complete(gp); err != nil {
		t.Fatal(err)
	}
	code, out, err = wineRun(w, gp)
	if err != nil || code != 0 || !strings.Contains(out, "Ada Lovelace") || strings.Contains(out, "secret-helper") {
		t.Errorf("the box's global git config: status %d, output %q, error %v; want the caller's user.name and no credential helper", code, out, err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "RUN")); !os.IsNotExist(err) {
		t.Errorf("the run's folder (with the git config) is still there after the run: %v", err)
	}
	// Offline mode is read per run, and fails closed: Wine has no
	// firewall to read, so the plan says offline mode is not enforced
	// (under "require", backend selection refuses such a plan; this test
	// runs the backend directly to go on).
	p := winePlan(project, tmp, "RUN", plan.Network{Mode: plan.NetNone}, "cmd")
	if err := w.Complete(p); err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Box.Rules {
		if r.Rule == "network" && (r.Level != plan.NotEnforced || !strings.Contains(r.How, "state could not be read")) {
			t.Errorf("network none with no firewall to read: %s: %s; want not-enforced, saying why", r.Level, r.How)
		}
	}
	// An allowlist run: the proxy listens for this run, and serves the
	// command (a process of the run's job) by the plan's rules.
	t.Setenv("AGENTBOX_TEST_PROXY_ASK", "denied.test:443")
	code, out, err = run(plan.Network{Mode: plan.NetAllowlist, Allow: []string{"allowed.test"}}, os.Args[0], "-test.run=^$")
	if err != nil || code != 0 || !strings.Contains(out, "403") {
		t.Errorf("allowlist run: status %d, output %q, error %v; want the proxy's 403 for a host the plan does not allow", code, out, err)
	}
}

// TestWindowsAllowlistRunsAtOnce: two allowlist runs planned at the same
// time get a proxy port each (Complete reserves it: the port is in the
// plan's HTTP_PROXY), run side by side, and each command is served by its
// own run's proxy. There used to be one fixed port, and the second run
// ended with status 125.
func TestWindowsAllowlistRunsAtOnce(t *testing.T) {
	me := wineSetup(t)
	t.Setenv("AGENTBOX_TEST_PROXY_ASK", "denied.test:443")
	type result struct {
		code int
		out  string
		err  error
	}
	var ws [2]*Windows
	var ps [2]*plan.Plan
	for i := range ws {
		ws[i] = New()
		id := "RUN" + strconv.Itoa(i)
		ps[i] = winePlan(tempDir(t), filepath.Join(tempDir(t), "agentbox-"+me), id,
			plan.Network{Mode: plan.NetAllowlist, Allow: []string{"allowed.test"}}, os.Args[0], "-test.run=^$")
		if err := ws[i].Complete(ps[i]); err != nil {
			t.Fatalf("Complete %s: %v", id, err)
		}
	}
	a, _ := SpecOf(ps[0])
	b, _ := SpecOf(ps[1])
	if a.ProxyPort == b.ProxyPort || !DefaultProxyRange.Holds(a.ProxyPort) || !DefaultProxyRange.Holds(b.ProxyPort) {
		t.Fatalf("the two runs' proxy ports: %d and %d; want two different ports of %s", a.ProxyPort, b.ProxyPort, DefaultProxyRange)
	}
	results := make(chan result, 2)
	for i := range ws {
		go func() {
			code, out, err := wineRun(ws[i], ps[i])
			results <- result{code, out, err}
		}()
	}
	for range ws {
		select {
		case r := <-results:
			if r.err != nil || r.code != 0 || !strings.Contains(r.out, "403") {
				t.Errorf("allowlist run: status %d, output %q, error %v; want its proxy's 403", r.code, r.out, r.err)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("the two allowlist runs did not end within 2 minutes")
		}
	}
}

// TestWindowsRunnerCrashReported: a runner that crashes is reported with
// what it wrote (the panic and its goroutine), not as "runner: unexpected
// EOF" alone.
func TestWindowsRunnerCrashReported(t *testing.T) {
	me := wineSetup(t)
	t.Setenv("AGENTBOX_TEST_RUNNER_CRASH", "1")
	w := New()
	p := winePlan(tempDir(t), filepath.Join(tempDir(t), "agentbox-"+me), "RUN", plan.Network{Mode: plan.NetOpen}, "cmd", "/d", "/c", "exit 0")
	if err := w.Complete(p); err != nil {
		t.Fatal(err)
	}
	code, _, err := wineRun(w, p)
	if code != 125 || err == nil || !strings.Contains(err.Error(), "the runner wrote:") ||
		!strings.Contains(err.Error(), "panic: agentbox test: the runner crashes") || !strings.Contains(err.Error(), "goroutine") {
		t.Errorf("a crashing runner: status %d, error %v; want 125 and the runner's report", code, err)
	}
}

// wineSetup makes what `agentbox setup` would (the setup record, this
// user's passwords) in a ProgramData of the test's own, with the caller as
// the sandbox users, and starts runners as the caller: Wine's
// CreateProcessWithLogonW is a stub that fails without an error code, so
// the runner (this test binary, see TestMain) is started the same way
// otherwise: suspended, in the job. It returns the caller's SID. The tests
// that use it run under Wine only: real Windows needs a real `agentbox
// setup`, which the Windows CI workflow runs before its real runs.
func wineSetup(t *testing.T) string {
	t.Helper()
	if !underWine() {
		t.Skip("on real Windows the run path is exercised after a real `agentbox setup` (.github/workflows/windows.yml)")
	}
	me, err := currentUserSID()
	if err != nil {
		t.Fatal(err)
	}
	wineTrust(t)
	t.Setenv("ProgramData", tempDir(t))
	dir, err := machineDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "acl"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := &record{Version: RecordVersion, ProxyPort: DefaultProxyPort, ProxyPorts: ProxyPorts, GroupSID: me, Users: map[string]string{OfflineUser: me, OnlineUser: me}}
	if err := writeJSON(filepath.Join(dir, "setup.json"), rec); err != nil {
		t.Fatal(err)
	}
	if err := savePasswords(map[string]string{OfflineUser: "Ab1!x", OnlineUser: "Ab1!x"}); err != nil {
		t.Fatal(err)
	}
	launchRunner = callerLauncher
	t.Cleanup(func() { launchRunner = startRunner })
	return me
}

// callerLauncher starts the runner as the caller (Wine's
// CreateProcessWithLogonW is a stub), in job, as startRunner would.
func callerLauncher(exe, user, password string, pipes []string, desktop string, job windows.Handle) (windows.Handle, uint32, error) {
	line, err := CommandLine(append(append([]string{exe, RunnerArg}, pipes...), strconv.Itoa(os.Getpid())))
	if err != nil {
		return 0, 0, err
	}
	app, _ := windows.UTF16PtrFromString(exe)
	cmd, _ := windows.UTF16PtrFromString(line)
	si := &windows.StartupInfo{Cb: uint32(unsafe.Sizeof(windows.StartupInfo{}))}
	if desktop != "" {
		si.Desktop, _ = windows.UTF16PtrFromString(desktop)
	}
	var pi windows.ProcessInformation
	if err := windows.CreateProcess(app, cmd, nil, nil, false, windows.CREATE_SUSPENDED|windows.CREATE_NO_WINDOW, nil, nil, si, &pi); err != nil {
		return 0, 0, err
	}
	if err := resumeInJob(job, pi.Process, pi.Thread); err != nil {
		windows.CloseHandle(pi.Process)
		return 0, 0, err
	}
	return pi.Process, pi.ProcessId, nil
}

// winePlan is the plan of a run in project with its tmp folder a fresh
// folder named id in tmp.
func winePlan(project, tmp, id string, net plan.Network, command ...string) *plan.Plan {
	return &plan.Plan{
		GOOS: "windows", RunID: id, Enforce: plan.Require, Backend: "windows",
		Command: command, Cwd: project,
		Mounts: []plan.Mount{
			{Stage: plan.StageRoot, Op: plan.ROBind, Path: "/", Access: plan.ReadOnly},
			{Stage: plan.StageTmp, Op: plan.Bind, Source: filepath.Join(tmp, id), Path: "/tmp", Access: plan.ReadWrite},
			{Stage: plan.StageWritable, Op: plan.Bind, Path: project, Access: plan.ReadWrite},
		},
		Tmp:     plan.Tmp{Mode: plan.TmpWorkspace, HostDir: filepath.Join(tmp, id)},
		Prepare: []plan.Prepare{{Path: tmp, Mode: 0o700}, {Path: filepath.Join(tmp, id), Mode: 0o700, Fresh: true}},
		Network: net,
		Env:     plan.Env{Mode: "inherit"},
		Environ: os.Environ(),
	}
}

// wineRun runs the completed plan p the way every run goes (the
// supervisor prepares the plan's folders, then the backend runs) with an
// empty stdin, and returns the status and the output.
func wineRun(w *Windows, p *plan.Plan) (int, string, error) {
	stdin, stdinW, _ := os.Pipe()
	stdinW.Close()
	outR, outW, _ := os.Pipe()
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(outR); got <- string(b) }()
	code, err := supervise.Run(w, p, backend.Context{Stdin: stdin, Stdout: outW, Stderr: outW})
	outW.Close()
	return code, <-got, err
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// TestWindowsRunnerOutsideJobFails: a runner that cannot be put in
// agentbox's job is not resumed but ended, and the run fails with the
// reason (it used to be resumed regardless, outside the job).
func TestWindowsRunnerOutsideJobFails(t *testing.T) {
	app, _ := windows.UTF16PtrFromString(os.Args[0])
	cmd, _ := windows.UTF16PtrFromString(`"` + os.Args[0] + `" -test.run=^$`)
	si := &windows.StartupInfo{Cb: uint32(unsafe.Sizeof(windows.StartupInfo{}))}
	var pi windows.ProcessInformation
	if err := windows.CreateProcess(app, cmd, nil, nil, false, windows.CREATE_SUSPENDED|windows.CREATE_NO_WINDOW, nil, nil, si, &pi); err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(pi.Process)
	t.Cleanup(func() { windows.TerminateProcess(pi.Process, 1) })
	// A handle that is not a job: the assignment fails.
	notJob, err := windows.CreateEvent(nil, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(notJob)
	err = resumeInJob(notJob, pi.Process, pi.Thread)
	if err == nil || !strings.Contains(err.Error(), "job object") {
		t.Fatalf("resumeInJob with a failing assignment: %v, want the run to fail", err)
	}
	if ev, _ := windows.WaitForSingleObject(pi.Process, 30_000); ev != windows.WAIT_OBJECT_0 {
		t.Fatal("the runner that could not be put in the job is still running")
	}
	var code uint32
	windows.GetExitCodeProcess(pi.Process, &code)
	if code != 1 {
		t.Errorf("the runner ended with %d, want 1 (ended by agentbox, never resumed)", code)
	}
}
