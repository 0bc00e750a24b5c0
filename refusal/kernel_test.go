package refusal

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every class of kernel interface is never proposed: the kernel's trees by
// path, each kernel filesystem type wherever it is mounted, a folder that
// holds one, and, when the mount table cannot be read, anything outside
// the home folder.
func TestKernel(t *testing.T) {
	mounts := []MountPoint{
		{"/", "ext4"}, {"/proc", "proc"}, {"/sys", "sysfs"}, {"/sys/fs/cgroup", "cgroup2"}, {"/dev", "devtmpfs"},
		{"/dev/pts", "devpts"}, {"/dev/shm", "tmpfs"}, {"/home", "ext4"}, {"/srv/cg", "cgroup2"}, {"/srv/cg1", "cgroup"},
		{"/mnt/debug", "debugfs"}, {"/mnt/trace", "tracefs"}, {"/mnt/sec", "securityfs"}, {"/run/bpf", "bpf"},
		{"/config", "configfs"}, {"/mnt/pstore", "pstore"}, {"/mnt/efi", "efivarfs"}, {"/mnt/binfmt", "binfmt_misc"},
		{"/mnt/mq", "mqueue"}, {"/mnt/huge", "hugetlbfs"}, {"/mnt/resctrl", "resctrl"}, {"/var/cache", "tmpfs"},
	}
	for _, tc := range []struct {
		path string
		ok   bool // the mount table was read
		want bool
		why  string
	}{
		{"/proc/sys/vm", true, true, "/proc is"},
		{"/proc", true, true, "/proc is"},
		{"/sys/fs/cgroup", true, true, "/sys is"},
		{"/sys/kernel/mm/ksm", true, true, "/sys is"},
		{"/sys/module", true, true, "/sys is"},
		{"/dev", true, true, "/dev is"},
		{"/dev/shm", true, true, "/dev is"},
		{"/", true, true, "/ holds /proc"},
		{"/srv/cg/box", true, true, "cgroup hierarchy"},
		{"/srv/cg1", true, true, "cgroup hierarchy"},
		{"/mnt/debug/x", true, true, "debugfs"},
		{"/mnt/trace", true, true, "tracefs"},
		{"/mnt/sec/apparmor", true, true, "securityfs"},
		{"/run/bpf/maps", true, true, "bpffs"},
		{"/config/usb_gadget", true, true, "configfs"},
		{"/mnt/pstore", true, true, "pstore"},
		{"/mnt/efi", true, true, "efivarfs"},
		{"/mnt/binfmt", true, true, "binfmt_misc"},
		{"/mnt/mq", true, true, "mqueue"},
		{"/mnt/huge", true, true, "hugetlbfs"},
		{"/mnt/resctrl", true, true, "resctrl"},
		{"/mnt", true, true, "/mnt holds /mnt/binfmt"},
		{"/srv", true, true, "/srv holds /srv/cg"},
		{"/var/cache/x", true, false, ""},
		{"/home/u/.cache/tool", true, false, ""},
		{"/opt/tool", true, false, ""},
		{"/opt/tool", false, true, "mount table could not be read"},
		{"/home/u/.config/tool", false, false, ""},
		{"/sys/fs/cgroup", false, true, "/sys is"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, why := Kernel(tc.path, "/home/u", mounts, tc.ok)
			if diff := cmp.Diff(tc.want, got); diff != "" || !strings.Contains(why, tc.why) {
				t.Errorf("Kernel(%q) = %v, %q; want %v and %q (-want +got):\n%s", tc.path, got, why, tc.want, tc.why, diff)
			}
		})
	}
}
