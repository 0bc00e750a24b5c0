//go:build linux && (amd64 || arm64)

package seccomp

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/proctest"
)

// These tests load the filter into the real kernel through bwrap
// --add-seccomp-fd, the way agentbox does, and try each escape for real with
// the C probes in testdata/probes. Every probe also runs without the filter
// (the control), so a test fails when the filter is not what stopped it.

// needed skips the test with reason, or fails it when AGENTBOX_MUST_WORK=1
// says this machine must be able to run it.
func needed(t *testing.T, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if os.Getenv("AGENTBOX_MUST_WORK") == "1" {
		t.Fatalf("%s (and AGENTBOX_MUST_WORK=1)", reason)
	}
	t.Skip(reason)
}

// bwrap returns the path of a bwrap that can start a box here.
func bwrap(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("bwrap")
	if err != nil {
		needed(t, "bwrap not found: %v", err)
	}
	if _, stderr, err := box(t, path, nil, "true"); err != nil {
		needed(t, "bwrap cannot start a box here: %v: %s", err, stderr)
	}
	return path
}

// box runs argv under bwrap with the filter f (none when f is nil) and
// returns its stdout and stderr.
func box(t *testing.T, bwrap string, f *Filter, argv ...string) (stdout, stderr string, err error) {
	t.Helper()
	args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--die-with-parent"}
	if os.Geteuid() == 0 {
		// As agentbox does for root (SPEC, stage 1). It also keeps the
		// probes' attempts that need capabilities (kexec, modules) refused
		// by the kernel in the control run.
		args = append(args, "--cap-drop", "ALL")
	}
	cmd := exec.Command(bwrap)
	if f != nil {
		mfd, err := f.Memfd()
		if err != nil {
			t.Fatal(err)
		}
		defer mfd.Close()
		// ExtraFiles[0] is fd 3 in bwrap.
		cmd.ExtraFiles = []*os.File{mfd}
		args = append(args, "--add-seccomp-fd", "3")
	}
	cmd.Args = append(append([]string{bwrap}, args...), append([]string{"--"}, argv...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = proctest.Run(t, cmd, time.Minute)
	return out.String(), errb.String(), err
}

// buildProbes compiles every testdata/probes/*.c into a temporary folder.
func buildProbes(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		needed(t, "gcc not found, cannot build the probes: %v", err)
	}
	srcs, err := filepath.Glob("testdata/probes/*.c")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no probes in testdata/probes: %v", err)
	}
	dir := t.TempDir()
	for _, src := range srcs {
		bin := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
		out, err := exec.Command(gcc, "-O1", "-Wall", "-Werror", "-o", bin, src, "-lpthread").CombinedOutput()
		if err != nil {
			t.Fatalf("gcc %s: %v\n%s", src, err, out)
		}
	}
	return dir
}

// The control kinds of a probe case: what the same probe prints without the
// filter, or with its group reopened.
const (
	// differs: the kernel answers something else, so the filter is what
	// produced want. With the group reopened the answer is the kernel's.
	differs = iota
	// same: an ordinary operation that must work with and without the filter.
	same
	// unproven: the kernel refuses with the same errno anyway here (no
	// capabilities), so only the filtered answer is asserted.
	unproven
)

