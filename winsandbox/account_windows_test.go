package winsandbox

import (
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestWindowsLookupLocal: this computer's NetBIOS name and account domain
// are read, and the calling user, a local account, is found through
// lookupLocal by NETBIOS\name with its own SID; asked for as a group it is
// refused. (Under Wine and on the CI runner the user is local; on a
// domain member running as a domain user the test says so and skips.)
func TestWindowsLookupLocal(t *testing.T) {
	netbios, domainSID := thisComputer()
	t.Logf("NetBIOS name %q, account domain %s", netbios, domainSID)
	if netbios == "" || len(netbios) > 15 || strings.ToUpper(netbios) != netbios {
		t.Fatalf("NetBIOS name %q: want 1 to 15 upper-case characters", netbios)
	}
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	name, domain, _, err := u.User.Sid.LookupAccount("")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.EqualFold(domain, netbios) {
		t.Skipf("this process runs as %s\\%s, not as a local account of %s", domain, name, netbios)
	}
	sid, err := lookupLocal(name, sidTypeUser)
	if err != nil {
		t.Fatalf("lookupLocal(%s): %v", name, err)
	}
	if !sid.Equals(u.User.Sid) {
		t.Errorf("lookupLocal(%s) = %s, want %s", name, sid, u.User.Sid)
	}
	if _, err := lookupLocal(name, sidTypeAlias); err == nil {
		t.Errorf("lookupLocal(%s) as a group: no error", name)
	}
}
