package netproxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
)

// Resolver looks up a name's addresses. *net.Resolver is one; tests inject a
// map so that "example.test" can lead to a local server.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// cgnat is the shared address space of RFC 6598, used by carrier NAT and by
// overlay networks such as Tailscale: private in all but name.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// class names what kind of address a is, for the resolution check; "" is a
// public unicast address.
func class(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsUnspecified() || a.Is4() && a.As4()[0] == 0:
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "multicast"
	case a.IsPrivate() || cgnat.Contains(a):
		return "private"
	}
	return ""
}

// vet checks the addresses an allowed name resolved to, before any of them
// is dialled. The name check alone is not enough: whoever runs a name's DNS
// chooses its addresses, so "x.example.com" allowed by "*.example.com" could
// resolve to 127.0.0.1 and reach the host's own services (DNS rebinding).
//
//   - Unspecified (0.0.0.0 connects to the local host on Linux), multicast
//     and link-local addresses (169.254.169.254 is the cloud metadata service,
//     which hands out credentials) are refused for every name.
//   - Loopback and private addresses are refused for wildcard rules and
//     accepted for an exact-name rule: the user named that very host, so it
//     is theirs to trust ("localhost:3000", an intranet registry, or a test
//     that maps "example.test" to 127.0.0.1).
//   - Every address must also pass the deny rules, so denying "10.0.0.5"
//     also denies a name that resolves there.
//
// An address typed by the client never comes here: it matched an address
// rule, which is as explicit as a rule gets.
func (rs *Rules) vet(name string, port int, by *rule, addrs []netip.Addr) Decision {
	for _, a := range addrs {
		if d, _ := rs.checkHost(host{addr: a}, port); d.Rule != "" && !d.Allowed {
			return Decision{Rule: d.Rule, Reason: fmt.Sprintf("%s resolves to %s, which %s", name, a, d.Reason)}
		}
		c := class(a)
		switch {
		case c == "":
			continue
		case (c == "loopback" || c == "private") && by.exact():
			continue
		case c == "loopback" || c == "private":
			return Decision{Rule: by.text, Reason: fmt.Sprintf("%s resolves to %s (%s), which a wildcard rule never reaches", name, a, c)}
		default:
			return Decision{Rule: by.text, Reason: fmt.Sprintf("%s resolves to %s (%s), which only an address rule reaches", name, a, c)}
		}
	}
	return Decision{Allowed: true, Rule: by.text, Reason: fmt.Sprintf("matches allow rule %q", by.text)}
}

// lookup resolves name to unmapped addresses, without duplicates.
func lookup(ctx context.Context, r Resolver, name string) ([]netip.Addr, error) {
	ips, err := r.LookupIPAddr(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, ip := range ips {
		a, ok := netip.AddrFromSlice(ip.IP)
		if !ok {
			continue
		}
		a = a.Unmap() // zones are dropped: we never dial a scoped address by name
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no addresses", name)
	}
	return out, nil
}
