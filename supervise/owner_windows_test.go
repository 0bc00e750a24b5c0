package supervise

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/agentbox/agentbox/plan"
)

// TestWindowsPrepare: Prepare creates the folders agentbox owns on Windows
// too (they are the caller's, by SID), and accepts them again.
func TestWindowsPrepare(t *testing.T) {
	// Not t.TempDir: Wine cannot remove folders the way os.RemoveAll asks,
	// which would fail the test for nothing it tests.
	base, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	mine := filepath.Join(base, "agentbox-S-1-5-21-1-2-3-1001")
	p := &plan.Plan{Prepare: []plan.Prepare{
		{Path: mine, Mode: 0o700},
		{Path: filepath.Join(mine, "proj-1a2b3c4d"), Mode: 0o700},
	}}
	if err := Prepare(p); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if err := Prepare(p); err != nil {
		t.Fatalf("Prepare again (the folders exist and are mine): %v", err)
	}
	for _, d := range p.Prepare {
		if fi, err := os.Stat(d.Path); err != nil || !fi.IsDir() {
			t.Errorf("%s was not created: %v", d.Path, err)
		}
	}

}

// TestWindowsPrepareRefusesJunction: a junction where agentbox's folder
// should be (planted to send the box's writes elsewhere) is refused, as a
// symlink is on Linux. Wine cannot make junctions, so this runs on real
// Windows (AGENTBOX_WINDOWS_MUST_ENFORCE=1 there makes Wine a failure).
func TestWindowsPrepareRefusesJunction(t *testing.T) {
	if windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil {
		if os.Getenv("AGENTBOX_WINDOWS_MUST_ENFORCE") == "1" {
			t.Fatal("this test needs real Windows, and this is Wine")
		}
		t.Skip("Wine cannot make junctions; this test runs on real Windows (.github/workflows/windows.yml)")
	}
	base, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	elsewhere := filepath.Join(base, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	junction := filepath.Join(base, "agentbox-planted")
	out, err := exec.Command("cmd", "/c", "mklink", "/J", junction, elsewhere).CombinedOutput()
	if _, lerr := os.Lstat(junction); err != nil || lerr != nil {
		t.Fatalf("mklink /J: %v, %v: %s", err, lerr, out)
	}
	err = Prepare(&plan.Plan{Prepare: []plan.Prepare{{Path: junction, Mode: 0o700}}})
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("Prepare on a junction: %v, want a refusal", err)
	}
}
