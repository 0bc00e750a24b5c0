package mount

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ProbeArgs is a trivial sandbox with the namespaces agentbox's boxes use:
// bwrap adds the user namespace itself when not run as root, exactly as it
// does for a real run.
var ProbeArgs = []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
	"--unshare-pid", "--die-with-parent", "--", "true"}

// userCaps are the capabilities bwrap keeps, for the init alone, in a box
// not run as root: the init makes the box's mounts private (so that a
// mount the host makes during the run cannot reach the box) and empties
// its bounding set, then drops them all before the command. A setuid-root
// bwrap refuses --cap-add to anyone but root ("--cap-add in setuid mode
// can be used only by root"): it cannot start agentbox's box, and the
// probe asks for them too, so that it fails there and auto picks Landlock.
var userCaps = []string{"--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"}

// BoxProbeArgs are the probe's arguments for this process: ProbeArgs,
// with the capabilities a box keeps for its init when not run as root.
func BoxProbeArgs() []string {
	if os.Geteuid() == 0 {
		return ProbeArgs
	}
	n := len(ProbeArgs) - 2 // before "--", "true"
	return append(append(append([]string{}, ProbeArgs[:n]...), userCaps...), ProbeArgs[n:]...)
}

// probeTimeout bounds the probe: a wedged bwrap must not hang a run.
const probeTimeout = 2 * time.Second

// BwrapStatus is the answer of the bwrap probe.
type BwrapStatus struct {
	Works  bool   `json:"works"`
	Reason string `json:"reason,omitempty"` // why it does not work
	Path   string `json:"path,omitempty"`
	Cached bool   `json:"cached"` // answered from the cache, without starting bwrap
}

// cacheTTL bounds how long an answer is trusted even when nothing in its key
// changed, for causes the key cannot see.
const cacheTTL = 24 * time.Hour

// CheckBwrap reports whether the bwrap at path starts a sandbox here. It is
// on every run's path, so the answer is cached in
// $XDG_CACHE_HOME/agentbox/bwrap-probe.txt (default ~/.cache) under a key
// made of everything that decides whether bwrap can start a sandbox:
//
//   - bwrap's path, device, inode, size, mtime, mode and owner (another
//     bwrap, an upgrade, a setuid bit added or removed);
//   - the kernel release and build (uname);
//   - the real and effective uid and gid, the effective capabilities,
//     no_new_privs and the seccomp mode (root or not, already confined);
//   - the user, mount and PID namespaces we run in (another container, a
//     nested sandbox);
//   - the sysctls kernel.unprivileged_userns_clone, user.max_user_namespaces,
//     kernel.apparmor_restrict_unprivileged_userns and
//     kernel.apparmor_restrict_unprivileged_unconfined;
//   - the user namespace's uid and gid maps and setgroups, and the security
//     modules in force (/sys/kernel/security/lsm);
//   - AppArmor's policy revision and the mtime of /etc/apparmor.d (a bwrap
//     profile installed or removed).
//
// The key is kept as text in the file and compared byte for byte (no hash:
// it is a few hundred bytes). A change in any of them re-probes. The cache
// only ever picks a backend: a stale "works" makes bwrap fail at start (an
// error, never an unconfined run, and the entry is forgotten then) and a
// stale "does not work" picks Landlock, which `plan` shows; so a wrong
// entry costs convenience, not confinement. Entries expire after a day
// anyway.
func CheckBwrap(path string) BwrapStatus {
	key := cacheKeyText(path)
	if e, ok := readCache(); ok && e.Key == key && time.Since(e.Probed) < cacheTTL && time.Since(e.Probed) >= 0 {
		return BwrapStatus{Works: e.Works, Reason: e.Reason, Path: path, Cached: true}
	}
	return Reprobe(path)
}

// Reprobe starts the trivial sandbox now and caches the answer.
func Reprobe(path string) BwrapStatus {
	why := probe(path)
	writeCache(path, why == "", why)
	return BwrapStatus{Works: why == "", Reason: why, Path: path}
}

