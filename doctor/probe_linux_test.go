package doctor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/proctest"
)

// These tests probe the real machine. AGENTBOX_DOCTOR_HELPER names a
// prebuilt testdata/probecmd (to run the test binary as another user without
// a Go toolchain); AGENTBOX_MUST_WORK=1 (as CI sets it) turns skips into failures.

var helperPath string

func TestMain(m *testing.M) {
	proctest.DefaultSignals()
	code := func() int {
		if p := os.Getenv("AGENTBOX_DOCTOR_HELPER"); p != "" {
			helperPath = p
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "probecmd-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		os.Chmod(dir, 0o755)
		helperPath = filepath.Join(dir, "probecmd")
		if out, err := exec.Command("go", "build", "-mod=readonly", "-buildvcs=false", "-o", helperPath, "./testdata/probecmd").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building the helper: %v\n%s", err, out)
			helperPath = ""
		}
		return m.Run()
	}()
	os.Exit(code)
}

func skipUnless(t *testing.T, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("AGENTBOX_MUST_WORK") == "1" {
		t.Fatalf("cannot run: %s (AGENTBOX_MUST_WORK=1 forbids skipping)", why)
	}
	t.Skip(why)
}

// backends are the Linux backends, as agentbox has them.
func backends() []backend.Backend { return []backend.Backend{mount.New(), landlock.New()} }

// isolate gives the test its own probe cache.
func isolate(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	return dir
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// TestReportJSONShape pins the field names of `agentbox doctor --json`.
func TestReportJSONShape(t *testing.T) {
	isolate(t)
	b, err := json.Marshal(Probe(backends()))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	want := []string{"apparmor", "auto", "bwrap", "cgroup", "container", "kernel", "landlock", "os", "problems", "proc", "schema", "seccomp", "uid", "user_namespaces"}
	if diff := cmp.Diff(want, keys(top)); diff != "" {
		t.Errorf("top-level keys (-want +got):\n%s", diff)
	}
	for section, fields := range map[string][]string{
		"bwrap":           {"path", "works", "network_none_works"},
		"user_namespaces": {"sysctls", "works"},
		"apparmor":        {"enabled"},
		"landlock":        {"abi"},
		"seccomp":         {"available"},
		"cgroup":          {"v2", "layout", "delegated", "pids", "memory"},
		"container":       {"detected"},
		"auto":            {"backend", "reason"},
	} {
		m, ok := top[section].(map[string]any)
		if !ok {
			t.Errorf("%s is not an object", section)
			continue
		}
		for _, f := range fields {
			if _, ok := m[f]; !ok {
				t.Errorf("%s.%s missing from %v", section, f, keys(m))
			}
		}
	}
}

// TestProbeThisMachine: bwrap works here, for root and for an ordinary user
// (run the test binary as both).
func TestProbeThisMachine(t *testing.T) {
	isolate(t)
	_, err := exec.LookPath("bwrap")
	skipUnless(t, err == nil, "bwrap is not installed")
	r := Probe(backends())
	if !r.Bwrap.Works || r.Auto.Backend != "bwrap" {
		t.Fatalf("uid %d: bwrap works = %v (%s), auto = %+v", os.Getuid(), r.Bwrap.Works, r.Bwrap.Error, r.Auto)
	}
	if !strings.HasPrefix(r.Bwrap.Version, "bubblewrap ") {
		t.Errorf("version %q", r.Bwrap.Version)
	}
	if s := mount.CheckBwrap(r.Bwrap.Path); !s.Works {
		t.Errorf("CheckBwrap = %+v", s)
	}
	if r.Landlock.ABI < 1 {
		t.Errorf("no landlock ABI: %s", r.Landlock.Error)
	}
	if !r.Seccomp.Available {
		t.Errorf("seccomp: %s", r.Seccomp.Error)
	}
}

// TestNoBwrapInPath: without bwrap, auto falls back to Landlock and the
// report says how to install bwrap.
func TestNoBwrapInPath(t *testing.T) {
	isolate(t)
	t.Setenv("PATH", t.TempDir())
	r := Probe(backends())
	if r.Bwrap.Path != "" || r.Bwrap.Works {
		t.Fatalf("bwrap found in an empty PATH: %+v", r.Bwrap)
	}
	if r.Landlock.ABI >= 1 && r.Auto.Backend != "landlock" {
		t.Errorf("auto = %+v, want landlock", r.Auto)
	}
	if len(r.Problems) == 0 || !strings.Contains(r.Problems[0].Fix, "install bubblewrap") {
		t.Errorf("problems = %+v, want an install fix first", r.Problems)
	}
	if err := mount.New().Available(); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("bwrap Available = %v, want not installed", err)
	}
}

