package winsandbox

import (
	"strings"
	"testing"
)

// TestNetbiosName: the domain local accounts live in is the NetBIOS name;
// when Windows reports none it is derived from the DNS host name as
// Windows does by default. A host name longer than 15 characters is where
// `HOST\name` built from the DNS name names no domain at all.
func TestNetbiosName(t *testing.T) {
	for _, tc := range []struct{ reported, host, want string }{
		{"DESKTOP-4F2K9QX", "desktop-4f2k9qx", "DESKTOP-4F2K9QX"},
		{"BUILDAGENT01", "my-very-long-build-agent-01.corp.example.com", "BUILDAGENT01"},
		{"", "my-very-long-build-agent-01.corp.example.com", "MY-VERY-LONG-BU"},
		{"", "short", "SHORT"},
		{" ws ", "", "WS"},
		{"", "", ""},
	} {
		if got := netbiosName(tc.reported, tc.host); got != tc.want {
			t.Errorf("netbiosName(%q, %q) = %q, want %q", tc.reported, tc.host, got, tc.want)
		}
	}
	if got := accountName("MY-VERY-LONG-BU", OfflineUser); got != `MY-VERY-LONG-BU\AgentboxOffline` {
		t.Errorf("accountName = %q", got)
	}
	if got := accountName("", OfflineUser); got != OfflineUser {
		t.Errorf("accountName without a NetBIOS name = %q, want the bare name", got)
	}
}

// TestLocalAccount: only this computer's own account of the right kind is
// taken for a sandbox account; a domain account or a well-known one of the
// same name is an error.
func TestLocalAccount(t *testing.T) {
	const machine = "S-1-5-21-111-222-333"
	for _, tc := range []struct {
		name    string
		found   foundAccount
		want    uint32
		wantErr string
	}{
		{"the local user", foundAccount{machine + "-1004", "WS", sidTypeUser}, sidTypeUser, ""},
		{"the local group", foundAccount{machine + "-1003", "ws", sidTypeAlias}, sidTypeAlias, ""},
		{"a domain user of the same name", foundAccount{"S-1-5-21-9-8-7-1104", "CORP", sidTypeUser}, sidTypeUser, `found in domain "CORP"`},
		{"a SID outside the computer's domain", foundAccount{"S-1-5-21-9-8-7-1104", "WS", sidTypeUser}, sidTypeUser, "not in this computer's account domain"},
		{"a SID below the domain, but not one RID", foundAccount{machine + "-1-1004", "WS", sidTypeUser}, sidTypeUser, "not in this computer's account domain"},
		{"a group where a user was asked for", foundAccount{machine + "-1003", "WS", sidTypeAlias}, sidTypeUser, "is a group, not a local user"},
		{"a well-known group", foundAccount{"S-1-1-0", "", 5}, sidTypeAlias, "is a well-known group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := localAccount("AgentboxOffline", tc.found, tc.want, "WS", machine)
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("localAccount = %v, want %q", err, tc.wantErr)
			}
		})
	}
	// Without the domain's SID (it could not be read) the domain name
	// still decides.
	if err := localAccount("x", foundAccount{"S-1-5-21-9-8-7-1104", "CORP", sidTypeUser}, sidTypeUser, "WS", ""); err == nil {
		t.Error("a domain account is taken when the computer's domain SID is unknown")
	}
}
