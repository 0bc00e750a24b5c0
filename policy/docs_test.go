package policy

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/cache"
	"github.com/agentbox/agentbox/seccomp"
)

// reference is the policy file reference, which documents every key.
const reference = "../docs/policy.md"

// schemaKeys lists every key Parse accepts, walking Schema's toml tags: a
// table's keys are "table.key", and a table of any names (caches,
// env.set, providers) is written with NAME in place of the name.
func schemaKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		key := prefix + tag
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, schemaKeys(ft, key+".")...)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			out = append(out, schemaKeys(ft.Elem(), key+".NAME.")...)
		case ft.Kind() == reflect.Map:
			out = append(out, key+".NAME")
		default:
			out = append(out, key)
		}
	}
	return out
}

// TestReferenceDocumentsEveryKey: docs/policy.md has a "### `key`"
// section for every key the parser accepts, and none for a key it does
// not, so the reference cannot go stale when the schema changes.
func TestReferenceDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile(reference)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	want := schemaKeys(reflect.TypeFor[Schema](), "")
	sort.Strings(want)
	var got []string
	for _, m := range regexp.MustCompile("(?m)^### `([^`]+)`$").FindAllStringSubmatch(doc, -1) {
		got = append(got, m[1])
	}
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: a \"### `key`\" section for each key of Schema (-want +got):\n%s", reference, diff)
	}
	// Every value a closed choice accepts, every cache tool and mode and
	// every seccomp group is named.
	var named []string
	for key, values := range choices {
		for _, v := range values {
			if key != "log.enabled" {
				named = append(named, `"`+v+`"`)
			}
		}
	}
	for _, v := range cache.Modes {
		named = append(named, `"`+v+`"`)
	}
	for _, v := range append(cache.Names(), seccomp.Names()...) {
		named = append(named, "`"+v+"`")
	}
	for _, v := range named {
		if !strings.Contains(doc, v) {
			t.Errorf("%s does not name %s", reference, v)
		}
	}
}

// TestReferenceExample: the example at the end of docs/policy.md is a
// policy this agentbox reads.
func TestReferenceExample(t *testing.T) {
	data, err := os.ReadFile(reference)
	if err != nil {
		t.Fatal(err)
	}
	_, example, ok := strings.Cut(string(data), "## Example\n\n```toml\n")
	example, _, ok2 := strings.Cut(example, "```")
	if !ok || !ok2 {
		t.Fatalf("%s: no ```toml block under \"## Example\"", reference)
	}
	if _, err := Parse("policy", "/home/u/proj/.agentbox.toml", []byte(example)); err != nil {
		t.Errorf("the example does not parse: %v", err)
	}
}
