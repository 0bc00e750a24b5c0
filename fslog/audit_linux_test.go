//go:build linux && (amd64 || arm64)

package fslog

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/event"
)

func TestParseFields(t *testing.T) {
	got := parseFields(`domain=1a2b3c blockers=fs.write_file,fs.truncate path="/home/u/a b" dev="vda" ino=12 name=2F746D702F78 comm="touch"`)
	want := map[string]string{"domain": "1a2b3c", "blockers": "fs.write_file,fs.truncate", "path": "/home/u/a b",
		"dev": "vda", "ino": "12", "name": "/tmp/x", "comm": "touch"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// collect is an emitter that keeps what it gets.
type collect []event.Event

func (c *collect) Emit(e event.Event) { *c = append(*c, e) }

func netlink(typ uint16, text string) []byte {
	b := make([]byte, 16, 16+len(text)+4)
	b = append(b, text...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	binary.LittleEndian.PutUint32(b, uint32(16+len(text)))
	binary.LittleEndian.PutUint16(b[4:], typ)
	return b
}

// The run's own domain is the one whose creator is the run's child; its
// denials become attempts with the kernel's errno and the call's process;
// another domain's are left alone; the domain's end gives the kernel's
// count, and what did not arrive is said.
func TestAuditRecords(t *testing.T) {
	var got []Attempt
	judge := func(a Attempt) (event.Event, bool) {
		got = append(got, a)
		return event.Event{Kind: event.Denied, Op: string(a.Op), Path: a.Targets[0].Real, Errno: a.Errno}, true
	}
	var ev collect
	run := &auditRun{pid: 4242, counted: -1, judge: judge, ev: &ev, seen: newDedup(), pending: map[string]*auditGroup{}}
	var msgs []byte
	msgs = append(msgs, netlink(auditLandlockAccess, `audit(1700000000.100:71): domain=aa1 blockers=fs.make_reg path="/etc" dev="vda" ino=2`)...)
	msgs = append(msgs, netlink(auditLandlockDomain, `audit(1700000000.100:71): domain=aa1 status=allocated mode=enforcing pid=4242 uid=1000 exe="/usr/bin/agentbox" comm="agentbox"`)...)
	msgs = append(msgs, netlink(auditSyscall, `audit(1700000000.100:71): arch=c000003e syscall=257 success=no exit=-13 pid=4250 comm="touch" exe="/usr/bin/touch"`)...)
	msgs = append(msgs, netlink(auditEOE, `audit(1700000000.100:71): `)...)
	// Another run's domain.
	msgs = append(msgs, netlink(auditLandlockAccess, `audit(1700000000.200:72): domain=bb2 blockers=fs.read_file path="/home/u/.npmrc" dev="vda" ino=3`)...)
	msgs = append(msgs, netlink(auditLandlockDomain, `audit(1700000000.200:72): domain=bb2 status=allocated mode=enforcing pid=999 uid=1000 exe="/usr/bin/agentbox" comm="agentbox"`)...)
	msgs = append(msgs, netlink(auditEOE, `audit(1700000000.200:72): `)...)
	run.messages(msgs)
	run.messages(netlink(auditLandlockDomain, `audit(1700000001.000:80): domain=aa1 status=deallocated denials=3`))
	run.flush(len(run.order))
	want := []Attempt{{Pid: 4250, Syscall: "257", Op: Create, Errno: "EACCES", Targets: []Target{{Given: "/etc", Real: "/etc", Exists: true, Parent: true, Folder: true}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if len(ev) != 1 || ev[0].Process != "touch (pid 4250, /usr/bin/touch)" {
		t.Errorf("events %+v, want one with its process", ev)
	}
	if run.counted != 3 || run.got != 1 || !run.finished {
		t.Errorf("counted %d, got %d, finished %v: want 3, 1, true", run.counted, run.got, run.finished)
	}
}
