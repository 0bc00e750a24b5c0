package winsandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

func TestRunnerExitReason(t *testing.T) {
	for _, tc := range []struct {
		code uint32
		want string
	}{
		{runnerFailure(runnerStageIn, 5), "the runner could not open its input pipe (Windows error 5)"},
		{runnerFailure(runnerStageOut, 231), "the runner could not open its output pipe (Windows error 231)"},
		{runnerFailure(runnerStageServer, 0), "the runner found a pipe server that is not agentbox"},
		{runnerFailure(runnerStageArgs, 0), "the runner was started with the wrong arguments"},
		{runnerFailure(runnerStageErr, 2), "the runner could not open its standard error pipe (Windows error 2)"},
		{0xC0000142, "the runner exited with status 0xc0000142 before it connected"}, // STATUS_DLL_INIT_FAILED
		{1, "the runner exited with status 0x1 before it connected"},
	} {
		if got := RunnerExitReason(tc.code); got != tc.want {
			t.Errorf("RunnerExitReason(%#x) = %q, want %q", tc.code, got, tc.want)
		}
	}
	// No Windows NTSTATUS has the customer bit: a crash is never read as
	// one of the runner's own stages.
	if runnerFailure(runnerStageIn, 0xffff)&0xC0000000 != 0 {
		t.Error("runner failures overlap NTSTATUS error codes")
	}
}

func TestSDDLNamesSID(t *testing.T) {
	sid := "S-1-5-21-1-2-3-1001"
	for sddl, want := range map[string]bool{
		"O:LSD:(A;;CC;;;S-1-5-21-1-2-3-1001)":                       true,
		"D:(A;;CC;;;S-1-5-21-1-2-3-1001)":                           true, // owner dropped on read-back
		"O:LSD:(A;;CC;;;S-1-5-21-1-2-3-1002)":                       false,
		"O:LSD:(D;;CC;;;S-1-5-21-1-2-3-1001)":                       false, // a deny does not scope the rule to the user
		"O:LSD:(A;;CC;;;S-1-5-32-545)(A;;CC;;;S-1-5-21-1-2-3-1001)": true,
		"": false,
	} {
		if got := SDDLNamesSID(sddl, sid); got != want {
			t.Errorf("SDDLNamesSID(%q) = %v, want %v", sddl, got, want)
		}
	}
	r := FirewallRules(DefaultProxyRange)[0]
	if !SDDLNamesSID(FirewallSDDL(r, sid), sid) {
		t.Errorf("the SDDL setup writes (%s) does not name the user", FirewallSDDL(r, sid))
	}
}

func TestWFPFilters(t *testing.T) {
	keys, names := map[string]bool{}, map[string]bool{}
	fs := WFPFilters()
	for _, f := range fs {
		if keys[f.Key] || names[f.Name] {
			t.Errorf("filter %q or key %s is not unique", f.Name, f.Key)
		}
		keys[f.Key], names[f.Name] = true, true
		if f.Layer != "connect" && f.Layer != "assign" && f.Layer != "accept" {
			t.Errorf("filter %q: layer %q", f.Name, f.Layer)
		}
		if f.Permit && (f.Protocol != 6 || f.RemoteV4 != "127.0.0.1" || !DefaultProxyRange.Holds(int(f.RemotePort)) || f.Weight != 15) {
			t.Errorf("permit filter %q reaches beyond TCP to 127.0.0.1 on a proxy port: %+v", f.Name, f)
		}
		if f.IPv6 && f.Protocol == 1 {
			t.Errorf("filter %q: ICMP (1) on IPv6, where it is 58", f.Name)
		}
	}
	var ports []uint16
	for _, f := range fs {
		if f.RemotePort != 0 && !f.IPv6 && !f.Permit {
			ports = append(ports, f.RemotePort)
		}
	}
	if diff := cmp.Diff([]uint16{53, 853, 445, 139}, ports); diff != "" {
		t.Errorf("blocked ports (-want +got):\n%s", diff)
	}
	if g := guidOf("x"); len(g) != 36 || g[14] != '4' || !strings.ContainsAny(g[19:20], "89ab") {
		t.Errorf("guidOf = %s, want a version 4 variant 1 GUID", g)
	}
}

