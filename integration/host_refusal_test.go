//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A write the host's own permissions refuse the user outside the box too
// (a folder that is not theirs) is reported as the host's, with no policy
// change proposed; a write only the box refuses keeps the box's advice.
// Before, an ordinary user's `npm install -g` was "refused by the box"
// with --writable /usr/local/lib/node_modules as the fix. Root is refused
// nothing by the host's permissions, so this runs as an ordinary user.
func TestHostRefusalIsTheHosts(t *testing.T) {
	if isRoot() {
		t.Skip("root: the host's permissions refuse root nothing (the ordinary user's pass runs it)")
	}
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		mine := filepath.Join(w.home, "mine")
		mkdir(t, mine)
		r := w.boxed(be, nil, "touch /usr/abx-host 2>/dev/null; touch "+mine+"/f 2>/dev/null; true")
		expectCode(t, r, 0)
		var host, box string
		for _, l := range strings.Split(r.stderr, "\n") {
			switch {
			case strings.Contains(l, "/usr/abx-host"):
				host = l
			case strings.Contains(l, "~/mine/f"):
				box = l
			}
		}
		expectContains(t, "host's refusal", host, "the host refuses it too, outside the box: /usr is not writable by you")
		expectNotContains(t, "host's refusal", host, "--writable")
		expectContains(t, "box's refusal", box, "--writable ~/mine")
		lg := w.run("log", "--denials", "--wide")
		expectContains(t, "log --denials", lg.stdout, "the host refuses it too, outside the box: /usr is not writable by you")
		if _, err := os.Stat("/usr/abx-host"); err == nil {
			t.Fatal("/usr/abx-host was made")
		}
	})
}
