package policy

import (
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// trustedPolicy is the policy each edit below starts from.
const trustedPolicy = `# the project's policy
version = 1

[sandbox]
enforce = "require"

[filesystem]
writable = ["build", "~/.cache/tool"]
deny = ["~/.ssh"]
scan_limit = 1000000

[network]
mode = "allowlist"
allow = ["registry.npmjs.org", "proxy.golang.org"]

[env]
deny = ["*_TOKEN"]
set = { GOFLAGS = "-mod=mod" }

[providers.mytool]
commands = ["mytool"]
writable = ["~/.mytool"]
`

// What trust pins is what a policy means: edits of comments and layout
// keep the pin, every change of what the policy says breaks it.
func TestMeaning(t *testing.T) {
	same := []struct{ name, policy string }{
		{"a comment added", "# reviewed by me\n" + trustedPolicy + "# the end\n"},
		{"a comment after a value", replace(trustedPolicy, `enforce = "require"`, `enforce = "require"   # never unconfined`)},
		{"blank lines and indentation", replace(replace(trustedPolicy, "\n\n", "\n\n\n"), "mode = \"allowlist\"", "   mode   =   \"allowlist\"")},
		{"single quotes", replace(trustedPolicy, `mode = "allowlist"`, `mode = 'allowlist'`)},
		{"a list over several lines, with a trailing comma", replace(trustedPolicy, `allow = ["registry.npmjs.org", "proxy.golang.org"]`, "allow = [\n  \"registry.npmjs.org\",\n  \"proxy.golang.org\",\n]")},
		{"keys in another order", replace(trustedPolicy, "writable = [\"build\", \"~/.cache/tool\"]\ndeny = [\"~/.ssh\"]", "deny = [\"~/.ssh\"]\nwritable = [\"build\", \"~/.cache/tool\"]")},
		{"tables in another order", replace(trustedPolicy, "[sandbox]\nenforce = \"require\"\n", "") + "[sandbox]\nenforce = \"require\"\n"},
		{"a dotted key for a table", replace(trustedPolicy, "[sandbox]\nenforce = \"require\"\n", "sandbox.enforce = \"require\"\n")},
		{"a table for an inline table", replace(trustedPolicy, `set = { GOFLAGS = "-mod=mod" }`, "") + "[env.set]\nGOFLAGS = \"-mod=mod\"\n"},
		{"a number with underscores", replace(trustedPolicy, "scan_limit = 1000000", "scan_limit = 1_000_000")},
		{"no version line", replace(trustedPolicy, "version = 1\n", "")},
	}
	differ := []struct{ name, policy string }{
		{"a value", replace(trustedPolicy, `mode = "allowlist"`, `mode = "open"`)},
		{"an entry added to a list", replace(trustedPolicy, `deny = ["~/.ssh"]`, `deny = ["~/.ssh", "~/.aws"]`)},
		{"an entry removed", replace(trustedPolicy, `writable = ["build", "~/.cache/tool"]`, `writable = ["build"]`)},
		{"a list reordered", replace(trustedPolicy, `allow = ["registry.npmjs.org", "proxy.golang.org"]`, `allow = ["proxy.golang.org", "registry.npmjs.org"]`)},
		{"a default spelled out", trustedPolicy + "[tmp]\nmode = \"workspace\"\n"},
		{"a false spelled out", trustedPolicy + "[log]\nfilesystem = false\n"},
		{"a variable's value", replace(trustedPolicy, `-mod=mod`, `-mod=vendor`)},
		{"a provider's folder", replace(trustedPolicy, `writable = ["~/.mytool"]`, `writable = ["~/.mytool", "~/.config"]`)},
		{"a provider made supported", trustedPolicy + "sandbox = true\n"},
		{"a number", replace(trustedPolicy, "scan_limit = 1000000", "scan_limit = 1000001")},
		{"a path's spelling", replace(trustedPolicy, `"build"`, `"./build"`)},
		{"a secret added", trustedPolicy + "\n[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"api.example.com\"]\n"},
	}
	// The hosts a secret may go to are what it means.
	secret := func(host string) string {
		return "[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"" + host + "\"]\n"
	}
	if a, b := meaningOf([]byte(secret("api.example.com"))), meaningOf([]byte(secret("evil.example.com"))); a == b || a == "" {
		t.Errorf("a secret's hosts changed and the meaning did not (parses: %v)", a != "")
	}
	base := meaningOf([]byte(trustedPolicy))
	if base == "" {
		t.Fatal("the trusted policy does not parse")
	}
	for _, tc := range same {
		if got := meaningOf([]byte(tc.policy)); got != base {
			t.Errorf("%s: the meaning changed (parses: %v)", tc.name, got != "")
		}
	}
	for _, tc := range differ {
		if got := meaningOf([]byte(tc.policy)); got == base || got == "" {
			t.Errorf("%s: the meaning did not change (parses: %v)", tc.name, got != "")
		}
	}
}

func replace(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	panic("replace: " + old + " is not in the policy")
}

// A trusted project policy stays trusted through an edit of its comments
// and layout, and needs trust again after an edit of what it says; a pin
// of the exact bytes (as agentbox once pinned) is still honoured.
func TestTrustFollowsMeaning(t *testing.T) {
	w := newWorld(t)
	file := "home/u/proj/.agentbox.toml"
	w.write(file, trustedPolicy)
	l, err := Parse("project", w.path(file), []byte(trustedPolicy))
	if err != nil {
		t.Fatal(err)
	}
	store := TrustStore{Path: StorePath(w.env)}
	if err := store.Trust(w.path(file), Meaning(l)); err != nil {
		t.Fatal(err)
	}
	load := func() error {
		_, err := Load(w.env, Flags{})
		return err
	}
	if err := load(); err != nil {
		t.Fatalf("trusted: %v", err)
	}
	w.write(file, "# a new comment\n"+replace(trustedPolicy, "\n\n", "\n"))
	if err := load(); err != nil {
		t.Errorf("a comment and layout: %v", err)
	}
	w.write(file, replace(trustedPolicy, `mode = "allowlist"`, `mode = "open"`))
	var ue *UntrustedError
	if err := load(); !errors.As(err, &ue) || !ue.Edited {
		t.Errorf("a change of meaning: %v, want an edited, untrusted policy", err)
	}
	// A pin of the bytes.
	w.write(file, trustedPolicy)
	if err := store.Trust(w.path(file), Hash([]byte(trustedPolicy))); err != nil {
		t.Fatal(err)
	}
	if err := load(); err != nil {
		t.Errorf("a pin of the bytes: %v", err)
	}
}

// Meaning reads every field of a layer that says something: a field added
// to Layer, ProviderDecl or Entry without a decision here would be left
// out of what trust pins, and a change of it would run without new trust.
func TestMeaningCoversTheLayer(t *testing.T) {
	fields := func(v any) []string {
		var names []string
		ty := reflect.TypeOf(v)
		for i := 0; i < ty.NumField(); i++ {
			names = append(names, ty.Field(i).Name)
		}
		return names
	}
	for _, c := range []struct {
		v    any
		want []string // in Meaning, or about the file and not what it says
	}{
		{Layer{}, []string{"Name", "File", "Status", "Hash", "Meaning", "Note", "Scalars", "Lists", "EnvSet", "Providers", "Secrets",
			"Pinned", "Links"}}, // what trust found: pinned by the trust store beside Meaning
		{SecretDecl{}, []string{"Env", "File", "Hosts", "Origin"}},
		{ProviderDecl{}, []string{"Name", "Commands", "Writable", "Sandbox", "Origin"}},
		{Entry{}, []string{"Value", "Origin", "Base"}},
	} {
		if diff := cmp.Diff(c.want, fields(c.v)); diff != "" {
			t.Errorf("%T's fields changed (-known +now): decide whether Meaning must read the new one (-want +got):\n%s", c.v, diff)
		}
	}
}
