package doctor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
)

// probeTimeout bounds every command the doctor starts: a wedged bwrap must
// not hang `agentbox run`.
const probeTimeout = 2 * time.Second

// Probe finds out what this machine can enforce, and what auto picks among
// the backends all. It starts bwrap and a user namespace for real (a few
// milliseconds) and refreshes the bwrap probe's cache.
func Probe(all []backend.Backend) Report {
	r := Report{Schema: Schema, OS: runtime.GOOS, UID: os.Getuid()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		r.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	r.UserNS.Sysctls = usernsSysctls()
	r.Bwrap = probeBwrapFull()
	r.UserNS.Works, r.UserNS.Error = probeUserns()
	r.AppArmor = probeAppArmor()
	r.Landlock.ABI, r.Landlock.Error = landlockABI()
	r.Seccomp = probeSeccomp()
	r.Cgroup = probeCgroup()
	limits := cgroup.Probe()
	r.Cgroup.Pids, r.Cgroup.Memory = limits.Pids.String(), limits.Memory.String()
	r.Container = probeContainer()
	r.Proc = probeProc()
	r.Auto = auto(all)
	r.Problems = diagnose(r)
	return r
}

func landlockABI() (int, string) {
	abi, err := landlock.ABI()
	if err != nil {
		return 0, err.Error()
	}
	return abi, ""
}

// readSysctl returns a sysctl's value, and false when this kernel lacks it.
func readSysctl(name string) (string, bool) {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func usernsSysctls() map[string]string {
	m := map[string]string{}
	for _, name := range []string{sysctlUsernsClone, sysctlMaxUserns, sysctlAppArmorUsern} {
		if v, ok := readSysctl(name); ok {
			m[name] = v
		}
	}
	return m
}

func probeBwrapFull() Bwrap {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return Bwrap{}
	}
	b := Bwrap{Path: bin, Probe: bin + " " + strings.Join(mount.BoxProbeArgs(), " ")}
	if out, err := run(bin, "--version"); err == nil {
		b.Version = strings.TrimSpace(out)
	}
	b.Init = mount.InitReport()
	s := mount.Reprobe(bin)
	b.Works, b.Error = s.Works, s.Reason
	netArgs := append([]string{"--unshare-net"}, mount.BoxProbeArgs()...)
	if out, err := run(bin, netArgs...); err != nil {
		b.NetworkNoneError = failure(out, err)
	} else {
		b.NetworkNone = true
	}
	return b
}

// run starts a command with probeTimeout and returns its combined output.
func run(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), errors.New("did not finish within " + probeTimeout.String())
	}
	return string(out), err
}

// failure is the one line that says why a probe failed: the command's own
// last line of output, else the error.
func failure(out string, err error) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return last
	}
	return err.Error()
}

// probeUserns starts /bin/true in a new user namespace, which is what bwrap
// needs when it is not run as root.
func probeUserns() (bool, string) {
	bin, err := exec.LookPath("true")
	if err != nil {
		return false, "no true(1) to start: " + err.Error()
	}
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	if err := cmd.Run(); err != nil {
		return false, "starting a process in a new user namespace: " + err.Error()
	}
	return true, ""
}

func probeAppArmor() AppArmor {
	var a AppArmor
	if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err == nil {
		a.Enabled = strings.TrimSpace(string(b)) == "Y"
	}
	a.RestrictUserns, _ = readSysctl(sysctlAppArmorUsern)
	if f, err := os.Open("/sys/kernel/security/apparmor/profiles"); err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if strings.Contains(s.Text(), "bwrap") {
				a.BwrapProfile = s.Text()
				break
			}
		}
	}
	return a
}

func probeSeccomp() Seccomp {
	if b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail"); err == nil {
		return Seccomp{Available: true, Actions: strings.Fields(string(b))}
	}
	// Without the sysctl, PR_GET_SECCOMP still tells whether the kernel
	// has seccomp at all (EINVAL when it does not).
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return Seccomp{Error: "prctl(PR_GET_SECCOMP): " + err.Error()}
	}
	return Seccomp{Available: true}
}

func probeCgroup() Cgroup {
	var c Cgroup
	var st unix.Statfs_t
	switch {
	case unix.Statfs("/sys/fs/cgroup", &st) != nil:
		c.Layout = "none"
		return c
	case st.Type == unix.CGROUP2_SUPER_MAGIC:
		c.V2, c.Layout = true, "unified"
	case unix.Statfs("/sys/fs/cgroup/unified", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC:
		c.Layout = "hybrid"
	default:
		c.Layout = "legacy"
	}
	if !c.V2 {
		return c
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return c
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			c.Path = p
		}
	}
	dir := filepath.Join("/sys/fs/cgroup", c.Path)
	// Every cgroup but the host's root has cgroup.type: "/" with it is the
	// top of a cgroup namespace.
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.type"); err == nil && c.Path == "/" {
		c.Top = true
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers")); err == nil {
		c.Controllers = strings.Fields(string(b))
	}
	// Delegated: we may create child cgroups and move processes into them.
	c.Delegated = unix.Access(dir, unix.W_OK) == nil &&
		unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) == nil
	return c
}

