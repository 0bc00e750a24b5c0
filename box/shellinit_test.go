package box

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/provider"
)

// shell-init wraps every supported agent CLI whether it is installed or
// not: one installed after the eval runs confined too. Before, only the
// CLIs on PATH then got a wrapper.
func TestShellInitWrapsEveryKnownCLI(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // nothing installed
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var b strings.Builder
		if err := ShellInit(shell, &b); err != nil {
			t.Fatal(err)
		}
		for _, p := range provider.Builtin() {
			if !p.Supported {
				continue
			}
			for _, c := range p.Commands {
				want := "alias " + c + "="
				if shell == "fish" {
					want = "function " + c + " --wraps " + c + ";"
				}
				if !strings.Contains(b.String(), want) {
					t.Errorf("%s: no wrapper for %s:\n%s", shell, c, b.String())
				}
			}
		}
	}
}
