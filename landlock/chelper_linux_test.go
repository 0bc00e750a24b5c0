package landlock

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock"

	"github.com/agentbox/agentbox/cinit"
	"github.com/agentbox/agentbox/proctest"
	"github.com/agentbox/agentbox/seccomp"
)

// The C helper (the C init's __landlock mode) restricts itself with the
// rule set it is given and the seccomp filter, and becomes CMD holding
// nothing else.
func TestCHelper(t *testing.T) {
	if _, err := ABI(); err != nil {
		if os.Getenv("AGENTBOX_MUST_WORK") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	helper := cinit.Helper()
	if helper == nil {
		t.Fatal("no C helper on this machine (amd64 and arm64 embed one)")
	}
	defer helper.Close()
	// Writing files handled, nothing granted: no file can be written.
	cfg := ll.Config{HandledAccessFS: ll.AccessFSSet(rightWriteFile | rightMakeReg)}
	ruleset, _, err := cfg.NewRulesetFD()
	if err != nil {
		t.Fatal(err)
	}
	rs := os.NewFile(uintptr(ruleset), "ruleset")
	defer rs.Close()
	filter, err := seccomp.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	mfd, err := filter.Memfd()
	if err != nil {
		t.Fatal(err)
	}
	defer mfd.Close()
	dir := t.TempDir()
	c := exec.Command("/proc/self/fd/3", ChildCommand, "--ruleset-fd", "4", "--restrict-flags", "0", "--seccomp-fd", "5", "--rlimit", "nofile=66", "--", "sh", "-c",
		`echo x > `+filepath.Join(dir, "f")+` 2>/dev/null || echo refused; ulimit -n; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\t' ' '; ls /proc/self/fd | tr '\n' ' '`)
	c.ExtraFiles = []*os.File{helper, rs, mfd}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := proctest.Run(t, c, time.Minute); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	want := "refused\n66\nNoNewPrivs: 1\nSeccomp: 2\n0 1 2 3 "
	if got := out.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "f")); err == nil {
		t.Fatal("the restricted command wrote a file")
	}

}
