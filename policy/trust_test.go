package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const projectPolicy = `version = 1
[filesystem]
writable = ["build"]
deny = ["~/.aws"]
[network]
mode = "none"
[env.set]
TOKEN = "secret value"
[providers.mytool]
commands = ["mytool"]
writable = ["~/.mytool"]
sandbox = true
`

// projectStatus returns the status of the project layer Load found.
func projectStatus(t *testing.T, layers []*Layer) string {
	t.Helper()
	for _, l := range layers {
		if l.Name == "project" {
			return l.Status
		}
	}
	t.Fatal("no project layer")
	return ""
}

func TestTrust(t *testing.T) {
	w := newWorld(t)
	w.write("home/u/proj/.agentbox.toml", projectPolicy)
	policyPath := w.path("home/u/proj/.agentbox.toml")
	store := TrustStore{Path: StorePath(w.env)}
	if diff := cmp.Diff(w.path("state/agentbox/trusted"), store.Path); diff != "" {
		t.Fatalf("store path (-want +got):\n%s", diff)
	}

	untrusted := func(step string, wantEdited bool) {
		t.Helper()
		_, err := Load(w.env, Flags{})
		var ue *UntrustedError
		if !errors.As(err, &ue) {
			t.Fatalf("%s: Load error = %v, want *UntrustedError", step, err)
		}
		if ue.File != policyPath || ue.Edited != wantEdited {
			t.Errorf("%s: got file %s edited %v, want %s edited %v", step, w.norm(ue.File), ue.Edited, w.norm(policyPath), wantEdited)
		}
	}
	trusted := func(step string) {
		t.Helper()
		layers, err := Load(w.env, Flags{})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got := projectStatus(t, layers); got != "trusted" {
			t.Errorf("%s: project layer status %q, want trusted", step, got)
		}
	}

	untrusted("never trusted", false)

	data, err := os.ReadFile(policyPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Trust(policyPath, Hash(data)); err != nil {
		t.Fatal(err)
	}
	trusted("after trust")
	fi, err := os.Stat(filepath.Dir(store.Path))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("store folder mode %o, want 700", got)
	}
	stored, err := os.ReadFile(store.Path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Hash(data)+" "+policyPath+"\n", string(stored)); diff != "" {
		t.Errorf("store content (-want +got):\n%s", diff)
	}

	w.write("home/u/proj/.agentbox.toml", projectPolicy+"[tmp]\nmode = \"host\"\n")
	untrusted("after an edit", true)

	w.write("home/u/proj/.agentbox.toml", projectPolicy)
	trusted("after the edit is undone")

	ok, err := store.Revoke(policyPath)
	if err != nil || !ok {
		t.Fatalf("Revoke = %v, %v, want true, nil", ok, err)
	}
	untrusted("after revoke", false)
	ok, err = store.Revoke(policyPath)
	if err != nil || ok {
		t.Errorf("second Revoke = %v, %v, want false, nil", ok, err)
	}
}

func TestTrustStoreFile(t *testing.T) {
	dir := t.TempDir()
	store := TrustStore{Path: filepath.Join(dir, "agentbox", "trusted")}
	h1, h2 := Hash([]byte("one")), Hash([]byte("two"))
	if got, err := store.Lookup("/a"); err != nil || got != "" {
		t.Fatalf("Lookup in a missing store = %q, %v, want \"\", nil", got, err)
	}
	for _, step := range []struct{ path, hash string }{{"/b/x.toml", h2}, {"/a/with space.toml", h1}, {"/b/x.toml", h1}} {
		if err := store.Trust(step.path, step.hash); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(store.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := h1 + " /a/with space.toml\n" + h1 + " /b/x.toml\n"
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	if got, _ := store.Lookup("/a/with space.toml"); got != h1 {
		t.Errorf("Lookup of a path with a space = %q, want %q", got, h1)
	}

	// Lines that are not "sha256 path" are ignored, never trusted.
	garbage := "short /c.toml\n" + h2 + "\nnot a line\n" + h2 + " /d.toml\n"
	if err := os.WriteFile(store.Path, []byte(garbage), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/c.toml": "", "/d.toml": h2, "": ""} {
		if got, err := store.Lookup(path); err != nil || got != want {
			t.Errorf("Lookup(%q) = %q, %v, want %q", path, got, err, want)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(store.Path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("store folder holds %d files, want only the store (no temporary files left)", len(entries))
	}
}

func TestHash(t *testing.T) {
	if diff := cmp.Diff("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Hash(nil)); diff != "" {
		t.Errorf("Hash(nil) (-want +got):\n%s", diff)
	}
}

func TestUntrustedError(t *testing.T) {
	l, err := Parse("project", "/p/.agentbox.toml", []byte(projectPolicy))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  *UntrustedError
		want string
	}{
		{"new", &UntrustedError{File: "/p/.agentbox.toml", Layer: l}, "/p/.agentbox.toml: project policy is not trusted"},
		{"edited", &UntrustedError{File: "/p/.agentbox.toml", Edited: true, Layer: l}, "/p/.agentbox.toml: project policy changed since it was trusted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.err.Error()); diff != "" {
				t.Errorf("Error (-want +got):\n%s", diff)
			}
		})
	}
	want := []string{
		"  inside the project: filesystem.writable = build (/p/build)",
		"  tightens: filesystem.deny = ~/.aws",
		"  tightens: network.mode = none",
		"  sets: env.set.TOKEN = (a value)",
		"! declares a provider: providers.mytool: commands mytool run confined with its writable folders, for any command named so",
		"! elsewhere in your home folder: providers.mytool.writable = ~/.mytool (/home/u/.mytool)",
	}
	if diff := cmp.Diff(want, (&UntrustedError{Layer: l, Env: fakeEnv(nil)}).Grants()); diff != "" {
		t.Errorf("Grants (-want +got):\n%s", diff)
	}
	if got := (&UntrustedError{}).Grants(); got != nil {
		t.Errorf("Grants without a layer = %v, want nil", got)
	}
}
