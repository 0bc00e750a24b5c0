//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildProbes compiles the seccomp package's C probes into dir.
func buildProbes(t *testing.T, dir string) {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	need(t, err == nil, "gcc is not installed: cannot build the syscall probes")
	for _, name := range []string{"tiocsti", "sys", "ptrace", "userns"} {
		src := filepath.Join("..", "seccomp", "testdata", "probes", name+".c")
		out, err := exec.Command(gcc, "-O1", "-o", filepath.Join(dir, name), src, "-lpthread").CombinedOutput()
		if err != nil {
			t.Fatalf("gcc %s: %v\n%s", name, err, out)
		}
	}
}

// The escapes of issue 6, tried for real through agentbox: keystroke
// injection (also with the upper 32 bits set, and through i386 int 0x80),
// the keyring, ptrace, io_uring, bpf and new user namespaces.
func TestSyscallEscapesRefused(t *testing.T) {
	w := newWorld(t)
	probes := filepath.Join(w.base, "probes")
	mkdir(t, probes)
	buildProbes(t, probes)
	os.Chmod(w.base, 0o755)
	cases := []struct{ probe, arg, want string }{
		{"tiocsti", "plain", "refused errno=1"},
		{"tiocsti", "high", "refused errno=1"},
		{"tiocsti", "int80", "killed signal=31"},
		{"tiocsti", "tcgets", "allowed"},
		{"sys", "keyctl", "refused errno=1"},
		{"sys", "add_key", "refused errno=1"},
		{"sys", "io_uring_setup", "refused errno=1"},
		{"sys", "bpf", "refused errno=1"},
		{"sys", "userfaultfd", "refused errno=1"},
		{"ptrace", "traceme", "refused errno=1"},
		{"ptrace", "vmread", "refused errno=1"},
		{"userns", "unshare", "refused errno=1"},
		{"userns", "fork", "allowed"},
		{"userns", "thread", "allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.probe+"-"+tc.arg, func(t *testing.T) {
			if tc.arg == "int80" {
				// On a kernel without a 32-bit syscall entry (no IA32
				// emulation) int $0x80 faults before any syscall exists
				// to filter: the escape is impossible there, and the
				// probe must fault inside the box as it does outside.
				out, _ := exec.Command(filepath.Join(probes, tc.probe), tc.arg).CombinedOutput()
				if strings.HasPrefix(string(out), "killed signal=11") {
					t.Logf("no 32-bit syscall entry on this kernel: %s", strings.TrimSpace(string(out)))
					r := w.run("run", "--", filepath.Join(probes, tc.probe), tc.arg)
					expectContains(t, "probe", r.stdout+r.stderr, "killed signal=11")
					return
				}
			}
			r := w.run("run", "--", filepath.Join(probes, tc.probe), tc.arg)
			expectContains(t, "probe", r.stdout+r.stderr, tc.want)
		})
	}
	// A reopened group is really open again.
	r := w.run("run", "--policy", policyFile(t, w, "[seccomp]\nallow = [\"keyring\"]\n"), "--", filepath.Join(probes, "sys"), "keyctl")
	expectContains(t, "reopened keyring", r.stdout, "allowed")
}