func probeContainer() Container {
	var c Container
	c.Chroot = chrooted()
	found := func(kind, evidence string) {
		c.Detected = true
		if c.Kind == "" {
			c.Kind = kind
		}
		c.Evidence = append(c.Evidence, evidence)
	}
	if _, err := os.Stat("/.dockerenv"); err == nil {
		found("docker", "/.dockerenv exists")
	}
	if _, err := os.Stat("/run/.containerenv"); err == nil {
		found("podman", "/run/.containerenv exists")
	}
	if v := os.Getenv("container"); v != "" {
		found(v, "$container="+v)
	}
	if b, err := os.ReadFile("/proc/1/cgroup"); err == nil {
		for _, k := range []string{"docker", "kubepods", "containerd", "lxc", "libpod"} {
			if bytes.Contains(b, []byte(k)) {
				found(k, "/proc/1/cgroup mentions "+k)
				break
			}
		}
	}
	if bin, err := exec.LookPath("systemd-detect-virt"); err == nil {
		out, _ := run(bin, "--container")
		if v := strings.TrimSpace(out); v != "" && v != "none" {
			found(v, "systemd-detect-virt --container: "+v)
		}
	}
	return c
}

// probeProc lists the mounts below /proc (mountinfo's fifth field is the
// mount point, the field after " - " the file system type).
func probeProc() Proc {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Proc{}
	}
	return Proc{Masked: procMounts(string(data))}
}

// procMounts returns the mount points below /proc in a mountinfo text, with
// their file system type, but for the binfmt_misc automount (an empty
// folder, which does not keep a fresh /proc from being mounted).
func procMounts(mountinfo string) []string {
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		point := cgroup.UnescapeMountinfo(f[4])
		if !strings.HasPrefix(point, "/proc/") || strings.HasPrefix(point, "/proc/sys/fs/binfmt_misc") {
			continue
		}
		fstype := "?"
		for i, x := range f {
			if x == "-" && i+1 < len(f) {
				fstype = f[i+1]
				break
			}
		}
		out = append(out, point+" ("+fstype+")")
	}
	return out
}

// chrooted reports whether this process runs in a chroot: its root is
// another folder than PID 1's root (of this PID namespace), which needs
// /proc/1/root (root without CAP_SYS_PTRACE, as in most containers, and an
// ordinary user may not read it); or its root is no mount point at all,
// which only a chroot makes (pivot_root, a container's root and the host's
// are mount points), read from /proc/self/mountinfo. A chroot into a mount
// point is found only the first way. False when neither can be read.
func chrooted() bool {
	var self, init unix.Stat_t
	if unix.Stat("/", &self) == nil && unix.Stat("/proc/1/root/", &init) == nil &&
		(self.Dev != init.Dev || self.Ino != init.Ino) {
		return true
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	return err == nil && !rootIsMount(string(b))
}

// rootIsMount reports whether mountinfo (the text of /proc/self/mountinfo)
// has a mount at "/". The kernel lists only the mounts this process's root
// can reach, with their mount points relative to it; an empty text (no
// mounts: not a mountinfo) counts as one, so that nothing unread is taken
// for a chroot.
func rootIsMount(mountinfo string) bool {
	if strings.TrimSpace(mountinfo) == "" {
		return true
	}
	for _, line := range strings.Split(mountinfo, "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ...
		if f := strings.Fields(line); len(f) >= 5 && f[4] == "/" {
			return true
		}
	}
	return false
}

// FallbackCause decides why bwrap cannot start a sandbox here as Probe's
// report does, from the facts it can read without starting bwrap (the
// sysctls, AppArmor, a user namespace, the container, /proc's mounts):
// bwrapPath is "" when bwrap is not installed, bwrapError the probe's
// answer. A run that falls back to Landlock names the cause in one line.
func FallbackCause(bwrapPath, bwrapError string) Cause {
	r := Report{UID: os.Getuid(), Bwrap: Bwrap{Path: bwrapPath, Error: bwrapError}}
	if bwrapPath == "" {
		return CauseMissing
	}
	r.UserNS.Sysctls = usernsSysctls()
	r.UserNS.Works, r.UserNS.Error = probeUserns()
	r.AppArmor = probeAppArmor()
	r.Container = probeContainer()
	r.Proc = probeProc()
	return BwrapCause(r)
}
