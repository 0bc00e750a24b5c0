package winsandbox

import (
	"fmt"
	"runtime"

	ole "github.com/go-ole/go-ole"
	"github.com/go-ole/go-ole/oleutil"
)

// Windows Firewall through its COM API: HNetCfg.FwPolicy2 (INetFwPolicy2)
// holds the rules, HNetCfg.FWRule (INetFwRule3) is one rule, reached through
// IDispatch by property name. LocalUserAuthorizedList (INetFwRule3, Windows
// 8 and later) restricts a rule to the users its SDDL names.
// Reference: https://learn.microsoft.com/windows/win32/api/netfw/nn-netfw-inetfwrule3

// INetFwRule enumerations (icftypes.h).
const (
	fwProtocolTCP = 6
	fwProtocolUDP = 17
	fwProtocolAny = 256
	fwDirIn       = 1
	fwDirOut      = 2
	fwActionBlock = 0
	fwProfilesAll = 0x7fffffff
	fwGrouping    = "agentbox"
)

func fwProtocol(p string) int32 {
	switch p {
	case "tcp":
		return fwProtocolTCP
	case "udp":
		return fwProtocolUDP
	}
	return fwProtocolAny
}

// withRules runs f with the policy's INetFwRules collection on a thread with
// COM initialised.
func withRules(f func(rules *ole.IDispatch) error) error {
	return withPolicy(func(_, rules *ole.IDispatch) error { return f(rules) })
}

// withPolicy runs f with INetFwPolicy2 and its INetFwRules collection on a
// thread with COM initialised.
func withPolicy(f func(policy, rules *ole.IDispatch) error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := ole.CoInitializeEx(0, ole.COINIT_APARTMENTTHREADED); err != nil {
		if oerr, ok := err.(*ole.OleError); !ok || oerr.Code() != 1 { // S_FALSE: already initialised
			return fmt.Errorf("CoInitializeEx: %w", err)
		}
	}
	defer ole.CoUninitialize()
	unk, err := oleutil.CreateObject("HNetCfg.FwPolicy2")
	if err != nil {
		return fmt.Errorf("creating HNetCfg.FwPolicy2: %w", err)
	}
	defer unk.Release()
	policy, err := unk.QueryInterface(ole.IID_IDispatch)
	if err != nil {
		return fmt.Errorf("INetFwPolicy2: %w", err)
	}
	defer policy.Release()
	v, err := oleutil.GetProperty(policy, "Rules")
	if err != nil {
		return fmt.Errorf("INetFwPolicy2.Rules: %w", err)
	}
	rules := v.ToIDispatch()
	defer rules.Release()
	return f(policy, rules)
}

// removeByName removes every rule called name (Remove deletes one at a time).
func removeByName(rules *ole.IDispatch, name string) error {
	for i := 0; i < 100; i++ {
		v, err := oleutil.CallMethod(rules, "Item", name)
		if err != nil {
			return nil // no more rules of that name
		}
		v.Clear() // releases the rule Item returned
		if _, err := oleutil.CallMethod(rules, "Remove", name); err != nil {
			return fmt.Errorf("removing rule %q: %w", name, err)
		}
	}
	return fmt.Errorf("rule %q: more than 100 copies", name)
}

