//go:build !windows

package examples

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/seatbelt"
)

// TestExamplesSeatbelt resolves every example as a Mac would (GOOS
// darwin) and renders the Seatbelt profile sandbox-exec would apply; the
// profile must read back as SBPL. -update rewrites
// testdata/*.seatbelt.golden.
func TestExamplesSeatbelt(t *testing.T) {
	files, err := filepath.Glob("*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(file, ".toml")
		t.Run(name, func(t *testing.T) {
			root, env := world(t)
			env.GOOS = "darwin"
			abs, _ := filepath.Abs(file)
			layers, err := policy.Load(env, policy.Flags{Policy: []string{abs}, Workspace: workspaceOf(name), Task: taskOf(name)})
			if err != nil {
				t.Fatal(err)
			}
			cmd := commands[name]
			if cmd == nil {
				cmd = []string{"sh"}
			}
			p, err := policy.Resolve(layers, env, cmd, policy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p.RunID = "0123456789ab"
			sb := &seatbelt.Seatbelt{Canon: func(s string) string { return s }}
			if err := sb.Complete(p); err != nil {
				t.Fatal(err)
			}
			if err := plan.Validate(p); err != nil {
				t.Fatal(err)
			}
			d, err := seatbelt.DetailOf(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := seatbelt.Read(d.Profile); err != nil {
				t.Fatalf("the profile does not read as SBPL: %v", err)
			}
			repo := filepath.Dir(abs)
			check(t, name+".seatbelt.golden", normalize(root, strings.ReplaceAll(d.Profile, repo, "$EXAMPLES")))
		})
	}
}
