//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/proctest"
)

// TestInitMadeReadOnlyBinds: read-only paths in the project (a folder, a
// file) are bound by the C init in bwrap's place (mount.InitMount) and by
// bwrap under the Go init, and the box sees the same either way: both are
// read-only mounts, nothing can be written through them, also not from a
// working folder inside the read-only folder (the init enters it again
// over its bind; bwrap had entered it before). A wrapper in PATH records
// bwrap's options: under the C init they no longer bind those paths.
func TestInitMadeReadOnlyBinds(t *testing.T) {
	for _, in := range inits {
		t.Run(in.name, func(t *testing.T) {
			w := initWorld(t, in.env)
			rodir := filepath.Join(w.project, "rodir")
			rofile := filepath.Join(w.project, "rofile")
			write(t, filepath.Join(rodir, "f"), "x\n")
			write(t, rofile, "y\n")
			// A repository: its top is the writable root from any
			// working folder in it.
			if out, err := exec.Command("git", "init", "-q", w.project).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v: %s", err, out)
			}
			bwrapOpts := logBwrapOptions(t, w)
			flags := []string{"--read-only", rodir, "--read-only", rofile}

			w.cwd = rodir
			r := w.run(append([]string{"plan", "--json"}, flags...)...)
			expectCode(t, r, 0)
			planned := slices.Sorted(maps.Keys(plannedInitMounts(t, r.stdout)))
			if !slices.Contains(planned, rodir) || !slices.Contains(planned, rofile) {
				t.Fatalf("the plan leaves %q to the init, want %s and %s among them", planned, rodir, rofile)
			}

			script := `if touch ./new 2>/dev/null; then echo "cwd writable"; else echo "cwd read-only"; fi
if (echo z >> "$0") 2>/dev/null; then echo "file writable"; else echo "file read-only"; fi
if touch "$1/new" 2>/dev/null; then echo "folder writable"; else echo "folder read-only"; fi
awk -v a="$0" -v b="$1" '$5 == a || $5 == b { split($6, o, ","); print $5, o[1] }' /proc/self/mountinfo | sort`
			r = w.run(append(append([]string{"run"}, flags...), "--", "sh", "-c", script, rofile, rodir)...)
			expectCode(t, r, 0)
			want := "cwd read-only\nfile read-only\nfolder read-only\n"
			for _, p := range slices.Sorted(slices.Values([]string{rodir, rofile})) {
				want += p + " ro\n"
			}
			if r.stdout != want {
				t.Errorf("in the box:\n%s\nwant:\n%s", r.stdout, want)
			}
			if _, err := os.Lstat(filepath.Join(rodir, "new")); err == nil {
				t.Error("the box wrote into the read-only folder")
			}
			opts := bwrapOpts()
			for _, p := range []string{rodir, rofile} {
				bound := false
				for i := 0; i+2 < len(opts); i++ {
					bound = bound || opts[i] == "--ro-bind-fd" && opts[i+2] == p
				}
				if bound != (in.name == "go") {
					t.Errorf("bwrap binds %s read-only: %v, want %v (the %s init)", p, bound, in.name == "go", in.name)
				}
			}
		})
	}
}

// TestInitMadeHides: the credential stores a developer's home holds,
// and the project's pinned .git,
// hidden by default, are hidden by the C init where the kernel has the
// mount API (bwrap's options no longer hold them) and by bwrap under the
// Go init: the same in the box either way (an empty read-only folder, an
// empty read-only file, each a tmpfs mounted there), and nothing the box
// tries reaches the host's files. A project's own deny path too, from a
// working folder below it.
func TestInitMadeHides(t *testing.T) {
	for _, in := range inits {
		t.Run(in.name, func(t *testing.T) {
			w := initWorld(t, in.env)
			aws := filepath.Join(w.home, ".aws")
			netrc := filepath.Join(w.home, ".netrc")
			env := filepath.Join(w.project, ".env")
			write(t, filepath.Join(aws, "credentials"), "[default]\nkey=SECRET\n")
			write(t, netrc, "machine x login u password SECRET\n")
			write(t, env, "TOKEN=SECRET\n")
			if out, err := exec.Command("git", "init", "-q", w.project).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v: %s", err, out)
			}
			bwrapOpts := logBwrapOptions(t, w)
			sub := filepath.Join(w.project, "sub")
			mkdir(t, sub)
			w.cwd = sub
			flags := []string{"--deny", env}
			r := w.run(append([]string{"plan", "--json"}, flags...)...)
			expectCode(t, r, 0)
			planned := plannedInitMounts(t, r.stdout)
			for p, kind := range map[string]string{aws: "make-hide-dir", netrc: "make-hide-file", env: "make-hide-file"} {
				if planned[p] != kind {
					t.Errorf("the plan leaves %s to the init as %q, want %q (%v)", p, planned[p], kind, planned)
				}
			}

			script := `ls -A "$0"; stat -c '%A %s %F' "$0" "$1" "$2"; cat "$1" "$2"
touch "$0/x" 2>/dev/null && echo "wrote the folder"
(echo x >"$1") 2>/dev/null && echo "wrote the file"
(echo x >"$2") 2>/dev/null && echo "wrote the project's file"
rm -f "$2" 2>/dev/null && echo "removed the project's file"
mv "$3" "$3.moved" 2>/dev/null && echo "moved .git"
awk -v a="$0" -v b="$1" -v c="$2" -v d="$3" '$5 == a || $5 == b || $5 == c || $5 == d { split($6, o, ","); t = ($5 == d) ? "" : " " $(NF-2); print $5 " " o[1] t }' /proc/self/mountinfo | sort`
			dotgit := filepath.Join(w.project, ".git")
			r = w.run(append(append([]string{"run"}, flags...), "--", "sh", "-c", script, aws, netrc, env, dotgit)...)
			expectCode(t, r, 0)
			want := "drwxr-xr-x 40 directory\n-rw------- 0 regular empty file\n-rw------- 0 regular empty file\n"
			fstype := map[string]string{aws: "ro tmpfs", netrc: "ro tmpfs", env: "ro tmpfs", dotgit: "rw"}
			for _, p := range slices.Sorted(maps.Keys(fstype)) {
				want += p + " " + fstype[p] + "\n"
			}
			if r.stdout != want {
				t.Errorf("in the box:\n%s\nwant:\n%s\nstderr: %s", r.stdout, want, r.stderr)
			}
			for p, data := range map[string]string{filepath.Join(aws, "credentials"): "[default]\nkey=SECRET\n", netrc: "machine x login u password SECRET\n", env: "TOKEN=SECRET\n"} {
				if got, err := os.ReadFile(p); err != nil || string(got) != data {
					t.Errorf("%s after the run: %q, %v", p, got, err)
				}
			}
			if _, err := os.Lstat(filepath.Join(aws, "x")); err == nil {
				t.Error("the box wrote into the hidden folder")
			}
			opts := bwrapOpts()
			for _, p := range []string{aws, netrc, env} {
				hidden := false
				for i := 0; i+2 < len(opts); i++ {
					hidden = hidden || (opts[i] == "--tmpfs" && opts[i+1] == p) || (opts[i] == "--ro-bind-data" && opts[i+2] == p)
				}
				if hidden != (in.name == "go") {
					t.Errorf("bwrap hides %s: %v, want %v (the %s init)", p, hidden, in.name == "go", in.name)
				}
			}
			// The pinned .git: bwrap's under the Go init, the C init's
			// otherwise; a mount point either way (moving it failed above).
			pinned := false
			for i := 0; i+2 < len(opts); i++ {
				pinned = pinned || opts[i] == "--bind-fd" && opts[i+2] == dotgit
			}
			if pinned != (in.name == "go") {
				t.Errorf("bwrap pins %s: %v, want %v (the %s init)", dotgit, pinned, in.name == "go", in.name)
			}
			if planned[dotgit] != "make-pin" {
				t.Errorf("the plan leaves %s to the init as %q, want make-pin", dotgit, planned[dotgit])
			}
		})
	}
}

