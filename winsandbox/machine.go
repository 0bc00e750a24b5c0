package winsandbox

import (
	"fmt"
	"strings"
)

// What `agentbox doctor` says about the machine on Windows (the pure
// half: the facts are read by machine_windows.go).
//
// Runs need two things of the machine that endpoint protection and policy
// take away: the two hidden local accounts setup made (some products
// delete or disable hidden local accounts, or remove the registry value
// that hides them from the sign-in screen), and the Secondary Logon
// service, through which agentbox starts each run's runner as a sandbox
// user (CreateProcessWithLogonW), with the right to log on locally, which
// that logon needs. Each problem says what was found, what it breaks, and
// the fix.

// AccountFacts is what was read of one sandbox account.
type AccountFacts struct {
	Name string `json:"name"`
	// Exists is whether the account was found; Err says why it could not
	// be looked up when that failed for another reason.
	Exists bool   `json:"exists"`
	Err    string `json:"error,omitempty"`
	// Disabled is the account's ACCOUNTDISABLE flag; FlagsKnown is
	// whether the flags could be read.
	Disabled   bool `json:"disabled,omitempty"`
	FlagsKnown bool `json:"flags_known"`
	// Hidden is the SpecialAccounts\UserList value that hides it from
	// the sign-in screen: "hidden" (a DWORD 0), "visible" (missing or
	// not 0), or "" when the key could not be read.
	Hidden string `json:"hidden,omitempty"`
}

// ServiceFacts is what was read of the Secondary Logon service.
type ServiceFacts struct {
	// Start is its start type: "auto", "demand", "disabled", "boot",
	// "system"; "missing" when there is no such service; "" when it
	// could not be read (Err).
	Start string `json:"start"`
	Err   string `json:"error,omitempty"`
}

