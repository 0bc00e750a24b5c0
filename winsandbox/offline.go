package winsandbox

import (
	"fmt"
	"strings"
)

// Whether offline mode (network "none", and "allowlist" besides its
// proxy) holds on this machine now, the pure half. The offline user is
// kept off the network by per-user Windows Firewall rules; they do nothing
// when the firewall is off for the active profile (which third-party
// antivirus does by itself, replacing it) or when group policy makes
// Windows ignore local rules. Setup records the second as "offline mode
// unavailable" and finishes (network "open" runs need no firewall); each
// run that needs the offline user reads both again (machineFacts), so a
// firewall turned off after setup is found before the command starts, not
// after it reached the network. The WFP filters setup installs (wfp.go)
// hold with the firewall off and block loopback too, which the firewall's
// rules do not; each such run reads them back as well, and a filter that
// is missing, or filters that cannot be read, mean offline mode does not
// hold.

// OfflineFacts are what decides whether the offline user's firewall rules
// take effect now.
type OfflineFacts struct {
	// Unavailable is why setup recorded offline mode as unavailable on
	// this machine ("" when it did not).
	Unavailable string `json:"unavailable,omitempty"`
	// ReadErr is why the firewall's state could not be read ("" when it
	// was read).
	ReadErr string `json:"read_error,omitempty"`
	// ProfilesOff are the active firewall profiles ("domain", "private",
	// "public") with the firewall off.
	ProfilesOff []string `json:"profiles_off,omitempty"`
	// LocalPolicyModifyState is INetFwPolicy2's: 0 when local rules take
	// effect, 1 when group policy overrides them, 2 when inbound traffic
	// is blocked regardless of them.
	LocalPolicyModifyState int `json:"local_policy_modify_state,omitempty"`
	// WFPMissing names the offline user's WFP filters the run did not
	// find; WFPReadErr is why they could not be read ("" when they were).
	WFPMissing []string `json:"wfp_missing,omitempty"`
	WFPReadErr string   `json:"wfp_read_error,omitempty"`
	// RuleProblems are the differences between the offline user's
	// firewall rules as read back and as setup makes them.
	RuleProblems []string `json:"rule_problems,omitempty"`
}

// offlineProblem is why offline mode does not hold, given the facts; ""
// when it does. An unreadable state is a problem too: the run cannot
// know the rules hold.
func offlineProblem(f OfflineFacts) string {
	var why []string
	if f.Unavailable != "" {
		why = append(why, "setup found it unavailable on this machine: "+f.Unavailable)
	}
	if f.ReadErr != "" {
		why = append(why, "the Windows Firewall's state could not be read ("+f.ReadErr+"), so nothing shows its rules for the offline user take effect")
	}
	if len(f.ProfilesOff) > 0 {
		why = append(why, fmt.Sprintf("the Windows Firewall is off for the active %s profile, so its rules for the offline user do nothing (another firewall, such as an antivirus's, may have replaced it)", strings.Join(f.ProfilesOff, " and ")))
	}
	if f.WFPReadErr != "" {
		why = append(why, "the offline user's WFP filters could not be read ("+f.WFPReadErr+"), so nothing shows that loopback and the rest are blocked for it")
	}
	if len(f.WFPMissing) > 0 {
		why = append(why, fmt.Sprintf("%d of the offline user's WFP filters are missing (%s); run `agentbox setup`", len(f.WFPMissing), strings.Join(f.WFPMissing, ", ")))
	}
	if len(f.RuleProblems) > 0 {
		why = append(why, "the offline user's firewall rules are not as setup made them ("+strings.Join(f.RuleProblems, "; ")+"); run `agentbox setup`")
	}
	switch f.LocalPolicyModifyState {
	case 0:
	case 1:
		why = append(why, "group policy overrides local firewall rules here (LocalPolicyModifyState 1), so the offline user's rules do nothing")
	default:
		why = append(why, fmt.Sprintf("local firewall rules may not take effect here (LocalPolicyModifyState %d)", f.LocalPolicyModifyState))
	}
	return strings.Join(why, "; ")
}
