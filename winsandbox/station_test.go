package winsandbox

import "testing"

// TestNeedPrivateStation: a run makes a window station of its own unless
// agentbox runs on the interactive one (WinSta0, visible): under OpenSSH
// and in services the station is a non-interactive one, where the sandbox
// user's programs that load user32 cannot start.
func TestNeedPrivateStation(t *testing.T) {
	for _, tc := range []struct {
		station string
		flags   uint32
		session uint32
		known   bool
		want    bool
	}{
		{"WinSta0", wsfVisible, 1, true, false},
		{"winsta0", wsfVisible, 2, true, false},
		{"Service-0x0-3e7$", 0, 0, true, true},    // a service
		{"Service-0x0-1a2b3c$", 0, 0, true, true}, // an OpenSSH session
		{"WinSta0", wsfVisible, 0, true, true},    // session 0's WinSta0: no one sees it
		{"WinSta0", 0, 1, true, true},
		{"Service-0x0-1a2b3c$", wsfVisible, 1, true, true},
		{"", 0, 1, false, true}, // unknown: not taken for interactive
	} {
		if got := needPrivateStation(tc.station, tc.flags, tc.session, tc.known); got != tc.want {
			t.Errorf("needPrivateStation(%q, %#x, session %d, %v) = %v, want %v", tc.station, tc.flags, tc.session, tc.known, got, tc.want)
		}
	}
}

func TestStationSDDL(t *testing.T) {
	got := stationSDDL("S-1-5-21-1-2-3-1010", "S-1-5-21-1-2-3-1001", []string{"S-1-5-21-7-8-9-10"})
	want := "D:P(A;;GA;;;S-1-5-21-1-2-3-1010)(A;;GA;;;S-1-5-21-7-8-9-10)(A;;GA;;;S-1-5-21-1-2-3-1001)"
	if got != want {
		t.Errorf("stationSDDL = %s, want %s", got, want)
	}
}
