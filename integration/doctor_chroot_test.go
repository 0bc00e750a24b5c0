//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// chrootDoctor makes a root of the host's /usr, /etc, library folders,
// /proc and /dev (bind mounts in a private mount namespace; a user
// namespace first when not root), puts agentbox in it and runs doctor
// there in a chroot: a folder that is no mount point.
const chrootDoctor = `set -e
PATH=$PATH:/usr/sbin:/sbin
R=$1; BIN=$2; shift 2
for d in usr etc; do mkdir -p "$R/$d"; mount --rbind "/$d" "$R/$d"; done
for l in bin lib lib32 lib64 libx32 sbin; do
	if [ -L "/$l" ]; then ln -s "$(readlink "/$l")" "$R/$l"
	elif [ -d "/$l" ]; then mkdir -p "$R/$l"; mount --rbind "/$l" "$R/$l"; fi
done
mkdir -p "$R/proc" "$R/dev" "$R/tmp"
mount --rbind /proc "$R/proc"
mount --rbind /dev "$R/dev"
cp "$BIN" "$R/agentbox"
exec chroot "$R" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp /agentbox doctor "$@"
`

// In a chroot, bwrap cannot start a box (the kernel refuses new user
// namespaces there, and the root is no mount point) although
// user.max_user_namespaces is large: doctor says it is a chroot, with the
// fix, as root (who, in a container without CAP_SYS_PTRACE, cannot read
// /proc/1/root either) and as an ordinary user. Before, it said "read
// bwrap's message above", and the container line said nothing.
func TestDoctorInChroot(t *testing.T) {
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare is not installed")
	args := []string{"unshare", "--mount", "--propagation", "private"}
	if !isRoot() {
		args = []string{"unshare", "--user", "--map-root-user", "--mount"}
	}
	for _, form := range [][]string{{}, {"--json"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, args[0], append(append(args[1:], "sh", "-c", chrootDoctor, "sh", t.TempDir(), bin), form...)...)
		out, err := cmd.Output()
		cancel()
		if ee, ok := err.(*exec.ExitError); ok && strings.Contains(string(ee.Stderr), "unshare failed") {
			need(t, false, "no mount namespace here: "+strings.TrimSpace(string(ee.Stderr)))
		}
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("doctor %v in a chroot: %v\n%s%s", form, err, out, stderr)
		}
		if len(form) == 0 {
			flat := strings.Join(strings.Fields(string(out)), " ")
			for _, want := range []string{"container none detected; agentbox runs in a chroot",
				"(agentbox runs in a chroot, where the kernel refuses new user namespaces, whatever user.max_user_namespaces says)",
				"fix: run agentbox outside the chroot"} {
				if !strings.Contains(flat, want) {
					t.Errorf("doctor in a chroot does not say %q:\n%s", want, out)
				}
			}
			continue
		}
		var r struct {
			Container struct{ Chroot bool } `json:"container"`
			Problems  []struct{ Problem string }
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, out)
		}
		if !r.Container.Chroot || len(r.Problems) == 0 || !strings.Contains(r.Problems[0].Problem, "agentbox runs in a chroot") {
			t.Errorf("doctor --json in a chroot: %s", out)
		}
		for _, p := range r.Problems {
			if strings.Contains(p.Problem, "max_user_namespaces is 0") || strings.Contains(p.Problem, "AppArmor") {
				t.Errorf("doctor blames another cause: %q", p.Problem)
			}
		}
	}
}
