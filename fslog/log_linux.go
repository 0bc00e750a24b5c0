//go:build linux && (amd64 || arm64)

package fslog

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// Log is one run's filesystem violation log, on the host, and the channel
// through which a broker decides the calls the box hands it.
type Log struct {
	mode   string
	judge  Judge
	broker Broker
	// sock judges the box's connects (a bubblewrap box); nil for none.
	sock *sockJudge
	ev   event.Emitter
	seen *dedup
	// host and box are the two ends of the socket the box's side arms
	// the log through; the box's end goes to the box's first process.
	host, box *os.File
	// stopR and stopW end the serving once the box has ended.
	stopR, stopW int
	audit        *auditReader
	// first is the pid of the box's first process (Started).
	first atomic.Int64
	// preload is the preloaded log's socket, or under Landlock the read
	// end of its pipe, whose write end pipeW goes to the box.
	preload, pipeW *os.File
	// done is closed when the serving of the log socket (the broker's
	// listener, the seccomp or audit log) has ended, pdone when the
	// preloaded log's reader has.
	done, pdone chan struct{}
	once        sync.Once
	// failed is the first panic of a goroutine of the log, recovered.
	failed *failure
}

// Start opens the log of a run of p: the socket the box's side arms it
// through (Box) and what serves it. It returns nil when p records no
// filesystem refusals and there is no broker. A log that cannot start is a
// warning on ev, not a failed run; with a broker, the calls it decides
// then fail in the box (the box's main filter answers ENOSYS when no
// listener takes them).
func Start(p *plan.Plan, judge Judge, ev event.Emitter, b Broker) *Log {
	mode := p.Log.Filesystem
	if judge == nil {
		mode = ""
	}
	sockets := SocketsJudged(p)
	if mode == "" && b == nil && !sockets {
		return nil
	}
	l := &Log{mode: mode, judge: judge, broker: b, ev: ev, seen: newDedup(), done: make(chan struct{}), pdone: make(chan struct{}), stopR: -1, stopW: -1, failed: &failure{}}
	if sockets {
		l.sock = newSockJudge(p, ev, l.seen)
		l.sock.failed = l.failed
	}
	if mode == Preload {
		// A box whose connects are judged may not make a datagram
		// unix socket either: its records come on the pipe, as under
		// Landlock.
		l.startPreload(p.Log.Preload, p.Box.Backend == "landlock", sockets)
		if b == nil && !sockets {
			if l.preload == nil {
				return nil
			}
			close(l.done) // no broker to serve
			return l
		}
		// The broker's listener is served as well, with no log of its
		// own: the preloaded library records the refusals.
	}
	// SOCK_SEQPACKET: one message is one send, with its descriptor.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		l.warn(fmt.Errorf("making its socket: %w", err))
		return l.preloadOnly()
	}
	l.host, l.box = os.NewFile(uintptr(fds[0]), "fslog"), os.NewFile(uintptr(fds[1]), "fslog-box")
	if mode == Notify || b != nil || sockets {
		// The filter, waiting for the box's side (msgProgram).
		sp := spec{log: mode == Notify, reads: mode == Notify && p.Log.Reads, broker: b != nil, sockets: sockets}
		if err := unix.Sendmsg(fds[0], programBytes(sp), nil, nil, 0); err != nil {
			l.host.Close()
			l.box.Close()
			l.warn(fmt.Errorf("offering its filter: %w", err))
			return l.preloadOnly()
		}
	}
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC); err != nil {
		l.host.Close()
		l.box.Close()
		l.warn(fmt.Errorf("making its pipe: %w", err))
		return l.preloadOnly()
	}
	l.stopR, l.stopW = pipe[0], pipe[1]
	if mode == Audit {
		// Subscribed before the box starts, so no record of its
		// domain comes before the reader listens.
		if l.audit, err = openAudit(); err != nil {
			l.warn(err)
		}
	}
	go l.run()
	return l
}