// setFirewallRules replaces each rule by name with the one given, so a second
// setup repairs instead of duplicating. The new rule is added first, under
// its staging name (stagingRuleName), the old ones removed, and the new one
// renamed: an offline run under way while setup runs again is never left
// without the rule.
func setFirewallRules(want []FirewallRule, offlineSID string) error {
	return withRules(func(rules *ole.IDispatch) error {
		for _, r := range want {
			staging := stagingRuleName(r.Name)
			if err := removeByName(rules, staging); err != nil {
				return err
			}
			unk, err := oleutil.CreateObject("HNetCfg.FWRule")
			if err != nil {
				return fmt.Errorf("creating HNetCfg.FWRule: %w", err)
			}
			rule, err := unk.QueryInterface(ole.IID_IDispatch)
			unk.Release()
			if err != nil {
				return err
			}
			dir := int32(fwDirOut)
			if r.Direction == "in" {
				dir = fwDirIn
			}
			// Protocol before ports: ports can only be set on TCP/UDP rules.
			props := []struct {
				name  string
				value any
			}{
				{"Name", staging}, {"Description", r.Description}, {"Grouping", fwGrouping},
				{"Protocol", fwProtocol(r.Protocol)}, {"Direction", dir}, {"Action", int32(fwActionBlock)},
				{"RemoteAddresses", r.RemoteAddresses}, {"Profiles", int32(fwProfilesAll)},
				{"LocalUserAuthorizedList", FirewallSDDL(r, offlineSID)}, {"Enabled", true},
			}
			if r.RemotePorts != "" {
				props = append(props, struct {
					name  string
					value any
				}{"RemotePorts", r.RemotePorts})
			}
			for _, p := range props {
				if _, err := oleutil.PutProperty(rule, p.name, p.value); err != nil {
					rule.Release()
					return fmt.Errorf("rule %q: setting %s: %w", r.Name, p.name, err)
				}
			}
			_, err = oleutil.CallMethod(rules, "Add", rule)
			rule.Release()
			if err != nil {
				return fmt.Errorf("adding rule %q: %w", r.Name, err)
			}
			if err := removeByName(rules, r.Name); err != nil {
				return err
			}
			v, err := oleutil.CallMethod(rules, "Item", staging)
			if err != nil {
				return fmt.Errorf("rule %q: reading it back: %w", staging, err)
			}
			added := v.ToIDispatch()
			_, err = oleutil.PutProperty(added, "Name", r.Name)
			v.Clear()
			if err != nil {
				return fmt.Errorf("rule %q: renaming it %q: %w", staging, r.Name, err)
			}
		}
		return nil
	})
}

// NET_FW_PROFILE_TYPE2 bits and NET_FW_MODIFY_STATE values (icftypes.h).
var fwProfiles = []struct {
	bit  int32
	name string
}{{1, "domain"}, {2, "private"}, {4, "public"}}

const fwModifyStateOK = 0

// firewallState reads what makes the offline user's rules take effect:
// the active profiles whose firewall is off, and LocalPolicyModifyState
// (0, NET_FW_MODIFY_STATE_OK, when local rules take effect; 1 when group
// policy overrides them; 2 when inbound traffic is blocked regardless).
// LocalPolicyModifyState is read through IDispatch, so the S_FALSE Codex
// also looks for ("not the same for every active profile") is not seen.
func firewallState() (profilesOff []string, localPolicy int, err error) {
	err = withPolicy(func(policy, _ *ole.IDispatch) error {
		get := func(name string, args ...any) (any, error) {
			v, err := oleutil.GetProperty(policy, name, args...)
			if err != nil {
				return nil, err
			}
			defer v.Clear()
			return v.Value(), nil
		}
		cur, err := get("CurrentProfileTypes")
		if err != nil {
			return fmt.Errorf("reading the active firewall profiles: %w", err)
		}
		mask, _ := cur.(int32)
		for _, pr := range fwProfiles {
			if mask&pr.bit == 0 {
				continue
			}
			on, err := get("FirewallEnabled", pr.bit)
			if err != nil {
				return fmt.Errorf("reading whether the firewall is on for the %s profile: %w", pr.name, err)
			}
			if on != true {
				profilesOff = append(profilesOff, pr.name)
			}
		}
		st, err := get("LocalPolicyModifyState")
		if err != nil {
			return fmt.Errorf("reading LocalPolicyModifyState: %w", err)
		}
		n, _ := st.(int32)
		localPolicy = int(n)
		return nil
	})
	return profilesOff, localPolicy, err
}

