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
