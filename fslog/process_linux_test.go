//go:build linux && (amd64 || arm64)

package fslog

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/agentbox/agentbox/event"
	"github.com/google/go-cmp/cmp"
)

// shape is the one shape of a refusal's process field.
var shape = regexp.MustCompile(`^.+ \(pid ([0-9]+|\?), (/.*|as it says)\)$`)

func TestProcessLabel(t *testing.T) {
	tests := []struct {
		name string
		pid  int
		exe  string
		want string
	}{
		{"touch", 42, "/usr/bin/touch", "touch (pid 42, /usr/bin/touch)"},
		{"tmux", 1, "", "tmux (pid 1, as it says)"},
		{"", 7, "", "? (pid 7, as it says)"},
		{"sh", 0, "/bin/sh", "sh (pid ?, /bin/sh)"},
		{"Web Content", 9, "/usr/lib/firefox/firefox", "Web Content (pid 9, /usr/lib/firefox/firefox)"},
	}
	for _, tc := range tests {
		got := processLabel(tc.name, tc.pid, tc.exe)
		if got != tc.want {
			t.Errorf("processLabel(%q, %d, %q) = %q, want %q", tc.name, tc.pid, tc.exe, got, tc.want)
		}
		if !shape.MatchString(got) {
			t.Errorf("%q is not of the shape %s", got, shape)
		}
	}
}

// Each source of refusals names the process in the one shape: the
// seccomp notification and the preloaded library's socket (processName,
// of a live process and of one gone), the preloaded library's pipe
// (claimedName), Landlock's audit records (with and without the
// executable). Before, they were "NAME (pid N)", "NAME (pid N, EXE)" and
// "NAME (pid N, as it says)".
func TestProcessShapeEverySource(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	got := map[string]string{
		"notify, live":  processName(os.Getpid()),
		"notify, gone":  processName(gone.Process.Pid),
		"pipe":          claimedName("tmux", 1),
		"pipe, no name": claimedName("", 7),
		"audit":         auditProcess(t, `comm="touch" exe="/usr/bin/touch"`),
		"audit, no exe": auditProcess(t, `comm="touch"`),
	}
	want := map[string]string{
		"notify, live":  processLabel(readComm(t, os.Getpid()), os.Getpid(), self),
		"notify, gone":  "? (pid " + strconv.Itoa(gone.Process.Pid) + ", as it says)",
		"pipe":          "tmux (pid 1, as it says)",
		"pipe, no name": "? (pid 7, as it says)",
		"audit":         "touch (pid 4250, /usr/bin/touch)",
		"audit, no exe": "touch (pid 4250, as it says)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("process fields (-want +got):\n%s", diff)
	}
	for source, p := range got {
		if !shape.MatchString(p) {
			t.Errorf("%s: %q is not of the shape %s", source, p, shape)
		}
	}
}

func readComm(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		t.Fatal(err)
	}
	return string(b[:len(b)-1])
}

// auditProcess is the process field of the one refusal an audit record
// group with the syscall record's fields sc makes.
func auditProcess(t *testing.T, sc string) string {
	judge := func(a Attempt) (event.Event, bool) {
		return event.Event{Kind: event.Denied, Op: string(a.Op), Path: a.Targets[0].Real, Errno: a.Errno}, true
	}
	var ev collect
	run := &auditRun{pid: 4242, counted: -1, judge: judge, ev: &ev, seen: newDedup(), pending: map[string]*auditGroup{}}
	var msgs []byte
	msgs = append(msgs, netlink(auditLandlockAccess, `audit(1700000000.100:71): domain=aa1 blockers=fs.make_reg path="/etc" dev="vda" ino=2`)...)
	msgs = append(msgs, netlink(auditLandlockDomain, `audit(1700000000.100:71): domain=aa1 status=allocated mode=enforcing pid=4242 uid=1000 exe="/usr/bin/agentbox" comm="agentbox"`)...)
	msgs = append(msgs, netlink(auditSyscall, `audit(1700000000.100:71): arch=c000003e syscall=257 success=no exit=-13 pid=4250 `+sc)...)
	msgs = append(msgs, netlink(auditEOE, `audit(1700000000.100:71): `)...)
	run.messages(msgs)
	run.flush(len(run.order))
	if len(ev) != 1 {
		t.Fatalf("audit: %d events, want 1: %+v", len(ev), ev)
	}
	return ev[0].Process
}
