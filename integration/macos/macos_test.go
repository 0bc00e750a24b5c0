//go:build darwin

// Package macos holds the integration tests of the Seatbelt backend: they
// start the real agentbox binary (AGENTBOX_BIN) around real commands on a
// Mac and assert what macOS did. They run in .github/workflows/macos.yml;
// nothing here runs on Linux.
package macos

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var bin string

func TestMain(m *testing.M) {
	bin = os.Getenv("AGENTBOX_BIN")
	if bin == "" {
		os.Stderr.WriteString("AGENTBOX_BIN names the agentbox binary under test\n")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// world is a home with a key and a git project, outside every temporary
// folder the box may write.
type world struct{ home, proj string }

func newWorld(t *testing.T) world {
	t.Helper()
	base, err := os.MkdirTemp(os.Getenv("HOME"), "agentbox-macos-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	base, _ = filepath.EvalSymlinks(base)
	w := world{home: filepath.Join(base, "home"), proj: filepath.Join(base, "home", "proj")}
	for _, d := range []string{w.proj, filepath.Join(w.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.home, ".ssh", "id_test"), []byte("PRIVATE KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.git(t, "init", "-q")
	w.git(t, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "init")
	return w
}

func (w world) git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = w.proj
	cmd.Env = append(os.Environ(), "HOME="+w.home, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// run runs agentbox run ARGS in the project, with a bound on its time.
func (w world) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"run"}, args...)...)
	cmd.Dir = w.proj
	cmd.Env = append(os.Environ(), "HOME="+w.home, "XDG_STATE_HOME="+filepath.Join(w.home, ".local/state"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentbox run: %v", err)
	}
	return out.String(), code
}

// TestWritesStayInRoots: the box writes its project and nothing outside.
func TestWritesStayInRoots(t *testing.T) {
	w := newWorld(t)
	out, code := w.run(t, "--", "sh", "-c", `echo in > inside.txt; echo out > "$HOME/outside.txt"; echo etc > /private/etc/agentbox-test; true`)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(w.proj, "inside.txt")); err != nil {
		t.Errorf("the box could not write its project: %v\n%s", err, out)
	}
	for _, p := range []string{filepath.Join(w.home, "outside.txt"), "/private/etc/agentbox-test"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the box wrote %s outside its roots", p)
		}
	}
}

// TestKeysUnreadable: a private SSH key is hidden from the box.
func TestKeysUnreadable(t *testing.T) {
	w := newWorld(t)
	out, _ := w.run(t, "--", "sh", "-c", `cat "$HOME/.ssh/id_test" && echo READ`)
	if strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, "READ") {
		t.Errorf("the box read the private key:\n%s", out)
	}
}

// TestNoPlantedHook: the box cannot plant a hook or a config that host
// git obeys; the host's next commit runs nothing the box wrote.
func TestNoPlantedHook(t *testing.T) {
	w := newWorld(t)
	marker := filepath.Join(w.home, "hook-ran")
	script := "#!/bin/sh\ntouch " + marker + "\n"
	w.run(t, "--", "sh", "-c", `printf '%s' "$1" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; `+
		`git config core.hooksPath hooks; mkdir -p hooks; printf '%s' "$1" > hooks/pre-commit; chmod +x hooks/pre-commit; `+
		`git config core.fsmonitor "touch `+marker+`"; true`, "sh", script)
	w.git(t, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "after")
	w.git(t, "status")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("host git ran what the box planted")
	}
}

// TestNetworkNone: with --network none the box reaches no listener of the
// host, on IPv4 or IPv6 loopback.
func TestNetworkNone(t *testing.T) {
	w := newWorld(t)
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v (not tested)", addr, err)
			continue
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("HELLO\n"))
				c.Close()
			}
		}()
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		out, _ := w.run(t, "--network", "none", "--", "sh", "-c", "nc -w 3 "+host+" "+port+" </dev/null; curl -s --max-time 3 http://"+ln.Addr().String()+"/ ; true")
		ln.Close()
		if strings.Contains(out, "HELLO") {
			t.Errorf("--network none reached %s:\n%s", ln.Addr(), out)
		}
	}
}

// TestPlanProfile: the profile plan prints is what the run applies, and
// sandbox-exec accepts it.
func TestPlanProfile(t *testing.T) {
	w := newWorld(t)
	cmd := exec.Command(bin, "plan", "--profile", "--", "true")
	cmd.Dir = w.proj
	cmd.Env = append(os.Environ(), "HOME="+w.home)
	prof, err := cmd.Output()
	if err != nil {
		t.Fatalf("plan --profile: %v", err)
	}
	check := exec.Command("/usr/bin/sandbox-exec", "-p", string(prof), "-D", "PROXY_PORT=1", "/usr/bin/true")
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("sandbox-exec refused the profile: %v\n%s", err, out)
	}
}
