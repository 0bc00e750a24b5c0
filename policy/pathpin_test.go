package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// A trusted project policy's path is accepted only when every link on its
// way is one trust recorded, saying the same.
func TestCheckPinned(t *testing.T) {
	top := t.TempDir()
	top, _ = filepath.EvalSymlinks(top)
	proj := filepath.Join(top, "proj")
	for _, d := range []string{"proj/out/gen", "proj/real", "other"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(filepath.Join(top, "other"), filepath.Join(proj, "to-other"))
	os.Symlink("real", filepath.Join(proj, "rel"))
	os.Symlink("to-other", filepath.Join(proj, "chain"))
	file := filepath.Join(proj, ".agentbox.toml")
	env := Env{FS: OSFS{}, Home: top}
	entry := func(v string) Entry {
		return Entry{Value: v, Base: proj, Origin: plan.Origin{File: file, Line: 3, Key: "filesystem.writable[0]"}}
	}
	for _, tc := range []struct {
		name    string
		value   string
		links   map[string]string
		wantErr string
	}{
		{"no link", "out/gen", nil, ""},
		{"missing below a folder", "out/gen/new/deeper", nil, ""},
		{"an unrecorded link elsewhere", "to-other", nil, "to-other leads through the link " + proj + "/to-other -> " + top + "/other"},
		{"an unrecorded relative link", "rel/x", nil, "rel/x leads through the link " + proj + "/rel -> real"},
		{"a recorded link", "to-other", map[string]string{proj + "/to-other": top + "/other"}, ""},
		{"a recorded link saying something else now", "to-other", map[string]string{proj + "/to-other": top + "/proj"}, "which is not what you trusted"},
		{"a chain, its second link unrecorded", "chain", map[string]string{proj + "/chain": "to-other"}, proj + "/to-other -> "},
		{"a chain, both recorded", "chain", map[string]string{proj + "/chain": "to-other", proj + "/to-other": top + "/other"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &resolver{env: env, pinned: map[string]*Layer{file: {File: file, Pinned: true, Links: tc.links}}}
			_, err := r.expand(entry(tc.value))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("accepted, want an error with %q", tc.wantErr)
			case err != nil:
				if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), file+":3: filesystem.writable[0]: ") || !strings.Contains(err.Error(), "agentbox trust "+file) {
					t.Errorf("error %q, want one line naming the file, line, key, %q and the fix", err, tc.wantErr)
				}
			}
		})
	}
	// What trust records is what a run then accepts.
	l := &Layer{File: file, Lists: map[string][]Entry{"filesystem.writable": {entry("chain"), entry("out/gen")}}}
	links, linked := PathLinks(l, env)
	want := map[string]string{proj + "/chain": "to-other", proj + "/to-other": top + "/other"}
	if diff := cmp.Diff(want, links); diff != "" {
		t.Errorf("PathLinks (-want +got):\n%s", diff)
	}
	if len(linked) != 1 || linked[0].Target != top+"/other" {
		t.Errorf("linked paths: %+v", linked)
	}
	r := &resolver{env: env, pinned: map[string]*Layer{file: {File: file, Pinned: true, Links: links}}}
	if _, err := r.expand(entry("chain")); err != nil {
		t.Errorf("a path as trust recorded it is refused: %v", err)
	}
}

// swapFS is the host's file system, with a box that swaps the folder
// swap for a symlink to target the first time the resolution resolves a
// path through it (after the path was walked part by part).
type swapFS struct {
	OSFS
	swap, target string
	done         bool
}

func (f *swapFS) EvalSymlinks(name string) (string, error) {
	if !f.done && plan.Within(name, f.swap) {
		f.done = true
		if err := os.Rename(f.swap, f.swap+".moved"); err != nil {
			return "", err
		}
		if err := os.Symlink(f.target, f.swap); err != nil {
			return "", err
		}
	}
	return f.OSFS.EvalSymlinks(name)
}

