package hostexec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// listing is a tree as "path: notes [flags]" lines, for comparisons.
func listing(t *plan.Tree, withListed bool) []string {
	var out []string
	for i := range t.Dirs {
		notes := t.NotesOf(i)
		slices.Sort(notes)
		line := t.Rel(i) + ": " + strings.Join(notes, ",")
		f := t.Dirs[i].Flags
		if !withListed {
			f &^= plan.DirListed
		}
		if f != 0 {
			line += fmt.Sprintf(" [%d]", f)
		}
		out = append(out, line)
	}
	return out
}

func walkOrFail(t *testing.T, root string, o WalkOptions) *plan.Tree {
	t.Helper()
	tree, err := Walk(root, o)
	if err != nil {
		t.Fatal(err)
	}
	if !tree.Valid() {
		t.Fatalf("the walk made an invalid tree: %+v", tree.Dirs)
	}
	return tree
}

// The walk by several workers makes exactly the tree one worker makes,
// and both find what the ReadDir walk finds.
func TestWalkWorkersSameTree(t *testing.T) {
	tr := newTree(t)
	for i := range 40 {
		for j := range i % 7 {
			tr.mkdir(fmt.Sprintf("r/p%02d/s%d/t", i, j))
		}
		tr.write(fmt.Sprintf("r/p%02d/f", i), "")
	}
	tr.mkdir("r/p03/s1/.git/objects")
	tr.mkdir("r/p05/.claude")
	o := WalkOptions{Names: []string{".claude"}}
	o.Workers = 1
	one := walkOrFail(t, tr.p("r"), o)
	o.Workers = 4
	four := walkOrFail(t, tr.p("r"), o)
	if diff := cmp.Diff(listing(one, true), listing(four, true)); diff != "" {
		t.Errorf("four workers against one (-one +four):\n%s", diff)
	}
	if one.Entries != four.Entries || one.Entries == 0 {
		t.Errorf("entries: one worker %d, four %d", one.Entries, four.Entries)
	}
	slow, err := WalkFS(osFS{}, tr.p("r"), WalkOptions{Names: []string{".claude"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(listing(slow, false), listing(four, false)); diff != "" {
		t.Errorf("getdents walk against ReadDir walk (-readdir +getdents):\n%s", diff)
	}
}

// With an earlier tree, a folder whose stamp is the same is not listed
// again, one that changed is, and an unchanged folder below a changed one
// is taken from the earlier tree again; a folder changed shortly before
// the earlier search is listed whatever its stamp says.
func TestWalkReusesUnchanged(t *testing.T) {
	tr := newTree(t)
	tr.mkdir("r/a/b/c")
	tr.mkdir("r/d")
	names := []string{".claude"}
	first := walkOrFail(t, tr.p("r"), WalkOptions{Workers: 1, Names: names})
	if first.Listed() != first.Len() {
		t.Fatalf("a first walk listed %d of %d folders", first.Listed(), first.Len())
	}
	// Another list of names to note: the old tree's notes mean something
	// else, so all is listed again.
	if other := walkOrFail(t, tr.p("r"), WalkOptions{Workers: 1, Old: first}); other.Listed() != other.Len() {
		t.Errorf("with other names, %d of %d folders listed; want all", other.Listed(), other.Len())
	}
	// Right after: everything changed "recently", so all is listed again.
	again := walkOrFail(t, tr.p("r"), WalkOptions{Workers: 1, Old: first, Names: names})
	if again.Listed() != again.Len() {
		t.Errorf("a walk right after the first listed %d of %d folders; want all (recent changes)", again.Listed(), again.Len())
	}
	first.Taken += 3600e9 // as if the first walk were an hour later
	tr.mkdir("r/a/b/new")
	tr.mkdir("r/a/b/c/.git")
	tr.write("r/d/.claude", "")
	for _, w := range []int{1, 3} {
		next := walkOrFail(t, tr.p("r"), WalkOptions{Workers: w, Old: first, Names: names})
		var listed []string
		for i := range next.Dirs {
			if next.Dirs[i].Flags&plan.DirListed != 0 {
				listed = append(listed, next.Rel(i))
			}
		}
		slices.Sort(listed)
		want := []string{"a/b", "a/b/c", "a/b/c/.git", "a/b/new", "d"}
		if diff := cmp.Diff(want, listed); diff != "" {
			t.Errorf("%d workers: folders listed again (-want +got):\n%s", w, diff)
		}
		if i := next.Find("a/b/c"); i < 0 || !next.Has(i, ".git") {
			t.Errorf("%d workers: the new .git in a/b/c was not seen", w)
		}
		if i := next.Find("d"); i < 0 || !next.Has(i, ".claude") {
			t.Errorf("%d workers: the new .claude in d was not seen", w)
		}
	}
}

// A folder shaped like a git folder is searched like any other: what is
// inside is found, and the folder is marked as one git takes for a git
// folder; so is a worktree's folder (HEAD and commondir).
func TestWalkGitShapedFolders(t *testing.T) {
	tr := newTree(t)
	tr.write("r/lib/HEAD", "ref: refs/heads/main\n")
	tr.mkdir("r/lib/objects")
	tr.mkdir("r/lib/refs")
	tr.mkdir("r/lib/src/.git")
	tr.write("r/wt/HEAD", "x")
	tr.write("r/wt/commondir", "../..")
	tr.write("r/notgit/HEAD", "x")
	tr.mkdir("r/notgit/objects")
	tree := walkOrFail(t, tr.p("r"), WalkOptions{})
	for rel, want := range map[string]bool{"lib": true, "wt": true, "notgit": false, "lib/src": false} {
		i := tree.Find(rel)
		if i < 0 {
			t.Fatalf("%s not in the tree", rel)
		}
		if got := tree.Dirs[i].Flags&plan.DirGit != 0; got != want {
			t.Errorf("%s marked as a git folder: %v, want %v", rel, got, want)
		}
	}
	if i := tree.Find("lib/src"); !tree.Has(i, ".git") {
		t.Error("the repository inside a git-shaped folder was not found")
	}
}

// Symlinks are never followed; with Links they are listed.
func TestWalkSymlinks(t *testing.T) {
	tr := newTree(t)
	tr.mkdir("outside/.git")
	tr.mkdir("r/a")
	tr.symlink(tr.p("outside"), "r/a/link")
	tree := walkOrFail(t, tr.p("r"), WalkOptions{Links: true})
	if tree.Find("a/link") >= 0 {
		t.Error("the walk followed a symlink")
	}
	if diff := cmp.Diff([]string{"a/link"}, tree.Links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
}

// A tree deeper than PATH_MAX by name is searched to its bottom.
func TestWalkDeeperThanPathMax(t *testing.T) {
	tr := newTree(t)
	name := strings.Repeat("n", 200)
	dir := tr.p("r")
	for range 30 {
		dir = filepath.Join(dir, name)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Skipf("cannot make a path of %d bytes here: %v", len(dir), err)
	}
	for _, w := range []int{1, 2} {
		tree := walkOrFail(t, tr.p("r"), WalkOptions{Workers: w})
		if tree.Len() != 32 {
			t.Fatalf("%d workers: %d folders, want 32", w, tree.Len())
		}
		if !tree.Has(30, ".git") {
			t.Errorf("%d workers: the .git at the bottom was not seen", w)
		}
		// And again from the tree, checking each folder by stamp.
		tree.Taken += 3600e9
		next := walkOrFail(t, tr.p("r"), WalkOptions{Workers: w, Old: tree})
		if next.Listed() != 0 || !next.Has(30, ".git") {
			t.Errorf("%d workers: from the tree, %d folders listed, .git at the bottom %v", w, next.Listed(), next.Has(30, ".git"))
		}
	}
}

// Skip paths are not entered, but kept in the tree, marked.
func TestWalkSkip(t *testing.T) {
	tr := newTree(t)
	tr.mkdir("r/ro/.git")
	tr.mkdir("r/rw/.git")
	tree := walkOrFail(t, tr.p("r"), WalkOptions{Skip: []string{tr.p("r/ro"), tr.p("elsewhere")}})
	if i := tree.Find("ro"); i < 0 || tree.Dirs[i].Flags&plan.DirSkipped == 0 || tree.Find("ro/.git") >= 0 || tree.Find("rw/.git") < 0 {
		t.Errorf("skip: %q", listing(tree, false))
	}
}

// A folder that cannot be listed is marked so, never taken as empty; a
// folder that can be listed but not searched marks itself. With Fix, a
// folder of the user's own gets the owner's permissions back and is
// listed, and the fix is reported.
func TestWalkUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root lists any folder; the unprivileged pass runs this")
	}
	tr := newTree(t)
	tr.mkdir("r/noread/sub/.git")
	tr.mkdir("r/nosearch/sub/.git")
	tr.mkdir("r/fine/.git")
	os.Chmod(tr.p("r/noread"), 0o311)
	os.Chmod(tr.p("r/nosearch"), 0o600)
	t.Cleanup(func() {
		os.Chmod(tr.p("r/noread"), 0o755)
		os.Chmod(tr.p("r/nosearch"), 0o755)
	})
	tree := walkOrFail(t, tr.p("r"), WalkOptions{})
	for _, rel := range []string{"noread", "nosearch"} {
		i := tree.Find(rel)
		if i < 0 || tree.Dirs[i].Flags&plan.DirUnlisted == 0 {
			t.Errorf("%s is not marked unlisted: %q", rel, listing(tree, false))
		}
	}
	fixed := walkOrFail(t, tr.p("r"), WalkOptions{Fix: true})
	for _, rel := range []string{"noread/sub", "nosearch/sub"} {
		if i := fixed.Find(rel); i < 0 || !fixed.Has(i, ".git") {
			t.Errorf("with Fix, %s/.git was not found: %q", rel, listing(fixed, false))
		}
	}
	slices.Sort(fixed.Fixed)
	if diff := cmp.Diff([]string{"noread", "nosearch"}, fixed.Fixed); diff != "" {
		t.Errorf("fixed (-want +got):\n%s", diff)
	}
}

// A folder one search skipped is listed by a later one that goes in,
// even when nothing changed in the folder holding it: what a run with a
// read-only path did not search must not be taken as empty by the next
// run without it.
func TestWalkSkippedThenNot(t *testing.T) {
	tr := newTree(t)
	tr.mkdir("r/docs/inner")
	tr.mkdir("r/src")
	first := walkOrFail(t, tr.p("r"), WalkOptions{Skip: []string{tr.p("r/docs")}})
	if i := first.Find("docs"); i < 0 || first.Dirs[i].Flags&plan.DirSkipped == 0 || first.Find("docs/inner") >= 0 {
		t.Fatalf("the skipped folder is not marked so: %q", listing(first, false))
	}
	first.Taken += 3600e9
	// Nothing changes; in this walk docs is not skipped.
	tr.mkdir("r/docs/inner/.git") // in a folder below the skipped one
	next := walkOrFail(t, tr.p("r"), WalkOptions{Old: first})
	i := next.Find("docs/inner")
	if i < 0 || !next.Has(i, ".git") {
		t.Errorf("the folder skipped before was taken as empty: %q", listing(next, false))
	}
}

func TestStampsTrusted(t *testing.T) {
	for _, c := range []struct {
		name  string
		magic int64
		want  bool
	}{
		{"ext4", unix.EXT4_SUPER_MAGIC, true},
		{"xfs", unix.XFS_SUPER_MAGIC, true},
		{"btrfs", unix.BTRFS_SUPER_MAGIC, true},
		{"tmpfs", unix.TMPFS_MAGIC, true},
		{"overlay", unix.OVERLAYFS_SUPER_MAGIC, true},
		{"vfat", unix.MSDOS_SUPER_MAGIC, false},
		{"exfat", unix.EXFAT_SUPER_MAGIC, false},
		{"nfs", unix.NFS_SUPER_MAGIC, false},
		{"smb2", unix.SMB2_SUPER_MAGIC, false},
		{"fuse", unix.FUSE_SUPER_MAGIC, false},
		{"9p", unix.V9FS_MAGIC, false},
	} {
		if got := stampsTrusted(c.magic); got != c.want {
			t.Errorf("stampsTrusted(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

// With Shared, the regular files with more than one link are noted, in
// every listed folder and whichever worker lists it, and their folders
// marked; a later walk lists a marked folder again even when its stamp is
// the same (a link removed or added elsewhere changes the file, not its
// folder), and takes an unmarked unchanged folder from the old tree
// without looking at its files: a link made elsewhere, later, to a file
// of such a folder is seen only once the folder changes.
func TestWalkShared(t *testing.T) {
	tr := newTree(t)
	tr.write("r/a/one", "1")
	tr.write("r/a/solo", "s")
	tr.write("r/b/c/two", "2")
	tr.write("r/d/plain", "p")
	tr.write("outside/x", "x")
	for _, l := range [][2]string{{"r/a/one", "outside/one"}, {"r/b/c/two", "r/b/c/two-again"}} {
		if err := os.Link(tr.p(l[0]), tr.p(l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(tr.p("outside/x"), tr.p("r/d/link")); err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{1, 3} {
		first := walkOrFail(t, tr.p("r"), WalkOptions{Workers: w, Shared: true})
		got := slices.Clone(first.Shared)
		slices.Sort(got)
		if diff := cmp.Diff([]string{"a/one", "b/c/two", "b/c/two-again"}, got); diff != "" {
			t.Errorf("%d workers: shared files (-want +got):\n%s", w, diff)
		}
		for rel, want := range map[string]bool{"": false, "a": true, "b": false, "b/c": true, "d": false} {
			if i := first.Find(rel); i < 0 || (first.Dirs[i].Flags&plan.DirShared != 0) != want {
				t.Errorf("%d workers: folder %q marked shared: want %v", w, rel, want)
			}
		}
		// Survives the index's form.
		back := DecodeIndex(EncodeIndex(first), first.Root)
		if back == nil || back.Dirs[back.Find("a")].Flags&plan.DirShared == 0 {
			t.Fatalf("the index lost the mark")
		}
		back.Taken += 3600e9
		tr.write("r/d/new-link-target", "")
		if err := os.Link(tr.p("r/d/plain"), tr.p("outside/later")); err != nil {
			t.Fatal(err)
		}
		next := walkOrFail(t, tr.p("r"), WalkOptions{Workers: w, Old: back, Shared: true})
		var listed []string
		for i := range next.Dirs {
			if next.Dirs[i].Flags&plan.DirListed != 0 {
				listed = append(listed, next.Rel(i))
			}
		}
		slices.Sort(listed)
		if diff := cmp.Diff([]string{"a", "b/c", "d"}, listed); diff != "" {
			t.Errorf("%d workers: listed again (-want +got):\n%s", w, diff)
		}
		got = slices.Clone(next.Shared)
		slices.Sort(got)
		// d changed (a new file), so its plain, linked since, is seen.
		if diff := cmp.Diff([]string{"a/one", "b/c/two", "b/c/two-again", "d/plain"}, got); diff != "" {
			t.Errorf("%d workers: shared files the second time (-want +got):\n%s", w, diff)
		}
		os.Remove(tr.p("outside/later"))
		os.Remove(tr.p("r/d/new-link-target"))
	}
	// Without Shared nothing is statted or noted.
	if none := walkOrFail(t, tr.p("r"), WalkOptions{}); len(none.Shared) != 0 {
		t.Errorf("a walk not asked for them noted %v", none.Shared)
	}
}
