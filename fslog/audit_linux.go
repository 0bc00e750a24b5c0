//go:build linux && (amd64 || arm64)

package fslog

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
)

// The kernel's audit record types agentbox reads (linux/audit.h).
const (
	auditGet            = 1000
	auditUser           = 1100
	auditSyscall        = 1300
	auditEOE            = 1320
	auditLandlockAccess = 1423
	auditLandlockDomain = 1424
	// auditGroupReadlog is AUDIT_NLGRP_READLOG: every record, read-only,
	// for processes with CAP_AUDIT_READ.
	auditGroupReadlog = 1
)

// AuditStatus says whether the kernel's audit is on and whether this
// process can read its records: what Landlock's own denial records need.
func AuditStatus() (bool, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return false, fmt.Errorf("opening the kernel's audit: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, fmt.Errorf("opening the kernel's audit: %w", err)
	}
	req := make([]byte, unix.NLMSG_HDRLEN)
	binary.LittleEndian.PutUint32(req[0:], uint32(len(req)))
	binary.LittleEndian.PutUint16(req[4:], auditGet)
	binary.LittleEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, fmt.Errorf("asking the kernel's audit status: %w", err)
	}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 200000})
	buf := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return false, fmt.Errorf("reading the kernel's audit status: %w", err)
		}
		if n < unix.NLMSG_HDRLEN+8 {
			continue
		}
		switch binary.LittleEndian.Uint16(buf[4:]) {
		case unix.NLMSG_ERROR:
			if e := int32(binary.LittleEndian.Uint32(buf[unix.NLMSG_HDRLEN:])); e != 0 {
				return false, fmt.Errorf("reading the kernel's audit status: %w", unix.Errno(-e))
			}
		case auditGet:
			// struct audit_status: mask, enabled, …
			return binary.LittleEndian.Uint32(buf[unix.NLMSG_HDRLEN+4:]) != 0, nil
		}
	}
}

// auditReader reads the audit multicast group.
type auditReader struct {
	fd int
}

func openAudit() (*auditReader, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("opening the kernel's audit: %w", err)
	}
	// A large receive buffer: the kernel drops what does not fit, and a
	// drop shows only in the domain's count at the end.
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (auditGroupReadlog - 1)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("reading the kernel's audit records (needs CAP_AUDIT_READ): %w", err)
	}
	return &auditReader{fd: fd}, nil
}

func (r *auditReader) close() { unix.Close(r.fd) }

// auditGroup is the records of one audited event (one serial).
type auditGroup struct {
	access  []map[string]string
	domain  []map[string]string
	syscall map[string]string
}

// auditRun follows one run's Landlock domain through the records.
type auditRun struct {
	pid      int    // the process that made the domain
	domain   string // its ID, once a record names it
	got      int    // denials of the domain that reached agentbox
	counted  int    // the kernel's count, from the domain's end; -1 before
	judge    Judge
	ev       event.Emitter
	seen     *dedup
	pending  map[string]*auditGroup
	order    []string
	finished bool
	// marker is the text of agentbox's own record queued after the box
	// ended; marked is set when it came back.
	marker string
	marked bool
}

// serve reads records until stop is readable, then until everything the
// box's calls made has arrived. Landlock queues a denial's record before
// the refused call returns, so once the box has ended its records are all
// in the kernel's audit queue: agentbox then queues a record of its own
// (the marker) and reads until the marker comes back, which the queue
// delivers after them. When the box was refused anything, it also waits
// (at most a second) for the domain's end, whose count of denials says
// whether any record was dropped on the way.
func (r *auditReader) serve(pid int, judge Judge, ev event.Emitter, seen *dedup, stop int) {
	run := &auditRun{pid: pid, counted: -1, judge: judge, ev: ev, seen: seen, pending: map[string]*auditGroup{}}
	buf := make([]byte, 64<<10)
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(stop), Events: unix.POLLIN}}
	var ended time.Time
	for {
		timeout := -1
		if !ended.IsZero() {
			waited := time.Since(ended)
			if run.marked && (run.domain == "" || run.finished) || waited > time.Second {
				break
			}
			timeout = int((time.Second - waited).Milliseconds()) + 1
		}
		for i := range fds {
			fds[i].Revents = 0
		}
		c, err := unix.Poll(fds, timeout)
		if err != nil && err != unix.EINTR {
			break
		}
		if len(fds) > 1 && fds[1].Revents != 0 {
			ended = time.Now()
			fds = fds[:1]
			run.marker = fmt.Sprintf("agentbox-fslog-end pid=%d t=%d", pid, ended.UnixNano())
			if err := r.mark(run.marker); err != nil {
				run.marked = true // nothing to wait for: take what came
			}
		}
		if c > 0 && fds[0].Revents&unix.POLLIN != 0 {
			n, _, err := unix.Recvfrom(r.fd, buf, unix.MSG_DONTWAIT)
			if err == nil {
				run.messages(buf[:n])
			}
		}
	}
	run.flush(len(run.order))
	if run.domain != "" && run.counted > run.got {
		ev.Emit(event.Event{Kind: event.Warning, Detail: fmt.Sprintf(
			"filesystem log: the kernel counted %d denials in this run's Landlock domain and %d reached agentbox (the kernel's audit queue dropped the others)",
			run.counted, run.got)})
	}
}

