package winsandbox

import (
	"testing"
)

// TestWindowsReadMachine reads the machine's facts for doctor, here and
// after a setup record exists: each sandbox account is looked up, and on
// real Windows the Secondary Logon service's start type is read (a
// windows-2025 or Windows 11 runner has the service). Under Wine the
// service manager and the local security policy may not answer; the
// read must still finish and leave what it could not read unjudged.
func TestWindowsReadMachine(t *testing.T) {
	f := ReadMachine()
	t.Logf("before setup (or this machine's own): %+v", f)
	if !underWine() {
		if f.Seclogon.Start == "" || f.Seclogon.Start == "missing" {
			t.Errorf("the Secondary Logon service's start type was not read: %+v", f.Seclogon)
		}
		if !f.SetUp && len(MachineProblems(f)) != 0 {
			t.Errorf("problems without a setup: %+v", MachineProblems(f))
		}
		return
	}
	wineSetup(t)
	f = ReadMachine()
	t.Logf("after a setup record: %+v", f)
	if !f.SetUp || len(f.Accounts) != 2 || len(f.UserSIDs) != 2 {
		t.Fatalf("facts after setup: %+v; want set up, with both accounts", f)
	}
	for _, a := range f.Accounts {
		if a.Name != OfflineUser && a.Name != OnlineUser {
			t.Errorf("account %q is not a sandbox account", a.Name)
		}
	}
	for _, p := range MachineProblems(f) {
		t.Logf("problem: %s\n  fix: %s", p.Problem, p.Fix)
	}
}
