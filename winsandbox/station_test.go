package winsandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStationSDDL(t *testing.T) {
	got := stationSDDL("S-1-5-21-1-2-3-1010", "S-1-5-21-1-2-3-1001", []string{"S-1-5-21-7-8-9-10"})
	want := "D:P(A;;GA;;;S-1-5-21-1-2-3-1010)(A;;GA;;;S-1-5-21-7-8-9-10)(A;;GA;;;S-1-5-21-1-2-3-1001)"
	if got != want {
		t.Errorf("stationSDDL = %s, want %s", got, want)
	}
}

// TestJobUILimits: both jobs of a run carry every UI restriction, with the
// values winnt.h gives JOB_OBJECT_UILIMIT_*.
func TestJobUILimits(t *testing.T) {
	documented := map[string]uint32{
		"handles": 0x1, "read-clipboard": 0x2, "write-clipboard": 0x4, "system-parameters": 0x8,
		"display-settings": 0x10, "global-atoms": 0x20, "desktop": 0x40, "exit-windows": 0x80,
	}
	got := map[string]uint32{}
	for _, l := range uiLimitNames {
		got[l.name] = l.flag
	}
	if diff := cmp.Diff(documented, got); diff != "" {
		t.Errorf("UI restriction values (-documented +declared):\n%s", diff)
	}
	if JobUILimits != 0xff {
		t.Errorf("JobUILimits = %#x, want every restriction (0xff)", JobUILimits)
	}
	for _, tc := range []struct {
		flags uint32
		want  string
	}{
		{0, "none"},
		{JobUILimits, "handles read-clipboard write-clipboard system-parameters display-settings global-atoms desktop exit-windows"},
		{0x2 | 0x100, "read-clipboard 0x100"},
	} {
		if got := uiLimitText(tc.flags); got != tc.want {
			t.Errorf("uiLimitText(%#x) = %q, want %q", tc.flags, got, tc.want)
		}
	}
}

// TestSpecRunsOnPrivateDesktop: every spec asks for all UI restrictions,
// and the runner accepts it only on a run's own window station: never the
// user's desktop, nor a request that lacks a restriction.
func TestSpecRunsOnPrivateDesktop(t *testing.T) {
	for _, tc := range cases {
		opts := tc.opts
		opts.Exists = exists
		s, err := Build(tc.plan(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if s.Spawn.Limits.UI != JobUILimits {
			t.Errorf("%s: spawn UI restrictions %#x, want %#x", tc.name, s.Spawn.Limits.UI, JobUILimits)
		}
	}
	station, desk := privateStationName([8]byte{1, 2, 3, 4, 5, 6, 7, 0xab})
	if station != "agentbox-01020304050607ab" || desk != "agentbox" {
		t.Errorf("privateStationName = %q, %q", station, desk)
	}
	private := station + `\` + desk
	for _, tc := range []struct {
		desktop string
		ui      uint32
		ok      bool
	}{
		{private, JobUILimits, true},
		{`WinSta0\Default`, JobUILimits, false},
		{`winsta0\default`, JobUILimits, false},
		{"", JobUILimits, false},
		{station + `\Default`, JobUILimits, false},
		{`agentbox-0102\agentbox`, JobUILimits, false},
		{`agentbox-01020304050607AB\agentbox`, JobUILimits, false},
		{`agentbox-01020304050607zz\agentbox`, JobUILimits, false},
		{private + `\x`, JobUILimits, false},
		{private, JobUILimits &^ uiLimitReadClipboard, false},
		{private, 0, false},
	} {
		err := checkSpawnUI(&SpawnRequest{Desktop: tc.desktop, Limits: JobLimits{UI: tc.ui}})
		if (err == nil) != tc.ok {
			t.Errorf("checkSpawnUI(%q, %#x) = %v, want ok %v", tc.desktop, tc.ui, err, tc.ok)
		}
	}
}
