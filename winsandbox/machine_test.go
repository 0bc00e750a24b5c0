package winsandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMachineProblems: what doctor says on Windows about the sandbox
// accounts, the Secondary Logon service and the logon rights, decided from
// facts: each problem names its cause, and its fix says what to do (and
// where a policy or endpoint protection is behind it); a healthy machine,
// a machine not set up and facts that could not be read give nothing.
func TestMachineProblems(t *testing.T) {
	const off, on, group = "S-1-5-21-9-9-9-1001", "S-1-5-21-9-9-9-1002", "S-1-5-21-9-9-9-1003"
	healthy := func() MachineFacts {
		return MachineFacts{
			SetUp: true, GroupSID: group, UserSIDs: []string{off, on},
			Accounts: []AccountFacts{
				{Name: OfflineUser, Exists: true, FlagsKnown: true, Hidden: "hidden"},
				{Name: OnlineUser, Exists: true, FlagsKnown: true, Hidden: "hidden"},
			},
			Seclogon: ServiceFacts{Start: "demand"},
			Rights:   LogonRights{Known: true, Allow: []string{"S-1-5-32-544", sidUsers}},
		}
	}
	type want struct{ problem, fix []string }
	for _, tc := range []struct {
		name  string
		facts func(f *MachineFacts)
		want  []want
	}{
		{"healthy", func(*MachineFacts) {}, nil},
		{"not set up", func(f *MachineFacts) { *f = MachineFacts{Seclogon: ServiceFacts{Start: "disabled"}} }, nil},
		{"rights unreadable", func(f *MachineFacts) { f.Rights = LogonRights{Err: "access denied"} }, nil},
		{"account visible", func(f *MachineFacts) { f.Accounts[1].Hidden = "visible" }, []want{
			{[]string{OnlineUser, "shows on the sign-in screen", "SpecialAccounts"}, []string{"agentbox setup", "endpoint protection", "exempt"}}}},
		{"hiding unknown", func(f *MachineFacts) { f.Accounts[0].Hidden = "" }, nil},
		{"account deleted", func(f *MachineFacts) { f.Accounts[0].Exists = false }, []want{
			{[]string{OfflineUser, "is gone", "endpoint protection"}, []string{"agentbox setup", "exempt"}}}},
		{"account disabled", func(f *MachineFacts) { f.Accounts[0].Disabled = true }, []want{
			{[]string{OfflineUser, "disabled", "fail to log on"}, []string{"agentbox setup", "enable it again"}}}},
		{"flags unknown", func(f *MachineFacts) { f.Accounts[0].Disabled, f.Accounts[0].FlagsKnown = true, false }, nil},
		{"lookup failed", func(f *MachineFacts) { f.Accounts[0].Err = "RPC server unavailable" }, []want{
			{[]string{OfflineUser, "could not be looked up", "RPC server unavailable"}, []string{"setup --check"}}}},
		{"seclogon disabled", func(f *MachineFacts) { f.Seclogon.Start = "disabled" }, []want{
			{[]string{"Secondary Logon", "disabled", "CreateProcessWithLogonW"}, []string{"sc.exe config seclogon start= demand", "group policy", "System Services"}}}},
		{"seclogon missing", func(f *MachineFacts) { f.Seclogon.Start = "missing" }, []want{
			{[]string{"Secondary Logon", "does not exist"}, []string{"cannot run here"}}}},
		{"seclogon unreadable", func(f *MachineFacts) { f.Seclogon = ServiceFacts{Err: "access denied"} }, []want{
			{[]string{"could not be checked", "access denied"}, []string{"setup --check"}}}},
		{"seclogon auto", func(f *MachineFacts) { f.Seclogon.Start = "auto" }, nil},
		{"deny log on locally: the group", func(f *MachineFacts) { f.Rights.Deny = []string{group} }, []want{
			{[]string{"denies " + GroupName, "Deny log on locally"}, []string{"User Rights Assignment", "secpol.msc"}}}},
		{"deny log on locally: a user", func(f *MachineFacts) { f.Rights.Deny = []string{strings.ToLower(on)} }, []want{
			{[]string{"denies " + OnlineUser}, []string{"Deny log on locally"}}}},
		{"deny log on locally: someone else", func(f *MachineFacts) { f.Rights.Deny = []string{"S-1-5-32-546"} }, nil},
		{"allow log on locally: administrators only", func(f *MachineFacts) { f.Rights.Allow = []string{"S-1-5-32-544"} }, []want{
			{[]string{"Allow log on locally", "neither Users nor"}, []string{"add " + GroupName}}}},
		{"allow log on locally: read as empty", func(f *MachineFacts) { f.Rights.Allow = nil }, nil},
		{"allow log on locally: the group", func(f *MachineFacts) { f.Rights.Allow = []string{group} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy()
			tc.facts(&f)
			got := MachineProblems(f)
			if len(got) != len(tc.want) {
				t.Fatalf("%d problems, want %d: %s", len(got), len(tc.want), cmp.Diff(nil, got))
			}
			for i, w := range tc.want {
				for _, s := range w.problem {
					if !strings.Contains(got[i].Problem, s) {
						t.Errorf("problem %q does not say %q", got[i].Problem, s)
					}
				}
				for _, s := range w.fix {
					if !strings.Contains(got[i].Fix, s) {
						t.Errorf("fix %q does not say %q", got[i].Fix, s)
					}
				}
			}
		})
	}
}
