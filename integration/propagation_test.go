//go:build linux

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/proctest"
)

// A mount the host makes while a box runs (a USB disk or sshfs under the
// home folder, an automount the box itself triggers, a FUSE mount), under a
// path the box sees read-only, must not become a way to write there: bwrap
// makes the box's mount namespace a slave of the host's, and its read-only
// flags cover only the mounts it saw when it built the box. The host's / is
// made shared here (unshare --mount --propagation shared, as on most
// systemd hosts), the box waits, the host mounts a tmpfs under a read-only
// path, and the box tries to write into it: under bwrap it must not see the
// mount at all; under Landlock (no mount namespace) it sees it and may not
// write it (the mount lies under no path the policy lets it write). As root
// the run is wrapped in a mount namespace; as another user in a user
// namespace of its own too (whose capabilities are dropped before agentbox
// starts, so agentbox runs as that user with none).
func TestBoxMountPropagation(t *testing.T) {
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) is not installed")
	var wrap []string
	if isRoot() {
		wrap = []string{"unshare", "--mount", "--propagation", "shared", "--"}
	} else {
		_, err := exec.LookPath("setpriv")
		need(t, err == nil, "setpriv (util-linux) is not installed")
		probe := exec.Command("unshare", "--user", "--map-current-user", "--keep-caps", "--mount", "--propagation", "shared", "--", "true")
		out, err := probe.CombinedOutput()
		need(t, err == nil, fmt.Sprintf("unshare --user --map-current-user --keep-caps --mount fails here: %v %s", err, out))
		wrap = []string{"unshare", "--user", "--map-current-user", "--keep-caps", "--mount", "--propagation", "shared", "--"}
	}
	eachBoxKind(t, func(t *testing.T, w *world, v boxKind) {
		m := filepath.Join(w.base, "hostmnt")
		// Also under a read-only folder of the project, which the C
		// init binds read-only in bwrap's place (mount.InitMount).
		rodir := filepath.Join(w.project, "rodir")
		m2 := filepath.Join(rodir, "sub")
		out := filepath.Join(w.base, "out")
		mkdir(t, m)
		mkdir(t, m2)
		mkdir(t, out)
		box := fmt.Sprintf(`echo > ready; i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
grep -c agentbox-hostmnt /proc/self/mountinfo > seen
echo x 2>wrote.err > %s/boxwrote; echo $? > wrote.rc
echo x 2>wrote2.err > %s/boxwrote; echo $? > wrote2.rc
true`, m, m2)
		host := fmt.Sprintf(`"$@" & p=$!
i=0; while [ ! -e ready ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
{ mount -t tmpfs -o mode=0777 agentbox-hostmnt %[1]s && mount -t tmpfs -o mode=0777 agentbox-hostmnt %[3]s; } || echo mount failed > %[2]s/mountfailed
touch go
wait $p; echo $? > %[2]s/rc
ls -A %[1]s > %[2]s/listing
ls -A %[3]s > %[2]s/listing2
umount %[1]s; umount %[3]s`, m, out, m2)
		cmd := []string{bin}
		if !isRoot() {
			// agentbox runs as this user with no capability, as
			// outside the wrapper: bwrap refuses to start with any.
			cmd = []string{"setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--", bin}
		}
		argv := append(append(append(append([]string(nil), wrap...), "sh", "-c", host, "sh"), cmd...),
			"run", "--backend", v.backend)
		checked := []string{""}
		if v.backend == "bwrap" {
			// (Landlock keeps a read-only path in a writable root
			// read-only only by making the folders above it
			// unchangeable, here the project: not this test's
			// subject.)
			argv = append(argv, "--read-only", rodir)
			checked = append(checked, "2")
		}
		argv = append(argv, "--", "sh", "-c", box)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, argv[0], argv[1:]...)
		c.Dir, c.Env = w.project, w.env
		var errb strings.Builder
		c.Stdout, c.Stderr = &errb, &errb
		if err := proctest.Run(t, c, 2*time.Minute); err != nil {
			t.Fatalf("%v\n%s", err, errb.String())
		}
		read := func(dir, name string) string {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			return strings.TrimSpace(string(b))
		}
		if _, err := os.Stat(filepath.Join(out, "mountfailed")); err == nil {
			t.Fatalf("the host could not mount the tmpfs\n%s", errb.String())
		}
		if rc := read(out, "rc"); rc != "0" {
			t.Fatalf("agentbox exited %s\n%s", rc, errb.String())
		}
		for _, n := range checked {
			if l := read(out, "listing"+n); strings.Contains(l, "boxwrote") {
				t.Errorf("the box wrote into a host mount made while it ran, under a read-only path (%s): %q\n%s", map[string]string{"": m, "2": m2}[n], l, errb.String())
			}
			if rc := read(w.project, "wrote"+n+".rc"); rc == "0" {
				t.Errorf("the box's write into the host's new mount at %s succeeded\n%s", map[string]string{"": m, "2": m2}[n], errb.String())
			}
		}
		seen := read(w.project, "seen")
		if v.backend == "bwrap" && seen != "0" {
			t.Errorf("the box saw the host's mount made while it ran (%s lines of its mount table)\n%s", seen, errb.String())
		}
		if v.backend == "landlock" {
			// No mount namespace: the box sees the host's mount; the
			// write must have been refused by Landlock's rules.
			for _, n := range checked {
				if e := read(w.project, "wrote"+n+".err"); !strings.Contains(e, "Permission denied") {
					t.Errorf("the box's write into the host's new mount (%s): %q, want permission denied\n%s", map[string]string{"": m, "2": m2}[n], e, errb.String())
				}
			}
		}
	})
}

