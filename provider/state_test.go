package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type stateFiles struct {
	dir string
	s   StateSync
}

func newStateFiles(t *testing.T) stateFiles {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "home", ".claude"), 0o700)
	return stateFiles{dir, StateSync{
		Host: filepath.Join(dir, "home", ".claude.json"),
		Box:  filepath.Join(dir, "home", ".claude", ".claude.json"),
		Base: filepath.Join(dir, "state", "agentbox", "providers", "claude.json"),
	}}
}

func (f stateFiles) write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f stateFiles) read(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	return v
}

func jsonOf(t *testing.T, s string) map[string]any {
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The first run brings the user's state into the box; later runs bring
// the host's changes in and keep the box's own; nothing is written to the
// host's file.
func TestSyncRounds(t *testing.T) {
	f := newStateFiles(t)
	host := `{"userID":"u1","hasCompletedOnboarding":true,"oauthAccount":{"email":"me@example.com"},"numStartups":7,
"mcpServers":{"docs":{"command":"docs-server"}},"projects":{"/p":{"hasTrustDialogAccepted":true,"allowedTools":[]}}}`
	f.write(t, f.s.Host, host)
	hostBefore, _ := os.ReadFile(f.s.Host)

	// Round 1: no copy yet: the host's state as it is.
	res, err := Sync(f.s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(jsonOf(t, host), f.read(t, f.s.Box)); diff != "" || !res.Wrote {
		t.Fatalf("first copy (-want +got):\n%s", diff)
	}
	if fi, _ := os.Stat(f.s.Box); fi.Mode().Perm() != 0o600 {
		t.Errorf("the copy is %v, want 0600", fi.Mode().Perm())
	}

	// The box changes its copy as Claude Code would: more startups, a
	// project of its own, a tip seen; the host meanwhile adds an MCP
	// server and logs into another account.
	f.write(t, f.s.Box, `{"userID":"u1","hasCompletedOnboarding":true,"oauthAccount":{"email":"me@example.com"},"numStartups":9,
"mcpServers":{"docs":{"command":"docs-server"}},"tipsHistory":{"t1":3},
"projects":{"/p":{"hasTrustDialogAccepted":true,"allowedTools":[],"lastCost":1.5},"/box":{"hasTrustDialogAccepted":true}}}`)
	f.write(t, f.s.Host, `{"userID":"u1","hasCompletedOnboarding":true,"oauthAccount":{"email":"other@example.com"},"numStartups":8,
"mcpServers":{"docs":{"command":"docs-server"},"db":{"command":"db-server"}},"projects":{"/p":{"hasTrustDialogAccepted":true,"allowedTools":["Bash"]}}}`)
	hostBefore, _ = os.ReadFile(f.s.Host)
	if _, err := Sync(f.s); err != nil {
		t.Fatal(err)
	}
	want := jsonOf(t, `{"userID":"u1","hasCompletedOnboarding":true,"oauthAccount":{"email":"other@example.com"},"numStartups":9,
"mcpServers":{"docs":{"command":"docs-server"},"db":{"command":"db-server"}},"tipsHistory":{"t1":3},
"projects":{"/p":{"hasTrustDialogAccepted":true,"allowedTools":["Bash"],"lastCost":1.5},"/box":{"hasTrustDialogAccepted":true}}}`)
	if diff := cmp.Diff(want, f.read(t, f.s.Box)); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	if after, _ := os.ReadFile(f.s.Host); string(after) != string(hostBefore) {
		t.Errorf("the host's file was written:\n%s", after)
	}

	// Round 3: nothing changed anywhere: nothing is written.
	res, err = Sync(f.s)
	if err != nil || res.Wrote {
		t.Errorf("an unchanged copy was rewritten (%v)", err)
	}

	// The host removes the MCP server: the box's copy loses it too, as
	// the box never changed it.
	f.write(t, f.s.Host, `{"userID":"u1","hasCompletedOnboarding":true,"oauthAccount":{"email":"other@example.com"},"numStartups":8,
"mcpServers":{"docs":{"command":"docs-server"}},"projects":{"/p":{"hasTrustDialogAccepted":true,"allowedTools":["Bash"]}}}`)
	Sync(f.s)
	servers := f.read(t, f.s.Box)["mcpServers"].(map[string]any)
	if _, ok := servers["db"]; ok || len(servers) != 1 {
		t.Errorf("mcpServers after the host removed db: %v", servers)
	}
}

// A copy Claude Code made in the box before agentbox kept a base (a fresh
// state, without the user's login) takes the host's values where both
// have one, and keeps what only the box has.
func TestSyncWithoutBase(t *testing.T) {
	f := newStateFiles(t)
	f.write(t, f.s.Host, `{"userID":"host","oauthAccount":{"email":"me@example.com"},"theme":"light","numStartups":40}`)
	f.write(t, f.s.Box, `{"userID":"box","numStartups":2,"projects":{"/p":{"lastCost":1}}}`)
	if _, err := Sync(f.s); err != nil {
		t.Fatal(err)
	}
	want := jsonOf(t, `{"userID":"host","oauthAccount":{"email":"me@example.com"},"theme":"light","numStartups":40,"projects":{"/p":{"lastCost":1}}}`)
	if diff := cmp.Diff(want, f.read(t, f.s.Box)); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
}

// What the box leaves in place of its copy is never followed: a link to a
// file of the host's is replaced, the file keeps its bytes; a copy that is
// not JSON is replaced by the host's state; no host file means nothing to
// do; a host file that is not JSON is an error and nothing is written.
func TestSyncHostile(t *testing.T) {
	f := newStateFiles(t)
	f.write(t, f.s.Host, `{"a":1}`)
	victim := filepath.Join(f.dir, "home", ".bashrc")
	f.write(t, victim, "echo hi\n")
	if err := os.Symlink(victim, f.s.Box); err != nil {
		t.Fatal(err)
	}
	if _, err := Sync(f.s); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "echo hi\n" {
		t.Errorf("the link's target was written: %q", data)
	}
	if fi, _ := os.Lstat(f.s.Box); fi.Mode()&os.ModeSymlink != 0 {
		t.Error("the link is still there")
	}

	f.write(t, f.s.Box, "not json")
	if _, err := Sync(f.s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(jsonOf(t, `{"a":1}`), f.read(t, f.s.Box)); diff != "" {
		t.Errorf("a broken copy (-want +got):\n%s", diff)
	}

	g := newStateFiles(t)
	if res, err := Sync(g.s); err != nil || res.Wrote {
		t.Errorf("no host file: %+v %v", res, err)
	}
	if _, err := os.Stat(g.s.Box); err == nil {
		t.Error("a copy was made from nothing")
	}
	g.write(t, g.s.Host, "{broken")
	if _, err := Sync(g.s); err == nil {
		t.Error("a broken host file did not fail")
	}
	if _, err := os.Stat(g.s.Box); err == nil {
		t.Error("a copy was made from a broken host file")
	}
	// Numbers keep their exact form (JSON numbers larger than float64
	// holds exactly).
	g.write(t, g.s.Host, `{"firstStartTime":12345678901234567890}`)
	Sync(g.s)
	if data, _ := os.ReadFile(g.s.Box); !json.Valid(data) || !strings.Contains(string(data), "12345678901234567890") {
		t.Errorf("numbers changed: %s", data)
	}
}
