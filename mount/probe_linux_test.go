package mount

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// isolate gives the test its own probe cache.
func isolate(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	return dir
}

// fakeBwrap puts a script named bwrap first in PATH.
func fakeBwrap(t *testing.T, script string) string {
	dir := t.TempDir()
	p := filepath.Join(dir, "bwrap")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	return p
}

// TestCacheInvalidation: the fast probe answers from the cache until
// something in its key changes, here the bwrap executable.
func TestCacheInvalidation(t *testing.T) {
	isolate(t)
	bin := fakeBwrap(t, "exit 0")
	if s := CheckBwrap(bin); !s.Works || s.Cached {
		t.Fatalf("first call: %+v, want a real probe that works", s)
	}
	if s := CheckBwrap(bin); !s.Works || !s.Cached {
		t.Fatalf("second call: %+v, want the cached answer", s)
	}
	// An "upgrade" that breaks bwrap: new size and mtime.
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := CheckBwrap(bin)
	if s.Works || s.Cached || !strings.Contains(s.Reason, "uid map") {
		t.Fatalf("after changing bwrap: %+v, want a fresh probe that fails", s)
	}
	if err := Forget(); err != nil {
		t.Fatal(err)
	}
	if s := CheckBwrap(bin); s.Cached {
		t.Errorf("after Forget: %+v, want a fresh probe", s)
	}
}

// TestFastProbeTiming: after one real probe every answer comes from the
// cache; the log line says what each costs here (measured, not asserted: the
// machines are shared).
func TestFastProbeTiming(t *testing.T) {
	isolate(t)
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not installed") // measured only, nothing asserted that needs it
	}
	start := time.Now()
	cold := CheckBwrap(bin)
	coldTime := time.Since(start)
	const n = 200
	start = time.Now()
	for range n {
		if s := CheckBwrap(bin); !s.Cached {
			t.Fatalf("not cached: %+v", s)
		}
	}
	cached := time.Since(start) / n
	t.Logf("uid %d: cold probe %v (works=%v), cached %v per call", os.Getuid(), coldTime, cold.Works, cached)
}

func BenchmarkCheckBwrapCached(b *testing.B) {
	b.Setenv("XDG_CACHE_HOME", b.TempDir())
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap is not installed")
	}
	CheckBwrap(bin)
	for b.Loop() {
		CheckBwrap(bin)
	}
}

// TestCacheKeyChange: an entry made under another kernel (or anything else
// in the key) is not taken, nor is a file that is not a cache entry; the
// key names every part it is made of.
func TestCacheKeyChange(t *testing.T) {
	isolate(t)
	bin := fakeBwrap(t, "exit 0")
	if s := CheckBwrap(bin); s.Cached {
		t.Fatalf("first call: %+v, want a real probe", s)
	}
	key := cacheKeyText(bin)
	for _, part := range []string{"bwrap.stat=", "kernel=", "ids=", "ns.user=", "cap.eff=", "no_new_privs=", "seccomp=", "user.max_user_namespaces=", "kernel.apparmor_restrict_unprivileged_userns=", "ns.mnt=", "uid_map=", "gid_map=", "lsm="} {
		if !strings.Contains(key, "\n"+part) {
			t.Errorf("the key has no %q line:\n%s", part, key)
		}
	}
	f := cacheFile()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for name, changed := range map[string]string{
		"another kernel": strings.Replace(string(data), "\nkernel=", "\nkernel=9.9.9 ", 1),
		"not an entry":   "{}",
		"cut short":      string(data[:len(cacheMagic)+5]),
	} {
		if changed == string(data) {
			t.Fatalf("%s: the test did not change the file", name)
		}
		if err := os.WriteFile(f, []byte(changed), 0o600); err != nil {
			t.Fatal(err)
		}
		if s := CheckBwrap(bin); s.Cached {
			t.Errorf("%s: %+v, want a fresh probe", name, s)
		}
	}
	if s := CheckBwrap(bin); !s.Cached {
		t.Errorf("after the fresh probe: %+v, want the cached answer", s)
	}
}

// The probe's arguments keep ProbeArgs' order (callers and tests tell a
// probe from a box by its first word), and a user's probe asks, before
// "--", for the capabilities a box keeps for its init (a setuid-root bwrap
// refuses them: the probe must fail where a box would).
func TestBoxProbeArgs(t *testing.T) {
	got := BoxProbeArgs()
	if got[0] != ProbeArgs[0] || strings.Join(got[len(got)-2:], " ") != "-- true" {
		t.Fatalf("BoxProbeArgs() = %q: not ProbeArgs' first word and last two", got)
	}
	caps := strings.Contains(strings.Join(got, " "), "--cap-add CAP_SYS_ADMIN --cap-add CAP_SETPCAP --")
	if want := os.Geteuid() != 0; caps != want {
		t.Errorf("BoxProbeArgs() = %q: asks for the init's capabilities %v, want %v", got, caps, want)
	}
}