// The command in the box holds no capability at all, as root or not, with
// either init: none effective, permitted, inheritable, ambient or in the
// bounding set (but under Landlock as an ordinary user, whose bounding set
// only a capability could empty), and no_new_privs is set. Under bwrap the init (pid 1) holds none either: it drops
// them (after making the box's mounts private) before it does anything
// else.
func TestBoxHasNoCapabilities(t *testing.T) {
	eachBoxKind(t, func(t *testing.T, w *world, v boxKind) {
		script := "grep -E '^(Cap|NoNewPrivs)' /proc/self/status"
		if v.backend == "bwrap" {
			script += "; echo init; grep ^Cap /proc/1/status"
		}
		r := w.run("run", "--backend", v.backend, "--", "sh", "-c", script)
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		n := 0
		for _, line := range strings.Split(r.stdout, "\n") {
			k, val, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			if k == "NoNewPrivs" {
				if strings.TrimSpace(val) != "1" {
					t.Errorf("no_new_privs is not set in the box\n%v", r)
				}
				continue
			}
			n++
			if k == "CapBnd" && v.backend == "landlock" && !isRoot() {
				// A process without CAP_SETPCAP cannot empty its
				// bounding set (an ordinary user's is full); with
				// none permitted and no_new_privs, exec gains none.
				continue
			}
			if strings.TrimSpace(val) != "0000000000000000" {
				t.Errorf("%s in the box is %s, want none\n%v", k, strings.TrimSpace(val), r)
			}
		}
		want := 5
		if v.backend == "bwrap" {
			want = 10
		}
		if n != want {
			t.Errorf("read %d capability lines, want %d\n%v", n, want, r)
		}
	})
}

// agentbox doctor starts the C init once, outside a box, to learn whether
// it runs here. The init refuses to start its command while it holds any
// capability it cannot drop, and an ordinary user's bounding set is full:
// doctor runs it as a box does, in a user namespace of its own holding
// CAP_SETPCAP, and must report that it runs, as root and not.
func TestDoctorInitRuns(t *testing.T) {
	w := newWorld(t)
	r := w.run("doctor")
	if !strings.Contains(r.stdout+r.stderr, "box init: agentbox's C init, from a sealed memory file") {
		t.Errorf("doctor does not report that the C init runs here:\n%v", r)
	}
}

// boxKind is one way a box is made: the backend and, under bwrap, the init.
type boxKind struct{ name, backend, init string }

// eachBoxKind runs f in a world of its own for bwrap with the C init,
// bwrap with the Go init, and Landlock (where the kernel has it).
func eachBoxKind(t *testing.T, f func(t *testing.T, w *world, v boxKind)) {
	for _, v := range []boxKind{{"bwrap-c", "bwrap", ""}, {"bwrap-go", "bwrap", "go"}, {"landlock", "landlock", ""}} {
		t.Run(v.name, func(t *testing.T) {
			if v.backend == "landlock" {
				needLandlock(t)
			}
			w := newWorld(t)
			if v.init != "" {
				w.env = append(w.env, "AGENTBOX_INIT="+v.init)
			}
			f(t, w, v)
		})
	}
}
