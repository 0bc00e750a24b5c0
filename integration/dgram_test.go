//go:build linux

package integration

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

// A host service behind a datagram socket (syslog, the journal) is out of
// a Landlock box's reach too: socket(AF_UNIX) is refused, and so is a
// datagram socketpair, whose ends can send to any datagram socket on the
// filesystem.
func TestLandlockNoDatagramToHost(t *testing.T) {
	needTool(t, "python3", "apt-get install python3")
	w := newWorld(t)
	sock := filepath.Join(w.base, "host-dgram.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := w.boxed("landlock", nil, `python3 - `+sock+` <<'PY'
import socket, sys
for how in ("socket", "socketpair"):
    try:
        if how == "socket":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        else:
            s, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.sendto(b"from-the-box", sys.argv[1])
        print(how, "sent")
    except OSError as e:
        print(how, "refused", e.errno)
PY`)
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "socket refused")
	expectContains(t, "stdout", r.stdout, "socketpair refused")
	conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	buf := make([]byte, 64)
	if n, _, err := conn.ReadFromUnix(buf); err == nil {
		t.Errorf("the host's datagram socket received %q from the box", buf[:n])
	}
}
