package plan

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText prints the plan as the readable table `agentbox plan` shows:
// layers, the backend and what it enforces, identity, every mount in order
// with the rule that asked for it, network, environment changes, limits,
// provider, skips and warnings. The backend adds its own lines after it.
func (p *Plan) WriteText(w io.Writer) {
	fmt.Fprintln(w, "layers:")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, l := range p.Layers {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.Name, l.Status, l.File)
		if l.Note != "" {
			fmt.Fprintf(tw, "  \t(%s)\t\n", l.Note)
		}
	}
	tw.Flush()
	backend := p.Box.Backend
	switch {
	case p.Box.Outer != "":
		backend = "the outer box (" + p.Box.Outer + "): no box of its own can be made here: " + p.Box.Degraded
	case !p.Confined():
		backend = "none, UNCONFINED: " + p.Box.Degraded
	}
	fmt.Fprintf(w, "backend:   %s (requested %s), enforce %s\n", backend, p.Backend, p.Enforce)
	for _, why := range p.Box.Passed {
		fmt.Fprintf(w, "  passed over: %s\n", why)
	}
	fmt.Fprintf(w, "run:       %s\n", p.RunID)
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
	if p.Provider.Adjusted != "" {
		fmt.Fprintf(w, "  %s\n", p.Provider.Adjusted)
	}
	if len(p.Provider.ConfinedEnv) > 0 {
		fmt.Fprintf(w, "  confined, it gets %s\n", strings.Join(p.Provider.ConfinedEnv, " "))
	}
	if s := p.Provider.State; s != nil {
		fmt.Fprintf(w, "  its settings: %s is merged into its copy %s before every run (the box never writes %s)\n", s.Host, s.Box, s.Host)
	}
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
	if p.Box.Tmpdir != "" {
		tmp += ", TMPDIR=" + p.Box.Tmpdir
	}
	fmt.Fprintf(w, "tmp:       %s\n", tmp)
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
	for _, r := range p.Box.Rules {
		if r.Rule == "network" && r.How != "" {
			net += " (" + r.How + ")"
			break
		}
	}
	fmt.Fprintf(w, "network:   %s\n", net)
	if p.Network.Implied != "" {
		fmt.Fprintf(w, "  mode:    %s\n", p.Network.Implied)
	}
	if p.Network.Mode == NetAllowlist {
		if len(p.Network.Allow) == 0 {
			fmt.Fprintln(w, "  allow:   (nothing: every connection is denied)")
		}
	}
	if len(p.Network.Allow) > 0 {
		fmt.Fprintf(w, "  allow:   %s\n", strings.Join(p.Network.Allow, ", "))
	}
	if len(p.Network.Deny) > 0 {
		fmt.Fprintf(w, "  deny:    %s\n", strings.Join(p.Network.Deny, ", "))
	}
	if p.Network.Mode == NetAllowlist {
		for _, f := range p.Network.Forwards() {
			port := f[strings.LastIndex(f, ":")+1:]
			fmt.Fprintf(w, "  forward: 127.0.0.1:%s in the box -> %s on the host\n", port, f)
		}
	}
	fmt.Fprintf(w, "env:       %s", p.Env.Mode)
	if len(p.Env.Kept) > 0 {
		fmt.Fprintf(w, "; kept (the provider's own key): %s", strings.Join(p.Env.Kept, ", "))
	}
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
	p.writeCaches(w)
	if l := p.Limits; l != (Limits{}) {
		fmt.Fprintf(w, "limits:    processes %d, open files %d, memory %d bytes, cpu %ds, file size %d bytes (0 = unlimited)\n",
			l.Processes, l.OpenFiles, l.Memory, l.CPUTime, l.FileSize)
		for _, r := range p.Box.Rules {
			if r.Rule == "limits" {
				fmt.Fprintf(w, "  %s: %s: %s\n", r.Path, r.Level, r.How)
			}
		}
	}
	log := "off"
	if p.Log.Enabled {
		log = "recorded in " + p.Log.Dir
	}
	if o := p.Log.Origin.String(); o != "" {
		log += " (" + o + ")"
	}
	fmt.Fprintf(w, "log:       %s\n", log)
	if p.Log.Enabled {
		fmt.Fprintf(w, "  filesystem refusals: %s\n", filesystemLog(p))
	}
	p.HostExec.writeText(w)
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

// ProxyPort is the port the allowlist proxy is reached at inside the box,
// on 127.0.0.1 in the box's own network namespace (3128 is the customary
// port of an HTTP proxy; nothing on the host listens on it).
const ProxyPort = 3128

// Forwards returns the allow entries that name a service on the host's own
// loopback with a port ("localhost:3000", "127.0.0.1:3000", "[::1]:3000"),
// the first per port. Programs send localhost past the proxy (NO_PROXY), so
// in allowlist mode the box gets a port forward for each: 127.0.0.1:PORT in
// the box leads to the entry's host and port, checked by the proxy.
func (n Network) Forwards() []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range n.Allow {
		i := strings.LastIndex(e, ":")
		if i < 0 {
			continue
		}
		host, port := strings.TrimSuffix(strings.ToLower(e[:i]), "."), e[i+1:]
		if host != "localhost" && host != "127.0.0.1" && host != "[::1]" {
			continue
		}
		num, err := strconv.Atoi(port)
		key := strconv.Itoa(num) // 08000 and 8000 are one port
		if err != nil || strings.Trim(port, "0123456789") != "" || num < 1 || num > 65535 || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}

// filesystemLog says how filesystem refusals are recorded.
func filesystemLog(p *Plan) string {
	l := p.Log
	switch l.Filesystem {
	case "seccomp-notify":
		if l.Reads {
			return "seccomp notification: each open and each call that may write is judged against this plan before the kernel runs it, unchanged"
		}
		return "seccomp notification: each call that may write is judged against this plan before the kernel runs it, unchanged; " +
			"reads of hidden paths are not recorded ([log] filesystem_reads = true records them, at a cost on every open)"
	case "landlock-audit":
		return "Landlock's own denial records, from the kernel's audit"
	case "preload":
		return "reported by a library preloaded into the box's dynamically linked programs (LD_PRELOAD, from " + l.Preload +
			") and judged against this plan; static programs and direct system calls are not seen ([log] filesystem = \"complete\" sees them, at a cost on every call it watches)"
	case "complete", "auto":
		return "recorded, as the backend allows"
	case "":
		if p.Depth > 1 || p.Box.Outer != "" {
			return "not recorded inside another box (the outer box's log records what its policy refuses)"
		}
		if l.Off != "" {
			return "not recorded: " + l.Off
		}
		return "not recorded ([log] filesystem = false; agentbox learn records them for its run)"
	}
	return l.Filesystem
}
