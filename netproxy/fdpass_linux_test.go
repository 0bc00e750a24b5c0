package netproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestForeignDescriptors has the box send what a misbehaving process holding
// the box's end could send: a pipe, a unix socket, a listening TCP socket, an
// unknown forward tag, two descriptors at once, none. Each is refused and
// logged, and the proxy keeps serving.
func TestForeignDescriptors(t *testing.T) {
	b := startBox(t, []string{"example.test"}, nil, boxOptions{})
	sendFDs := func(tag byte, fds ...int) {
		t.Helper()
		var oob []byte
		if len(fds) > 0 {
			oob = syscall.UnixRights(fds...)
		}
		if _, _, err := b.ch.WriteMsgUnix([]byte{tag}, oob, nil); err != nil {
			t.Fatal(err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	sendFDs(0, int(r.Fd()))
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(pair[0])
	defer syscall.Close(pair[1])
	sendFDs(0, pair[0])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	sendFDs(0, int(lf.Fd()))
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cf, err := c.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	sendFDs(7, int(cf.Fd()))
	sendFDs(0, int(r.Fd()), int(w.Fd()))
	sendFDs(0)

	// Still serving: a real connection through the relay works.
	d, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	io.WriteString(d, "CONNECT other.test:1 HTTP/1.1\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(d), nil); err != nil || resp.StatusCode != 403 {
		t.Fatalf("after the foreign descriptors: %v %v, want 403", resp, err)
	}
	log := b.log.String()
	logHas(t, log, "deny box -", "not a socket")
	logHas(t, log, "deny box -", "not a connected TCP socket")
	logHas(t, log, "deny box -", "unknown forward 7")
	logHas(t, log, "deny box -", "malformed message")
	if n := strings.Count(log, "deny box -"); n != 6 {
		t.Errorf("%d refused descriptors logged, want 6:\n%s", n, log)
	}
	// The pipe was never read: what is written stays there.
	w.Write([]byte("x"))
	var buf [1]byte
	r.SetReadDeadline(time.Now().Add(time.Second))
	if n, _ := r.Read(buf[:]); n != 1 {
		t.Errorf("pipe: read %d bytes, want the 1 written", n)
	}
}

// TestHostBind has the box ask agentbox to bind sockets: a forward's port
// is bound and listens (in whatever namespace the socket is: here the
// test's own); a port that is no forward's, a socket bound already and a
// UDP socket are refused with the errno, and logged.
func TestHostBind(t *testing.T) {
	// A free port to be the forward's.
	probe, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	probe.Close()
	b := startBox(t, []string{"localhost:" + strconv.Itoa(port)}, nil, boxOptions{forward: []string{"localhost:" + strconv.Itoa(port)}})
	socket := func(typ int) int {
		fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	fd := socket(unix.SOCK_STREAM)
	if err := HostBind(b.ch, fd, port); err != nil {
		t.Fatalf("HostBind of the forward's port: %v", err)
	}
	if acc, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || acc != 1 {
		t.Fatalf("the socket does not listen: %d %v", acc, err)
	}
	c, err := net.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("connecting to the bound socket: %v", err)
	}
	c.Close()

	bound := socket(unix.SOCK_STREAM)
	if err := unix.Bind(bound, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		fd   int
		port int
		want syscall.Errno
	}{
		{"not a forward's port", socket(unix.SOCK_STREAM), port + 1, unix.EPERM},
		{"bound already", bound, port, unix.EINVAL},
		{"UDP", socket(unix.SOCK_DGRAM), port, unix.EINVAL},
	} {
		err := HostBind(b.ch, tc.fd, tc.port)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: HostBind = %v, want %v", tc.name, err, tc.want)
		}
	}
	log := b.log.String()
	logHas(t, log, "deny box -", "is not a forward")
	logHas(t, log, "deny box -", "bound already")
	logHas(t, log, "deny box -", "not a TCP socket")
}

// TestDialBox reaches a server through a socket the box's end makes when
// asked (AnswerSockets), and only on the port asked for.
func TestDialBox(t *testing.T) {
	b := startBox(t, nil, nil, boxOptions{})
	go AnswerSockets(b.ch)
	srv := serveTCP(t, "tcp4", "127.0.0.1:0", echo)
	c, err := b.p.DialBox(context.Background(), srv.port())
	if err != nil {
		t.Fatalf("DialBox: %v", err)
	}
	defer c.Close()
	if got := roundTrip(t, c, c, "published"); got != "published" {
		t.Errorf("echo: %q", got)
	}
	if got := c.RemoteAddr().String(); got != "127.0.0.1:"+strconv.Itoa(srv.port()) {
		t.Errorf("connected to %s", got)
	}
	srv.close()
	if _, err := b.p.DialBox(context.Background(), srv.port()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("DialBox to a closed port: %v, want connection refused", err)
	}
}

// TestDialBoxForeignSocket: what the box sends back must be a fresh
// TCP/IPv4 socket; a connected one, a bound one or a unix socket is
// refused rather than used.
func TestDialBoxForeignSocket(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T) int
		want string
	}{
		{"unix socket", func(t *testing.T) int {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			unix.Close(fds[1])
			return fds[0]
		}, "other than a TCP/IPv4 socket"},
		{"bound", func(t *testing.T) int {
			fd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
			unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
			return fd
		}, "bound already"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBox(t, nil, nil, boxOptions{})
			go func() {
				var q [8]byte
				if n, _ := b.ch.Read(q[:]); n == 1 && q[0] == msgSocket {
					fd := tc.make(t)
					b.ch.WriteMsgUnix([]byte{msgSocket, 0}, unix.UnixRights(fd), nil)
					unix.Close(fd)
				}
			}()
			_, err := b.p.DialBox(context.Background(), 9)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DialBox: %v, want %q", err, tc.want)
			}
		})
	}
}
