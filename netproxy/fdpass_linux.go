package netproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pair creates the channel between the box and the proxy: a connected pair
// of unix SOCK_SEQPACKET sockets, with no name in any filesystem or in the
// abstract namespace, so nothing but the holders of its two ends can use it.
// host is for Serve; box is handed to the box's init (its fd is close-on-exec
// here; exec.Cmd.ExtraFiles passes it on without).
func Pair() (host *net.UnixConn, box *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the proxy socket pair: %w", err)
	}
	hf := os.NewFile(uintptr(fds[0]), "proxy")
	hc, err := net.FileConn(hf) // dups the fd, close-on-exec
	hf.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("using the proxy socket pair: %w", err)
	}
	return hc.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "proxy-box"), nil
}

// Channel turns the box's end of the pair, inherited as f, into the
// connection Relay sends on. It refuses anything but a unix SOCK_SEQPACKET
// socket, so a wrong fd fails here and not at the first connection.
func Channel(f *os.File) (*net.UnixConn, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("fd %d is not the proxy's socket: %w", f.Fd(), err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok || uc.LocalAddr().Network() != "unixpacket" {
		c.Close()
		return nil, fmt.Errorf("fd %d is not the proxy's socket (want a unix packet socket)", f.Fd())
	}
	return uc, nil
}

// Relay is the box's end: it accepts on ln (127.0.0.1:PORT inside the box's
// network namespace) and hands each accepted connection to the proxy over c,
// the box's end of Pair, then closes its own copy. Nothing is copied here:
// the proxy reads and writes the client's TCP socket itself (a socket keeps
// its network namespace when it is passed on; the descriptor works from the
// host). One message per connection: one byte, the tag (0: the proxy port;
// i: the port forward to Options.Forward[i-1]), with the socket attached as
// SCM_RIGHTS (unix(7)).
//
// When the proxy is gone (the host end closed) the client's connection is
// closed unanswered: the box fails closed. Relay returns nil once ln is
// closed.
func Relay(ln net.Listener, c *net.UnixConn, tag byte) error {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			if retry(err) {
				continue
			}
			return err
		}
		send(c, conn, tag)
		conn.Close()
	}
}

// send passes conn's descriptor over c with tag.
func send(c *net.UnixConn, conn net.Conn, tag byte) error {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		_, _, serr = c.WriteMsgUnix([]byte{tag}, unix.UnixRights(int(fd)), nil)
	}); err != nil {
		return err
	}
	return serr
}

// Serve receives the box's connections over c, the host end of Pair, and
// serves each one, until the box closes its end (every process in the box
// has ended) or Close is called; it then returns nil. Close still has to be
// called to end the connections in progress.
//
// Who may connect: only a holder of the box's end of the pair can send, and
// only the box's init holds it (close-on-exec, so CMD does not inherit it).
// There is no socket file, so no other user or process on the host can
// reach the proxy, and no peer credentials to check: the channel is the
// credential. A process in the box that took the descriptor from the init
// anyway could send nothing worse than a connection to 127.0.0.1:PORT, which
// it may open anyway: every descriptor must be a connected TCP socket, or it
// is closed unread (a pipe or a FUSE file could otherwise stall the proxy's
// goroutines forever), and every request is checked by the rules. The other
// messages on the pair (pair_linux.go) bind only a forward's port on the
// box's own loopback, and hand agentbox sockets it connects itself.
func (p *Proxy) Serve(c *net.UnixConn) error {
	if !p.track(c) {
		c.Close()
		return nil
	}
	defer p.untrack(c)
	p.mu.Lock()
	if p.ch == nil {
		p.ch = c
		close(p.chReady)
	}
	p.mu.Unlock()
	// Room for more than a well-formed message has, bytes and descriptors,
	// so that a malformed one is seen whole and every descriptor in it is
	// closed.
	var msg [8]byte
	oob := make([]byte, unix.CmsgSpace(4*8))
	for {
		n, oobn, flags, _, err := c.ReadMsgUnix(msg[:], oob)
		if err != nil {
			if p.isClosed() || errors.Is(err, io.EOF) {
				return nil
			}
			if retry(err) {
				continue
			}
			return fmt.Errorf("receiving from the box: %w", err)
		}
		fds := rights(oob[:oobn])
		if n == 0 && len(fds) == 0 {
			return nil // the box's end is closed: the box has ended
		}
		truncated := flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0
		switch {
		case !truncated && n == 1 && len(fds) == 1:
			p.accept(fds[0], msg[0])
		case !truncated && n == 3 && msg[0] == msgBind && len(fds) == 1:
			p.bindForBox(c, fds[0], int(binary.BigEndian.Uint16(msg[1:3])))
		case !truncated && n == 2 && msg[0] == msgSocket && len(fds) <= 1 && (msg[1] == 0) == (len(fds) == 1):
			p.minted(fds, syscall.Errno(msg[1]))
		default:
			for _, fd := range fds {
				unix.Close(fd)
			}
			p.record("box", "", Decision{Reason: "malformed message from the box"}, nil)
		}
	}
}

// maxConns bounds the connections one box can have open through the proxy
// at once: the proxy lives on the host, outside the box's limits.
const maxConns = 512

// rights returns the descriptors in a control message buffer.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

// accept checks one received descriptor and serves it.
func (p *Proxy) accept(fd int, tag byte) {
	f := os.NewFile(uintptr(fd), "box connection")
	nc, err := net.FileConn(f) // fails for anything but a socket, without reading it
	f.Close()
	if err != nil {
		p.record("box", "", Decision{Reason: "the box sent a descriptor that is not a socket"}, nil)
		return
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok || tc.RemoteAddr() == nil {
		nc.Close()
		p.record("box", "", Decision{Reason: "the box sent a descriptor that is not a connected TCP socket"}, nil)
		return
	}
	if int(tag) > len(p.opts.Forward) {
		tc.Close()
		p.record("box", "", Decision{Reason: fmt.Sprintf("the box sent a connection for unknown forward %d", tag)}, nil)
		return
	}
	if p.serving.Add(1) > maxConns {
		p.serving.Add(-1)
		tc.Close()
		p.record("box", "", Decision{Reason: fmt.Sprintf("more than %d connections open at once", maxConns)}, nil)
		return
	}
	if !p.track(tc) {
		p.serving.Add(-1)
		tc.Close()
		return
	}
	go func() {
		defer p.serving.Add(-1)
		defer p.untrack(tc)
		if tag == 0 {
			p.serveConn(tc)
			return
		}
		p.serveForward(tc, p.opts.Forward[tag-1])
	}()
}