func TestProbes(t *testing.T) {
	bw := bwrap(t)
	dir := buildProbes(t)
	blocked, err := Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	const (
		eperm  = "refused errno=1 "
		enosys = "refused errno=38 "
		sigsys = "killed signal=31 "
		ok     = "allowed"
		// noIA32 is int $0x80 on a kernel without a 32-bit syscall entry.
		noIA32 = "killed signal=11 "
	)
	tests := []struct {
		probe, mode string
		group       string // the group whose reopening lets it through ("" = none)
		want        string // prefix of the verdict under the default filter
		control     int
	}{
		{"tiocsti", "plain", "tiocsti", eperm, differs},
		{"tiocsti", "high", "tiocsti", eperm, differs},
		{"tiocsti", "int80", "", sigsys, differs},
		{"tiocsti", "tioclinux", "tiocsti", eperm, differs},
		{"tiocsti", "tcgets", "", ok, same},
		{"sys", "keyctl", "keyring", eperm, differs},
		{"sys", "add_key", "keyring", eperm, differs},
		{"sys", "request_key", "keyring", eperm, differs},
		{"sys", "bpf", "bpf", eperm, differs},
		{"sys", "perf_event_open", "perf", eperm, differs},
		{"sys", "userfaultfd", "userfaultfd", eperm, differs},
		{"sys", "kexec_load", "kexec", eperm, unproven},
		{"sys", "kexec_file_load", "kexec", eperm, unproven},
		{"sys", "init_module", "modules", eperm, unproven},
		{"sys", "finit_module", "modules", eperm, unproven},
		{"sys", "delete_module", "modules", eperm, unproven},
		{"ptrace", "traceme", "ptrace", eperm, differs},
		{"ptrace", "attach", "ptrace", eperm, differs},
		{"ptrace", "vmread", "ptrace", eperm, differs},
		{"ptrace", "vmwrite", "ptrace", eperm, differs},
		{"sys", "io_uring_setup", "io_uring", eperm, differs},
		{"sys", "io_uring_enter", "io_uring", eperm, differs},
		{"sys", "io_uring_register", "io_uring", eperm, differs},
		{"userns", "unshare", "userns", eperm, differs},
		{"userns", "clone", "userns", eperm, differs},
		{"userns", "clone3", "userns", enosys, differs},
		{"userns", "fork", "", ok, same},
		{"userns", "thread", "", ok, same},
	}
	for _, tc := range tests {
		t.Run(tc.probe+"/"+tc.mode, func(t *testing.T) {
			if tc.mode == "int80" && runtime.GOARCH != "amd64" {
				t.Skip("int $0x80 is x86-64 only")
			}
			probe := func(f *Filter) string {
				t.Helper()
				stdout, stderr, err := box(t, bw, f, filepath.Join(dir, tc.probe), tc.mode)
				if err != nil {
					t.Fatalf("probe %s %s: %v\nstdout: %s\nstderr: %s", tc.probe, tc.mode, err, stdout, stderr)
				}
				return strings.TrimSpace(stdout)
			}
			control := probe(nil)
			t.Logf("without filter: %s", control)
			got := probe(blocked)
			t.Logf("with filter:    %s", got)
			if tc.mode == "int80" && strings.HasPrefix(control+" ", noIA32) {
				// The kernel has no 32-bit syscall entry (built without
				// IA32 emulation, or ia32_emulation=0): int $0x80 faults
				// before any syscall is made, so the escape the filter's
				// architecture check stops does not exist here. It must
				// fault with the filter too.
				t.Logf("this kernel has no 32-bit syscall entry: int $0x80 faults (%s) with and without the filter", control)
				if got != control {
					t.Errorf("with filter: got %q, want the same fault as without it (%q)", got, control)
				}
				return
			}
			if !strings.HasPrefix(got+" ", tc.want) {
				t.Errorf("with filter: got %q, want %q...", got, tc.want)
			}
			switch tc.control {
			case differs:
				if strings.HasPrefix(control+" ", tc.want) {
					t.Errorf("without filter: got %q too, so this run does not show the filter at work", control)
				}
			case same:
				if control != got {
					t.Errorf("without filter: got %q, want the same as with it", control)
				}
			}
			if tc.group != "" {
				f, err := Build([]string{tc.group})
				if err != nil {
					t.Fatal(err)
				}
				if reopened := probe(f); reopened != control {
					t.Errorf("with %q reopened: got %q, want the kernel's own answer %q", tc.group, reopened, control)
				}
			}
		})
	}
}

// TestToolsStillWork runs ordinary programs with and without the filter and
// wants the same output from both.
func TestToolsStillWork(t *testing.T) {
	bw := bwrap(t)
	f, err := Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		argv []string
		want string // a substring of the output
	}{
		{"shell", []string{"sh", "-c", "echo ok; ls / >/dev/null && echo listed"}, "ok\nlisted\n"},
		// Python's threads come from pthread_create, which tries clone3
		// first: this is the ENOSYS fallback at work in a real program.
		{"python threads", []string{"python3", "-c", "import threading as t; x = t.Thread(target=print, args=('thread',)); x.start(); x.join(); print(1)"}, "thread\n1\n"},
		{"git", []string{"git", "--version"}, "git version "},
		{"go", []string{"go", "version"}, "go version "},
		// Node's libuv tries io_uring and must fall back to its thread pool.
		{"npm", []string{"npm", "--version"}, "."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, err := exec.LookPath(tc.argv[0])
			if err != nil {
				needed(t, "%s not found: %v", tc.argv[0], err)
			}
			argv := append([]string{path}, tc.argv[1:]...)
			control, stderr, err := box(t, bw, nil, argv...)
			if err != nil {
				t.Fatalf("without filter: %v\n%s", err, stderr)
			}
			got, stderr, err := box(t, bw, f, argv...)
			if err != nil {
				t.Fatalf("with filter: %v\nstdout: %s\nstderr: %s", err, got, stderr)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("with filter: output %q does not contain %q", got, tc.want)
			}
			if got != control {
				t.Errorf("output differs with the filter: got %q, without %q", got, control)
			}
		})
	}
	t.Run("filter is installed", func(t *testing.T) {
		got, stderr, err := box(t, bw, f, "grep", "-E", "^(Seccomp|Seccomp_filters|NoNewPrivs):", "/proc/self/status")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		// Mode 2 is SECCOMP_MODE_FILTER; bwrap sets no_new_privs before loading.
		if want := "NoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n"; got != want {
			t.Errorf("/proc/self/status in the box: got %q, want %q", got, want)
		}
	})
}
