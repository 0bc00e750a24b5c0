//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A setuid-root bwrap (where user namespaces are off, distributions ship
// one) refuses --cap-add to every user but root, and a box not run as
// root needs it: its init keeps CAP_SYS_ADMIN and CAP_SETPCAP to make
// the box's mounts private and empty its bounding set. The probe asks for
// them too, so auto picks Landlock there instead of failing every run,
// and --backend bwrap is refused with the cause and the fix. A user
// (nobody) runs agentbox with a setuid copy of bwrap first on PATH.
func TestSetuidBwrapFallsBack(t *testing.T) {
	rootOnly(t, "making a setuid-root copy of bwrap")
	needLandlock(t)
	real, err := exec.LookPath("bwrap")
	need(t, err == nil, "bwrap is not installed")
	base, err := os.MkdirTemp("/var/tmp", "abit-suid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "bin")
	mkdir(t, dir)
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(dir, "bwrap")
	if err := os.WriteFile(suid, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	home, proj := filepath.Join(base, "home"), filepath.Join(base, "proj")
	for _, d := range []string{home, proj} {
		mkdir(t, d)
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = proj
		cmd.Env = []string{"HOME=" + home, "PATH=" + dir + ":/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		timer := time.AfterFunc(60*time.Second, func() {
			if cmd.Process != nil {
				cmd.Process.Kill()
			}
		})
		defer timer.Stop()
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("agentbox %v: %v", args, err)
		}
		return string(out), code
	}
	out, code := run("run", "--", "sh", "-c", "echo backend=$AGENTBOX_BACKEND")
	if code != 0 || !strings.Contains(out, "backend=landlock") {
		t.Errorf("auto with a setuid bwrap: exit %d, want 0 under Landlock:\n%s", code, out)
	}
	out, code = run("run", "--backend", "bwrap", "--", "true")
	if code == 0 || !strings.Contains(out, "setuid") {
		t.Errorf("--backend bwrap with a setuid bwrap: exit %d, want a refusal naming the setuid bwrap and the fix:\n%s", code, out)
	}
}
