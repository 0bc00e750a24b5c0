package netproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// Bridge is the in-box end: it accepts on ln (127.0.0.1:PORT inside the
// box's network namespace) and forwards each connection byte for byte to the
// proxy's unix socket at socketPath, in both directions, with half-close.
// It does not parse anything; the proxy sees exactly what the client sent.
// It returns nil once ln is closed.
func Bridge(ln net.Listener, socketPath string) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			if retry(err) {
				continue
			}
			return err
		}
		go func() {
			u, err := net.Dial("unix", socketPath)
			if err != nil {
				c.Close() // the client sees a reset: no proxy, no network
				return
			}
			pipe(c, u)
		}()
	}
}

// Forward is an in-box port forward to one fixed destination: it accepts on
// ln (say 127.0.0.1:3000 inside the box) and asks the proxy, by SOCKS5, for
// target (say "localhost:3000"). Programs honour NO_PROXY=localhost and so
// never send localhost through the proxy; Forward is how a host service that
// the policy allows explicitly (issue 5, item 5) is still reached at its
// usual address. The proxy checks target like any other request: on a
// denial the client's connection is closed.
func Forward(ln net.Listener, socketPath, target string) error {
	host, port, err := splitHostPort(target, 0)
	if err != nil {
		return fmt.Errorf("forward target %q: %w", target, err)
	}
	if len(host) > 255 {
		return fmt.Errorf("forward target %q: host too long", target)
	}
	req := []byte{socksVersion, 1, socksNoAuth, socksVersion, socksConnect, 0, socksDomain, byte(len(host))}
	req = append(req, host...)
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			if retry(err) {
				continue
			}
			return err
		}
		go func() {
			u, err := net.Dial("unix", socketPath)
			if err != nil {
				c.Close()
				return
			}
			if !socksOpen(u, req) {
				u.Close()
				c.Close()
				return
			}
			pipe(c, u)
		}()
	}
}

// socksOpen sends a prepared SOCKS5 greeting and request and reads the
// replies byte by byte, so nothing of the tunnel is read ahead.
func socksOpen(u net.Conn, req []byte) bool {
	if _, err := u.Write(req); err != nil {
		return false
	}
	var r [6]byte // greeting reply, then the reply's version, code, reserved, address type
	if _, err := io.ReadFull(u, r[:]); err != nil || r[1] != socksNoAuth || r[3] != socksOK {
		return false
	}
	n := 4 + 2
	if r[5] == socksIPv6 {
		n = 16 + 2
	}
	_, err := io.ReadFull(u, make([]byte, n))
	return err == nil
}