// TestUserNamespacesDenied denies user namespaces for real, without touching
// the host's sysctls: the test starts a shell in a new user namespace, sets
// user.max_user_namespaces=0 there (the user.* sysctls belong to each user
// namespace; the host's value stays as it was), then asks the probe as an
// ordinary user before and after. The probe must re-probe when the sysctl
// changes, report bwrap unusable with bwrap's reason, and pick Landlock.
//
// Run as root, the namespace maps root and an ordinary user (see
// ordinaryUser), and the probe runs as that user (and once as root, which needs no user namespace, so bwrap
// still works for it). Run as an ordinary user, the namespace maps only that
// user, who keeps CAP_SYS_RESOURCE there just long enough to set the sysctl.
func TestUserNamespacesDenied(t *testing.T) {
	skipUnless(t, helperPath != "", "the probecmd helper could not be built")
	_, err := exec.LookPath("bwrap")
	skipUnless(t, err == nil, "bwrap is not installed")
	setpriv, err := exec.LookPath("setpriv")
	skipUnless(t, err == nil, "setpriv is not installed")

	// Not t.TempDir: its parent is 0700, closed to the ordinary user.
	dir, err := os.MkdirTemp("", "doctor-userns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	var as, asRoot string
	if root {
		u := ordinaryUser()
		skipUnless(t, u != nil, "no ordinary user to map (abtest, agentbox-test, nobody)")
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: gid, HostID: gid, Size: 1}}
		// setpriv --clear-groups calls setgroups(2), which a mapped root may do.
		attr.GidMappingsEnableSetgroups = true
		as = fmt.Sprintf("%s --reuid=%d --regid=%d --clear-groups", setpriv, uid, gid)
		asRoot = fmt.Sprintf("XDG_CACHE_HOME=%s/rootcache %s report > %s/root.json", dir, helperPath, dir)
	} else {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		// Writing a user.* sysctl of our own namespace needs
		// CAP_SYS_RESOURCE in it; the probe runs without it (bwrap refuses
		// to start with capabilities it was not given by setuid).
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_RESOURCE}
		as = setpriv + " --inh-caps=-all --ambient-caps=-all"
	}
	script := fmt.Sprintf(`set -e
export XDG_CACHE_HOME=%[1]s/cache HOME=%[1]s
%[2]s %[3]s fast > %[1]s/before.json
echo 0 > /proc/sys/user/max_user_namespaces
%[2]s %[3]s fast > %[1]s/after.json
%[2]s %[3]s fast > %[1]s/again.json
%[2]s %[3]s report > %[1]s/report.json
%[4]s
`, dir, as, helperPath, asRoot)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = attr
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	runErr := proctest.Run(t, cmd, 2*time.Minute)
	out := buf.Bytes()
	skipUnless(t, runErr == nil, fmt.Sprintf("cannot set up the user namespace: %v: %s", runErr, out))

	read := func(name string, v any) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v: %s", name, err, b)
		}
	}
	var before, after, again mount.BwrapStatus
	read("before.json", &before)
	read("after.json", &after)
	read("again.json", &again)
	if !before.Works || before.Cached {
		t.Errorf("before: %+v, want a fresh probe that works", before)
	}
	if after.Works || after.Cached || after.Reason == "" {
		t.Errorf("after max_user_namespaces=0: %+v, want a fresh probe that fails with bwrap's reason", after)
	}
	if again.Works || !again.Cached {
		t.Errorf("asked again: %+v, want the cached failure", again)
	}
	var r Report
	read("report.json", &r)
	t.Logf("as uid %d: bwrap: %s; user ns: %s; auto: %s", uid, r.Bwrap.Error, r.UserNS.Error, r.Auto.Backend)
	if r.Bwrap.Works || r.Bwrap.Error == "" || r.UserNS.Works {
		t.Errorf("ordinary user: bwrap %+v, user ns %+v; want both unusable with a reason", r.Bwrap, r.UserNS)
	}
	if r.UserNS.Sysctls[sysctlMaxUserns] != "0" {
		t.Errorf("sysctls = %v, want %s = 0", r.UserNS.Sysctls, sysctlMaxUserns)
	}
	if r.Auto.Backend != "landlock" || len(r.Auto.Passed) == 0 {
		t.Errorf("auto = %+v, want landlock, passing over bwrap", r.Auto)
	}
	if len(r.Problems) == 0 || !strings.Contains(r.Problems[0].Problem, "max_user_namespaces is 0") {
		t.Errorf("problems = %+v, want the sysctl named first", r.Problems)
	}
	if root {
		var rr Report
		read("root.json", &rr)
		// Root creates no user namespace, so the sysctl is not what
		// stops bwrap. But this root is a user namespace's, mapped to
		// the host's root: it owns the host's device nodes, so its box
		// needs nodes of its own, which it may not make (mknod needs
		// CAP_MKNOD in the host's namespace): bwrap is unusable for
		// that, and auto picks Landlock.
		if rr.Bwrap.Works || !strings.Contains(rr.Bwrap.Error, "device nodes") || strings.Contains(rr.Bwrap.Error, "namespaces exceeded") || rr.Auto.Backend != "landlock" {
			t.Errorf("root: bwrap %+v, auto %+v; want bwrap unusable for the box's device nodes (not for the sysctl), and auto landlock", rr.Bwrap, rr.Auto)
		}
	}
	if host, _ := readSysctl(sysctlMaxUserns); host == "0" {
		t.Errorf("the host's %s is 0: the test must not touch it", sysctlMaxUserns)
	}
}

// ordinaryUser is the unprivileged user the root variant maps: the one
// scripts/test.sh creates, the one this machine has, or nobody.
func ordinaryUser() *user.User {
	for _, name := range []string{os.Getenv("AGENTBOX_TEST_USER"), "agentbox-test", "abtest", "nobody"} {
		if name == "" {
			continue
		}
		if u, err := user.Lookup(name); err == nil && u.Uid != "0" {
			return u
		}
	}
	return nil
}
