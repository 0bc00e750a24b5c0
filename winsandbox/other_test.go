//go:build !windows

package winsandbox

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/backend"
)

// TestNotWindows: off Windows, asking for the windows backend says that
// the backend runs on Windows only (with the backends to use on Linux),
// while `agentbox setup` keeps its own message.
func TestNotWindows(t *testing.T) {
	type result struct {
		Reason string
		Hints  []string
	}
	for _, tc := range []struct {
		goos string
		want result
	}{
		{"linux", result{Reason: "the windows backend runs on Windows only (this is linux)",
			Hints: []string{"on Linux agentbox confines with bubblewrap (--backend bwrap) or Landlock (--backend landlock)"}}},
		{"darwin", result{Reason: "the windows backend runs on Windows only (this is darwin)"}},
		{"freebsd", result{Reason: "the windows backend runs on Windows only (this is freebsd)"}},
	} {
		var u *backend.Unavailable
		if err := notWindowsBackend(tc.goos); !errors.As(err, &u) {
			t.Errorf("%s: %v is not a backend.Unavailable", tc.goos, err)
			continue
		}
		got := result{Reason: u.Error(), Hints: u.Hints()}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.goos, diff)
		}
	}
	err := New().Available()
	if err == nil || !strings.Contains(err.Error(), "windows backend runs on Windows only (this is "+runtime.GOOS+")") {
		t.Errorf("Available() = %v", err)
	}
	if err := Setup(SetupOptions{}); !errors.Is(err, ErrNotWindows) || !strings.Contains(err.Error(), "agentbox setup is only for Windows") {
		t.Errorf("Setup() = %v, want the setup command's own message", err)
	}
}