// TestInitMountsRefusedBySeccomp: a seccomp filter around agentbox (a
// container runtime's profile) that refuses one system call of the mount
// API the C init makes its mounts with, answering EPERM as the kernel
// answers a process without CAP_SYS_ADMIN, never fails the run: the
// mounts stay bwrap's, and the deny paths are hidden all the same. As an
// ordinary user EPERM from fsopen, fsmount or move_mount is also what the
// kernel says for the missing capability, so the probe cannot tell a
// filter from that answer and must keep bwrap's words under any filter.
func TestInitMountsRefusedBySeccomp(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the mount API's numbers are those of amd64 and arm64")
	}
	w := newWorld(t)
	refuse := buildC(t, w.base, "testdata/refusesys.c")
	env := filepath.Join(w.project, ".env")
	write(t, env, "TOKEN=SECRET\n")
	for name, nr := range map[string]int{"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "mount_setattr": 442} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := exec.CommandContext(ctx, refuse, strconv.Itoa(nr), bin, "run", "--backend", "bwrap", "--deny", env, "--",
				"sh", "-c", `cat "$0"; stat -c %s "$0"`, env)
			c.Dir, c.Env = w.project, w.env
			var out, errb strings.Builder
			c.Stdout, c.Stderr = &out, &errb
			if err := proctest.Run(t, c, time.Minute); err != nil {
				t.Fatalf("%s refused: %v\n%s", name, err, errb.String())
			}
			if out.String() != "0\n" {
				t.Errorf("%s refused: the box shows %s as %q, want it empty", name, env, out.String())
			}
		})
	}
}

// logBwrapOptions puts a bwrap on w's PATH that copies the options it
// gets on a descriptor (--args N) on their way to the real one, and
// returns what reads the last run's copy.
func logBwrapOptions(t *testing.T, w *world) func() []string {
	t.Helper()
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	wrap := filepath.Join(w.base, "wrap")
	logged := filepath.Join(w.base, "bwrap-args")
	write(t, filepath.Join(wrap, "bwrap"), "#!/bin/bash\nif [ \"$1\" = --args ]; then cat /proc/self/fd/$2 > "+logged+"; exec "+real+" \"$@\" $2<"+logged+"; fi\nexec "+real+" \"$@\"\n")
	if err := os.Chmod(filepath.Join(wrap, "bwrap"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(w.base, 0o755)
	for i, kv := range w.env {
		if strings.HasPrefix(kv, "PATH=") {
			w.env[i] = "PATH=" + wrap + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	return func() []string {
		t.Helper()
		args, err := os.ReadFile(logged)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(string(args), "\x00")
	}
}

// plannedInitMounts are the mounts a plan (agentbox plan --json) leaves
// to the C init: each path with its kind.
func plannedInitMounts(t *testing.T, planJSON string) map[string]string {
	t.Helper()
	var out struct {
		Box struct {
			Detail struct {
				InitMounts []struct{ Kind, Path string } `json:"init_mounts"`
			} `json:"detail"`
		} `json:"box"`
	}
	if err := json.Unmarshal([]byte(planJSON), &out); err != nil {
		t.Fatal(err)
	}
	planned := map[string]string{}
	for _, m := range out.Box.Detail.InitMounts {
		planned[m.Path] = m.Kind
	}
	return planned
}
