package refusal

import (
	"sort"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Kernel interfaces are never proposed as writable: a folder of /proc,
// /sys or /dev, or of a filesystem the kernel serves (cgroups, debugfs,
// tracefs, securityfs, bpffs, configfs, ...), is not where work is kept
// but a switch of the machine's (kernel settings, cgroup limits, module
// parameters, devices), and under Landlock, which has no mount namespace,
// making it writable would hand the box the host's.

// kernelTrees are the folders whose whole content is the kernel's.
var kernelTrees = []struct{ path, what string }{
	{"/proc", "the kernel's process and settings interface (procfs)"},
	{"/sys", "the kernel's device, module and settings interface (sysfs, cgroups)"},
	{"/dev", "the device nodes' folder"},
}

// kernelFS are the filesystem types that are kernel interfaces wherever
// they are mounted, with what each is.
var kernelFS = map[string]string{
	"proc":        "procfs, the kernel's process and settings interface",
	"sysfs":       "sysfs, the kernel's device and settings interface",
	"cgroup":      "a cgroup hierarchy (resource limits of the machine's processes)",
	"cgroup2":     "the cgroup hierarchy (resource limits of the machine's processes)",
	"securityfs":  "securityfs (the security modules' policies)",
	"debugfs":     "debugfs (the kernel's debugging switches)",
	"tracefs":     "tracefs (kernel tracing)",
	"bpf":         "bpffs (pinned BPF programs and maps)",
	"configfs":    "configfs (kernel objects configured from user space)",
	"pstore":      "pstore (the kernel's crash records)",
	"efivarfs":    "efivarfs (the firmware's variables)",
	"devtmpfs":    "devtmpfs (device nodes)",
	"devpts":      "devpts (terminals)",
	"mqueue":      "mqueue (POSIX message queues)",
	"hugetlbfs":   "hugetlbfs (huge pages)",
	"binfmt_misc": "binfmt_misc (which interpreter runs which programs)",
	"fusectl":     "fusectl (FUSE connections)",
	"selinuxfs":   "selinuxfs (the SELinux policy)",
	"smackfs":     "smackfs (the Smack policy)",
	"autofs":      "autofs (automounts)",
	"nsfs":        "nsfs (namespaces)",
	"rpc_pipefs":  "rpc_pipefs (the kernel's RPC pipes)",
	"nfsd":        "nfsd (the kernel NFS server's controls)",
	"resctrl":     "resctrl (cache and memory bandwidth allocation)",
}

// MountPoint is one mount of the host: where, and its filesystem type.
type MountPoint struct {
	Path, Type string
}

// Kernel reports whether the folder p is, lies in or holds a kernel
// interface, and what that is: a folder of /proc, /sys or /dev, a folder
// that holds one of them (/), or a folder on, or holding, a mount of a
// kernel filesystem type in mounts (the host's mount table). A mount table
// that could not be read (ok false) leaves nothing outside the home folder
// to propose: whether p is a kernel interface is not known.
func Kernel(p, home string, mounts []MountPoint, ok bool) (bool, string) {
	for _, k := range kernelTrees {
		switch {
		case plan.Within(p, k.path):
			return true, k.path + " is " + k.what
		case plan.Within(k.path, p):
			return true, p + " holds " + k.path + ", " + k.what
		}
	}
	if !ok {
		if home != "" && plan.Within(p, home) {
			return false, ""
		}
		return true, "the mount table could not be read, so whether " + p + " is a kernel interface is not known"
	}
	// The mount p is on: the longest mount point that holds it.
	on := MountPoint{}
	for _, m := range mounts {
		if plan.Within(p, m.Path) && len(m.Path) >= len(on.Path) {
			on = m
		}
	}
	if what, ok := kernelFS[on.Type]; ok {
		return true, p + " is on " + on.Path + ", " + what
	}
	var held []string
	for _, m := range mounts {
		if _, ok := kernelFS[m.Type]; ok && plan.Within(m.Path, p) && m.Path != p {
			held = append(held, m.Path+" ("+kernelFS[m.Type]+")")
		}
	}
	if len(held) > 0 {
		sort.Strings(held)
		return true, p + " holds " + strings.Join(held, ", ")
	}
	return false, ""
}

// KernelInterface reports whether the folder p is, lies in or holds a
// kernel interface on this host (Kernel, against this host's mount table),
// and why.
func KernelInterface(pl *plan.Plan, p string) (bool, string) {
	mounts, ok := hostMounts()
	if k, why := Kernel(p, pl.Identity.Home, mounts, ok); k {
		return true, "a kernel interface, never proposed as writable: " + why
	}
	return false, ""
}