func policyFile(t *testing.T, w *world, body string) string {
	t.Helper()
	p := filepath.Join(w.base, "p"+strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")+".toml")
	write(t, p, "version = 1\n"+body)
	return p
}

// A normal toolchain still works inside the filter.
func TestToolchainWorks(t *testing.T) {
	w := newWorld(t)
	gitInit(t, w, w.project)
	script := `set -e
git -c user.name=t -c user.email=t@example.invalid commit -q --allow-empty -m inside && echo git-ok
/usr/bin/python3 -c 'import threading; t=threading.Thread(target=print, args=("py-ok",)); t.start(); t.join()'
`
	if _, err := exec.LookPath("go"); err == nil {
		write(t, filepath.Join(w.project, "go.mod"), "module x\n\ngo 1.21\n")
		write(t, filepath.Join(w.project, "main.go"), "package main\n\nfunc main() { println(\"go-ok\") }\n")
		script += "GOCACHE=/tmp/gocache GOFLAGS=-mod=mod go build -o /tmp/x . && /tmp/x\n"
	}
	if _, err := exec.LookPath("npm"); err == nil {
		script += "npm --version >/dev/null && echo npm-ok\n"
	}
	r := w.sh(nil, script)
	expectCode(t, r, 0)
	for _, want := range []string{"git-ok", "py-ok"} {
		expectContains(t, "toolchain", r.stdout+r.stderr, want)
	}
	if _, err := exec.LookPath("go"); err == nil {
		expectContains(t, "go build", r.stderr, "go-ok")
	}
	if _, err := exec.LookPath("npm"); err == nil {
		expectContains(t, "npm", r.stdout, "npm-ok")
	}
}

// Limits: a fork bomb dies against the process limit and the host lives; a
// memory hog dies against the memory limit.
func TestLimits(t *testing.T) {
	w := newWorld(t)
	p := policyFile(t, w, "[limits]\nprocesses = 200\nmemory = \"256MiB\"\ncpu_time = \"20s\"\n")
	start := time.Now()
	// After the bomb the shell forks nothing: a fork refused while the
	// bomb still fills the limit is fatal to sh ("Cannot fork", exit 2),
	// which says nothing about the box (the test failed that way now and
	// then under load). It waits by counting instead of by sleep.
	r := w.sh([]string{"--policy", p}, `bomb() { bomb | bomb & }; (bomb) 2>/dev/null; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo survived`)
	if time.Since(start) > 30*time.Second {
		t.Fatalf("the fork bomb took %v", time.Since(start))
	}
	if !strings.Contains(r.stdout, "survived") {
		t.Fatalf("fork bomb: the box's shell did not survive it: %s", r)
	}
	// The host is still responsive: it can start a process.
	if out, err := exec.Command("true").CombinedOutput(); err != nil {
		t.Fatalf("host cannot start a process after the fork bomb: %v %s", err, out)
	}
	r = w.run("run", "--policy", p, "--", "/usr/bin/python3", "-c", "x = bytearray(1 << 30); print('allocated')")
	if r.code == 0 || strings.Contains(r.stdout, "allocated") {
		t.Fatalf("a 1 GiB allocation under a 256 MiB limit succeeded: %s", r)
	}
	expectContains(t, "memory hog", r.stderr, "MemoryError")
}

// Secrets in the environment: a denied variable is absent inside, clean
// mode keeps only the baseline and pass, set adds, and the agent CLI's own
// key survives a deny glob; plan names what was removed, never the values.
func TestEnvSecrets(t *testing.T) {
	w := newWorld(t)
	w.env = append(w.env, "AWS_SECRET_ACCESS_KEY=aws-secret-value", "GITHUB_TOKEN=gh-secret-value",
		"ANTHROPIC_API_KEY=sk-ant-value", "KEEPME=1")
	show := `echo "aws=${AWS_SECRET_ACCESS_KEY:-none} gh=${GITHUB_TOKEN:-none} key=${ANTHROPIC_API_KEY:-none} keep=${KEEPME:-none} set=${MYSET:-none} path=${PATH:+yes}"`
	r := w.sh([]string{"--deny-env", "AWS_*", "--deny-env", "*_TOKEN", "--deny-env", "*_API_KEY"}, show)
	expectCode(t, r, 0)
	expectContains(t, "inherit", r.stdout, "aws=none gh=none key=none keep=1")
	pol := policyFile(t, w, "[env]\nmode = \"clean\"\npass = [\"KEEP*\"]\ndeny = [\"*_API_KEY\", \"*_TOKEN\"]\nset = { MYSET = \"v\" }\n")
	r = w.run("run", "--policy", pol, "--provider", "claude", "--", "sh", "-c", show)
	expectCode(t, r, 0)
	expectContains(t, "clean", r.stdout, "aws=none gh=none key=sk-ant-value keep=1 set=v path=yes")
	p := w.run("plan", "--policy", pol, "--provider", "claude", "--", "true")
	expectContains(t, "plan", p.stdout, "kept (the provider's own key): ANTHROPIC_API_KEY")
	expectContains(t, "plan", p.stdout, "AWS_SECRET_ACCESS_KEY")
	for _, v := range []string{"aws-secret-value", "gh-secret-value", "sk-ant-value"} {
		expectNotContains(t, "plan", p.stdout, v)
	}
}
