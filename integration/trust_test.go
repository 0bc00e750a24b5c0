//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Trust follows what a policy means. agentbox init's starter policy,
// which spells out defaults, shows nothing that loosens; an edit of a
// comment keeps it trusted and a change of meaning does not; a proposal
// of agentbox learn never stops a run and applies only to the policy it
// was made for. Before, the starter showed "! loosens" for the defaults
// and a new comment stopped every run until the policy was trusted again.
func TestTrustFollowsMeaning(t *testing.T) {
	w := newWorld(t)
	gitInit(t, w, w.project)
	file := filepath.Join(w.project, ".agentbox.toml")
	expectCode(t, w.run("init"), 0)
	r := w.run("trust")
	expectCode(t, r, 0)
	expectNotContains(t, "trusting the starter policy", r.stdout, "\n  ! ")
	expectContains(t, "trusting the starter policy", r.stdout, "unchanged: network.mode = open")
	expectCode(t, w.run("run", "--", "true"), 0)

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	starter := string(data)
	write(t, file, "# reviewed on Monday\n"+strings.ReplaceAll(starter, "\n\n", "\n"))
	if r := w.run("run", "--", "true"); r.code != 0 {
		t.Fatalf("a comment and layout needed new trust:\n%s", r)
	}
	write(t, file, strings.Replace(starter, `mode = "open"`, `mode = "none"`, 1)+"[filesystem.x]\n")
	r = w.run("run", "--", "true")
	expectCode(t, r, 125) // a key that does not exist: still an error first
	write(t, file, strings.Replace(starter, `writable = ["."]`, `writable = [".", "~/.local/bin"]`, 1))
	r = w.run("run", "--", "true")
	expectCode(t, r, 125)
	expectContains(t, "a change of meaning", r.stderr, "project policy changed since it was trusted")
	expectContains(t, "a change of meaning", r.stderr, "+ ! elsewhere in your home folder: filesystem.writable = ~/.local/bin")
	write(t, file, starter)

	// learn keeps its proposal aside: runs go on with the trusted policy.
	r = w.run("trust", "--proposal")
	if r.code == 0 || !strings.Contains(r.stderr, "no proposal") {
		t.Errorf("trust --proposal without one:\n%s", r)
	}
	mkdir(t, filepath.Join(w.home, ".config", "tool"))
	learn := []string{"learn", "--", "sh", "-c", "echo x > ~/.config/tool/state; exit 0"}
	r = w.run(learn...)
	expectCode(t, r, 0)
	expectContains(t, "learn", r.stdout, "agentbox trust --proposal")
	if got, _ := os.ReadFile(file); string(got) != starter {
		t.Fatalf("learn wrote the project's policy:\n%s", got)
	}
	expectCode(t, w.run("run", "--", "true"), 0)
	// An edit made since the proposal is never overwritten.
	write(t, file, starter+"\n[log]\nenabled = true\n")
	expectCode(t, w.run("trust"), 0)
	r = w.run("trust", "--proposal")
	if r.code == 0 || !strings.Contains(r.stderr, "changed since agentbox learn made its proposal") {
		t.Errorf("a proposal applied over a newer policy:\n%s", r)
	}
	r = w.run(learn...)
	expectCode(t, r, 0)
	r = w.run("trust", "--proposal")
	expectCode(t, r, 0)
	expectContains(t, "applying the proposal", r.stdout, "+ ! elsewhere in your home folder: filesystem.writable = ~/.config/tool")
	r = w.run("run", "--", "sh", "-c", "echo y > ~/.config/tool/state && echo wrote")
	expectCode(t, r, 0)
	expectContains(t, "the applied proposal", r.stdout, "wrote")
	if got, _ := os.ReadFile(file); !strings.Contains(string(got), "enabled = true") {
		t.Errorf("the edit before the second learn was lost:\n%s", got)
	}
}