// Forget removes the cached answer.
func Forget() error {
	f := cacheFile()
	if f == "" {
		return nil
	}
	// The JSON file earlier versions kept goes too.
	os.Remove(filepath.Join(filepath.Dir(f), "bwrap-probe.json"))
	if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// probe starts the trivial sandbox and returns why it failed, "" when it
// worked.
func probe(path string) string {
	if os.Geteuid() == 0 {
		// A root run starts bwrap in a mount namespace of agentbox's
		// own holding the box's device nodes (forkWithNodes): so does
		// the probe, so that where that cannot be made (a seccomp
		// filter refusing unshare, no CAP_SYS_ADMIN or CAP_MKNOD) bwrap
		// is found unusable before a run, and auto picks Landlock.
		return probeWithNodes(path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, BoxProbeArgs()...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil:
		return "did not finish within " + probeTimeout.String()
	case err == nil:
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return strings.TrimPrefix(last, "bwrap: ")
	}
	return err.Error()
}

// fixFor is the fix for a probe failure, by bwrap's message. A masked
// /proc is checked first: its message ends in "Operation not permitted"
// too, while user namespaces work.
func fixFor(msg string) string {
	switch {
	case strings.Contains(msg, "--cap-add in setuid mode"):
		return "this bwrap is setuid root, and refuses to any user but root the capabilities agentbox's init keeps to make the box's mounts private (so that a mount made on the host during the run cannot reach the box): " +
			"use a bwrap that is not setuid where user namespaces are allowed (chmod u-s on it), or let agentbox use its Landlock backend (--backend landlock; auto picks it)"
	case strings.HasPrefix(msg, nodesPrefix):
		return "run as root, agentbox starts bwrap in a mount namespace of its own holding the box's device nodes, and this process may not make one " +
			"(a seccomp filter refusing unshare, or no CAP_SYS_ADMIN or CAP_MKNOD): allow that, or let agentbox use its Landlock backend (--backend landlock; auto picks it)"
	case strings.Contains(msg, "Can't mount proc"):
		return "/proc cannot be mounted here (a container with a masked /proc): give the container an unmasked /proc " +
			"(Kubernetes: spec.hostUsers: false and securityContext.procMount: Unmasked; Docker: --security-opt systempaths=unconfined), or let agentbox use its Landlock backend (--backend landlock)"
	case strings.Contains(msg, "uid map") || strings.Contains(msg, "RTM_NEWADDR") || strings.Contains(msg, "Permission denied"):
		return "unprivileged user namespaces are restricted; on Ubuntu 23.10+/24.04 AppArmor does this: " +
			"add an AppArmor profile that grants bwrap `userns` (agentbox doctor prints it), or " +
			"sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0 (weaker: for every program)"
	case strings.Contains(msg, "No permissions to create") || strings.Contains(msg, "Operation not permitted"):
		return "bwrap may not create namespaces here (a container's profile, or a sysctl: agentbox doctor says which): " +
			"allow them, or let agentbox use its Landlock backend (--backend landlock; auto picks it)"
	}
	return "run `agentbox doctor` to see what this machine can enforce"
}

type cacheEntry struct {
	Key    string
	Works  bool
	Reason string
	Probed time.Time
}

func cacheFile() string {
	dir := os.Getenv("XDG_CACHE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".cache")
	}
	return filepath.Join(dir, "agentbox", "bwrap-probe.txt")
}

// cacheMagic is the cache file's first line; another first line (another
// format) is no entry.
const cacheMagic = "agentbox bwrap probe 1\n"

// The cache file is cacheMagic, then one line each: the time of the probe
// (Unix nanoseconds), 1 or 0 (works), the reason (one line), then the key
// text to the end.
func readCache() (cacheEntry, bool) {
	var e cacheEntry
	f := cacheFile()
	if f == "" {
		return e, false
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return e, false
	}
	rest, ok := strings.CutPrefix(string(b), cacheMagic)
	if !ok {
		return e, false
	}
	probed, rest, ok1 := strings.Cut(rest, "\n")
	works, rest, ok2 := strings.Cut(rest, "\n")
	reason, key, ok3 := strings.Cut(rest, "\n")
	ns, err := strconv.ParseInt(probed, 10, 64)
	if !ok1 || !ok2 || !ok3 || err != nil || (works != "1" && works != "0") {
		return e, false
	}
	return cacheEntry{Key: key, Works: works == "1", Reason: reason, Probed: time.Unix(0, ns)}, true
}

// writeCache stores the answer for bin; it is best effort (a read-only home
// only costs a probe per run). The file is written beside and renamed, so a
// concurrent run never reads half of it.
func writeCache(bin string, works bool, reason string) {
	f := cacheFile()
	if f == "" {
		return
	}
	w := "0"
	if works {
		w = "1"
	}
	reason = strings.ReplaceAll(reason, "\n", " ")
	b := cacheMagic + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n" + w + "\n" + reason + "\n" + cacheKeyText(bin)
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(f), ".bwrap-probe-*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), f) != nil {
		os.Remove(tmp.Name())
	}
}

func readSysctl(name string) (string, bool) {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// cacheKeyText is everything CheckBwrap's answer depends on, one
// "name=value" line each. It asks the kernel directly (stat, uname,
// prctl, capget, readlink) rather than parsing /proc/self/status.
func cacheKeyText(bin string) string {
	b := make([]byte, 0, 768)
	line := func(k string, vs ...string) {
		b = append(b, k...)
		b = append(b, '=')
		for i, v := range vs {
			if i > 0 {
				b = append(b, ':')
			}
			b = append(b, v...)
		}
		b = append(b, '\n')
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	line("format", "4") // 4: the probe asks for the init's capabilities (userCaps)
	line("bwrap", bin)
	var st unix.Stat_t
	if unix.Stat(bin, &st) == nil {
		line("bwrap.stat", u(st.Dev), u(st.Ino), i(st.Size), i(int64(st.Mtim.Sec))+"."+i(int64(st.Mtim.Nsec)), strconv.FormatUint(uint64(st.Mode), 8), u(uint64(st.Uid)))
	}
	var un unix.Utsname
	if unix.Uname(&un) == nil {
		line("kernel", unix.ByteSliceToString(un.Release[:])+" "+unix.ByteSliceToString(un.Version[:]))
	}
	line("ids", i(int64(os.Getuid())), i(int64(os.Geteuid())), i(int64(os.Getgid())), i(int64(os.Getegid())))
	for _, ns := range []string{"user", "mnt", "pid"} {
		v, _ := os.Readlink("/proc/self/ns/" + ns)
		line("ns."+ns, v)
	}
	// The effective capabilities, no_new_privs and the seccomp mode
	// (what /proc/self/status calls CapEff, NoNewPrivs and Seccomp); an
	// error is part of the answer too.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		line("cap.eff", "error "+err.Error())
	} else {
		line("cap.eff", strconv.FormatUint(uint64(caps[1].Effective)<<32|uint64(caps[0].Effective), 16))
	}
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		line("no_new_privs", "error "+err.Error())
	} else {
		line("no_new_privs", i(int64(nnp)))
	}
	sec, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	if err != nil {
		line("seccomp", "error "+err.Error())
	} else {
		line("seccomp", i(int64(sec)))
	}
	for _, name := range []string{"kernel.unprivileged_userns_clone", "user.max_user_namespaces", "kernel.apparmor_restrict_unprivileged_userns", "kernel.apparmor_restrict_unprivileged_unconfined"} {
		v, ok := readSysctl(name)
		if !ok {
			v = "-"
		}
		line(name, v)
	}
	// The user namespace's id maps (a new namespace with the same inode
	// number after a restart, or maps written later) and the security
	// modules in force.
	for _, f := range []string{"/proc/self/uid_map", "/proc/self/gid_map", "/proc/self/setgroups", "/sys/kernel/security/lsm"} {
		v, err := os.ReadFile(f)
		if err != nil {
			v = []byte("-")
		}
		line(filepath.Base(f), strings.Join(strings.Fields(string(v)), " "))
	}
	rev, err := os.ReadFile("/sys/kernel/security/apparmor/revision")
	if err != nil {
		rev = []byte("-")
	}
	line("apparmor.revision", strings.TrimSpace(string(rev)))
	if unix.Stat("/etc/apparmor.d", &st) == nil {
		line("apparmor.d", i(int64(st.Mtim.Sec))+"."+i(int64(st.Mtim.Nsec)))
	}
	return string(b)
}
