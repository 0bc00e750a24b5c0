package plan

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteText prints the plan as the readable table `agentbox plan` shows:
// layers, identity, every mount in order with the rule that asked for it,
// network, environment changes, limits, provider, skips and warnings.
func (p *Plan) WriteText(w io.Writer, backend string) {
	fmt.Fprintln(w, "layers:")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, l := range p.Layers {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.Name, l.Status, l.File)
	}
	tw.Flush()
	fmt.Fprintf(w, "backend:   %s (requested %s), enforce %s\n", backend, p.Backend, p.Enforce)
	fmt.Fprintf(w, "identity:  uid %d gid %d home %s", p.Identity.UID, p.Identity.GID, p.Identity.Home)
	if p.Identity.Root() {
		fmt.Fprint(w, " (root: every capability dropped)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "command:   %s\n", strings.Join(p.Command, " "))
	if strings.Join(p.Command, "\x00") != strings.Join(p.Args, "\x00") {
		fmt.Fprintf(w, "  (given:  %s)\n", strings.Join(p.Args, " "))
	}
	prov := "none"
	if p.Provider.Name != "" {
		prov = p.Provider.Name
		if !p.Provider.Supported {
			prov += " (NOT verified inside the sandbox)"
		}
	}
	fmt.Fprintf(w, "provider:  %s — %s\n", prov, p.Provider.Reason)
	if p.Workspace.Root != "" {
		fmt.Fprintf(w, "workspace: %s in %s", p.Workspace.ID, p.Workspace.Root)
		if p.Workspace.Task != "" {
			fmt.Fprintf(w, ", task %s", p.Workspace.Task)
		}
		fmt.Fprintln(w)
	}
	tmp := p.Tmp.Mode
	if p.Tmp.HostDir != "" {
		tmp += " (" + p.Tmp.HostDir + ")"
	}
	fmt.Fprintf(w, "tmp:       %s, TMPDIR=/tmp\n", tmp)
	fmt.Fprintf(w, "cwd:       %s\n", p.Cwd)
	fmt.Fprintln(w, "mounts, in order (later ones cover earlier ones):")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tstage\top\taccess\tpath\tfrom\tnote")
	for i, m := range p.Mounts {
		path := m.Path
		if m.Source != "" && m.Source != m.Path {
			path = m.Source + " -> " + m.Path
		}
		fmt.Fprintf(tw, "  %d\t%d %s\t%s\t%s\t%s\t%s\t%s\n", i+1, m.Stage, m.Stage, m.Op, m.Access, path, m.Origin, m.Note)
	}
	fmt.Fprintf(tw, "  %d\t7 chdir\tchdir\t\t%s\t\t\n", len(p.Mounts)+1, p.Cwd)
	tw.Flush()
	net := p.Network.Mode
	switch net {
	case NetOpen:
		net += " (the box shares the host's network)"
	case NetNone:
		net += " (own network namespace, loopback only)"
	}
	fmt.Fprintf(w, "network:   %s\n", net)
	if len(p.Network.Allow) > 0 {
		fmt.Fprintf(w, "  allow:   %s\n", strings.Join(p.Network.Allow, ", "))
	}
	if len(p.Network.Deny) > 0 {
		fmt.Fprintf(w, "  deny:    %s\n", strings.Join(p.Network.Deny, ", "))
	}
	fmt.Fprintf(w, "env:       %s", p.Env.Mode)
	if len(p.Env.Removed) > 0 {
		fmt.Fprintf(w, "; removed: %s", strings.Join(p.Env.Removed, ", "))
	}
	if len(p.Env.Set) > 0 {
		var keys []string
		for k := range p.Env.Set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "; set: %s", strings.Join(keys, ", "))
	}
	fmt.Fprintln(w)
	if l := p.Limits; l != (Limits{}) {
		fmt.Fprintf(w, "limits:    processes %d, open files %d, memory %d bytes, cpu %ds, file size %d bytes (0 = unlimited)\n",
			l.Processes, l.OpenFiles, l.Memory, l.CPUTime, l.FileSize)
	}
	if len(p.Skipped) > 0 {
		fmt.Fprintln(w, "not applied:")
		for _, s := range p.Skipped {
			fmt.Fprintf(w, "  %s: %s (%s)\n", s.Path, s.Reason, s.Origin)
		}
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(w, "WARNING:   %s\n", warn)
	}
}
