package learn

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/refusal"
)

const file = "/home/u/proj/.agentbox.toml"

// Edit puts each value where a person would: at the end of its array
// (with a comma added where one is missing), below its table's header, or
// in a new table at the end; comments, order and everything else stay.
func TestEdit(t *testing.T) {
	npm := Addition{Key: "filesystem.writable", Value: "~/.npm", List: true, Comment: []string{"npm's cache"}}
	reg := Addition{Key: "network.allow", Value: "registry.npmjs.org", List: true, Comment: []string{"the registry"}}
	bwrap := Addition{Key: "sandbox.backend", Value: "bwrap", Comment: []string{"carving"}}
	tests := []struct {
		name string
		in   string
		adds []Addition
		want string
	}{
		{"a new file", "", []Addition{npm},
			"version = 1\n\n[filesystem]\n# npm's cache\nwritable = [\n    \"~/.npm\",\n]\n"},
		{"a table without the key", "version = 1\n[filesystem]\ndeny = [\"~/.aws\"] # secrets\n", []Addition{npm},
			"version = 1\n[filesystem]\n# npm's cache\nwritable = [\n    \"~/.npm\",\n]\ndeny = [\"~/.aws\"] # secrets\n"},
		{"a one-line array", "[filesystem]\nwritable = [\".\", \"# not a comment]\"] # mine\n", []Addition{npm},
			"[filesystem]\nwritable = [\".\", \"# not a comment]\",\n    # npm's cache\n    \"~/.npm\",\n] # mine\n"},
		{"an empty array", "[filesystem]\nwritable = []\n", []Addition{npm},
			"[filesystem]\nwritable = [\n    # npm's cache\n    \"~/.npm\",\n]\n"},
		{"a multi-line array without a last comma", "[filesystem]\nwritable = [\n  \".\",\n  \"build\" # out\n]\n[network]\nmode = \"allowlist\"\n", []Addition{npm, reg},
			"[filesystem]\nwritable = [\n  \".\",\n  \"build\", # out\n    # npm's cache\n    \"~/.npm\",\n]\n[network]\n# the registry\nallow = [\n    \"registry.npmjs.org\",\n]\nmode = \"allowlist\"\n"},
		{"a multi-line array with entries on its first line", "[network]\nallow = [\"a.example\",\n]\n", []Addition{reg},
			"[network]\nallow = [\"a.example\",\n    # the registry\n    \"registry.npmjs.org\",\n]\n"},
		{"a scalar", "[sandbox]\n  backend = \"auto\" # let it pick\n", []Addition{bwrap},
			"[sandbox]\n  # carving\n  backend = \"bwrap\"\n"},
		{"a value that needs escaping", "", []Addition{{Key: "filesystem.writable", Value: "/srv/a \"b\"\\c", List: true}},
			"version = 1\n\n[filesystem]\nwritable = [\n    \"/srv/a \\\"b\\\"\\\\c\",\n]\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Edit(file, []byte(tc.in), tc.adds)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// What Edit cannot change in place is an error, and bad input is one line
// naming the file.
func TestEditRefuses(t *testing.T) {
	npm := Addition{Key: "filesystem.writable", Value: "~/.npm", List: true}
	for _, tc := range []struct{ name, in, want string }{
		{"a dotted key", "filesystem.writable = [\".\"]\n", "add the entries by hand"},
		{"an inline table", "filesystem = { writable = [\".\"] }\n", "add the entries by hand"},
		{"not TOML", "[filesystem\n", file + ":1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Edit(file, []byte(tc.in), []Addition{npm})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, tc.want)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	got := Diff("a/x", "b/x", "version = 1\n[network]\nmode = \"allowlist\"\n", "version = 1\n[network]\nallow = [\n  \"r\",\n]\nmode = \"allowlist\"\n")
	want := "--- a/x\n+++ b/x\n@@ -1,3 +1,6 @@\n version = 1\n [network]\n+allow = [\n+  \"r\",\n+]\n mode = \"allowlist\"\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := Diff("/dev/null", "b/x", "", "a\n"); got != "--- /dev/null\n+++ b/x\n@@ -0,0 +1,1 @@\n+a\n" {
		t.Errorf("new file: %q", got)
	}
}

// Propose keeps the safe changes, once each, the most frequent first;
// nothing risky, nothing always protected or host-executed even when the
// advice called it safe, no network entry outside allowlist mode.
func TestPropose(t *testing.T) {
	p := &plan.Plan{Identity: plan.Identity{Home: "/home/u"}, Network: plan.Network{Mode: plan.NetAllowlist},
		Mounts: []plan.Mount{
			{Stage: plan.StageRoot, Op: plan.ROBind, Path: "/", Access: plan.ReadOnly, Origin: plan.Origin{Key: "default"}},
			{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: "/home/u/tools/.git/hooks", Access: plan.ReadOnly, Origin: plan.Origin{Key: "always: git hooks"}},
		}}
	rs := []refusal.Refused{
		{Fix: refusal.Fix{Key: "filesystem.writable", Value: "~/.npm", Why: "npm"}, Count: 1, First: "mkdir ~/.npm", Rule: "root /"},
		{Fix: refusal.Fix{Key: "network.allow", Value: "registry.npmjs.org", Why: "registry"}, Count: 5, First: "connect registry.npmjs.org:443", Rule: "network allowlist"},
		{Fix: refusal.Fix{Key: "filesystem.writable", Value: "~/.npm", Why: "npm"}, Count: 1, First: "create ~/.npm/x", Rule: "root /"},
		{Fix: refusal.Fix{Key: "filesystem.writable", Value: "~/.bashrc", Risky: true, Why: "runs in bash"}, Count: 1, First: "write ~/.bashrc"},
		{Fix: refusal.Fix{Key: "filesystem.writable", Value: "~/tools", Why: "advice that missed it"}, Count: 1, First: "create ~/tools/x"},
		{Fix: refusal.Fix{Key: "filesystem.writable", Value: "~/.local/bin", Why: "advice that missed it"}, Count: 1, First: "create ~/.local/bin/x"},
		{Fix: refusal.Fix{Risky: true, Why: "always protected"}, Count: 1, First: "create .git/hooks/x"},
		{Fix: refusal.Fix{Key: "filesystem.writable", Value: "~/.config/new", Create: "~/.config/new", Why: "new"}, Count: 1, First: "mkdir ~/.config/new/x"},
		// A refusal the box may have made up, whose advice missed what
		// the registry knows.
		{Fix: refusal.Fix{Key: "filesystem.writable", Value: "~/.tmux.conf", Why: "the folder ~/.tmux.conf in your home folder"}, Count: 1, First: "write ~/.tmux.conf"},
	}
	// The registry's answer, as package hostexec's search would give it.
	registry := func(dir string) (bool, string) {
		if dir == "/home/u/.tmux.conf" {
			return true, "~/.tmux.conf is what a host program runs or obeys (tmux .tmux.conf)"
		}
		return false, ""
	}
	got := Propose(p, rs, "npm install x", registry)
	if c := Propose(p, rs[:1], "sh -c 'a\nb'", registry).Adds[0].Comment; strings.Contains(strings.Join(c, ""), "\n") {
		t.Errorf("a comment holds a line break: %q", c)
	}
	var adds []string
	for _, a := range got.Adds {
		adds = append(adds, a.Key+"="+a.Value)
	}
	if diff := cmp.Diff([]string{"network.allow=registry.npmjs.org", "filesystem.writable=~/.npm", "filesystem.writable=~/.config/new"}, adds); diff != "" {
		t.Errorf("additions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/home/u/.config/new"}, got.Create); diff != "" {
		t.Errorf("folders to make (-want +got):\n%s", diff)
	}
	if len(got.Left) != 5 {
		t.Errorf("left out %d refusals, want 5 (.bashrc, ~/tools, ~/.local/bin, the hooks, .tmux.conf): %+v", len(got.Left), got.Left)
	}
	if l := got.Left[len(got.Left)-1]; !l.Fix.Risky || !strings.Contains(l.Fix.Why, "tmux .tmux.conf") {
		t.Errorf(".tmux.conf left out as %+v, want risky by the registry", l.Fix)
	}
	if !strings.Contains(got.Adds[0].Comment[0], "`npm install x` was refused 5 times, first connect registry.npmjs.org:443") {
		t.Errorf("comment %q", got.Adds[0].Comment)
	}
	p.Network.Mode = plan.NetNone
	if got := Propose(p, rs[1:2], "x", registry); len(got.Adds) != 0 {
		t.Errorf("network none: proposed %+v", got.Adds)
	}
}
