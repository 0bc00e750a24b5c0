package seccomp

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheck runs on every OS: policies are validated the same way wherever
// they are loaded.
func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		allow   []string
		wantErr string
	}{
		{name: "none"},
		{name: "every group", allow: Names()},
		{
			name:    "unknown",
			allow:   []string{"mount"},
			wantErr: `unknown seccomp group "mount" (valid: tiocsti, keyring, bpf, perf, userfaultfd, kexec, modules, ptrace, io_uring, other-processes, setuid, userns)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.allow)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("Check(%q) = %q, want %q", tc.allow, got, tc.wantErr)
			}
		})
	}
}

// NoNetBypassListening is NoNetBypass but for listen(2), and Listening
// swaps one for the other and nothing else.
func TestListening(t *testing.T) {
	want := NoNetBypass.Rules
	if last := want[len(want)-1]; last.Syscall != "listen" {
		t.Fatalf("NoNetBypass's last rule is %s, not listen", last.Syscall)
	}
	if diff := cmp.Diff(want[:len(want)-1], NoNetBypassListening.Rules); diff != "" {
		t.Errorf("NoNetBypassListening (-want +got):\n%s", diff)
	}
	got := Listening(ForNetwork("allowlist", true))
	if len(got) != 2 || got[0].Name != NoNetBypassListening.Name || got[1].Name != SocketFamilies.Name {
		t.Errorf("Listening = %v", got)
	}
	if g := Listening(ForNetwork("allowlist", false)); len(g) != 1 || g[0].Name != SocketFamilies.Name {
		t.Errorf("Listening without Landlock = %v", g)
	}
}
