package winsandbox

import (
	"crypto/sha256"
	"fmt"
)

// WFPFilter is one Windows Filtering Platform filter setup installs for the
// offline user, beside the firewall rules: it blocks (or permits) the
// user's own sockets (FWPM_CONDITION_ALE_USER_ID) to an address, a port or
// of a protocol at one ALE layer, whether or not the Windows Firewall is
// on. The Windows Firewall's rules do not apply to loopback traffic, so a
// forward proxy on 127.0.0.1 (or any local service that fetches for its
// callers) would otherwise give the offline user the whole internet: the
// filters block every connection and every accepted connection of the
// user, on IPv4 and IPv6, loopback included, and permit, at a higher
// weight, TCP to 127.0.0.1 on the ports of agentbox's allowlist proxies
// alone. The specific blocks (ICMP, DNS, DNS over TLS, SMB, NetBIOS)
// follow the filters Codex's Windows sandbox installs for its offline
// user; the block of everything covers them too, and they stay so each is
// named in `setup --check`.
//
// What they cannot stop: a name lookup the DNS Client service makes on the
// user's behalf (the service's socket is not the user's), and SMB traffic of
// the kernel's redirector (\\server\share paths), which is the system's. WFP
// would need the name-resolution-cache layer for the first, which rejects
// such filters, and the second is indistinguishable from the host's own SMB.
type WFPFilter struct {
	// Key is the filter's fixed GUID, so setup replaces and uninstall
	// removes exactly its own filters.
	Key  string `json:"key"`
	Name string `json:"name"`
	// Layer is "connect" (FWPM_LAYER_ALE_AUTH_CONNECT), "accept"
	// (FWPM_LAYER_ALE_AUTH_RECV_ACCEPT) or "assign"
	// (FWPM_LAYER_ALE_RESOURCE_ASSIGNMENT).
	Layer string `json:"layer"`
	IPv6  bool   `json:"ipv6,omitempty"`
	// Permit makes the filter permit what it matches; it blocks
	// otherwise.
	Permit bool `json:"permit,omitempty"`
	// Weight is the filter's weight range (FWP_UINT8, 0-15; higher wins
	// within agentbox's sublayer); 0 lets the filter engine choose one
	// below every weight range above 0.
	Weight uint8 `json:"weight,omitempty"`
	// RemoteV4 is an IPv4 remote address to match ("127.0.0.1"), or "".
	RemoteV4 string `json:"remote_v4,omitempty"`
	// Protocol is an IP protocol number to match (1 ICMP, 58 ICMPv6), or 0.
	Protocol uint8 `json:"protocol,omitempty"`
	// RemotePort is a remote port to match, or 0.
	RemotePort uint16 `json:"remote_port,omitempty"`
}

// WFPProvider and WFPSublayer are the GUIDs of agentbox's own WFP provider
// and sublayer; every filter lives in the sublayer.
var (
	WFPProvider = guidOf("agentbox wfp provider v1")
	WFPSublayer = guidOf("agentbox wfp sublayer v1")
)

// WFPFilters returns the filters setup installs for the offline user.
func WFPFilters() []WFPFilter {
	var out []WFPFilter
	add := func(name, layer string, proto uint8, port uint16) {
		for _, v6 := range []bool{false, true} {
			n := name + " v4"
			p := proto
			if v6 {
				n = name + " v6"
				if proto == 1 {
					p = 58 // ICMPv6
				}
			}
			out = append(out, WFPFilter{Key: guidOf("agentbox wfp filter v1 " + n), Name: "agentbox offline: " + n, Layer: layer, IPv6: v6, Protocol: p, RemotePort: port})
		}
	}
	add("block icmp", "connect", 1, 0)
	add("block icmp sockets", "assign", 1, 0)
	add("block dns", "connect", 0, 53)
	add("block dns over tls", "connect", 0, 853)
	add("block smb", "connect", 0, 445)
	add("block netbios", "connect", 0, 139)
	add("block every connection", "connect", 0, 0)
	add("block every accepted connection", "accept", 0, 0)
	r := DefaultProxyRange
	for port := r.First; port <= r.Last(); port++ {
		n := fmt.Sprintf("permit the allowlist proxy 127.0.0.1:%d", port)
		out = append(out, WFPFilter{Key: guidOf("agentbox wfp filter v1 " + n), Name: "agentbox offline: " + n, Layer: "connect",
			Permit: true, Weight: 15, Protocol: 6, RemoteV4: "127.0.0.1", RemotePort: uint16(port)})
	}
	return out
}

// wfpVerdict is what agentbox's filters decide for one of the offline
// user's connections (layer "connect" or "accept"; proto 6 TCP, 17 UDP,
// 1 or 58 ICMP; remote the address): the matching filter of the highest
// weight decides, as in a WFP sublayer, and a connection no filter
// matches is permitted. Explicit weights rank above the engine's own
// (weight 0 here), and among equal ones a block wins.
func wfpVerdict(filters []WFPFilter, layer string, v6 bool, proto uint8, remote string, port uint16) (permit bool, by string) {
	best, found := -1, false
	permit = true
	for _, f := range filters {
		if f.Layer != layer || f.IPv6 != v6 || f.Protocol != 0 && f.Protocol != proto ||
			f.RemotePort != 0 && f.RemotePort != port || f.RemoteV4 != "" && (v6 || f.RemoteV4 != remote) {
			continue
		}
		w := int(f.Weight)
		if !found || w > best || w == best && !f.Permit {
			best, found, permit, by = w, true, f.Permit, f.Name
		}
	}
	return permit, by
}

// guidOf derives a fixed GUID from a name: the first 16 bytes of its
// SHA-256, as a version 4, variant 1 GUID (so it looks like any other).
func guidOf(name string) string {
	h := sha256.Sum256([]byte(name))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
