package netproxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// host is a checked, canonical host: a DNS name or an IP address, never both.
type host struct {
	name string     // lower-case, no trailing dot; "" when addr is set
	addr netip.Addr // unmapped IPv4 or IPv6, no zone; invalid when name is set
}

// String returns the canonical form: the name, or the address without brackets.
func (h host) String() string {
	if h.addr.IsValid() {
		return h.addr.String()
	}
	return h.name
}

// hostPort joins a host and a port, bracketing IPv6.
func hostPort(h host, port int) string {
	return net.JoinHostPort(h.String(), strconv.Itoa(port))
}

// parseHost turns what a client or a policy wrote into a canonical host.
//
// A proxy is only as strict as its parser: the name it checks must be the
// one it connects to. So every spelling of an address (inet_aton's "127.1",
// "2130706433", "0x7f.0.0.1", "0177.0.0.1"; IPv6 with or without brackets;
// IPv4-mapped IPv6) becomes the one canonical address, and anything that is
// not plainly a DNS name (non-ASCII, control characters, spaces, '%' zone ids
// or escapes, '/', '@' userinfo) is refused rather than guessed at.
func parseHost(s string) (host, error) {
	if s == "" {
		return host{}, errors.New("empty host")
	}
	if strings.HasPrefix(s, "[") {
		inner, ok := strings.CutSuffix(s[1:], "]")
		if !ok || !strings.Contains(inner, ":") {
			return host{}, fmt.Errorf("host %q: brackets must hold an IPv6 address", s)
		}
		s = inner
	}
	for _, r := range s {
		if !hostChar(r) {
			return host{}, fmt.Errorf("host %q: character %q not allowed", s, r)
		}
	}
	if strings.Contains(s, ":") {
		// No zone can reach here: '%' is not a host character. A zone would
		// pick an interface, which is not the policy's business.
		a, err := netip.ParseAddr(s)
		if err != nil {
			return host{}, fmt.Errorf("host %q: not an IPv6 address", s)
		}
		return host{addr: a.Unmap()}, nil
	}
	s = strings.ToLower(s)
	s = strings.TrimSuffix(s, ".") // "example.com." is the same host, fully qualified
	if s == "" {
		return host{}, errors.New("empty host")
	}
	labels := strings.Split(s, ".")
	if numeric(labels[len(labels)-1]) {
		// A host whose last label is a number is an IPv4 address or nothing,
		// as in the WHATWG URL standard's "ends in a number" rule: resolvers
		// (glibc's inet_aton, browsers) read it as one, so it must never be
		// mistaken for a name.
		a, err := parseIPv4(labels)
		if err != nil {
			return host{}, fmt.Errorf("host %q: %w", s, err)
		}
		return host{addr: a}, nil
	}
	if len(s) > 253 {
		return host{}, fmt.Errorf("host %q: longer than 253 characters", s)
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return host{}, fmt.Errorf("host %q: empty or over-long label", s)
		}
	}
	return host{name: s}, nil
}

// hostChar reports whether r may appear in a host: ASCII letters, digits,
// '-', '.', '_' (found in real DNS names) and ':' (IPv6).
func hostChar(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return r == '-' || r == '.' || r == '_' || r == ':'
}

// numeric reports whether a label looks like a number in any base inet_aton
// reads: decimal, octal (leading 0) or hexadecimal (leading 0x).
func numeric(l string) bool {
	if l == "" {
		return false
	}
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for _, c := range l[2:] {
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
		return true
	}
	for _, c := range l {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseIPv4 reads an address the way inet_aton does: one to four parts, each
// decimal, octal or hex; the last part fills all the bytes that are left, so
// "127.1" is 127.0.0.1 and "2130706433" is 127.0.0.1 too.
func parseIPv4(parts []string) (netip.Addr, error) {
	if len(parts) > 4 {
		return netip.Addr{}, errors.New("not an IPv4 address: more than 4 parts")
	}
	var v uint64
	for i, p := range parts {
		n, err := parseIPv4Part(p)
		if err != nil {
			return netip.Addr{}, err
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, fmt.Errorf("not an IPv4 address: part %q over 255", p)
			}
			v = v<<8 | n
			continue
		}
		rest := 4 - i // bytes the last part fills
		if n >= 1<<(8*rest) {
			return netip.Addr{}, fmt.Errorf("not an IPv4 address: part %q too large", p)
		}
		v = v<<(8*rest) | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), nil
}

// parseIPv4Part reads one part of an inet_aton address.
func parseIPv4Part(p string) (uint64, error) {
	base, digits := 10, p
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, digits = 16, p[2:]
	case len(p) >= 2 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return 0, fmt.Errorf("not an IPv4 address: bad part %q", p)
	}
	return n, nil
}

// splitHostPort splits "host:port", "[v6]:port", or (when def > 0) a bare
// host, which then gets port def.
func splitHostPort(s string, def int) (string, int, error) {
	if def > 0 && (!strings.Contains(s, ":") || strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]")) {
		return s, def, nil
	}
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, errors.New("want host:port")
	}
	if strings.Contains(s, "[") {
		h = "[" + h + "]" // keep the brackets so parseHost insists on IPv6
	}
	port, err := parsePort(p)
	if err != nil {
		return "", 0, err
	}
	return h, port, nil
}

// parsePort reads a decimal TCP port, 1 to 65535; no sign, no spaces.
func parsePort(p string) (int, error) {
	if p == "" || len(p) > 5 || strings.TrimLeft(p, "0123456789") != "" {
		return 0, fmt.Errorf("bad port %q", p)
	}
	n, _ := strconv.Atoi(p)
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %d out of range 1-65535", n)
	}
	return n, nil
}