// startPreload starts the preloaded log, whose records come on a socket
// in dir, which the box reaches by its path: there is no end of a socket
// to pass to the box. Under Landlock, whose box may not make a unix
// socket, and under bubblewrap when the box's connects are judged (no
// datagram unix socket), they come on a pipe whose write end the box's first process
// gets (PreloadPipe) and puts at plan.PreloadFD for every program of the
// box. Either is read through the Go runtime's poller: no thread of
// agentbox waits on it, and Stop needs no thread to wake.
func (l *Log) startPreload(dir string, landlock, sockets bool) {
	pipe := landlock || sockets
	if pipe {
		// The box's first process moves the pipe to plan.PreloadFD,
		// which no process may have above its hard limit.
		var rl unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Max < plan.PreloadFD+1 {
			l.warnPreload(fmt.Errorf("the limit on open files (ulimit -Hn %d) is below %d, the descriptor its pipe has in the box", rl.Max, plan.PreloadFD+1))
			return
		}
	}
	fd, wfd, err := listenPreload(dir, pipe)
	if err != nil {
		l.warnPreload(err)
		return
	}
	what := "socket"
	if pipe {
		what = "pipe"
		l.pipeW = os.NewFile(uintptr(wfd), "fslog-preload-box")
	}
	f := os.NewFile(uintptr(fd), "fslog-preload")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		if l.pipeW != nil {
			l.pipeW.Close()
			l.pipeW = nil
		}
		l.warnPreload(fmt.Errorf("reading its %s: %w", what, err))
		return
	}
	l.preload = f
	s := &preloadServer{fd: fd, root: -1, landlock: landlock, pipe: pipe, first: &l.first, judge: l.judge, ev: l.ev, seen: l.seen, keys: map[string]bool{}}
	go func() {
		defer close(l.pdone)
		defer f.Close()
		defer func() {
			if r := recover(); r != nil {
				l.failed.recovered(l.ev, "reader of the preloaded filesystem log", r)
			}
		}()
		if s.pipe {
			s.serveFrames(rc)
		} else {
			s.serve(rc)
		}
		s.done()
	}()
}

// preloadOnly is what Start returns when the log socket could not be
// set up: the preloaded log alone if it runs, else nothing.
func (l *Log) preloadOnly() *Log {
	if l.preload == nil {
		return nil
	}
	close(l.done)
	return l
}

// warnPreload says the preloaded log could not start: only the record of
// refusals is lost (a broker, if any, is served apart).
func (l *Log) warnPreload(err error) {
	l.ev.Emit(event.Event{Kind: event.Warning, Detail: "filesystem log: " + err.Error() + "; this run's refusals are not recorded"})
}

// Box is the box's end of the log socket, to pass to the box's first
// process (nil for a nil Log, and for the preloaded log, which has none).
func (l *Log) Box() *os.File {
	if l == nil {
		return nil
	}
	return l.box
}

// PreloadPipe is the write end of the preloaded log's pipe, to pass to
// the box's first process, which puts it at plan.PreloadFD (Landlock);
// nil when there is none.
func (l *Log) PreloadPipe() *os.File {
	if l == nil {
		return nil
	}
	return l.pipeW
}

// Started is told the pid of the box's first process once it has started
// (0 when it could not be), and closes the supervisor's copy of the box's
// end, which the box's first process has its own of: the log then sees the
// socket's end when the box's side is gone without arming it.
func (l *Log) Started(pid int) {
	if l == nil {
		return
	}
	if pid > 0 {
		l.first.CompareAndSwap(0, int64(pid))
	}
	if l.box != nil {
		l.box.Close()
	}
	if l.pipeW != nil {
		l.pipeW.Close() // the box has its own
	}
}

