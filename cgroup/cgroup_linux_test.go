//go:build linux

package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/proctest"
)

// Enter moves the calling process into the new cgroup, so each real test
// runs in a child: the test binary again, with helperEnv naming what to do.
// Its report is "key: value" lines on stdout.
const helperEnv = "AGENTBOX_CGROUP_TEST_HELPER"

func TestMain(m *testing.M) {
	proctest.DefaultSignals()
	if h := os.Getenv(helperEnv); h != "" {
		helpers[h](os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var helpers = map[string]func(w io.Writer){
	"pids":        helpPids,
	"memory":      helpMemory,
	"rollback":    helpRollback,
	"unavailable": helpUnavailable,
	"v2":          helpV2,
}

func helperName() string { return fmt.Sprintf("agentbox-test-%d", os.Getpid()) }

func report(w io.Writer, g *Group) {
	fmt.Fprintf(w, "describe: %s\n", g.Describe())
	fmt.Fprintf(w, "overhead: %d\n", g.Overhead)
	for _, p := range g.parts {
		fmt.Fprintf(w, "dir: %s\n", p.dir)
	}
}

func ownCgroup() string {
	b, _ := os.ReadFile("/proc/self/cgroup")
	return string(b)
}

// helpPids forks 100 sleeping children under pids.max=40, the way a fork
// bomb would, with the caller released once the forking program runs.
func helpPids(w io.Writer) {
	before := ownCgroup()
	g, err := Enter(helperName(), Limits{Pids: 40})
	if err != nil {
		fmt.Fprintf(w, "error: %v\n", err)
		return
	}
	report(w, g)
	var out, errb bytes.Buffer
	// Each child lives longer than the loop, so no slot frees up while it
	// runs, and a refused fork is not retried (bash retries a fork for
	// up to half a minute, and on a loaded machine its earlier children
	// have exited by then): every fork that worked is counted once.
	cmd := exec.Command("python3", "-c", `import os, time
for i in range(100):
    try:
        if os.fork() == 0:
            null = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            time.sleep(30)
            os._exit(0)
        print("started", flush=True)
    except OSError as e:
        print("refused", e.errno, flush=True)
`)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(w, "error: %v\n", err)
	}
	if err := g.Release(); err != nil {
		fmt.Fprintf(w, "error: release: %v\n", err)
	}
	fmt.Fprintf(w, "released: %t\n", ownCgroup() == before)
	cmd.Wait()
	fmt.Fprintf(w, "started: %d\n", strings.Count(out.String(), "started"))
	fmt.Fprintf(w, "stderr: %s\n", strings.Join(strings.Fields(errb.String()), " "))
	// pids.events counts the forks the limit refused (v1 since 4.3, v2).
	for _, p := range g.parts {
		if b, err := os.ReadFile(filepath.Join(p.dir, "pids.events")); err == nil {
			fmt.Fprintf(w, "pids.events: %s\n", strings.TrimSpace(string(b)))
		}
	}
	if err := g.Close(); err != nil {
		fmt.Fprintf(w, "error: close: %v\n", err)
	}
	if err := g.Close(); err != nil {
		fmt.Fprintf(w, "error: second close: %v\n", err)
	}
	fmt.Fprintf(w, "back: %t\n", ownCgroup() == before)
}

// helpMemory allocates 256 MiB under a 64 MiB limit, with the caller
// still inside, and closes while the hog's corpse may still be going.
func helpMemory(w io.Writer) {
	before := ownCgroup()
	g, err := Enter(helperName(), Limits{Memory: 64 << 20})
	if err != nil {
		fmt.Fprintf(w, "error: %v\n", err)
		return
	}
	report(w, g)
	var errb bytes.Buffer
	cmd := exec.Command("/usr/bin/python3", "-c", "bytearray(256<<20)")
	cmd.Stderr = &errb
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		fmt.Fprintf(w, "result: allocated\n")
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		fmt.Fprintf(w, "result: killed\n")
	case strings.Contains(errb.String(), "MemoryError"):
		fmt.Fprintf(w, "result: MemoryError\n")
	default:
		fmt.Fprintf(w, "result: %v %q\n", err, errb.String())
	}
	if err := g.Close(); err != nil {
		fmt.Fprintf(w, "error: close: %v\n", err)
	}
	fmt.Fprintf(w, "back: %t\n", ownCgroup() == before)
}

// helpRollback makes Enter fail half way, on the second hierarchy, and
// reports whether anything was left.
func helpRollback(w io.Writer) {
	before := ownCgroup()
	name := helperName()
	hs, err := load()
	if err != nil {
		fmt.Fprintf(w, "error: %v\n", err)
		return
	}
	var dirs []string
	for _, c := range []string{"pids", "memory"} {
		h, _ := locate(hs, c)
		base, err := pick(h, c)
		if err != nil {
			fmt.Fprintf(w, "error: %v\n", err)
			return
		}
		dirs = append(dirs, filepath.Join(base, name))
	}
	if dirs[0] == dirs[1] {
		fmt.Fprintf(w, "error: pids and memory share a hierarchy; nothing to fail half way\n")
		return
	}
	if err := os.Mkdir(dirs[1], 0o755); err != nil {
		fmt.Fprintf(w, "error: %v\n", err)
		return
	}
	defer os.Remove(dirs[1])
	_, err = Enter(name, Limits{Pids: 40, Memory: 64 << 20})
	fmt.Fprintf(w, "enter: %v\n", err)
	fmt.Fprintf(w, "exist error: %t\n", errors.Is(err, fs.ErrExist))
	fmt.Fprintf(w, "dir: %s\n", dirs[0])
	fmt.Fprintf(w, "back: %t\n", ownCgroup() == before)
}

// helpUnavailable checks that Enter fails cleanly for every controller
// Probe says is unavailable.
func helpUnavailable(w io.Writer) {
	a := Probe()
	fmt.Fprintf(w, "probe: %s\n", strings.ReplaceAll(a.String(), "\n", " | "))
	name := helperName()
	for _, tc := range []struct {
		c Controller
		l Limits
	}{{a.Pids, Limits{Pids: 40}}, {a.Memory, Limits{Memory: 64 << 20}}} {
		if tc.c.OK {
			continue
		}
		g, err := Enter(name, tc.l)
		fmt.Fprintf(w, "enter: %v\n", err)
		if err == nil {
			g.Close()
			fmt.Fprintf(w, "FAIL: Enter(%+v) succeeded where Probe said %s\n", tc.l, tc.c.Reason)
		} else if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tc.c.Reason) {
			fmt.Fprintf(w, "FAIL: Enter(%+v) = %v, want ErrUnavailable with %q\n", tc.l, err, tc.c.Reason)
		}
	}
	hs, _ := load()
	for _, h := range hs {
		if h.Dir == "" {
			continue
		}
		for _, d := range []string{filepath.Join(h.Dir, name), filepath.Join(filepath.Dir(h.Dir), name)} {
			if _, err := os.Stat(d); err == nil {
				fmt.Fprintf(w, "FAIL: %s exists\n", d)
			}
		}
	}
}

