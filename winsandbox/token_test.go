package winsandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTokenDACLSIDs: the command's token and what it creates grant the
// restricting SIDs of the run (the logon SID, the capability SIDs) full
// access, so a write-restricted MSYS2 program may adjust its own token
// and open its own pipes; Everyone is never granted.
func TestTokenDACLSIDs(t *testing.T) {
	const user, logon = "S-1-5-21-1-2-3-1005", "S-1-5-5-0-123456"
	caps := []string{CapabilitySID(`C:\p`), CapabilitySID(`C:\t`), CapabilitySID(`C:\p`)}
	got := tokenDACLSIDs(user, logon, caps)
	want := []string{user, sidSystem, logon, CapabilitySID(`C:\p`), CapabilitySID(`C:\t`)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tokenDACLSIDs (-want +got):\n%s", diff)
	}
	for _, s := range got {
		if s == sidEveryone {
			t.Error("Everyone is granted the token's DACL")
		}
	}
}
