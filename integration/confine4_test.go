//go:build linux

package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// setidFiles are the files under dir that have a setuid or setgid bit.
func setidFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// openat2(2) keeps the mode of a file it creates in struct open_how, which
// a seccomp filter cannot read: the box makes a file with mode 06755
// through it, through O_TMPFILE and a link, and through openat and libc's
// open. openat2 is refused with ENOSYS (what an older kernel answers, so
// libc falls back to openat, which the filter checks), the others refuse
// the mode, and no file in the project has a setuid or setgid bit after
// the run.
func TestOpenat2MakesNoSetuidFile(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		os.Chmod(w.base, 0o755)
		probe := buildC(t, w.base, "testdata/openat2probe.c")
		r := w.run(args([]string{"run"}, be, []string{"--", probe, w.project})...)
		expectCode(t, r, 0)
		got := outcomes(r.stdout)
		for _, name := range []string{"openat2", "openat2-tmp"} {
			if got[name] != "errno=38" {
				t.Errorf("%s in the box: %q, want errno=38 (ENOSYS)", name, got[name])
			}
		}
		for _, name := range []string{"openat", "libc-open"} {
			if got[name] == "ok" {
				t.Errorf("%s with mode 06755 succeeded in the box", name)
			}
		}
		if files := setidFiles(t, w.project); len(files) > 0 {
			t.Errorf("setuid or setgid files outlast the run: %v\n%s", files, r)
		}
	})
}

// With the setuid group reopened by the policy, the box may set the bits
// during the run, but the after-run check takes them off every file the
// run made or changed in the writable roots: none outlasts the run.
func TestSetidBitsClearedAfterRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		os.Chmod(w.base, 0o755)
		probe := buildC(t, w.base, "testdata/openat2probe.c")
		pol := policyFile(t, w, "[seccomp]\nallow = [\"setuid\"]\n")
		mkdir(t, filepath.Join(w.project, "deep", "er"))
		write(t, filepath.Join(w.project, "deep", "old"), "#!/bin/sh\n")
		r := w.run(args([]string{"run", "--policy", pol}, be, []string{"--", "sh", "-c",
			probe + " deep/er && chmod 4755 deep/old && chmod 2755 deep/er/o2-suid && ls -l deep/old deep/er"})...)
		expectCode(t, r, 0)
		expectContains(t, "the box's view", r.stdout, "rws")
		if files := setidFiles(t, w.project); len(files) > 0 {
			t.Errorf("setuid or setgid files outlast the run: %v\n%s", files, r)
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(w.project, "deep", "old"), &st); err != nil || st.Mode&0o777 != 0o755 {
			t.Errorf("deep/old: mode %o (%v), want 755 kept without the setuid bit", st.Mode, err)
		}
	})
}