// TestPathSwappedWhileResolving: a box swaps a folder of the project for
// a symlink to another folder between the walk of a --read-only, --deny or
// --writable path part by part (no link then) and its resolution: the plan
// is refused, never made for the file the link leads to (the read-only
// rule landed on the other folder, and the project's own file stayed
// writable).
func TestPathSwappedWhileResolving(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags func(p string) Flags
	}{
		{"read-only", func(p string) Flags { return Flags{Tmp: "private", ReadOnly: []string{p}} }},
		{"deny", func(p string) Flags { return Flags{Tmp: "private", Deny: []string{p}} }},
		{"writable", func(p string) Flags { return Flags{Tmp: "private", Writable: []string{p}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.write("home/u/proj/d/sub/f", "mine\n")
			w.write("other/sub/f", "other\n")
			w.env.FS = &swapFS{swap: w.path("home/u/proj/d"), target: w.path("other")}
			_, err := w.resolve(tc.flags(w.path("home/u/proj/d/sub")), Options{}, "true")
			if err == nil || !strings.Contains(err.Error(), "changed while the plan was made") {
				t.Fatalf("resolved with the folder swapped meanwhile: %v", err)
			}
		})
	}
}

// failFS is the host's file system where resolving any path below dir
// fails with err (a link that stopped being one half way: EINVAL).
type failFS struct {
	OSFS
	dir string
	err error
}

func (f failFS) EvalSymlinks(name string) (string, error) {
	if plan.Within(name, f.dir) {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: f.err}
	}
	return f.OSFS.EvalSymlinks(name)
}

// TestPathUnresolvable: a read-only or deny path in the project that
// cannot be followed when the plan is made (a box swapping a folder on its
// way makes readlink fail half way, or closes a folder for that moment)
// refuses the plan; before, it was taken as missing and the run went on
// without the rule. Outside every writable root, where no box can change
// it, and when it does not exist, it is skipped as before.
func TestPathUnresolvable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags func(p string) Flags
	}{
		{"read-only", func(p string) Flags { return Flags{Tmp: "private", ReadOnly: []string{p}} }},
		{"deny", func(p string) Flags { return Flags{Tmp: "private", Deny: []string{p}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.write("home/u/proj/d/f", "mine\n")
			w.write("home/u/elsewhere/f", "x\n")
			for _, e := range []error{syscall.EINVAL, syscall.ELOOP, syscall.EACCES} {
				w.env.FS = failFS{dir: w.path("home/u/proj/d"), err: e}
				_, err := w.resolve(tc.flags(w.path("home/u/proj/d/f")), Options{}, "true")
				if err == nil || !strings.Contains(err.Error(), "cannot be followed") {
					t.Errorf("%v in the project: %v, want the plan refused", e, err)
				}
				w.env.FS = failFS{dir: w.path("home/u/elsewhere"), err: e}
				if _, err := w.resolve(tc.flags(w.path("home/u/elsewhere/f")), Options{}, "true"); err != nil {
					t.Errorf("%v outside the writable roots: %v, want it skipped", e, err)
				}
			}
			// Named through a link outside every writable root (the
			// user's own) that leads into the project: still the
			// project's folder a box can change.
			w.symlink(w.path("home/u/proj"), "home/u/alias")
			w.env.FS = failFS{dir: w.path("home/u/alias/d"), err: syscall.EINVAL}
			if _, err := w.resolve(tc.flags(w.path("home/u/alias/d/f")), Options{}, "true"); err == nil || !strings.Contains(err.Error(), "cannot be followed") {
				t.Errorf("through a link into the project: %v, want the plan refused", err)
			}
			w.env.FS = OSFS{}
			if _, err := w.resolve(tc.flags(w.path("home/u/proj/gone")), Options{}, "true"); err != nil {
				t.Errorf("a missing path: %v, want it skipped", err)
			}
		})
	}
}