// runHelper runs the helper named h in a child and returns its report.
func runHelper(t *testing.T, h string, wrap ...string) map[string][]string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append(wrap, exe)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"="+h)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := proctest.Run(t, cmd, 5*time.Minute); err != nil {
		t.Fatalf("helper %s: %v\n%s", h, err, out.String())
	}
	t.Logf("helper %s:\n%s", h, out.String())
	r := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			r[k] = append(r[k], v)
		}
	}
	for _, e := range append(r["error"], r["FAIL"]...) {
		t.Error(e)
	}
	return r
}

// skipUnless skips t with why unless ok, or fails it when
// AGENTBOX_MUST_WORK=1 (as CI sets it) forbids skipping.
//
// Creating a cgroup here needs root (nothing is delegated to ordinary
// users): as an ordinary user the test skips with the reason even under
// AGENTBOX_MUST_WORK, because scripts/test.sh runs it as root in the same CI
// run, and TestUnavailable checks what an ordinary user gets.
func skipUnless(t *testing.T, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("skipped as uid %d: %s (runs in the root pass)", os.Geteuid(), why)
	}
	if os.Getenv("AGENTBOX_MUST_WORK") == "1" {
		t.Fatalf("cannot run: %s (AGENTBOX_MUST_WORK=1 forbids skipping)", why)
	}
	t.Skip(why)
}

func assertGone(t *testing.T, dirs []string) {
	t.Helper()
	if len(dirs) == 0 {
		t.Error("helper reported no cgroup directories")
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there after Close (stat: %v)", d, err)
			os.Remove(d)
		}
	}
}

