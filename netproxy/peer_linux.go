package netproxy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// SameUser returns a peer check for ServeListener that lets through only
// connections whose client socket belongs to uid. TCP carries no
// credentials, so the kernel's own table of sockets says who owns the
// client's end (/proc/net/tcp and tcp6: local address, remote address,
// uid). A connection that cannot be found there (it closed already) is
// refused: the check fails closed.
func SameUser(uid int) func(net.Conn) error {
	return func(c net.Conn) error {
		client, ok1 := c.RemoteAddr().(*net.TCPAddr)
		server, ok2 := c.LocalAddr().(*net.TCPAddr)
		if !ok1 || !ok2 {
			return fmt.Errorf("not a TCP connection")
		}
		owner, err := socketOwner(client.AddrPort(), server.AddrPort())
		if err != nil {
			return err
		}
		if owner != uid {
			return fmt.Errorf("the client runs as uid %d, not %d", owner, uid)
		}
		return nil
	}
}

// socketOwner finds the uid of the socket whose local end is local and
// remote end remote.
func socketOwner(local, remote netip.AddrPort) (int, error) {
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		uid, found := scanSockets(f, local, remote)
		f.Close()
		if found {
			return uid, nil
		}
	}
	return 0, fmt.Errorf("the client's socket %s is not in the kernel's table", local)
}

func scanSockets(f *os.File, local, remote netip.AddrPort) (int, bool) {
	s := bufio.NewScanner(f)
	s.Scan() // the header
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 8 {
			continue
		}
		l, err1 := parseSockAddr(fields[1])
		r, err2 := parseSockAddr(fields[2])
		if err1 != nil || err2 != nil || !sameEnd(l, local) || !sameEnd(r, remote) {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		if err != nil {
			return 0, false
		}
		return uid, true
	}
	return 0, false
}

// sameEnd compares two endpoints, an IPv4 address and its IPv4-mapped
// IPv6 form being the same.
func sameEnd(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}

// parseSockAddr reads an address of /proc/net/tcp: the address as 32-bit
// words, each printed in hex as the number its network-order bytes make in
// host order, a colon, the port in hex.
func parseSockAddr(s string) (netip.AddrPort, error) {
	addr, port, ok := strings.Cut(s, ":")
	if !ok || (len(addr) != 8 && len(addr) != 32) {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	raw := make([]byte, len(addr)/2)
	for i := 0; i < len(addr); i += 8 {
		w, err := strconv.ParseUint(addr[i:i+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
		}
		binary.NativeEndian.PutUint32(raw[i/2:], uint32(w))
	}
	n, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad port %q", s)
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a, uint16(n)), nil
}
