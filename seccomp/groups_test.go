package seccomp

import "testing"

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