func TestPidsLimit(t *testing.T) {
	a := Probe()
	skipUnless(t, a.Pids.OK, "pids: "+a.Pids.Reason)
	done := make(chan map[string][]string)
	go func() { done <- runHelper(t, "pids") }()
	// The host stays usable while the box is at its limit.
	time.Sleep(time.Second)
	for i := 0; i < 3; i++ {
		start := time.Now()
		if err := exec.Command("true").Run(); err != nil {
			t.Errorf("host: true: %v", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("host: true took %v", d)
		}
	}
	r := <-done
	if len(r["started"]) != 1 {
		t.Fatalf("no count of started jobs")
	}
	if n, err := strconv.Atoi(r["started"][0]); err != nil || n >= 40 {
		t.Errorf("%s of 100 background jobs started under pids.max=40, want fewer than 40", r["started"][0])
	}
	for _, e := range r["pids.events"] {
		if e == "max 0" {
			t.Errorf("pids.events: %s, want forks refused", e)
		}
	}
	if fmt.Sprint(r["released"]) != "[true]" || fmt.Sprint(r["back"]) != "[true]" {
		t.Errorf("caller not back in its cgroups: released %v, back %v", r["released"], r["back"])
	}
	assertGone(t, r["dir"])
}

func TestMemoryLimit(t *testing.T) {
	a := Probe()
	skipUnless(t, a.Memory.OK, "memory: "+a.Memory.Reason)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		skipUnless(t, false, "no /usr/bin/python3 to allocate memory with")
	}
	r := runHelper(t, "memory")
	if got := fmt.Sprint(r["result"]); got != "[killed]" && got != "[MemoryError]" {
		t.Errorf("256 MiB under a 64 MiB limit: %s, want killed or MemoryError", got)
	}
	if fmt.Sprint(r["back"]) != "[true]" {
		t.Errorf("caller not back in its cgroups")
	}
	assertGone(t, r["dir"])
}

func TestEnterRollsBack(t *testing.T) {
	a := Probe()
	skipUnless(t, a.Pids.OK && a.Memory.OK, "pids: "+a.Pids.String()+"; memory: "+a.Memory.String())
	if a.Pids.Version == 2 && a.Memory.Version == 2 {
		t.Skip("pids and memory share the unified hierarchy; nothing to fail half way")
	}
	r := runHelper(t, "rollback")
	if fmt.Sprint(r["exist error"]) != "[true]" {
		t.Errorf("Enter over an existing cgroup: %v, want an fs.ErrExist error", r["enter"])
	}
	if fmt.Sprint(r["back"]) != "[true]" {
		t.Errorf("caller not back in its cgroups after a failed Enter")
	}
	assertGone(t, r["dir"])
}