func TestWinPathHelpers(t *testing.T) {
	for p, want := range map[string]bool{`\\server\share\x`: true, `//server/share`: true, `\\?\UNC\server\share`: true,
		`\\?\C:\x`: false, `\\.\NUL`: false, `C:\x`: false} {
		if winUNC(p) != want {
			t.Errorf("winUNC(%q) = %v", p, !want)
		}
	}
	for p, want := range map[string][2]string{
		`C:\Users\me\proj\.git`: {`C:\Users\me\proj`, ".git"},
		`C:\x`:                  {`C:\`, "x"},
		`C:\Users\me\`:          {`C:\Users`, "me"},
	} {
		if winDir(p) != want[0] || winBase(p) != want[1] {
			t.Errorf("winDir/winBase(%q) = %q, %q; want %q", p, winDir(p), winBase(p), want)
		}
	}
	if got := winJoin(`C:\`, "x"); got != `C:\x` {
		t.Errorf("winJoin = %q", got)
	}
}

// TestProxyPorts: the offline user's firewall rules open the whole range
// of proxy ports (one port per allowlist run at a time), and nothing but
// that range; a run's port must be in it.
func TestProxyPorts(t *testing.T) {
	for _, tc := range []struct {
		r    PortRange
		want string
	}{
		{DefaultProxyRange, "1-47079,47096-65535"},
		{PortRange{First: 1, Count: 16}, "17-65535"},
		{PortRange{First: 65520, Count: 16}, "1-65519"},
		{PortRange{First: 3128, Count: 1}, "1-3127,3129-65535"},
	} {
		var got string
		for _, r := range FirewallRules(tc.r) {
			if r.Protocol == "tcp" {
				got = r.RemotePorts
			}
		}
		if got != tc.want {
			t.Errorf("FirewallRules(%s): loopback TCP blocked on %q, want %q", tc.r, got, tc.want)
		}
	}
	if got := DefaultProxyRange.String(); got != "47080-47095" {
		t.Errorf("DefaultProxyRange = %s", got)
	}
	p := base()
	p.Network.Mode = plan.NetAllowlist
	if _, err := Build(p, Options{ProxyPort: 47096}); err == nil || !strings.Contains(err.Error(), "not one of the ports setup opened (47080-47095)") {
		t.Errorf("a run's port outside the range: %v", err)
	}
	s, err := Build(p, Options{ProxyPort: 47095})
	if err != nil || s.ProxyPort != 47095 || !strings.Contains(strings.Join(s.Added, " "), "HTTP_PROXY=http://127.0.0.1:47095") {
		t.Errorf("a run on the range's last port: %v, %+v", err, s)
	}
	if _, err := proxyRange(PortRange{First: 65530, Count: 16}); err == nil {
		t.Error("a range past 65535 is accepted")
	}
}

// TestWFPVerdict: with agentbox's filters, the offline user reaches
// nothing but TCP to 127.0.0.1 on the allowlist proxies' ports: not
// another loopback port or address, not ::1, not UDP to 127.0.0.1:53 (a
// local DNS forwarder), not the internet; and accepts no connection.
func TestWFPVerdict(t *testing.T) {
	fs := WFPFilters()
	for _, tc := range []struct {
		layer  string
		v6     bool
		proto  uint8
		remote string
		port   uint16
		permit bool
	}{
		{"connect", false, 6, "127.0.0.1", 47080, true},
		{"connect", false, 6, "127.0.0.1", 47095, true},
		{"connect", false, 6, "127.0.0.1", 47096, false},
		{"connect", false, 6, "127.0.0.1", 47079, false},
		{"connect", false, 6, "127.0.0.1", 8080, false}, // a local forward proxy
		{"connect", false, 6, "127.0.0.2", 47080, false},
		{"connect", false, 17, "127.0.0.1", 47080, false},
		{"connect", false, 17, "127.0.0.1", 53, false},
		{"connect", true, 6, "::1", 47080, false},
		{"connect", true, 6, "::1", 8080, false},
		{"connect", true, 17, "::1", 53, false},
		{"connect", false, 6, "93.184.216.34", 443, false},
		{"connect", false, 6, "10.0.0.1", 445, false},
		{"connect", true, 6, "2001:db8::1", 443, false},
		{"connect", false, 1, "8.8.8.8", 0, false},
		{"accept", false, 6, "127.0.0.1", 50000, false},
		{"accept", true, 6, "::1", 50000, false},
	} {
		got, by := wfpVerdict(fs, tc.layer, tc.v6, tc.proto, tc.remote, tc.port)
		if got != tc.permit {
			t.Errorf("%s v6=%v proto %d to %s:%d: permit %v (by %q), want %v", tc.layer, tc.v6, tc.proto, tc.remote, tc.port, got, by, tc.permit)
		}
	}
}

// TestStagingRuleName: the name a rule is added under while setup replaces
// it is no rule's own, so removing the old rules never removes the new.
func TestStagingRuleName(t *testing.T) {
	names := map[string]bool{}
	rules := FirewallRules(DefaultProxyRange)
	for _, r := range rules {
		names[r.Name] = true
	}
	for _, r := range rules {
		if s := stagingRuleName(r.Name); names[s] || s == r.Name {
			t.Errorf("staging name %q of %q is a rule's name", s, r.Name)
		}
	}
}
