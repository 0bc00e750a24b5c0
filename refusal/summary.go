package refusal

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// maxGroups bounds what the summary remembers: a box that is refused
// endless different paths gets one "more" count past it.
const maxGroups = 256

// shown is how many groups the summary prints.
const shown = 5

// Summary is the sink that ends a run with refusals with one short
// summary on stderr: how many operations were refused, and the most
// frequent refused paths and hosts, each with the smallest policy change
// that would allow it, marked safe or risky. Refusals that share that
// change are one line. A read of a hidden path that found its empty
// placeholder is in the audit log, not here: nothing failed.
type Summary struct {
	W io.Writer
	// NetLog is the --net-log file, named for the network denials; "".
	NetLog string
	// Plan is the run's plan, for the network advice.
	Plan *plan.Plan
	// Judge is the run's judge, and HostRun the registry's search:
	// each change shown as safe is checked with it first (Recheck).
	Judge   *Judge
	HostRun HostRun

	mu     sync.Mutex
	groups map[string]*group
	order  []*group
	fs     int // filesystem refusals counted
	net    int // connections denied
	more   int // refusals past maxGroups
}

// group is the refusals that one change would allow.
type group struct {
	fix   string
	net   bool
	n     int
	first string // the first refusal, as the summary names it
}

// Emit counts e when it is a refusal, and prints the summary at the end.
func (s *Summary) Emit(e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Kind {
	case event.Denied:
		if e.Errno == "" {
			return
		}
		s.fs++
		s.add(e.Detail, false, e.Op+" "+tildeText(s.Plan, e.Path)+", "+e.Errno)
	case event.Net:
		if e.Allowed == nil || *e.Allowed {
			return
		}
		s.net++
		first := e.Target
		if e.Reason != "" {
			first += " (" + e.Reason + ")"
		}
		s.add(AdviseNet(s.Plan, e.Target, e.Reason).String(), true, first)
	case event.RunEnd:
		s.print()
	}
}

func (s *Summary) add(fix string, net bool, first string) {
	if s.groups == nil {
		s.groups = map[string]*group{}
	}
	g := s.groups[fix]
	if g == nil {
		if len(s.groups) >= maxGroups {
			s.more++
			return
		}
		g = &group{fix: fix, net: net, first: first}
		s.groups[fix] = g
		s.order = append(s.order, g)
	}
	g.n++
}

// Close does nothing: the summary is printed at the run's end.
func (s *Summary) Close() error { return nil }

func (s *Summary) print() {
	if s.fs+s.net == 0 {
		return
	}
	var what []string
	if s.fs > 0 {
		what = append(what, plural(s.fs, "filesystem operation", "filesystem operations"))
	}
	if s.net > 0 {
		what = append(what, plural(s.net, "connection", "connections"))
	}
	where := "agentbox log --denials lists each"
	if s.NetLog != "" && s.net > 0 {
		where += "; --net-log " + event.Escape(s.NetLog) + " every connection"
	}
	fmt.Fprintf(s.W, "agentbox: the box was refused %s (%s); what would allow them:\n", strings.Join(what, " and "), where)
	groups := append([]*group(nil), s.order...)
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].n > groups[j].n })
	for i, g := range groups {
		if i == shown {
			rest := 0
			for _, h := range groups[i:] {
				rest += h.n
			}
			fmt.Fprintf(s.W, "agentbox:   … and %s more\n", plural(rest+s.more, "refusal", "refusals"))
			break
		}
		if !g.net && s.Judge != nil {
			if f, ok := s.Judge.Fix(g.fix); ok {
				g.fix = Recheck(s.Plan, f, s.HostRun).String()
			}
		}
		first := event.Escape(g.first)
		if g.n > 1 {
			first = fmt.Sprintf("%d×, first %s", g.n, first)
		}
		fmt.Fprintf(s.W, "agentbox:   %s: %s\n", first, event.Escape(g.fix))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func tildeText(pl *plan.Plan, p string) string {
	if pl == nil {
		return p
	}
	return tilde(pl, p)
}