// mark queues a user message with text in the kernel's audit (it needs
// CAP_AUDIT_WRITE, which root has): it comes back through the multicast
// group after every record queued before it.
func (r *auditReader) mark(text string) error {
	msg := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(text)+1)
	msg = append(append(msg, text...), 0)
	binary.LittleEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.LittleEndian.PutUint16(msg[4:], auditUser)
	binary.LittleEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	return unix.Sendto(r.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// messages takes one datagram of netlink messages.
func (run *auditRun) messages(b []byte) {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.LittleEndian.Uint32(b))
		typ := binary.LittleEndian.Uint16(b[4:])
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return
		}
		run.record(typ, string(b[unix.NLMSG_HDRLEN:l]))
		b = b[min((l+3)&^3, len(b)):]
	}
}

// record takes one record: "audit(SECONDS.MS:SERIAL): key=value …".
func (run *auditRun) record(typ uint16, text string) {
	if typ == auditUser {
		if run.marker != "" && strings.Contains(text, run.marker) {
			run.marked = true
		}
		return
	}
	if typ != auditLandlockAccess && typ != auditLandlockDomain && typ != auditSyscall && typ != auditEOE {
		return
	}
	head, body, ok := strings.Cut(text, "): ")
	if !ok {
		if typ != auditEOE {
			return
		}
		head = strings.TrimSuffix(text, ")")
	}
	_, serial, ok := strings.Cut(head, ":")
	if !ok {
		return
	}
	g := run.pending[serial]
	if g == nil {
		g = &auditGroup{}
		run.pending[serial] = g
		run.order = append(run.order, serial)
	}
	fields := parseFields(body)
	switch typ {
	case auditLandlockAccess:
		g.access = append(g.access, fields)
	case auditLandlockDomain:
		g.domain = append(g.domain, fields)
	case auditSyscall:
		g.syscall = fields
	}
	if typ == auditEOE || typ == auditLandlockDomain && fields["status"] == "deallocated" {
		// A domain's end comes outside any call: no end-of-event follows.
		run.finish(serial)
	}
	// Records without a call around them have no end-of-event record;
	// older groups are finished once enough newer ones came.
	if len(run.order) > 64 {
		run.flush(len(run.order) - 64)
	}
}

func (run *auditRun) flush(n int) {
	for _, s := range append([]string(nil), run.order[:n]...) {
		run.finish(s)
	}
}

// finish judges a complete group and forgets it.
func (run *auditRun) finish(serial string) {
	g := run.pending[serial]
	if g == nil {
		return
	}
	delete(run.pending, serial)
	for i, s := range run.order {
		if s == serial {
			run.order = append(run.order[:i], run.order[i+1:]...)
			break
		}
	}
	for _, d := range g.domain {
		switch d["status"] {
		case "allocated":
			if pid, _ := strconv.Atoi(d["pid"]); pid == run.pid && run.domain == "" {
				run.domain = d["domain"]
			}
		case "deallocated":
			if d["domain"] == run.domain && run.domain != "" {
				run.counted, _ = strconv.Atoi(d["denials"])
				run.finished = true
			}
		}
	}
	for _, acc := range g.access {
		if run.domain == "" || acc["domain"] != run.domain {
			continue
		}
		run.got++
		run.denial(acc, g.syscall)
	}
}

// denial turns one of the domain's access records into an attempt.
func (run *auditRun) denial(acc, sc map[string]string) {
	blockers := strings.Split(acc["blockers"], ",")
	p := acc["path"]
	if name := acc["name"]; name != "" && p == "" {
		p = name
	}
	if p == "" || !strings.HasPrefix(p, "/") {
		return // a network or signal denial, or an object with no path
	}
	a := Attempt{Op: blockerOp(blockers), Errno: "EACCES", Targets: []Target{{Given: p, Real: p, Exists: true, Parent: true}}}
	switch a.Op {
	case "":
		return
	case Create, Mkdir, Symlink, Remove, Rmdir, Rename:
		// Landlock checks these rights on the folder, and names it.
		a.Targets[0].Folder = true
	}
	process := ""
	if sc != nil {
		a.Pid, _ = strconv.Atoi(sc["pid"])
		a.Syscall = sc["syscall"]
		if e, err := strconv.Atoi(sc["exit"]); err == nil && e < 0 {
			a.Errno = unix.ErrnoName(unix.Errno(-e))
		}
		process = processLabel(sc["comm"], a.Pid, sc["exe"])
	}
	e, refused := run.judge(a)
	if !refused || !run.seen.first(e) {
		return
	}
	e.Process = process
	run.ev.Emit(e)
}

// blockerOp is the operation Landlock's blockers name.
func blockerOp(blockers []string) Op {
	for _, b := range blockers {
		switch b {
		case "fs.write_file":
			return Write
		case "fs.make_reg", "fs.make_char", "fs.make_block", "fs.make_sock", "fs.make_fifo":
			return Create
		case "fs.make_dir":
			return Mkdir
		case "fs.make_sym":
			return Symlink
		case "fs.remove_file":
			return Remove
		case "fs.remove_dir":
			return Rmdir
		case "fs.refer":
			return Rename
		case "fs.truncate":
			return Truncate
		case "fs.read_file", "fs.read_dir", "fs.execute", "fs.ioctl_dev":
			return Read
		}
	}
	return ""
}

// parseFields reads key=value fields; values are "quoted", or hex
// (what the kernel writes for a string with spaces or control
// characters), or bare.
func parseFields(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		s = strings.TrimLeft(s, " ")
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				break
			}
			v, s = rest[1:1+end], rest[2+end:]
		} else {
			end := strings.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			v, s = rest[:end], rest[end:]
			if (k == "path" || k == "name" || k == "exe" || k == "comm") && len(v)%2 == 0 {
				if b, err := hex.DecodeString(v); err == nil {
					v = string(b)
				}
			}
		}
		out[k] = v
	}
	return out
}
