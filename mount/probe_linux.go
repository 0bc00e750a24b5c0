package mount

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ProbeArgs is a trivial sandbox with the namespaces agentbox's boxes use:
// bwrap adds the user namespace itself when not run as root, exactly as it
// does for a real run.
var ProbeArgs = []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
	"--unshare-pid", "--die-with-parent", "--", "true"}

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
// $XDG_CACHE_HOME/agentbox/bwrap-probe.json (default ~/.cache) under a key
// made of everything that decides whether bwrap can start a sandbox:
//
//   - bwrap's path, inode, size, mtime and mode (another bwrap, an upgrade,
//     a setuid bit added or removed);
//   - the kernel release and build (uname);
//   - the real and effective uid and gid, the effective capabilities,
//     no_new_privs and the seccomp mode (root or not, already confined);
//   - the user, mount and PID namespaces we run in (another container, a
//     nested sandbox);
//   - the sysctls kernel.unprivileged_userns_clone, user.max_user_namespaces,
//     kernel.apparmor_restrict_unprivileged_userns and
//     kernel.apparmor_restrict_unprivileged_unconfined;
//   - AppArmor's policy revision and the mtime of /etc/apparmor.d (a bwrap
//     profile installed or removed).
//
// A change in any of them re-probes. The cache only ever picks a backend: a
// stale "works" makes bwrap fail at start (an error, never an unconfined
// run, and the entry is forgotten then) and a stale "does not work" picks
// Landlock, which `plan` shows; so a wrong entry costs convenience, not
// confinement. Entries expire after a day anyway.
func CheckBwrap(path string) BwrapStatus {
	key := cacheKey(path)
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
	if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// probe starts the trivial sandbox and returns why it failed, "" when it
// worked.
func probe(path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, ProbeArgs...)
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

// fixFor is the fix for a probe failure, by bwrap's message.
func fixFor(msg string) string {
	switch {
	case strings.Contains(msg, "uid map") || strings.Contains(msg, "RTM_NEWADDR") || strings.Contains(msg, "Permission denied"):
		return "unprivileged user namespaces are restricted; on Ubuntu 23.10+/24.04 AppArmor does this: " +
			"add an AppArmor profile that grants bwrap `userns` (agentbox doctor prints it), or " +
			"sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0 (weaker: for every program)"
	case strings.Contains(msg, "No permissions to create") || strings.Contains(msg, "Operation not permitted"):
		return "user namespaces are disabled here (a container, or sysctl user.max_user_namespaces=0): " +
			"enable them, or let agentbox use its Landlock backend (--backend landlock; auto picks it)"
	case strings.Contains(msg, "Can't mount proc"):
		return "/proc cannot be mounted here (a container with a masked /proc): give the container an unmasked /proc " +
			"(Kubernetes: spec.hostUsers: false and securityContext.procMount: Unmasked; Docker: --security-opt systempaths=unconfined), or let agentbox use its Landlock backend (--backend landlock)"
	}
	return "run `agentbox doctor` to see what this machine can enforce"
}

type cacheEntry struct {
	Key    string    `json:"key"`
	Works  bool      `json:"works"`
	Reason string    `json:"reason,omitempty"`
	Probed time.Time `json:"probed"`
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
	return filepath.Join(dir, "agentbox", "bwrap-probe.json")
}

func readCache() (cacheEntry, bool) {
	var e cacheEntry
	f := cacheFile()
	if f == "" {
		return e, false
	}
	b, err := os.ReadFile(f)
	if err != nil || json.Unmarshal(b, &e) != nil {
		return e, false
	}
	return e, true
}

// writeCache stores the answer for bin; it is best effort (a read-only home
// only costs a probe per run). The file is written beside and renamed, so a
// concurrent run never reads half of it.
func writeCache(bin string, works bool, reason string) {
	f := cacheFile()
	if f == "" {
		return
	}
	b, err := json.Marshal(cacheEntry{Key: cacheKey(bin), Works: works, Reason: reason, Probed: time.Now()})
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(f), ".bwrap-probe-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), f) != nil {
		os.Remove(tmp.Name())
	}
}

// cacheKey hashes everything CheckBwrap's answer depends on.
func cacheKey(bin string) string {
	sum := sha256.Sum256([]byte(cacheKeyText(bin)))
	return hex.EncodeToString(sum[:])
}

func readSysctl(name string) (string, bool) {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func cacheKeyText(bin string) string {
	var b strings.Builder
	line := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	line("format", 1)
	line("bwrap", bin)
	var st unix.Stat_t
	if unix.Stat(bin, &st) == nil {
		line("bwrap.stat", fmt.Sprintf("%d:%d:%d:%d.%d:%o:%d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Mode, st.Uid))
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		line("kernel", unix.ByteSliceToString(u.Release[:])+" "+unix.ByteSliceToString(u.Version[:]))
	}
	line("ids", fmt.Sprintf("%d:%d:%d:%d", os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid()))
	for _, ns := range []string{"user", "mnt", "pid"} {
		v, _ := os.Readlink("/proc/self/ns/" + ns)
		line("ns."+ns, v)
	}
	if s, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(s), "\n") {
			if strings.HasPrefix(l, "CapEff:") || strings.HasPrefix(l, "NoNewPrivs:") || strings.HasPrefix(l, "Seccomp:") {
				line("status", strings.Join(strings.Fields(l), " "))
			}
		}
	}
	for _, name := range []string{"kernel.unprivileged_userns_clone", "user.max_user_namespaces", "kernel.apparmor_restrict_unprivileged_userns", "kernel.apparmor_restrict_unprivileged_unconfined"} {
		v, ok := readSysctl(name)
		if !ok {
			v = "-"
		}
		line(name, v)
	}
	rev, err := os.ReadFile("/sys/kernel/security/apparmor/revision")
	if err != nil {
		rev = []byte("-")
	}
	line("apparmor.revision", strings.TrimSpace(string(rev)))
	if unix.Stat("/etc/apparmor.d", &st) == nil {
		line("apparmor.d", fmt.Sprintf("%d.%d", st.Mtim.Sec, st.Mtim.Nsec))
	}
	return b.String()
}