// offlineFacts reads, for a run that needs the offline user, whether its
// firewall rules take effect now, are all there as setup made them, and
// its WFP filters are all there (offline.go).
func offlineFacts(rec *record) *OfflineFacts {
	f := &OfflineFacts{}
	if rec != nil {
		f.Unavailable = rec.Offline
	}
	if missing, err := readWFP(WFPFilters()); err != nil {
		f.WFPReadErr = err.Error()
	} else {
		f.WFPMissing = missing
	}
	if rec != nil {
		f.RuleProblems = checkRules(FirewallRules(rec.proxyRange()), rec.Users[OfflineUser])
	}
	off, lp, err := firewallState()
	if err != nil {
		f.ReadErr = err.Error()
		return f
	}
	f.ProfilesOff, f.LocalPolicyModifyState = off, lp
	return f
}

// checkFirewall checks what makes the rules take effect (firewallState),
// and reads each rule back and names every difference: each rule exists,
// blocks, is enabled, and its user list grants the offline user's SID
// (compared by SID: Windows may rewrite the rest of the SDDL).
func checkFirewall(want []FirewallRule, offlineSID string) []string {
	var problems []string
	if why := offlineProblem(*offlineFacts(nil)); why != "" {
		problems = append(problems, why)
	}
	return append(problems, checkRules(want, offlineSID)...)
}

// checkRules reads each rule back and names every difference
// (checkFirewall); an unreadable policy is one.
func checkRules(want []FirewallRule, offlineSID string) []string {
	var problems []string
	err := withPolicy(func(policy, rules *ole.IDispatch) error {
		get := func(d *ole.IDispatch, name string, args ...any) (any, error) {
			v, err := oleutil.GetProperty(d, name, args...)
			if err != nil {
				return nil, err
			}
			defer v.Clear()
			return v.Value(), nil
		}
		for _, r := range want {
			v, err := oleutil.CallMethod(rules, "Item", r.Name)
			if err != nil {
				problems = append(problems, fmt.Sprintf("firewall rule %q is missing", r.Name))
				continue
			}
			rule := v.ToIDispatch()
			prop := func(name string) any {
				x, err := get(rule, name)
				if err != nil {
					return fmt.Sprintf("<%v>", err)
				}
				return x
			}
			dir := int32(fwDirOut)
			if r.Direction == "in" {
				dir = fwDirIn
			}
			checks := map[string]any{"Protocol": fwProtocol(r.Protocol), "Direction": dir, "Action": int32(fwActionBlock), "Enabled": true}
			if r.RemotePorts != "" {
				checks["RemotePorts"] = r.RemotePorts
			}
			for name, w := range checks {
				if got := prop(name); fmt.Sprint(got) != fmt.Sprint(w) {
					problems = append(problems, fmt.Sprintf("firewall rule %q: %s is %v, want %v", r.Name, name, got, w))
				}
			}
			if got := fmt.Sprint(prop("LocalUserAuthorizedList")); !SDDLNamesSID(got, offlineSID) {
				problems = append(problems, fmt.Sprintf("firewall rule %q applies to %q, which does not name the offline user %s", r.Name, got, offlineSID))
			}
			// Windows normalises addresses ("127.0.0.0/255.0.0.0" may read
			// back in another spelling), so only presence is checked.
			if got := fmt.Sprint(prop("RemoteAddresses")); got == "" {
				problems = append(problems, fmt.Sprintf("firewall rule %q has no remote addresses", r.Name))
			}
			v.Clear()
		}
		return nil
	})
	if err != nil {
		problems = append(problems, fmt.Sprintf("reading the firewall: %v", err))
	}
	return problems
}

// removeFirewallRules removes setup's rules.
func removeFirewallRules(rs []FirewallRule) error {
	return withRules(func(rules *ole.IDispatch) error {
		for _, r := range rs {
			for _, n := range []string{r.Name, stagingRuleName(r.Name)} {
				if err := removeByName(rules, n); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