// LogonRights is what was read of the local security policy's logon
// rights: the SIDs (as strings) holding SeDenyInteractiveLogonRight and
// SeInteractiveLogonRight. Known is false when the policy could not be
// read (a standard user may not), and nothing is concluded then.
type LogonRights struct {
	Known bool     `json:"known"`
	Err   string   `json:"error,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	Allow []string `json:"allow,omitempty"`
}

// MachineFacts is everything MachineProblems decides from.
type MachineFacts struct {
	// SetUp is whether `agentbox setup` has been run (its record read);
	// nothing else is judged without it (the backend itself says to run
	// setup).
	SetUp    bool           `json:"set_up"`
	GroupSID string         `json:"group_sid,omitempty"`
	UserSIDs []string       `json:"user_sids,omitempty"`
	Accounts []AccountFacts `json:"accounts"`
	Seclogon ServiceFacts   `json:"seclogon"`
	Rights   LogonRights    `json:"logon_rights"`
}

// MachineProblem is one thing in the way of runs, with its fix.
type MachineProblem struct {
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
}

// sidInteractive is INTERACTIVE, which every interactive logon holds
// (Users, Everyone and Authenticated Users are in acl.go).
const sidInteractive = "S-1-5-4"

const managedFix = "; if it comes back after a policy refresh or a scan, the machine's group policy or endpoint protection does it: ask whoever manages the machine to exempt agentbox's accounts AgentboxOffline and AgentboxOnline"

// MachineProblems decides, from what was read of the machine, what keeps
// runs from starting or the sandbox accounts from staying hidden.
func MachineProblems(f MachineFacts) []MachineProblem {
	if !f.SetUp {
		return nil
	}
	var out []MachineProblem
	add := func(problem, fix string) { out = append(out, MachineProblem{Problem: problem, Fix: fix}) }
	for _, a := range f.Accounts {
		switch {
		case a.Err != "":
			add(fmt.Sprintf("the sandbox account %s could not be looked up: %s", a.Name, a.Err),
				"run `agentbox setup --check` for details; `agentbox setup` repairs what it finds")
			continue
		case !a.Exists:
			add(fmt.Sprintf("the sandbox account %s is gone (setup made it; endpoint protection or an administrator may delete hidden local accounts): runs that need it cannot start", a.Name),
				"run `agentbox setup` (it asks for administrator rights) to make it again"+managedFix)
			continue
		}
		if a.FlagsKnown && a.Disabled {
			add(fmt.Sprintf("the sandbox account %s is disabled (endpoint protection or a policy may disable hidden local accounts): runs as it fail to log on", a.Name),
				"run `agentbox setup` (it asks for administrator rights) to enable it again"+managedFix)
		}
		if a.Hidden == "visible" {
			add(fmt.Sprintf("the sandbox account %s shows on the sign-in screen: the registry value that hides it (HKLM\\%s, %s = 0) is missing or not 0", a.Name, specialAccountsKey, a.Name),
				"run `agentbox setup` (it asks for administrator rights) to hide it again; the account has a random password nobody types, so showing is untidy rather than unsafe"+managedFix)
		}
	}
	switch f.Seclogon.Start {
	case "missing":
		add("the Secondary Logon service (seclogon) does not exist on this machine: agentbox starts every run's runner as a sandbox user through it (CreateProcessWithLogonW), so no run can start",
			"this Windows image has no Secondary Logon service (some hardened or minimal images remove it); the Windows backend cannot run here")
	case "disabled":
		add("the Secondary Logon service (seclogon) is disabled: agentbox starts every run's runner as a sandbox user through it (CreateProcessWithLogonW), so every run fails to start",
			"as administrator: `sc.exe config seclogon start= demand` (Services, Secondary Logon, startup type Manual); if it is disabled again after a policy refresh, a group policy sets it (Computer Configuration, Windows Settings, Security Settings, System Services): ask whoever manages the machine to set Secondary Logon to Manual")
	case "":
		if f.Seclogon.Err != "" {
			add("the Secondary Logon service (seclogon) could not be checked: "+f.Seclogon.Err,
				"run `agentbox setup --check`; agentbox starts every run's runner through that service")
		}
	}
	if f.Rights.Known {
		holds := func(list []string, sid string) bool {
			for _, s := range list {
				if strings.EqualFold(s, sid) {
					return true
				}
			}
			return false
		}
		var denied []string
		for _, sid := range append(append([]string(nil), f.UserSIDs...), f.GroupSID, sidUsers, sidEveryone, sidAuthUsers, sidInteractive) {
			if sid != "" && holds(f.Rights.Deny, sid) {
				denied = append(denied, sidName(f, sid))
			}
		}
		if len(denied) > 0 {
			add("the local security policy denies "+strings.Join(denied, ", ")+" the right to log on locally (\"Deny log on locally\", SeDenyInteractiveLogonRight), which the Secondary Logon service needs to start the runner as a sandbox user: every run fails to log on",
				"ask whoever manages the machine to take "+strings.Join(denied, ", ")+" out of \"Deny log on locally\" (Computer Configuration, Windows Settings, Security Settings, Local Policies, User Rights Assignment); on a machine of your own: secpol.msc, the same place")
		}
		allowed := false
		for _, sid := range append(append([]string(nil), f.UserSIDs...), f.GroupSID, sidUsers, sidEveryone, sidAuthUsers, sidInteractive) {
			if sid != "" && holds(f.Rights.Allow, sid) {
				allowed = true
			}
		}
		// A policy that lets no one log on locally is not one a machine
		// runs with: an empty list is taken as not read (Wine answers so).
		if !allowed && len(f.Rights.Allow) > 0 {
			add("the local security policy's \"Allow log on locally\" (SeInteractiveLogonRight) names neither Users nor agentbox's group "+GroupName+", which the Secondary Logon service needs to start the runner as a sandbox user: every run fails to log on",
				"ask whoever manages the machine to add "+GroupName+" to \"Allow log on locally\" (Computer Configuration, Windows Settings, Security Settings, Local Policies, User Rights Assignment); on a machine of your own: secpol.msc, the same place")
		}
	}
	return out
}

// sidName names a SID of MachineFacts for a person: the sandbox group
// and users by name, the well-known groups by theirs.
func sidName(f MachineFacts, sid string) string {
	switch {
	case strings.EqualFold(sid, f.GroupSID):
		return GroupName
	case sid == sidUsers:
		return "Users"
	case sid == sidEveryone:
		return "Everyone"
	case sid == sidAuthUsers:
		return "Authenticated Users"
	case sid == sidInteractive:
		return "INTERACTIVE"
	}
	for i, s := range f.UserSIDs {
		if strings.EqualFold(s, sid) && i < len(f.Accounts) {
			return f.Accounts[i].Name
		}
	}
	return sid
}

// specialAccountsKey is where Windows keeps the accounts hidden from the
// sign-in screen (setup_windows.go writes it).
const specialAccountsKey = `SOFTWARE\Microsoft\Windows NT\CurrentVersion\Winlogon\SpecialAccounts\UserList`
