package winsandbox

import (
	"crypto/sha256"
	"fmt"
)

// WFPFilter is one Windows Filtering Platform filter setup installs for the
// offline user, beside the firewall rules: it blocks the user's own sockets
// to a port (or of a protocol) at one ALE layer, whether or not the Windows
// Firewall is on. They follow the filters Codex's Windows sandbox installs
// for its offline user (ICMP, DNS, DNS over TLS, SMB, NetBIOS).
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
	// Layer is "connect" (FWPM_LAYER_ALE_AUTH_CONNECT) or "assign"
	// (FWPM_LAYER_ALE_RESOURCE_ASSIGNMENT).
	Layer string `json:"layer"`
	IPv6  bool   `json:"ipv6,omitempty"`
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
	return out
}

// guidOf derives a fixed GUID from a name: the first 16 bytes of its
// SHA-256, as a version 4, variant 1 GUID (so it looks like any other).
func guidOf(name string) string {
	h := sha256.Sum256([]byte(name))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
