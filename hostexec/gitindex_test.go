package hostexec

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The marks git's own update-index sets are read back, in index versions
// 2, 3 and 4, and cleared in a form git reads (git ls-files -v shows the
// entries unmarked, git status works).
func TestIndexFlagsWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			dir := t.TempDir()
			run := func(args ...string) string {
				t.Helper()
				c := exec.Command("git", append([]string{"-C", dir}, args...)...)
				c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
				out, err := c.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			run("init", "-q")
			for _, f := range []string{"Makefile", "a/long/path/name.go", "a/long/path/other.go", "z"} {
				os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
				os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644)
			}
			run("add", "-A")
			run("commit", "-q", "-m", "x")
			run("update-index", "--index-version", version)
			run("update-index", "--assume-unchanged", "Makefile")
			if version != "2" {
				run("update-index", "--skip-worktree", "a/long/path/other.go")
			}
			index := filepath.Join(dir, ".git", "index")
			data, err := os.ReadFile(index)
			if err != nil {
				t.Fatal(err)
			}
			flags, err := IndexFlags(data, 20)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range flags {
				got = append(got, f.Path)
			}
			want := []string{"Makefile"}
			if version != "2" {
				want = []string{"Makefile", "a/long/path/other.go"}
				slices.Sort(want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("marked entries (-want +got):\n%s", diff)
			}
			clear := map[string]bool{"Makefile": true, "a/long/path/other.go": true}
			out, err := ClearIndexFlags(data, 20, clear, true)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(index, out, 0o644); err != nil {
				t.Fatal(err)
			}
			ls := run("ls-files", "-v")
			for _, line := range strings.Split(strings.TrimSpace(ls), "\n") {
				if !strings.HasPrefix(line, "H ") {
					t.Errorf("an entry is still marked after clearing: %q\n%s", line, ls)
				}
			}
			os.WriteFile(filepath.Join(dir, "Makefile"), []byte("changed"), 0o644)
			if st := run("status", "--porcelain"); !strings.Contains(st, "Makefile") {
				t.Errorf("git status does not show the changed Makefile: %q", st)
			}
		})
	}
	if _, err := IndexFlags([]byte("DIRC\x00\x00\x00\x09"), 20); err == nil {
		t.Error("a cut-short index was read")
	}
}
