package box

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/provider"
	"github.com/agentbox/agentbox/refusal"
)

// summaryLimit bounds the folders of the search behind each change the
// end-of-run summary calls safe: it runs after the box, for at most a few
// changes. learn searches as far as a run would (hostexec.DefaultMaxDirs).
const summaryLimit = 50_000

// hostRun is how a change that would make a folder writable is classified
// before anyone is told it is safe: the registry of what host programs
// run or obey (package hostexec) searches the folder as a run with it
// writable would, and anything it finds there (a shell startup file, an
// agent CLI's settings, a repository's hooks, or a place where one would
// be obeyed once created) makes the change risky. A search that cannot
// finish fails closed: risky. The refusals a change comes from may have
// been made up by the box (the preloaded log's records are reports), so
// this is what stands between such a record and a change proposed as
// safe.
func hostRun(p *plan.Plan, limit int) refusal.HostRun {
	var mu sync.Mutex
	type answer struct {
		risky bool
		why   string
	}
	seen := map[string]answer{}
	return func(dir string) (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		if a, ok := seen[dir]; ok {
			return a.risky, a.why
		}
		risky, why := searchHostRun(p, dir, limit)
		if len(seen) < 256 {
			seen[dir] = answer{risky, why}
		}
		return risky, why
	}
}

func searchHostRun(p *plan.Plan, dir string, limit int) (bool, string) {
	home := p.Identity.Home
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		// A file holds nothing more than itself: the registry's names.
		if risky, why := hostexec.Risky(home, provider.Builtin(), dir); risky {
			return true, strings.ReplaceAll(why, home+"/", "~/")
		}
		return false, ""
	}
	res, err := hostexec.Resolve(hostexec.Input{GOOS: p.GOOS, Home: home, Getenv: os.Getenv, FS: policy.OSFS{},
		Regions: []string{dir}, Providers: provider.Builtin(), MaxDirs: limit})
	if err != nil {
		var le *hostexec.LimitError
		if errors.As(err, &le) {
			return true, fmt.Sprintf("agentbox did not search all of %s for what host programs run or obey (more than %d folders)", tilde(home, dir), limit)
		}
		return true, "agentbox could not search " + tilde(home, dir) + " for what host programs run or obey: " + err.Error()
	}
	for _, g := range res.Guards {
		what := tilde(home, g.Path)
		if g.Kind == plan.KindMissing {
			what += ", once created,"
		}
		if g.Path == dir {
			return true, what + " is what a host program runs or obeys (" + g.Rule + ")"
		}
		return true, tilde(home, dir) + " holds " + what + ", which a host program runs or obeys (" + g.Rule + ")"
	}
	return false, ""
}

// tilde writes p with ~ for the home folder.
func tilde(home, p string) string {
	switch {
	case home == "" || home == "/":
		return p
	case p == home:
		return "~"
	case strings.HasPrefix(p, home+"/"):
		return "~/" + strings.TrimPrefix(p, home+"/")
	}
	return p
}
