package netproxy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"
)

// SOCKS5 values from RFC 1928.
const (
	socksVersion     = 0x05
	socksNoAuth      = 0x00
	socksNoMethod    = 0xff
	socksConnect     = 0x01
	socksIPv4        = 0x01
	socksDomain      = 0x03
	socksIPv6        = 0x04
	socksOK          = 0x00
	socksFailure     = 0x01
	socksNotAllowed  = 0x02 // "connection not allowed by ruleset"
	socksUnreachable = 0x04
	socksRefused     = 0x05
	socksNoCommand   = 0x07
	socksNoAddrType  = 0x08
)

// serveSOCKS serves one SOCKS5 client: no authentication (only the box can
// hand the proxy a connection; see Serve), CONNECT only.
func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader) {
	// Greeting: version, number of methods, methods.
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	if !contains(methods, socksNoAuth) {
		c.Write([]byte{socksVersion, socksNoMethod})
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}

	// Request: version, command, reserved, address type, address, port.
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return
	}
	if req[0] != socksVersion {
		return
	}
	raw, err := readSOCKSAddr(br, req[3])
	if err != nil {
		p.record("socks5", "", Decision{Reason: err.Error()}, nil)
		socksReply(c, socksNoAddrType, nil)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	if req[1] != socksConnect {
		p.record("socks5", "", Decision{Reason: "only the CONNECT command is supported"}, nil)
		socksReply(c, socksNoCommand, nil)
		return
	}

	up, _, d, err := p.open("socks5", raw, port)
	switch {
	case !d.Allowed:
		socksReply(c, socksNotAllowed, nil)
		return
	case err != nil:
		code := byte(socksUnreachable)
		if errors.Is(err, syscall.ECONNREFUSED) {
			code = socksRefused
		}
		socksReply(c, code, nil)
		return
	}
	if err := socksReply(c, socksOK, up.LocalAddr()); err != nil {
		p.dropUpstream(up)
		return
	}
	p.pass(c, br, raw, port, up)
}

// readSOCKSAddr reads a request's address as a host string for parseHost;
// a domain is passed on byte for byte so that parseHost refuses NUL, CR, LF
// and the like.
func readSOCKSAddr(r io.Reader, typ byte) (string, error) {
	switch typ {
	case socksIPv4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom4(b).String(), nil
	case socksIPv6:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return "[" + netip.AddrFrom16(b).String() + "]", nil
	case socksDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return "", err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		return string(b), nil
	}
	return "", errors.New("unknown SOCKS5 address type")
}

// socksReply writes a reply; bound is the upstream connection's local
// address when there is one.
func socksReply(w io.Writer, code byte, bound net.Addr) error {
	b := []byte{socksVersion, code, 0, socksIPv4, 0, 0, 0, 0, 0, 0}
	if ta, ok := bound.(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		if a := ap.Addr().Unmap(); a.Is4() {
			b = append(b[:4], a.AsSlice()...)
		} else {
			b = append(append(b[:3], socksIPv6), a.AsSlice()...)
		}
		b = binary.BigEndian.AppendUint16(b, ap.Port())
	}
	_, err := w.Write(b)
	return err
}

func contains(b []byte, v byte) bool {
	for _, x := range b {
		if x == v {
			return true
		}
	}
	return false
}
