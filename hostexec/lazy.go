package hostexec

import (
	"regexp"
	"sync"
)

// lazyRegexp is a regular expression compiled on its first use, not at
// every agentbox start: most runs never meet what it reads (Mercurial
// configuration, pre-commit hooks, yarn and toolchain files), and each
// compile at start cost every agentbox process, the box's Go init
// included.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
