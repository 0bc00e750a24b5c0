package winsandbox

import (
	"strings"
	"testing"
)

// TestLogonFailure: the logon errors a stale, expired or locked-out
// sandbox account gives name the fix, `agentbox setup`; a policy that
// denies the logon right names what an administrator must change; other
// errors are left as they are.
func TestLogonFailure(t *testing.T) {
	for _, tc := range []struct {
		errno uint32
		want  string // "" when the code says nothing about the account
	}{
		{1326, "the stored password of AgentboxOffline does not log on"},
		{1907, "has expired or must be changed"},
		{1330, "has expired or must be changed"},
		{1909, "AgentboxOffline is locked out"},
		{1331, "AgentboxOffline is disabled"},
		{1327, "may not log on (an account restriction"},
		{1385, "may not log on here"},
		{2, ""},
		{5, ""},
	} {
		msg, ok := logonFailure(OfflineUser, tc.errno)
		if ok != (tc.want != "") || !strings.Contains(msg, tc.want) {
			t.Errorf("logonFailure(%d) = %q, %v; want %q", tc.errno, msg, ok, tc.want)
		}
		setup := strings.Contains(msg, "run `agentbox setup`")
		if ok && setup != (tc.errno != 1385) {
			t.Errorf("logonFailure(%d) = %q: names `agentbox setup` %v, want %v", tc.errno, msg, setup, tc.errno != 1385)
		}
	}
}

// TestLogonGate: a run does not log a sandbox user on while the account's
// last logon failed, so a stale password costs one failed logon, not one
// per run until the account is locked out.
func TestLogonGate(t *testing.T) {
	if err := logonGate(OnlineUser, 0); err != nil {
		t.Errorf("no failed logons: %v", err)
	}
	err := logonGate(OnlineUser, 1)
	if err == nil || !strings.Contains(err.Error(), "AgentboxOnline had 1 failed logon(s)") || !strings.Contains(err.Error(), "run `agentbox setup`") {
		t.Errorf("one failed logon: %v", err)
	}
}

func TestDPAPINoKey(t *testing.T) {
	for code, want := range map[uint32]bool{0x8009000B: true, 0x80090003: true, 5: false, 0x8009000D: false, 0: false} {
		if got := dpapiNoKey(code); got != want {
			t.Errorf("dpapiNoKey(%#x) = %v, want %v", code, got, want)
		}
	}
	if !strings.Contains(dpapiNoKeyLine, "SSH") || strings.Contains(dpapiNoKeyLine, "agentbox setup") {
		t.Errorf("the line must name SSH keys and not send the user to setup (which would fail the same way): %s", dpapiNoKeyLine)
	}
}
