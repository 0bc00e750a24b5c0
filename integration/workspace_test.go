//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Stage 2: the three tmp modes, with TMPDIR=/tmp.
func TestTmpModes(t *testing.T) {
	w := newWorld(t)
	// A marker in the host's /tmp shows which /tmp the box sees.
	marker, err := os.CreateTemp("/tmp", "agentbox-host-marker-")
	if err != nil {
		t.Fatal(err)
	}
	marker.Close()
	t.Cleanup(func() { os.Remove(marker.Name()) })
	name := filepath.Base(marker.Name())
	id := fmt.Sprintf("tmpmode%d", time.Now().UnixNano())
	// agentbox's own folder for temporary folders, in the user's state
	// folder (the test gives no XDG_RUNTIME_DIR).
	hostDir := filepath.Join(w.home, ".local", "state", "agentbox", "tmp", id)
	w.env = append(w.env, "AGENTBOX_WORKSPACE="+id, "AGENTBOX_TEST=1")
	root := filepath.Join(w.base, "work")

	t.Run("workspace", func(t *testing.T) {
		r := w.sh([]string{"--workspace-root", root}, `echo $TMPDIR; ls /tmp/`+name+` 2>&1; echo shared > /tmp/w.txt`)
		expectCode(t, r, 0)
		expectContains(t, "TMPDIR", r.stdout, "/tmp\n")
		expectContains(t, "host /tmp hidden", r.stdout, "No such file")
		got, err := os.ReadFile(filepath.Join(hostDir, "w.txt"))
		if err != nil || string(got) != "shared\n" {
			t.Fatalf("per-workspace /tmp file on the host: %q %v", got, err)
		}
		fi, err := os.Stat(hostDir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("per-workspace tmp folder: %v, mode %v; want 0700", err, fi.Mode().Perm())
		}
		// A second run of the same workspace shares it.
		r = w.sh([]string{"--workspace-root", root}, `cat /tmp/w.txt`)
		expectCode(t, r, 0)
		expectContains(t, "shared tmp", r.stdout, "shared")
	})
	t.Run("private", func(t *testing.T) {
		r := w.sh([]string{"--workspace-root", root, "--tmp", "private"}, `ls -A /tmp | wc -l; echo x > /tmp/p && echo wrote`)
		expectCode(t, r, 0)
		expectContains(t, "private tmp", r.stdout, "0\nwrote")
	})
	t.Run("host", func(t *testing.T) {
		r := w.sh([]string{"--workspace-root", root, "--tmp", "host"}, `ls /tmp/`+name)
		expectCode(t, r, 0)
		expectContains(t, "host tmp", r.stdout, name)
	})
}

// A per-workspace tmp folder that exists as a symlink is refused.
func TestTmpSymlinkRefused(t *testing.T) {
	w := newWorld(t)
	id := fmt.Sprintf("tmplink%d", time.Now().UnixNano())
	base := filepath.Join(w.home, ".local", "state", "agentbox", "tmp")
	os.MkdirAll(base, 0o700)
	link := filepath.Join(base, id)
	if err := os.Symlink(w.base, link); err != nil {
		t.Fatal(err)
	}
	r := w.sh([]string{"--workspace", id, "--workspace-root", filepath.Join(w.base, "work")}, `true`)
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "symlink")
}

// Stage 3: other workspaces are invisible, the current one is writable and
// persists, agentbox's folders are created 0700, and --task is the cwd.
func TestWorkspaceMasking(t *testing.T) {
	w := newWorld(t)
	root := filepath.Join(w.base, "work")
	write(t, filepath.Join(root, "finance", "secrets.yaml"), "money")
	write(t, filepath.Join(root, ".repos", "finance", "HEAD"), "ref")
	write(t, filepath.Join(root, "other-file"), "x")
	r := w.sh([]string{"--workspace", "web", "--workspace-root", root, "--task", "t1"}, `
pwd
ls -A `+root+`
ls -A `+root+`/.repos
cat `+root+`/finance/secrets.yaml 2>&1
echo result > out.txt && echo wrote-task
echo x > `+root+`/web/shared.txt && echo wrote-ws
echo x > `+root+`/.repos/web/cache && echo wrote-repo
(echo x > `+root+`/loose.txt) 2>&1 | grep -q Read-only && echo root-erofs
`)
	expectCode(t, r, 0)
	lines := strings.Split(r.stdout, "\n")
	if lines[0] != filepath.Join(root, "web", "t1") {
		t.Fatalf("cwd: want the task folder, got %q", lines[0])
	}
	expectContains(t, "workspace root listing", r.stdout, "\n.repos\nweb\n")
	expectNotContains(t, "workspace root listing", r.stdout, "finance\n")
	expectNotContains(t, "workspace root listing", r.stdout, "other-file")
	expectContains(t, "other workspace", r.stdout, "No such file or directory")
	for _, want := range []string{"wrote-task", "wrote-ws", "wrote-repo", "root-erofs"} {
		expectContains(t, "workspace", r.stdout, want)
	}
	for _, p := range []string{"web/t1/out.txt", "web/shared.txt", ".repos/web/cache"} {
		if !exists(filepath.Join(root, p)) {
			t.Errorf("%s is not on the host", p)
		}
	}
	for _, p := range []string{"web", "web/t1", ".repos/web"} {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v; want a 0700 folder", p, err)
		}
	}
	if exists(filepath.Join(root, "loose.txt")) {
		t.Error("a file was written beside the workspace folders")
	}
}
