package winsandbox

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
)

// TestOfflineProblem: the per-run decision whether the offline user's
// firewall rules take effect, from the facts read on the machine. Every
// fact that could make them do nothing is a problem, and so is a state
// that could not be read.
func TestOfflineProblem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		facts OfflineFacts
		want  []string // "" for none
	}{
		{"firewall on, local rules in effect", OfflineFacts{}, nil},
		{"off for the public profile (an antivirus turned it off)", OfflineFacts{ProfilesOff: []string{"public"}},
			[]string{"the Windows Firewall is off for the active public profile"}},
		{"off for two profiles", OfflineFacts{ProfilesOff: []string{"domain", "private"}}, []string{"active domain and private profile"}},
		{"group policy overrides local rules", OfflineFacts{LocalPolicyModifyState: 1}, []string{"group policy overrides local firewall rules"}},
		{"an unknown state", OfflineFacts{LocalPolicyModifyState: 2}, []string{"LocalPolicyModifyState 2"}},
		{"setup found it unavailable", OfflineFacts{Unavailable: "group policy overrides them"}, []string{"setup found it unavailable on this machine: group policy"}},
		{"not readable", OfflineFacts{ReadErr: "creating HNetCfg.FwPolicy2: class not registered"},
			[]string{"could not be read (creating HNetCfg.FwPolicy2", "nothing shows its rules"}},
		{"a WFP filter missing (setup of an older version)", OfflineFacts{WFPMissing: []string{"agentbox offline: block every connection v4"}},
			[]string{"1 of the offline user's WFP filters are missing (agentbox offline: block every connection v4)", "agentbox setup"}},
		{"a firewall rule missing", OfflineFacts{RuleProblems: []string{`firewall rule "agentbox offline: block outbound" is missing`}},
			[]string{"firewall rules are not as setup made them", "block outbound", "agentbox setup"}},
		{"WFP filters not readable", OfflineFacts{WFPReadErr: "FwpmEngineOpen0: error 0x5"},
			[]string{"WFP filters could not be read (FwpmEngineOpen0: error 0x5)", "loopback"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := offlineProblem(tc.facts)
			if (got == "") != (len(tc.want) == 0) {
				t.Fatalf("offlineProblem = %q, want %q", got, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("offlineProblem = %q, want it to say %q", got, w)
				}
			}
		})
	}
}

// TestNetworkRuleOffline: with the firewall off (or its state unknown)
// network "none" and "allowlist" are not enforced, so under "require"
// the run is refused and `agentbox plan` says why; "open" needs no
// firewall; and a spec built without machine facts keeps its level.
func TestNetworkRuleOffline(t *testing.T) {
	off := &OfflineFacts{ProfilesOff: []string{"public"}}
	for _, tc := range []struct {
		mode    string
		offline *OfflineFacts
		want    plan.Level
	}{
		{plan.NetNone, off, plan.NotEnforced},
		{plan.NetAllowlist, off, plan.NotEnforced},
		{plan.NetOpen, off, plan.Enforced},
		{plan.NetNone, &OfflineFacts{}, plan.Weaker},
		{plan.NetNone, nil, plan.Weaker},
	} {
		p := base()
		p.Network.Mode = tc.mode
		s, err := Build(p, Options{Offline: tc.offline})
		if err != nil {
			t.Fatal(err)
		}
		var got plan.RuleStatus
		for _, r := range s.Rules {
			if r.Rule == "network" {
				got = r
			}
		}
		if got.Level != tc.want {
			t.Errorf("network %s with %+v: level %s (%s), want %s", tc.mode, tc.offline, got.Level, got.How, tc.want)
		}
		if got.Level == plan.NotEnforced && !strings.Contains(got.How, "off for the active public profile") {
			t.Errorf("network %s: the reason is not given: %s", tc.mode, got.How)
		}
	}
}