// Stop ends the log once the box has ended: it records what is still
// waiting and returns when every record of the run has been emitted.
func (l *Log) Stop() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		if l.box != nil {
			l.box.Close()
		}
		if l.pipeW != nil {
			l.pipeW.Close()
		}
		if l.preload != nil {
			// The reader takes what is queued, and ends.
			l.preload.SetReadDeadline(time.Now())
		}
		if l.stopW >= 0 {
			unix.Write(l.stopW, []byte{1})
		}
		if l.host != nil {
			l.host.Close() // a box side that never armed the log: recvmsg returns
		}
		deadline := time.After(2 * time.Second)
		select {
		case <-l.done:
		case <-deadline:
			// A notification withdrawn between poll and receive leaves
			// the receive waiting for the next one, which never comes
			// once the box is gone: nothing is lost by not waiting.
		}
		if l.preload != nil {
			select {
			case <-l.pdone:
			case <-deadline:
			}
		}
		if l.audit != nil {
			l.audit.close()
		}
	})
}

// Err is the failure of a goroutine of the log during the run (a panic,
// recovered): the run must fail with it. Nil when none failed.
func (l *Log) Err() error {
	if l == nil {
		return nil
	}
	return l.failed.get()
}

func (l *Log) warn(err error) {
	what := "this run's refusals are not recorded"
	if l.broker != nil {
		what = "the calls that change a file's mode, owner, times or attributes fail in the box (ENOSYS)"
		if l.mode != "" && l.mode != Preload {
			what += ", and this run's refusals are not recorded"
		}
	}
	l.ev.Emit(event.Event{Kind: event.Warning, Detail: "filesystem log: " + err.Error() + "; " + what})
}

// run waits for the box's side to arm the log, then serves it.
func (l *Log) run() {
	defer close(l.done)
	// Registered before the listener's close (below): as a panic
	// unwinds, the listener is closed first, which fails every call it
	// took (ENOSYS), and then this recovers.
	defer func() {
		if r := recover(); r != nil {
			l.failed.recovered(l.ev, "listener of the box's seccomp notifications", r)
		}
	}()
	buf := make([]byte, 1024)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(l.host.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err == unix.ECONNRESET {
		// The box's side closed with the offered program unread (a box
		// that failed before arming): what it sent is still queued.
		n, oobn, _, _, err = unix.Recvmsg(int(l.host.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	}
	if err != nil || n == 0 {
		return // the box never started, or stopped before CMD
	}
	switch buf[0] {
	case msgFailed:
		l.warn(fmt.Errorf("%s", event.Escape(string(buf[1:n]))))
	case msgListener:
		lfd := -1
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
			if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
				lfd = fds[0]
			}
		}
		if lfd < 0 {
			l.warn(fmt.Errorf("no listener came from the box"))
			return
		}
		defer unix.Close(lfd)
		// The supervisor runs right after the caller blocks: the call
		// waits less.
		unix.Syscall(unix.SYS_IOCTL, uintptr(lfd), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
		judge := l.judge
		if l.mode != Notify {
			judge = nil // the broker's listener alone: the log is Landlock's audit, or off
		}
		if l.mode == Audit {
			// The box's side announces its Landlock domain next
			// (a broker's listener comes first).
			audited := make(chan struct{})
			defer func() { <-audited }()
			go func() {
				defer close(audited)
				if n, _, _, _, err := unix.Recvmsg(int(l.host.Fd()), buf, nil, 0); err == nil && n > 0 && buf[0] == msgDomain {
					l.domain(buf[:n])
				}
			}()
		}
		nt := &notifier{lfd: lfd, root: -1, judge: judge, broker: l.broker, sock: l.sock, ev: l.ev, seen: l.seen}
		nt.serve(l.stopR)
		if nt.root >= 0 {
			unix.Close(nt.root)
		}
	case msgDomain:
		l.domain(buf[:n])
	}
}

// domain serves Landlock's audit records of the domain the box's side
// announced (msgDomain and its pid).
func (l *Log) domain(msg []byte) {
	if len(msg) < 9 || l.audit == nil {
		return
	}
	pid := int(binary.LittleEndian.Uint64(msg[1:9]))
	l.audit.serve(pid, l.judge, l.ev, l.seen, l.stopR)
}
