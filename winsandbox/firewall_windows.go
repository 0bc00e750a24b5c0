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
	return f(rules)
}

// removeByName removes every rule called name (Remove deletes one at a time).
func removeByName(rules *ole.IDispatch, name string) error {
	for i := 0; i < 100; i++ {
		if _, err := oleutil.CallMethod(rules, "Item", name); err != nil {
			return nil // no more rules of that name
		}
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

// checkFirewallRules reads each rule back and names every difference.
func checkFirewallRules(want []FirewallRule, offlineSID string) []string {
	var problems []string
	err := withRules(func(rules *ole.IDispatch) error {
		for _, r := range want {
			v, err := oleutil.CallMethod(rules, "Item", r.Name)
			if err != nil {
				problems = append(problems, fmt.Sprintf("firewall rule %q is missing", r.Name))
				continue
			}
			rule := v.ToIDispatch()
			get := func(name string) any {
				p, err := oleutil.GetProperty(rule, name)
				if err != nil {
					return fmt.Sprintf("<%v>", err)
				}
				return p.Value()
			}
			dir := int32(fwDirOut)
			if r.Direction == "in" {
				dir = fwDirIn
			}
			checks := map[string]any{
				"Protocol": fwProtocol(r.Protocol), "Direction": dir, "Action": int32(fwActionBlock),
				"Enabled": true, "LocalUserAuthorizedList": FirewallSDDL(r, offlineSID),
			}
			if r.RemotePorts != "" {
				checks["RemotePorts"] = r.RemotePorts
			}
			for name, w := range checks {
				if got := get(name); fmt.Sprint(got) != fmt.Sprint(w) {
					problems = append(problems, fmt.Sprintf("firewall rule %q: %s is %v, want %v", r.Name, name, got, w))
				}
			}
			// Windows normalises addresses ("127.0.0.0/255.0.0.0" may read
			// back in another spelling), so only presence is checked.
			if got := fmt.Sprint(get("RemoteAddresses")); got == "" {
				problems = append(problems, fmt.Sprintf("firewall rule %q has no remote addresses", r.Name))
			}
			rule.Release()
		}
		return nil
	})
	if err != nil {
		problems = append(problems, fmt.Sprintf("reading firewall rules: %v", err))
	}
	return problems
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
