package policy

import (
	"os"
	"path/filepath"
	"strings"
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
