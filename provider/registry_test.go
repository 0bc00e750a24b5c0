package provider

import (
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBuiltinShape checks the form of every built-in entry: home-relative
// writable paths, clean project-relative control paths, bare host names.
func TestBuiltinShape(t *testing.T) {
	host := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$`)
	for _, p := range Builtin() {
		t.Run(p.Name, func(t *testing.T) {
			if len(p.Commands) == 0 {
				t.Errorf("no commands")
			}
			if p.Supported && len(p.Writable) == 0 {
				t.Errorf("supported without writable paths")
			}
			for _, w := range p.Writable {
				if !strings.HasPrefix(w, "~/") || path.Clean(w) != w {
					t.Errorf("writable %q: want a clean path under ~/", w)
				}
			}
			for _, c := range p.Control {
				if path.IsAbs(c) || path.Clean(c) != c || strings.HasPrefix(c, "..") {
					t.Errorf("control %q: want a clean project-relative path", c)
				}
			}
			for _, d := range p.Domains {
				if !host.MatchString(d) {
					t.Errorf("domain %q: want a bare host name", d)
				}
			}
		})
	}
}

// TestSupported pins which providers were verified by a real run (VERIFIED.md);
// changing it needs a new run of scripts/verify-providers.sh.
func TestSupported(t *testing.T) {
	var got []string
	for _, p := range Builtin() {
		if p.Supported {
			got = append(got, p.Name)
		}
	}
	if diff := cmp.Diff([]string{"claude", "codex"}, got); diff != "" {
		t.Errorf("supported providers (-want +got):\n%s", diff)
	}
}

// TestVerifyScriptAgrees checks that scripts/verify-providers.sh binds exactly
// the writable paths the registry declares, so the script verifies the data
// agentbox uses.
func TestVerifyScriptAgrees(t *testing.T) {
	script, err := os.ReadFile("../scripts/verify-providers.sh")
	if err != nil {
		t.Skipf("verify script not found: %v", err)
	}
	r := NewRegistry()
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			p, ok := r.Lookup(name)
			if !ok {
				t.Fatalf("provider %s missing", name)
			}
			m := regexp.MustCompile(`(?m)^` + strings.ToUpper(name) + `_WRITABLE="([^"]*)"$`).FindSubmatch(script)
			if m == nil {
				t.Fatalf("no %s_WRITABLE line in the script", strings.ToUpper(name))
			}
			if diff := cmp.Diff(p.Writable, strings.Fields(string(m[1]))); diff != "" {
				t.Errorf("writable paths (-registry +script):\n%s", diff)
			}
		})
	}
}