// TestUnavailable runs as the unprivileged user abtest when run as root.
func TestUnavailable(t *testing.T) {
	var wrap []string
	if os.Geteuid() == 0 {
		// The user scripts/test.sh creates (and names in
		// AGENTBOX_TEST_USER), or one this machine has.
		var u *user.User
		for _, name := range []string{os.Getenv("AGENTBOX_TEST_USER"), "agentbox-test", "abtest"} {
			if found, err := user.Lookup(name); name != "" && err == nil && found.Uid != "0" {
				u = found
				break
			}
		}
		if u == nil {
			skipUnless(t, false, "no unprivileged user to run as (scripts/test.sh creates agentbox-test)")
		}
		// abtest must be able to run the test binary.
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		exe, _ := os.Executable()
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		copyExe := filepath.Join(dir, "cgroup.test")
		if err := os.WriteFile(copyExe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		wrap = []string{"setpriv", "--reuid=" + u.Uid, "--regid=" + u.Gid, "--init-groups", copyExe}
		runHelper(t, "unavailable", wrap...)
		return
	}
	a := Probe()
	skipUnless(t, !a.Pids.OK || !a.Memory.OK, "everything is available to uid "+strconv.Itoa(os.Geteuid()))
	runHelper(t, "unavailable")
}

// helpV2 exercises the cgroup v2 placement rules with a controller the
// unified hierarchy of a hybrid machine has (hugetlb; pids and memory are
// bound to v1 there). It sets no limit: it is about where the cgroup goes.
func helpV2(w io.Writer) {
	const c = "hugetlb"
	hs, _ := load()
	h, err := locate(hs, c)
	if err != nil || h.Version != 2 || !h.IsRoot() {
		fmt.Fprintf(w, "skip: no v2 root cgroup with %s here (%v)\n", c, err)
		return
	}
	root := h.Dir
	pid := strconv.Itoa(os.Getpid())
	name := helperName()
	x := filepath.Join(root, name+".x") // a non-root cgroup to start from
	if err := os.Mkdir(x, 0o755); err != nil {
		fmt.Fprintf(w, "error: %v\n", err)
		return
	}
	defer os.Remove(x)
	sub, _ := readFields(root, "cgroup.subtree_control")
	if !contains(sub, c) {
		defer write(root, "cgroup.subtree_control", "-"+c)
	}
	defer write(root, "cgroup.procs", pid)
	check := func(what string, ok bool) {
		if !ok {
			fmt.Fprintf(w, "FAIL: %s\n", what)
		}
	}
	exists := func(d string) bool { _, err := os.Stat(d); return err == nil }
	own := func() string { return strings.TrimSpace(ownCgroup()[strings.LastIndex(ownCgroup(), "0::"):]) }

	// In a non-root cgroup whose parent does not delegate c: unavailable.
	write(root, "cgroup.subtree_control", "-"+c)
	if err := write(x, "cgroup.procs", pid); err != nil {
		fmt.Fprintf(w, "error: %v\n", err)
		return
	}
	_, err = enter(name, Limits{}, []string{c})
	fmt.Fprintf(w, "undelegated: %v\n", err)
	check("undelegated: ErrUnavailable", errors.Is(err, ErrUnavailable))

	// In the root cgroup: a child of it, c enabled there.
	write(root, "cgroup.procs", pid)
	g, err := enter(name, Limits{}, []string{c})
	if err != nil {
		fmt.Fprintf(w, "error: root: %v\n", err)
		return
	}
	fmt.Fprintf(w, "root: %s, caller in %s\n", g.Describe(), own())
	check("root: child of the root", g.parts[0].dir == filepath.Join(root, name))
	check("root: Close", g.Close() == nil && !exists(g.parts[0].dir) && own() == "0::/")

	// Alone in x: x gets c enabled and the run's cgroup as a child; the
	// caller waits in a leaf after Release, and x is as before after Close.
	write(x, "cgroup.procs", pid)
	g, err = enter(name, Limits{}, []string{c})
	if err != nil {
		fmt.Fprintf(w, "error: alone: %v\n", err)
		return
	}
	sub, _ = readFields(x, "cgroup.subtree_control")
	fmt.Fprintf(w, "alone: %s, %s subtree_control %q\n", g.Describe(), x, sub)
	check("alone: child of x", g.parts[0].dir == filepath.Join(x, name) && contains(sub, c))
	check("alone: Release", g.Release() == nil && own() == "0::/"+name+".x/"+name+".caller")
	p := *g.parts[0]
	check("alone: Close", g.Close() == nil && !exists(p.dir) && !exists(p.leaf) && own() == "0::/"+name+".x")
	sub, _ = readFields(x, "cgroup.subtree_control")
	check("alone: c disabled again in x", !contains(sub, c))

	// Sharing x with another process: the run's cgroup goes beside x.
	other := exec.Command("sleep", "30")
	other.Start()
	defer other.Process.Kill()
	write(x, "cgroup.procs", strconv.Itoa(other.Process.Pid))
	g, err = enter(name, Limits{}, []string{c})
	if err != nil {
		fmt.Fprintf(w, "error: shared: %v\n", err)
		return
	}
	fmt.Fprintf(w, "shared: %s, caller in %s\n", g.Describe(), own())
	check("shared: beside x", g.parts[0].dir == filepath.Join(root, name))
	check("shared: Close", g.Close() == nil && !exists(g.parts[0].dir) && own() == "0::/"+name+".x")
	sub, _ = readFields(x, "cgroup.subtree_control")
	check("shared: x untouched", len(sub) == 0)
	other.Process.Kill()
	other.Wait()
}

func TestV2Placement(t *testing.T) {
	skipUnless(t, os.Geteuid() == 0, "needs root to make cgroups in the unified hierarchy")
	r := runHelper(t, "v2")
	if len(r["skip"]) > 0 {
		t.Skip(r["skip"][0])
	}
}
