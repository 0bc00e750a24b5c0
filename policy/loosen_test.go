package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A trusted project policy may only tighten enforce and backend relative
// to the user's own configuration, unless that allows it; later layers
// (the user's flags) decide on their own.
func TestProjectCannotLoosen(t *testing.T) {
	proj := "/home/u/proj/.agentbox.toml"
	tests := []struct {
		name, user, project string
		flags               Flags
		want                string // part of the error, "" for none
	}{
		{"best-effort refused", "", "[sandbox]\nenforce = \"best-effort\"\n", Flags{}, `sandbox.enforce: "best-effort" would loosen your own setting ("require", from default)`},
		{"require allowed", "", "[sandbox]\nenforce = \"require\"\n", Flags{}, ""},
		{"windows backend refused", "", "[sandbox]\nbackend = \"windows\"\n", Flags{}, `sandbox.backend: "windows" would loosen your own setting ("auto", from default)`},
		{"landlock refused where the user lets auto choose", "", "[sandbox]\nbackend = \"landlock\"\n", Flags{}, `"landlock" would loosen`},
		{"bwrap allowed where the user lets auto choose", "", "[sandbox]\nbackend = \"bwrap\"\n", Flags{}, ""},
		{"the user's own backend allowed", "[sandbox]\nbackend = \"landlock\"\n", "[sandbox]\nbackend = \"landlock\"\n", Flags{}, ""},
		{"allowed by the user's config", "[sandbox]\nproject_may_loosen = true\n", "[sandbox]\nenforce = \"best-effort\"\nbackend = \"windows\"\n", Flags{}, ""},
		{"a later flag decides", "", "[sandbox]\nenforce = \"best-effort\"\n", Flags{Require: true}, ""},
		{"the project cannot allow itself", "", "[sandbox]\nproject_may_loosen = true\n", Flags{}, "only your own configuration can set this"},
		{"the user config's best-effort is the user's", "[sandbox]\nenforce = \"best-effort\"\n", "[sandbox]\nenforce = \"best-effort\"\n", Flags{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := mapFS{"/home/u/proj/x": ""}
			if tc.user != "" {
				files[userConfig] = "version = 1\n" + tc.user
			}
			files[proj] = "version = 1\n" + tc.project
			env := fakeEnv(files)
			env.Environ = append(env.Environ, "XDG_STATE_HOME="+t.TempDir())
			store := TrustStore{Path: StorePath(env)}
			if err := store.Trust(proj, Hash([]byte(files[proj]))); err != nil {
				t.Fatal(err)
			}
			_, err := Load(env, tc.flags)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			case tc.want != "" && !strings.HasPrefix(err.Error(), proj+":"):
				t.Errorf("error %q does not name the project file and line", err)
			}
		})
	}
}

// The trust store keeps the bytes it trusted under their pin (what they
// mean), so that an edit is shown as what changed; content that neither
// means nor is what its pin says is refused. A copy kept under the hash
// of its bytes, as agentbox once kept them, is read too.
func TestTrustStoreContent(t *testing.T) {
	store := TrustStore{Path: filepath.Join(t.TempDir(), "agentbox", "trusted")}
	v1 := []byte("version = 1\n[filesystem]\nwritable = [\"build\"]\n")
	l1, _ := Parse("project", "/p/.agentbox.toml", v1)
	if err := store.Save(Meaning(l1), v1); err != nil {
		t.Fatal(err)
	}
	got, err := store.Content(Meaning(l1))
	if err != nil || string(got) != string(v1) {
		t.Fatalf("Content = %q, %v", got, err)
	}
	if err := store.Save(Hash(v1), v1); err != nil {
		t.Fatal(err)
	}
	if got, err := store.Content(Hash(v1)); err != nil || string(got) != string(v1) {
		t.Fatalf("Content by bytes = %q, %v", got, err)
	}
	if _, err := store.Content(Hash([]byte("never saved"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("content never saved: %v, want not found", err)
	}
	if _, err := store.Content("../../etc/passwd"); err == nil {
		t.Error("a hash that is a path was read")
	}
	tampered := filepath.Join(store.Path+".d", Hash(v1)+".toml")
	if err := os.WriteFile(tampered, []byte("version = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Content(Hash(v1)); err == nil {
		t.Error("content that does not match its hash was returned")
	}
}

// An untrusted policy edited since it was trusted explains what changed.
func TestUntrustedExplainsChange(t *testing.T) {
	v1, _ := Parse("project", "/home/u/proj/.agentbox.toml", []byte("version = 1\n[filesystem]\nwritable = [\"build\"]\nread_only = [\"docs\"]\n"))
	v2, _ := Parse("project", "/home/u/proj/.agentbox.toml", []byte("version = 1\n[filesystem]\nwritable = [\"build\", \"~/.ssh\"]\n"))
	ue := &UntrustedError{File: "/home/u/proj/.agentbox.toml", Edited: true, Layer: v2, Trusted: v1, Env: fakeEnv(nil), Base: BaselineOf([]*Layer{Defaults()})}
	want := []string{
		"what changed since you trusted it (+ added, - removed; ! loosens your sandbox):",
		"+ ! elsewhere in your home folder: filesystem.writable = ~/.ssh (/home/u/.ssh)",
		"-   tightens: filesystem.read_only = docs",
	}
	if diff := cmp.Diff(want, ue.Explain()); diff != "" {
		t.Errorf("Explain (-want +got):\n%s", diff)
	}
	ue.Trusted = nil
	if got := ue.Explain(); !strings.HasPrefix(got[0], "it would grant") || len(got) != 3 {
		t.Errorf("without the trusted version, Explain = %q", got)
	}
	ue.File = "/x/evil\x1b]0;t\x07/.agentbox.toml"
	if strings.ContainsAny(ue.Error(), "\x1b\x07") {
		t.Errorf("Error %q holds raw control characters", ue.Error())
	}
}
