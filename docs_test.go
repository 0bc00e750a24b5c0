package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/provider"
	"github.com/agentbox/agentbox/usage"
)

var update = flag.Bool("update", false, "rewrite the generated docs (docs/agentbox.1, docs/completion/*)")

// TestDocs is the generator and the check of the man page and the
// completion scripts that `make install` and the packages install: they are
// made from newApp()'s commands, so a command or flag that changes without
// `make docs` fails here (and in CI).
func TestDocs(t *testing.T) {
	m := usage.Model(newApp())
	before, after := manSections(t, "docs/man.txt")
	gen := map[string]func(io.Writer) error{
		"docs/agentbox.1":               func(w io.Writer) error { return usage.Man(w, m, before, after) },
		"docs/completion/agentbox.bash": func(w io.Writer) error { return usage.Completion(w, m, "bash") },
		"docs/completion/_agentbox":     func(w io.Writer) error { return usage.Completion(w, m, "zsh") },
		"docs/completion/agentbox.fish": func(w io.Writer) error { return usage.Completion(w, m, "fish") },
	}
	for path, write := range gen {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), b.String()); diff != "" {
			t.Errorf("%s is stale: run `make docs` (-want +got):\n%s", path, diff)
		}
	}
}

// manSections reads the man page's prose: "# TITLE" lines start a section;
// the first goes before the commands, the others after them.
func manSections(t *testing.T, path string) (before, after []usage.Section) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var all []usage.Section
	for _, line := range strings.Split(string(data), "\n") {
		if title, ok := strings.CutPrefix(line, "# "); ok {
			all = append(all, usage.Section{Title: title})
			continue
		}
		if len(all) == 0 {
			t.Fatalf("%s: text before the first section", path)
		}
		all[len(all)-1].Text += line + "\n"
	}
	if len(all) < 2 {
		t.Fatalf("%s: want a DESCRIPTION and the sections after the commands", path)
	}
	return all[:1], all[1:]
}

// TestFlagsOneMeaning: a flag name means the same in every command (the
// completion scripts complete a flag's value by its name alone).
func TestFlagsOneMeaning(t *testing.T) {
	m := usage.Model(newApp())
	seen := map[string]usage.Flag{}
	for _, c := range m.Commands {
		for _, f := range c.Flags {
			if prev, ok := seen[f.Name]; ok {
				if prev.Placeholder != f.Placeholder || !slices.Equal(prev.Values, f.Values) {
					t.Errorf("--%s: %q %v in one command, %q %v in %s", f.Name, prev.Placeholder, prev.Values, f.Placeholder, f.Values, c.Name)
				}
				continue
			}
			seen[f.Name] = f
		}
	}
}

// BenchmarkNewApp is what building the command line costs every run
// (help, completion and the man page add nothing until they are asked for).
func BenchmarkNewApp(b *testing.B) {
	for b.Loop() {
		newApp()
	}
}

// TestPolicyReferenceFlags: docs/policy.md names every policy flag, so a
// flag added to the last policy layer is documented with its key.
func TestPolicyReferenceFlags(t *testing.T) {
	data, err := os.ReadFile("docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range policyFlags() {
		name := "`--" + f.Names()[0]
		if !strings.Contains(string(data), name) {
			t.Errorf("docs/policy.md does not name %s`", name)
		}
	}
}

// TestRegistryDoc keeps the tables of docs/host-programs.md equal to the
// registry every run applies (hostexec.WriteRegistry).
func TestRegistryDoc(t *testing.T) {
	const path = "docs/host-programs.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const open, close = "<!-- registry -->\n", "<!-- /registry -->\n"
	before, rest, ok1 := strings.Cut(string(data), open)
	_, after, ok2 := strings.Cut(rest, close)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no %q … %q section", path, open, close)
	}
	var b bytes.Buffer
	if err := hostexec.WriteRegistry(&b, provider.Builtin()); err != nil {
		t.Fatal(err)
	}
	want := before + open + b.String() + "\n" + close + after
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("%s is stale: run go test -run TestRegistryDoc -update . (-want +got):\n%s", path, diff)
	}
}
