package doctor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// BwrapStatus is the answer of the fast bwrap probe.
type BwrapStatus struct {
	Works  bool   `json:"works"`
	Reason string `json:"reason,omitempty"` // why it does not work
	Path   string `json:"path,omitempty"`
	Cached bool   `json:"cached"` // answered from the cache, without starting bwrap
}

// cacheTTL bounds how long an answer is trusted even when nothing in its key
// changed, for causes the key cannot see.
const cacheTTL = 24 * time.Hour

// BwrapWorks reports whether bwrap starts a sandbox here and, when it does
// not, why. It is on `agentbox run`'s hot path, so the answer is cached (see
// CheckBwrap).
func BwrapWorks() (bool, string) {
	s := CheckBwrap()
	return s.Works, s.Reason
}

// CheckBwrap is BwrapWorks with the details. The answer is cached in
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
// run) and a stale "does not work" picks Landlock, which `plan` shows; so a
// wrong entry costs convenience, not confinement. Entries expire after a day
// anyway. Call Forget when bwrap failed although the cache said it works.
func CheckBwrap() BwrapStatus {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return BwrapStatus{Reason: "bwrap is not installed (not found in PATH)"}
	}
	key := cacheKey(bin)
	if e, ok := readCache(); ok && e.Key == key && time.Since(e.Probed) < cacheTTL && time.Since(e.Probed) >= 0 {
		return BwrapStatus{Works: e.Works, Reason: e.Reason, Path: bin, Cached: true}
	}
	works, reason := probeBwrap(bin)
	writeCache(bin, works, reason)
	return BwrapStatus{Works: works, Reason: reason, Path: bin}
}

// Forget removes the cached answer.
func Forget() error {
	f := cacheFile()
	if f == "" {
		return nil
	}
	if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
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
	for _, name := range []string{sysctlUsernsClone, sysctlMaxUserns, sysctlAppArmorUsern, "kernel.apparmor_restrict_unprivileged_unconfined"} {
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
