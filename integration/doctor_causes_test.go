//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chrootDoctor makes a root of the host's /usr, /etc, library folders,
// /proc and /dev (bind mounts in a private mount namespace; a user
// namespace first when not root), puts agentbox in it and runs it there
// in a chroot (a folder that is no mount point), in /tmp/project.
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
mkdir -p "$R/tmp/project"
exec chroot "$R" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp sh -c 'cd /tmp/project && exec /agentbox "$@"' sh "$@"
`

// In a chroot, bwrap cannot start a box (the kernel refuses new user
// namespaces there, and the root is no mount point) although
// user.max_user_namespaces is large: doctor says it is a chroot, with the
// fix, as root (who, in a container without CAP_SYS_PTRACE, cannot read
// /proc/1/root either) and as an ordinary user. Before, it said "read
// bwrap's message above", and the container line said nothing. A run
// there falls back to Landlock and its notice names the chroot.
func TestDoctorInChroot(t *testing.T) {
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare is not installed")
	args := []string{"unshare", "--mount", "--propagation", "private"}
	if !isRoot() {
		args = []string{"unshare", "--user", "--map-root-user", "--mount"}
	}
	for _, form := range [][]string{{"doctor"}, {"doctor", "--json"}, {"run", "--", "sh", "-c", "echo in the box"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, args[0], append(append(args[1:], "sh", "-c", chrootDoctor, "sh", t.TempDir(), bin), form...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if strings.Contains(stderr.String(), "unshare failed") {
			need(t, false, "no mount namespace here: "+strings.TrimSpace(stderr.String()))
		}
		if err != nil {
			t.Fatalf("%v in a chroot: %v\n%s%s", form, err, out, stderr.String())
		}
		if form[0] == "run" {
			if string(out) != "in the box\n" {
				t.Errorf("run in a chroot: stdout %q", out)
			}
			expectContains(t, "run's notice", strings.Join(strings.Fields(stderr.String()), " "),
				"agentbox: notice: using Landlock: a chroot, where the kernel allows no user namespaces")
			continue
		}
		if len(form) == 1 {
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

// cgroupNamespaceDoctor moves itself into the cgroup $1/inner of the
// cgroup2 hierarchy (whose parent $1 enables no controller for it), makes
// that the top of a new cgroup namespace with cgroup2 mounted at
// /sys/fs/cgroup (a private mount namespace), and runs agentbox there: a
// container without cgroup delegation, as a runtime makes one.
const cgroupNamespaceDoctor = `set -e
G=$1; shift
mkdir "$G" "$G/inner"
echo $$ > "$G/inner/cgroup.procs"
exec unshare --cgroup --mount --propagation private sh -c '
umount -R /sys/fs/cgroup 2>/dev/null || umount -l /sys/fs/cgroup
mount -t cgroup2 none /sys/fs/cgroup
exec "$@"' sh "$@"
`

// In the top cgroup of a cgroup namespace with no pids controller (a root
// container without cgroup delegation, where examples/ci.toml's process
// limit once failed the run), doctor says that [limits] processes cannot
// be enforced, why, and what to do; plan says the same of a policy's
// processes limit. Before, the reason blamed a parent it cannot see ("its
// parent does not delegate it") and doctor listed no problem.
func TestDoctorContainerWithoutCgroupDelegation(t *testing.T) {
	rootOnly(t, "making a cgroup and a cgroup namespace with cgroup2 mounted in it")
	v2 := ""
	for _, m := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if _, err := os.Stat(filepath.Join(m, "cgroup.subtree_control")); err == nil {
			v2 = m
			break
		}
	}
	need(t, v2 != "", "no cgroup2 hierarchy mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified")
	w := newWorld(t)
	write(t, filepath.Join(w.home, "limits.toml"), "version = 1\n[limits]\nprocesses = 100\n")
	for i, args := range [][]string{{"doctor"}, {"doctor", "--json"}, {"plan", "--policy", filepath.Join(w.home, "limits.toml"), "--", "true"}} {
		g := filepath.Join(v2, fmt.Sprintf("agentbox-test-%d-%d", os.Getpid(), i))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", cgroupNamespaceDoctor, "sh", g, bin}, args...)...)
		cmd.Dir, cmd.Env = w.cwd, w.env
		out, err := cmd.CombinedOutput()
		cancel()
		os.Remove(filepath.Join(g, "inner"))
		os.Remove(g)
		if err != nil && args[0] != "doctor" {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		flat := strings.Join(strings.Fields(string(out)), " ")
		switch {
		case args[0] == "plan":
			expectContains(t, "plan", flat, "the top of this cgroup namespace")
			expectNotContains(t, "plan", flat, "its parent does not delegate it")
		case len(args) == 1:
			for _, want := range []string{"the top of its cgroup namespace",
				"a policy's [limits] processes cannot be enforced here: agentbox runs in the top cgroup of its cgroup namespace",
				"as root there is no fallback", "fix: limit the whole container instead: docker run --pids-limit N"} {
				expectContains(t, "doctor", flat, want)
			}
		default:
			var r struct {
				Cgroup struct {
					Top bool `json:"namespace_top"`
				} `json:"cgroup"`
			}
			if err := json.Unmarshal(out, &r); err != nil || !r.Cgroup.Top {
				t.Errorf("doctor --json: namespace_top not true (%v):\n%s", err, out)
			}
		}
	}
}
