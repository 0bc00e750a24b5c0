package netproxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
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
