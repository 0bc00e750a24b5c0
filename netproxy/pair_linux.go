package netproxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The pair carries, besides the box's connections (one byte, the tag, and
// the socket), two exchanges, told apart by their length:
//
//   - 'B' and a port (three bytes, the port big-endian) with an unbound TCP
//     socket, box to host: the init may not bind the port itself (a port
//     below the namespace's ip_unprivileged_port_start, and the init holds
//     no capability, as root too), so agentbox binds the socket to the
//     loopback address of its family and that port, and listens. The
//     socket belongs to the box's network namespace whoever binds it, and
//     agentbox may bind low ports there: as root it holds
//     CAP_NET_BIND_SERVICE, and as another user it owns the box's user
//     namespace. Only the ports of the box's forwards are bound. The
//     answer, host to box, is 'B' and an errno (0: done).
//   - 'S', host to box: a published port had a connection, and agentbox
//     needs a socket in the box's network namespace to reach the box's
//     server. The init answers 'S' and 0 with a fresh TCP socket, unbound
//     and unconnected, or 'S' and an errno; agentbox connects it to
//     127.0.0.1 and the published port, and to nothing else.
const (
	msgBind   = 'B'
	msgSocket = 'S'
)

// boxWait bounds how long either side waits for the other's answer.
const boxWait = 10 * time.Second

// bindForBox serves a 'B' message: it binds fd to the loopback address of
// its family and port, listens, and answers with the errno.
func (p *Proxy) bindForBox(c *net.UnixConn, fd, port int) {
	err := p.bindFD(fd, port)
	unix.Close(fd) // the box keeps its own copy of the socket
	var errno syscall.Errno
	if err != nil {
		if !errors.As(err, &errno) || errno > 255 {
			errno = unix.EPERM
		}
		p.record("box", "", Decision{Reason: fmt.Sprintf("binding port %d for the box: %v", port, err)}, nil)
	}
	c.Write([]byte{msgBind, byte(errno)})
}

// bindFD binds and listens on fd, an unbound TCP socket from the box, if
// port is one of the box's forwards.
func (p *Proxy) bindFD(fd, port int) error {
	if !p.forwardPort[port] {
		return fmt.Errorf("port %d is not a forward's: %w", port, unix.EPERM)
	}
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return err
	}
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
		return fmt.Errorf("not a TCP socket: %w", unix.EINVAL)
	}
	var sa unix.Sockaddr
	switch domain {
	case unix.AF_INET:
		sa = &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	case unix.AF_INET6:
		sa = &unix.SockaddrInet6{Port: port, Addr: [16]byte{15: 1}}
	default:
		return fmt.Errorf("not an IPv4 or IPv6 socket: %w", unix.EINVAL)
	}
	// Bound already, it is not the fresh socket the init makes.
	if local, err := unix.Getsockname(fd); err != nil || sockPort(local) != 0 {
		return fmt.Errorf("the socket is bound already: %w", unix.EINVAL)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return err
	}
	return unix.Listen(fd, 4096)
}

func sockPort(sa unix.Sockaddr) int {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return a.Port
	case *unix.SockaddrInet6:
		return a.Port
	}
	return -1
}

// minted delivers the init's answer to 'S' to DialBox. An answer nobody
// waits for any more (DialBox gave up) is closed.
func (p *Proxy) minted(fds []int, errno syscall.Errno) {
	s := boxSocket{fd: -1}
	if len(fds) == 1 {
		s.fd = fds[0]
	} else {
		s.err = errno
	}
	select {
	case p.sockets <- s:
	default:
		if s.fd >= 0 {
			unix.Close(s.fd)
		}
	}
}

