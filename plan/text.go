package plan

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// WriteText prints the plan as the readable table `agentbox plan` shows,
// fitted to width columns (Fit; 0 for no limit): layers, the backend and
// what it enforces, identity, every mount in order with the rule that
// asked for it, network, environment changes, limits, provider, skips and
// warnings. The backend adds its own lines after it.
func (p *Plan) WriteText(w io.Writer, width int) error {
	var b strings.Builder
	p.writeText(&b)
	return Fit(w, b.String(), width)
}

// writeText writes the plan's text with Fit's table marks, every name
// escaped.
func (p *Plan) writeText(w io.Writer) {
	e := Escape
	fmt.Fprintln(w, "layers:")
	for _, l := range p.Layers {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", e(l.Name), e(l.Status), e(l.File))
		if l.Note != "" {
			fmt.Fprintf(w, "  \t(%s)\n", e(l.Note))
		}
	}
	backend := p.Box.Backend
	switch {
	case p.Box.Outer != "":
		backend = "the outer box (" + p.Box.Outer + "): no box of its own can be made here: " + p.Box.Degraded
	case !p.Confined():
		backend = "none, UNCONFINED: " + p.Box.Degraded
	}
	fmt.Fprintf(w, "backend:   %s (requested %s), enforce %s\n", e(backend), e(p.Backend), e(p.Enforce))
	for _, why := range p.Box.Passed {
		fmt.Fprintf(w, "  passed over: %s\n", e(why))
	}
	fmt.Fprintf(w, "run:       %s\n", p.RunID)
	fmt.Fprintf(w, "identity:  uid %d gid %d home %s", p.Identity.UID, p.Identity.GID, e(p.Identity.Home))
	if p.Identity.Root() {
		fmt.Fprint(w, " (root: every capability dropped)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "command:   %s\n", escapeAll(p.Command))
	if strings.Join(p.Command, "\x00") != strings.Join(p.Args, "\x00") {
		fmt.Fprintf(w, "  (given:  %s)\n", escapeAll(p.Args))
	}
	prov := "none"
	if p.Provider.Name != "" {
		prov = p.Provider.Name
		if !p.Provider.Supported {
			prov += " (NOT verified inside the sandbox)"
		}
	}
	fmt.Fprintf(w, "provider:  %s — %s\n", e(prov), e(p.Provider.Reason))
	if p.Provider.Adjusted != "" {
		fmt.Fprintf(w, "  %s\n", e(p.Provider.Adjusted))
	}
	if len(p.Provider.ConfinedEnv) > 0 {
		fmt.Fprintf(w, "  confined, it gets %s\n", escapeAll(p.Provider.ConfinedEnv))
	}
	if s := p.Provider.State; s != nil {
		fmt.Fprintf(w, "  its settings: %s is merged into its copy %s before every run (the box never writes %s)\n", e(s.Host), e(s.Box), e(s.Host))
	}
	if p.Workspace.Root != "" {
		fmt.Fprintf(w, "workspace: %s in %s", e(p.Workspace.ID), e(p.Workspace.Root))
		if p.Workspace.Task != "" {
			fmt.Fprintf(w, ", task %s", e(p.Workspace.Task))
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
	fmt.Fprintf(w, "tmp:       %s\n", e(tmp))
	fmt.Fprintf(w, "cwd:       %s\n", e(p.Cwd))
	fmt.Fprintln(w, "mounts, in order (later ones cover earlier ones):")
	fmt.Fprintln(w, "  #\tstage\top\taccess\tpath\vfrom\tnote")
	for i, m := range p.Mounts {
		path := e(m.Path)
		if m.Source != "" && m.Source != m.Path {
			path = e(m.Source) + " -> " + path
		}
		fmt.Fprintf(w, "  %d\t%d %s\t%s\t%s\t%s\v%s\t%s\n", i+1, m.Stage, m.Stage, m.Op, m.Access, path, e(m.Origin.String()), e(m.Note))
	}
	fmt.Fprintf(w, "  %d\t7 chdir\tchdir\t\t%s\n", len(p.Mounts)+1, e(p.Cwd))
	net := p.Network.Mode
	for _, r := range p.Box.Rules {
		if r.Rule == "network" && r.How != "" {
			net += " (" + r.How + ")"
			break
		}
	}
	fmt.Fprintf(w, "network:   %s\n", e(net))
	if p.Network.Implied != "" {
		fmt.Fprintf(w, "  mode:    %s\n", e(p.Network.Implied))
	}
	if p.Network.Mode == NetAllowlist {
		if len(p.Network.Allow) == 0 {
			fmt.Fprintln(w, "  allow:   (nothing: every connection is denied)")
		}
	}
	if len(p.Network.Allow) > 0 {
		fmt.Fprintf(w, "  allow:   %s\n", e(strings.Join(p.Network.Allow, ", ")))
	}
	if len(p.Network.Deny) > 0 {
		fmt.Fprintf(w, "  deny:    %s\n", e(strings.Join(p.Network.Deny, ", ")))
	}
	if p.Network.Mode == NetAllowlist {
		for _, f := range p.Network.Forwards() {
			port := f[strings.LastIndex(f, ":")+1:]
			fmt.Fprintf(w, "  forward: 127.0.0.1:%s in the box -> %s on the host\n", e(port), e(f))
		}
	}
	socks := "none of the host's outside the writable roots"
	if len(p.Network.UnixSockets) > 0 {
		socks = "only " + strings.Join(p.Network.UnixSockets, ", ") + " of the host's outside the writable roots"
	}
	for _, r := range p.Box.Rules {
		if r.Rule == "unix-sockets" && r.How != "" {
			socks += " (" + string(r.Level) + ": " + r.How + ")"
		}
	}
	fmt.Fprintf(w, "  unix sockets: %s\n", socks)
	p.Network.writeText(w)
	fmt.Fprintf(w, "env:       %s", e(p.Env.Mode))
	if len(p.Env.Kept) > 0 {
		fmt.Fprintf(w, "; kept (the provider's own key): %s", e(strings.Join(p.Env.Kept, ", ")))
	}
	if len(p.Env.Removed) > 0 {
		fmt.Fprintf(w, "; removed: %s", e(strings.Join(p.Env.Removed, ", ")))
	}
	if len(p.Env.Set) > 0 {
		var keys []string
		for k := range p.Env.Set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "; set: %s", e(strings.Join(keys, ", ")))
	}
	fmt.Fprintln(w)
	p.writeCaches(w)
	if l := p.Limits; l != (Limits{}) {
		fmt.Fprintf(w, "limits:    processes %d, open files %d, memory %d bytes, cpu %ds, file size %d bytes (0 = unlimited)\n",
			l.Processes, l.OpenFiles, l.Memory, l.CPUTime, l.FileSize)
		for _, r := range p.Box.Rules {
			if r.Rule == "limits" {
				fmt.Fprintf(w, "  %s: %s: %s\n", e(r.Path), r.Level, e(r.How))
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
	fmt.Fprintf(w, "log:       %s\n", e(log))
	if p.Log.Enabled {
		fmt.Fprintf(w, "  filesystem refusals: %s\n", filesystemLog(p))
	}
	p.HostExec.writeText(w)
	if len(p.Skipped) > 0 {
		fmt.Fprintln(w, "not applied:")
		for _, s := range p.Skipped {
			fmt.Fprintf(w, "  %s: %s (%s)\n", e(s.Path), e(s.Reason), e(s.Origin.String()))
		}
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(w, "WARNING:   %s\n", e(warn))
	}
}

// writeText prints the upstream proxy, the published ports, the secrets
// and the intercepted hosts: never a password, a value or a placeholder.
func (n Network) writeText(w io.Writer) {
	if u := n.Upstream; u != nil {
		auth := "no authentication"
		if u.Auth != "" {
			auth = u.Auth
		}
		fmt.Fprintf(w, "  upstream: %s (%s; %s): allowed hosts are reached through it, and it resolves their names\n", u.URL, auth, u.Origin)
		if len(u.NoProxy) > 0 {
			fmt.Fprintf(w, "    direct: %s (NO_PROXY)\n", strings.Join(u.NoProxy, ", "))
		}
		if len(n.ProxyVars) > 0 {
			var names []string
			for _, v := range n.ProxyVars {
				names = append(names, strings.TrimSuffix(v, ":"))
			}
			slices.Sort(names)
			fmt.Fprintf(w, "    proxy variables: %s held its credentials; in the box they name agentbox's proxy\n", strings.Join(names, ", "))
		}
	}
	for _, pub := range n.Publish {
		host := pub.Addr
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		fmt.Fprintf(w, "  publish: %s:%d on the host -> 127.0.0.1:%d in the box (%s)\n", host, pub.Port, pub.BoxPort, pub.Origin)
	}
	for _, s := range n.Secrets {
		from := "agentbox's environment"
		if s.File != "" {
			from = s.File + ", hidden in the box"
		}
		fmt.Fprintf(w, "  secret:  %s holds a placeholder in the box; the proxy puts the real value (from %s) in on TLS to %s only (%s)\n",
			s.Env, from, strings.Join(s.Hosts, ", "), s.Origin)
	}
	if len(n.Intercept) > 0 {
		fmt.Fprintf(w, "  intercepted: %s: TLS terminated with this run's own certificate authority, which only the box trusts; every other host is tunnelled unread\n",
			strings.Join(n.Intercept, ", "))
	}
}

// escapeAll escapes each word of a command line and joins them with spaces.
func escapeAll(words []string) string {
	out := make([]string, len(words))
	for i, s := range words {
		out[i] = Escape(s)
	}
	return strings.Join(out, " ")
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
