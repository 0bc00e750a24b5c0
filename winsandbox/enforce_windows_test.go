package winsandbox

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/windows"
)

// underWine reports whether this runs under Wine, which accepts tokens,
// ACLs and job limits without enforcing them.
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// enforcing skips a test of what Windows enforces when it runs under Wine;
// on real Windows it runs. AGENTBOX_WINDOWS_MUST_ENFORCE=1 (the Windows CI
// workflow) makes running under Wine a failure instead, so such a test can
// never be skipped where it should run.
func enforcing(t *testing.T) {
	t.Helper()
	if !underWine() {
		return
	}
	if os.Getenv("AGENTBOX_WINDOWS_MUST_ENFORCE") == "1" {
		t.Fatal("this test checks what Windows enforces, and this is Wine")
	}
	t.Skip("Wine enforces no tokens or ACLs; this test runs on real Windows (.github/workflows/windows.yml)")
}

// commandLineCorpus is every argument vector the quoting tests use, and
// generated ones: spaces, tabs, quotes and backslashes in every mix.
func commandLineCorpus() [][]string {
	corpus := [][]string{
		{"git", "status"}, {`C:\Program Files\Git\cmd\git.exe`, "log"}, {"a", ""}, {"a", "two words"},
		{"a", `say "hi"`}, {"a", `C:\dir\`}, {"a", `C:\dir with space\`}, {"a", `\\"`}, {"a", `a\\b`},
		{"a", "tab\there"}, {"a", `%PATH%`, `&|<>^`}, {"prog", "", "z"}, {"prog", "a b", "z"},
		{"prog", `a\"b`, "z"}, {"prog", `\\`, "z"}, {"prog", `x\`, "z"}, {"prog", `""`, "z"}, {"prog", "\t", "z"},
	}
	r := rand.New(rand.NewSource(1))
	alphabet := []string{"a", " ", "\t", `"`, `\`, "é", "%", "^"}
	for i := 0; i < 500; i++ {
		argv := []string{"prog"}
		for j := 0; j < 1+r.Intn(4); j++ {
			var b strings.Builder
			for k := 0; k < r.Intn(8); k++ {
				b.WriteString(alphabet[r.Intn(len(alphabet))])
			}
			argv = append(argv, b.String())
		}
		corpus = append(corpus, argv)
	}
	return corpus
}

// TestWindowsCommandLineToArgv: every command line CommandLine makes is
// split back into exactly its argv by Windows itself (CommandLineToArgvW,
// the rules of the Microsoft C runtime).
func TestWindowsCommandLineToArgv(t *testing.T) {
	for _, argv := range commandLineCorpus() {
		line, err := CommandLine(argv)
		if err != nil {
			t.Fatalf("CommandLine(%q): %v", argv, err)
		}
		p, err := windows.UTF16PtrFromString(line)
		if err != nil {
			t.Fatal(err)
		}
		var argc int32
		args, err := windows.CommandLineToArgv(p, &argc)
		if err != nil {
			t.Fatalf("CommandLineToArgv(%s): %v", line, err)
		}
		var got []string
		for _, a := range args[:argc] {
			got = append(got, windows.UTF16PtrToString(&a[0]))
		}
		windows.LocalFree(windows.Handle(unsafe.Pointer(args)))
		if diff := cmp.Diff(argv, got); diff != "" {
			t.Errorf("CommandLineToArgvW(%s) (-want +got):\n%s", line, diff)
		}
	}
}

// TestWindowsDACLRoundTrip reads a real folder's DACL and checks that its
// byte form survives parse and build, and that syncPath can apply and take
// back agentbox's ACEs on a folder of this user without an error.
func TestWindowsDACLRoundTrip(t *testing.T) {
	dir := tempDir(t)
	d, ok, err := readDACL(dir, false)
	if err != nil || !ok {
		t.Fatalf("readDACL: ok %v, %v", ok, err)
	}
	if !d.null {
		b, err := buildACL(d.revision, d.aces)
		if err != nil {
			t.Fatal(err)
		}
		_, again, err := parseACL(b)
		if err != nil || !cmp.Equal(d.aces, again) {
			t.Fatalf("parse(build(dacl)) differs: %v", err)
		}
	}
	rec, group := &aclRecord{}, "S-1-5-21-1-2-3-4242"
	me := self()
	rec.begin([]recACE{{Path: dir, SID: CapabilitySID(dir), Mask: FileRights(RightsModify), Inherit: true}}, "project", me)
	if err := syncPath(rec, dir, group); err != nil {
		t.Fatalf("syncPath (add): %v", err)
	}
	rec.begin(nil, "project", me)
	rec.end(me)
	if err := syncPath(rec, dir, group); err != nil {
		t.Fatalf("syncPath (remove): %v", err)
	}
}

// TestWindowsDACLPersists adds agentbox's ACEs to a folder, reads them
// back, checks that a second sync would write nothing, and removes them:
// exactly what runs do to a writable root. Wine does not keep DACLs.
func TestWindowsDACLPersists(t *testing.T) {
	enforcing(t)
	dir := tempDir(t)
	capSID := CapabilitySID(dir)
	group := "S-1-5-21-1-2-3-4242"
	rec := &aclRecord{}
	want := []recACE{
		{Path: dir, SID: capSID, Mask: FileRights(RightsModify), Inherit: true},
		{Path: dir, SID: group, Deny: true, Mask: FileRights(RightsDelete)},
	}
	me := self()
	rec.begin(want, "project", me)
	if err := syncPath(rec, dir, group); err != nil {
		t.Fatalf("syncPath (add): %v", err)
	}
	d2, _, err := readDACL(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, a := range d2.aces {
		if !a.inherited() && (a.SID == capSID || a.SID == group) {
			found++
		}
	}
	if found != 2 {
		t.Errorf("after adding, %d of agentbox's ACEs are in the DACL, want 2: %+v", found, d2.aces)
	}
	if next, changed := nextDACL(d2.aces, rec.sids(dir), mustACEs(t, rec, dir, d2.dir)); changed {
		t.Errorf("a second sync would rewrite the DACL: %+v", next)
	}
	rec.begin(nil, "project", me)
	rec.end(me)
	if err := syncPath(rec, dir, group); err != nil {
		t.Fatalf("syncPath (remove): %v", err)
	}
	d3, _, err := readDACL(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range d3.aces {
		if !a.inherited() && (a.SID == capSID || a.SID == group) {
			t.Errorf("still there after removal: %+v", a)
		}
	}
}

func mustACEs(t *testing.T, rec *aclRecord, path string, dir bool) []rawACE {
	t.Helper()
	var out []rawACE
	for _, w := range rec.want(path) {
		a, err := newACE(w.Deny, aceFlags(w.Inherit, dir), w.Mask, w.SID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// TestWindowsSIDBytes: the pure SID encoding is Windows' own.
func TestWindowsSIDBytes(t *testing.T) {
	for _, s := range []string{"S-1-5-32-545", "S-1-1-0", CapabilitySID(`C:\x`), "S-1-5-21-1-2-3-1001"} {
		sid, err := windows.StringToSid(s)
		if err != nil {
			t.Fatal(err)
		}
		want := unsafe.Slice((*byte)(unsafe.Pointer(sid)), windows.GetLengthSid(sid))
		got, err := sidBytes(s)
		if err != nil || !cmp.Equal(want, got) {
			t.Errorf("sidBytes(%s) = %x, %v; Windows says %x", s, got, err, want)
		}
	}
}

// dialHelper: when the test binary is started with AGENTBOX_TEST_DIAL set,
// it waits for a line on stdin and then connects to that address: a
// process whose TCP connection the proxy's peer check must attribute.
//
// When it is started with RunnerArg (by TestWindowsRunUnderWine's runner
// launcher), it is agentbox's runner.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == RunnerArg {
		// TestWindowsRunnerCrashReported: the runner panics once its
		// pipes work, in a goroutine (nothing recovers it).
		if os.Getenv("AGENTBOX_TEST_RUNNER_CRASH") != "" {
			runnerTestHook = func() {
				go func() { panic("agentbox test: the runner crashes") }()
				time.Sleep(time.Minute)
			}
		}
		os.Exit(RunnerMain(os.Args[2:]))
	}
	// As a boxed command of an allowlist run: ask the proxy HTTP_PROXY
	// names for a CONNECT and print its first line of answer.
	if target := os.Getenv("AGENTBOX_TEST_PROXY_ASK"); target != "" {
		c, err := net.Dial("tcp4", strings.TrimPrefix(os.Getenv("HTTP_PROXY"), "http://"))
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(0)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Printf("proxy said: %q\n", line)
		os.Exit(0)
	}
	// A run of a plan (a JSON file) through the whole run path, as
	// agentbox would do it, for a test to kill (killed_windows_test.go).
	if planFile := os.Getenv("AGENTBOX_TEST_RUN_PLAN"); planFile != "" {
		os.Exit(runPlanFile(planFile))
	}
	// A client that connects with Winsock's own connect and first uses
	// the socket 300 ms later: under Wine before 9.17 the TCP table names
	// no owner for it until then (TestWindowsInJobLateOwner).
	if port := os.Getenv("AGENTBOX_TEST_RAW_DIAL"); port != "" {
		os.Exit(rawDial(port))
	}
	if addr := os.Getenv("AGENTBOX_TEST_DIAL"); addr != "" {
		bufio.NewReader(os.Stdin).ReadString('\n')
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		c.Write([]byte("x"))
		time.Sleep(2 * time.Second)
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// rawDial connects to 127.0.0.1:port with Winsock's connect, waits 300 ms
// without touching the socket, sends one byte and waits for the test to
// end it.
func rawDial(port string) int {
	n, err := strconv.Atoi(port)
	if err != nil {
		return 2
	}
	var d windows.WSAData
	if windows.WSAStartup(0x202, &d) != nil {
		return 2
	}
	s, err := windows.Socket(windows.AF_INET, windows.SOCK_STREAM, windows.IPPROTO_TCP)
	if err != nil {
		return 2
	}
	if err := windows.Connect(s, &windows.SockaddrInet4{Port: n, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 2
	}
	time.Sleep(300 * time.Millisecond)
	b := []byte("x")
	var sent uint32
	windows.WSASend(s, &windows.WSABuf{Len: 1, Buf: &b[0]}, 1, &sent, 0, nil, nil)
	time.Sleep(30 * time.Second)
	return 0
}

// TestWindowsInJobLateOwner: a process of the run whose connection the TCP
// table does not attribute at once is still served. Wine before 9.17 finds
// a socket's owner by looking for it among its processes' open files, and
// a process that connected but has not used the socket yet holds none (the
// socket lives in wineserver): the table names process 0 until then. The
// proxy used to refuse such a connection at once, which made allowlist runs
// under Wine fail now and then ("proxy said: \"\""). On Windows the owner
// is recorded when the socket is made, and this passes at the first ask.
func TestWindowsInJobLateOwner(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	job, err := newJob(JobLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(job)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTBOX_TEST_RAW_DIAL="+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	// Suspended until it is in the job, as the runner starts a command.
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		t.Fatalf("AssignProcessToJobObject: %v", err)
	}
	if err := resumeProcess(uint32(cmd.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(60 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := inJob(c, job); err != nil {
		t.Errorf("a connection of a process in the job whose owner the table names late: %v, want it served", err)
	}
}

// resumeProcess resumes every thread of a process started suspended.
func resumeProcess(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return err
		}
		windows.ResumeThread(th)
		windows.CloseHandle(th)
	}
	return nil
}

// TestWindowsInJob: the allowlist proxy serves a connection only when the
// process that opened it is in the run's job. A process put in the job is
// accepted; this test process, outside it, is refused.
func TestWindowsInJob(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	job, err := newJob(JobLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(job)

	// Outside the job: refused.
	go func() {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err == nil {
			time.Sleep(time.Second)
			c.Close()
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if err := inJob(c, job); err == nil || !strings.Contains(err.Error(), "not part of this run") {
		t.Errorf("a connection from outside the job: %v, want a refusal", err)
	}
	c.Close()

	// Inside the job: accepted.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTBOX_TEST_DIAL="+ln.Addr().String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		t.Fatalf("AssignProcessToJobObject: %v", err)
	}
	stdin.Write([]byte("go\n"))
	c, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := inJob(c, job); err != nil {
		t.Errorf("a connection from a process in the job: %v, want it served", err)
	}
}

// TestWindowsRestrictedTokenWrites creates the command's token the way the
// runner does (restrictedToken, write-restricted with the capability SID of
// one root), impersonates it, and checks what it may write: the root whose
// capability SID has an ACE, and nothing else this user could otherwise
// write; and the NUL device (`>nul`).
func TestWindowsRestrictedTokenWrites(t *testing.T) {
	enforcing(t)
	base := tempDir(t)
	allowed, other := filepath.Join(base, "root"), filepath.Join(base, "other")
	for _, d := range []string{allowed, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	capSID := CapabilitySID(allowed)
	rec := &aclRecord{}
	rec.begin([]recACE{{Path: allowed, SID: capSID, Mask: FileRights(RightsModify), Inherit: true}}, "test", self())
	if err := syncPath(rec, allowed, "S-1-5-21-1-2-3-4242"); err != nil {
		t.Fatal(err)
	}
	tok, err := restrictedToken([]string{capSID})
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	var imp windows.Token
	if err := windows.DuplicateTokenEx(tok, windows.TOKEN_IMPERSONATE|windows.TOKEN_QUERY, nil, windows.SecurityImpersonation, windows.TokenImpersonation, &imp); err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	write := func(path string) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := windows.SetThreadToken(nil, imp); err != nil {
			return fmt.Errorf("SetThreadToken: %w", err)
		}
		defer windows.RevertToSelf()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		f.Write([]byte("x"))
		return f.Close()
	}
	if err := write(filepath.Join(allowed, "ok.txt")); err != nil {
		t.Errorf("writing in the root with a capability ACE: %v", err)
	}
	err = write(filepath.Join(other, "no.txt"))
	if !errors.Is(err, windows.ERROR_ACCESS_DENIED) && !errors.Is(err, os.ErrPermission) {
		t.Errorf("writing in a folder without the capability ACE: %v, want access denied", err)
	}
	if err := write("NUL"); err != nil {
		t.Errorf("writing to NUL: %v", err)
	}
}

// tempDir is t.TempDir, except that a folder that cannot be removed
// afterwards is left behind: Wine cannot delete a folder the way Go's
// os.RemoveAll asks (FILE_DISPOSITION_POSIX_SEMANTICS), which would fail
// the test for nothing it tests.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
