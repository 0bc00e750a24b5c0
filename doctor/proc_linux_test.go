package doctor

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A Kubernetes pod's /proc as containerd masks it (the default procMount):
// read-only binds over folders, tmpfs and /dev/null over files.
const podMountinfo = `1650 1594 0:340 / / rw,relatime master:412 - overlay overlay rw,lowerdir=/x
1651 1650 0:346 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
1652 1651 0:347 / /proc/sys/fs/binfmt_misc rw,relatime - autofs systemd-1 rw
1653 1650 0:348 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
1660 1651 0:346 /bus /proc/bus ro,nosuid,nodev,noexec,relatime - proc proc rw
1661 1651 0:346 /fs /proc/fs ro,nosuid,nodev,noexec,relatime - proc proc rw
1662 1651 0:346 /irq /proc/irq ro,nosuid,nodev,noexec,relatime - proc proc rw
1663 1651 0:346 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw
1664 1651 0:346 /sysrq-trigger /proc/sysrq-trigger ro,nosuid,nodev,noexec,relatime - proc proc rw
1665 1651 0:349 / /proc/acpi ro,relatime - tmpfs tmpfs ro
1666 1651 0:348 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
1667 1651 0:348 /null /proc/timer\040list rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
`

func TestProcMounts(t *testing.T) {
	want := []string{"/proc/bus (proc)", "/proc/fs (proc)", "/proc/irq (proc)", "/proc/sys (proc)", "/proc/sysrq-trigger (proc)",
		"/proc/acpi (tmpfs)", "/proc/kcore (tmpfs)", "/proc/timer list (tmpfs)"}
	if diff := cmp.Diff(want, procMounts(podMountinfo)); diff != "" {
		t.Errorf("masked (-want +got):\n%s", diff)
	}
	host := "21 26 0:20 / /proc rw,relatime - proc proc rw\n22 21 0:21 / /proc/sys/fs/binfmt_misc rw - autofs systemd-1 rw\n"
	if got := procMounts(host); len(got) != 0 {
		t.Errorf("a host's /proc is masked: %v", got)
	}
}

// In a pod whose seccomp and AppArmor profiles already allow user
// namespaces, bwrap fails on /proc: the doctor names the masked /proc and
// the fix for it, not the container profile the pod already has.
func TestDiagnoseMaskedProc(t *testing.T) {
	r := base()
	r.UID = 1000
	r.Bwrap.Works, r.Bwrap.Error = false, "Can't mount proc on /newroot/proc: Operation not permitted"
	r.Bwrap.NetworkNone, r.Bwrap.NetworkNoneError = false, "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
	r.Container = Container{Detected: true, Kind: "kubepods", Evidence: []string{"/proc/1/cgroup mentions kubepods"}}
	r.Proc = Proc{Masked: procMounts(podMountinfo)}
	r.Auto.Backend = "landlock"
	got := diagnose(r)
	if len(got) == 0 {
		t.Fatal("no problem found")
	}
	p := got[0]
	for _, want := range []string{"/proc is masked", "/proc/bus (proc)", "and 4 more"} {
		if !strings.Contains(p.Problem, want) {
			t.Errorf("problem %q lacks %q", p.Problem, want)
		}
	}
	for _, want := range []string{"procMount: Unmasked", "hostUsers: false", "systempaths=unconfined", "Landlock backend"} {
		if !strings.Contains(p.Fix, want) {
			t.Errorf("fix %q lacks %q", p.Fix, want)
		}
	}
	if strings.Contains(p.Problem, "forbids namespaces") || strings.Contains(p.Fix, "seccomp=unconfined --security-opt apparmor=unconfined") {
		t.Errorf("the fix names what the pod already has: %+v", p)
	}
	if p.TradeOff == "" {
		t.Error("unmasking /proc has a trade-off to state")
	}
}

// A chroot into a folder that is no mount point leaves no mount at "/" in
// the process's mountinfo; the host, a container and a box have one.
func TestRootIsMount(t *testing.T) {
	tests := []struct {
		name      string
		mountinfo string
		want      bool
	}{
		{"host", "22 1 0:21 / /proc rw - proc proc rw\n1 0 8:1 / / rw - ext4 /dev/sda1 rw\n", true},
		{"container", "600 550 0:52 / / rw,relatime - overlay overlay rw,lowerdir=/l\n601 600 0:55 / /proc rw - proc proc rw\n", true},
		{"chroot into a folder", "640 600 0:26 /usr /usr rw - ext4 /dev/sda1 rw\n641 600 0:21 / /proc rw - proc proc rw\n", false},
		{"nothing read", "", true},
	}
	for _, tc := range tests {
		if got := rootIsMount(tc.mountinfo); got != tc.want {
			t.Errorf("%s: rootIsMount = %v, want %v", tc.name, got, tc.want)
		}
	}
}
