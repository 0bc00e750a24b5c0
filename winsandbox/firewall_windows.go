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
// setup repairs instead of duplicating.
func setFirewallRules(want []FirewallRule, offlineSID string) error {
	return withRules(func(rules *ole.IDispatch) error {
		for _, r := range want {
			if err := removeByName(rules, r.Name); err != nil {
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
				{"Name", r.Name}, {"Description", r.Description}, {"Grouping", fwGrouping},
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

// checkFirewall checks what makes the rules take effect, and reads each rule
// back and names every difference:
//   - the firewall is on for every profile that is active now;
//   - LocalPolicyModifyState is NET_FW_MODIFY_STATE_OK: group policy does
//     not override local rules (1) and inbound traffic is not blocked
//     regardless of them (2). (Read through IDispatch, so the S_FALSE Codex
//     also looks for, "not the same for every active profile", is not
//     seen here.)
//   - each rule exists, blocks, is enabled, and its user list grants the
//     offline user's SID (compared by SID: Windows may rewrite the rest of
//     the SDDL).
func checkFirewall(want []FirewallRule, offlineSID string) []string {
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
		if cur, err := get(policy, "CurrentProfileTypes"); err != nil {
			problems = append(problems, fmt.Sprintf("reading the active firewall profiles: %v", err))
		} else {
			mask, _ := cur.(int32)
			for _, pr := range fwProfiles {
				if mask&pr.bit == 0 {
					continue
				}
				on, err := get(policy, "FirewallEnabled", pr.bit)
				if err != nil {
					problems = append(problems, fmt.Sprintf("reading whether the firewall is on for the %s profile: %v", pr.name, err))
				} else if on != true {
					problems = append(problems, fmt.Sprintf("the Windows Firewall is off for the active %s profile, so the offline user's rules do nothing", pr.name))
				}
			}
		}
		if st, err := get(policy, "LocalPolicyModifyState"); err != nil {
			problems = append(problems, fmt.Sprintf("reading LocalPolicyModifyState: %v", err))
		} else if n, _ := st.(int32); n != fwModifyStateOK {
			problems = append(problems, fmt.Sprintf("local firewall rules do not take effect here (LocalPolicyModifyState %d: group policy overrides them or blocks inbound traffic regardless)", n))
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

// localPolicyTakesEffect fails when local firewall rules would be ignored
// (group policy) on this machine: setup refuses to record rules that do
// nothing.
func localPolicyTakesEffect() error {
	return withPolicy(func(policy, _ *ole.IDispatch) error {
		v, err := oleutil.GetProperty(policy, "LocalPolicyModifyState")
		if err != nil {
			return fmt.Errorf("reading LocalPolicyModifyState: %w", err)
		}
		defer v.Clear()
		if n, _ := v.Value().(int32); n != fwModifyStateOK {
			return fmt.Errorf("local firewall rules do not take effect on this machine (LocalPolicyModifyState %d: group policy overrides them); the offline user could not be kept off the network", n)
		}
		return nil
	})
}

// removeFirewallRules removes setup's rules.
func removeFirewallRules(rs []FirewallRule) error {
	return withRules(func(rules *ole.IDispatch) error {
		for _, r := range rs {
			if err := removeByName(rules, r.Name); err != nil {
				return err
			}
		}
		return nil
	})
}