// DialBox connects to port on the box's own loopback (127.0.0.1:port in
// the box's network namespace), for a published port. The socket comes
// from the box's init, made in the box's network namespace; agentbox
// checks that it is a fresh TCP socket and connects it itself, to that
// address only, so a box can receive connections this way but never make
// one: publishing opens no way out.
func (p *Proxy) DialBox(ctx context.Context, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("bad port %d", port)
	}
	ctx, cancel := context.WithTimeout(ctx, boxWait)
	defer cancel()
	select {
	case <-p.chReady: // Serve has the pair
	case <-ctx.Done():
		return nil, errors.New("the box is not running")
	case <-p.ctx.Done():
		return nil, errors.New("proxy closed")
	}
	p.mu.Lock()
	ch := p.ch
	p.mu.Unlock()
	// One question at a time, so the answer is this one's.
	p.askMu.Lock()
	defer p.askMu.Unlock()
	for drained := false; !drained; {
		select {
		case s := <-p.sockets: // the answer to a question given up on
			if s.fd >= 0 {
				unix.Close(s.fd)
			}
		default:
			drained = true
		}
	}
	ch.SetWriteDeadline(time.Now().Add(boxWait))
	if _, err := ch.Write([]byte{msgSocket}); err != nil {
		return nil, fmt.Errorf("asking the box for a socket: %w", err)
	}
	var s boxSocket
	select {
	case s = <-p.sockets:
	case <-ctx.Done():
		return nil, fmt.Errorf("asking the box for a socket: %w", ctx.Err())
	case <-p.ctx.Done():
		return nil, errors.New("proxy closed")
	}
	if s.err != nil {
		return nil, fmt.Errorf("the box could not make a socket: %w", s.err)
	}
	return connectBox(ctx, s.fd, port)
}

// connectBox checks that fd is a fresh TCP/IPv4 socket and connects it to
// 127.0.0.1:port, taking ownership of fd.
func connectBox(ctx context.Context, fd, port int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "box socket")
	defer f.Close()
	domain, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err1 != nil || err2 != nil || domain != unix.AF_INET || typ != unix.SOCK_STREAM {
		return nil, errors.New("the box sent something other than a TCP/IPv4 socket")
	}
	if local, err := unix.Getsockname(fd); err != nil || sockPort(local) != 0 {
		return nil, errors.New("the box sent a socket that is bound already")
	}
	if _, err := unix.Getpeername(fd); !errors.Is(err, unix.ENOTCONN) {
		return nil, errors.New("the box sent a socket that is connected already")
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	err := unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	if errors.Is(err, unix.EINPROGRESS) {
		err = waitConnected(ctx, fd)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to 127.0.0.1:%d in the box: %w", port, err)
	}
	c, err := net.FileConn(f) // a copy; f's is closed above
	if err != nil {
		return nil, err
	}
	return c, nil
}

// waitConnected waits for a non-blocking connect on fd to finish.
func waitConnected(ctx context.Context, fd int) error {
	deadline, _ := ctx.Deadline()
	for {
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms <= 0 {
			return unix.ETIMEDOUT
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(pfd, min(ms, 100))
		if errors.Is(err, unix.EINTR) || n == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		if err != nil {
			return err
		}
		soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return err
		}
		if soerr != 0 {
			return syscall.Errno(soerr)
		}
		return nil
	}
}

// HostBind is the box's side of 'B': the init could not bind fd, an unbound
// TCP socket, to the loopback port itself, and asks agentbox to, over c;
// it returns once agentbox has bound fd and it listens, or with why not.
func HostBind(c *net.UnixConn, fd, port int) error {
	msg := binary.BigEndian.AppendUint16([]byte{msgBind}, uint16(port))
	if _, _, err := c.WriteMsgUnix(msg, unix.UnixRights(fd), nil); err != nil {
		return fmt.Errorf("asking agentbox to bind port %d: %w", port, err)
	}
	c.SetReadDeadline(time.Now().Add(boxWait))
	defer c.SetReadDeadline(time.Time{})
	var answer [8]byte
	n, err := c.Read(answer[:])
	switch {
	case err != nil:
		return fmt.Errorf("agentbox binding port %d: %w", port, err)
	case n != 2 || answer[0] != msgBind:
		return fmt.Errorf("agentbox binding port %d: a malformed answer", port)
	case answer[1] != 0:
		return fmt.Errorf("agentbox binding port %d: %w", port, syscall.Errno(answer[1]))
	}
	return nil
}

// AnswerSockets is the box's side of 'S': for each question on c it sends
// a fresh TCP/IPv4 socket, until c ends. Only a box with published ports
// runs it.
func AnswerSockets(c *net.UnixConn) error {
	var q [8]byte
	for {
		n, err := c.Read(q[:])
		if err != nil || n == 0 {
			if err == nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if n != 1 || q[0] != msgSocket {
			continue
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			errno, _ := err.(syscall.Errno)
			if errno == 0 || errno > 255 {
				errno = unix.EIO
			}
			c.Write([]byte{msgSocket, byte(errno)})
			continue
		}
		c.WriteMsgUnix([]byte{msgSocket, 0}, unix.UnixRights(fd), nil)
		unix.Close(fd)
	}
}
