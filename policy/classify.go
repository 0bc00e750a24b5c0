package policy

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/cache"
	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
)

// A project policy arrives with a repository, so the user who is asked to
// trust it must see what it really asks for: a grant inside the project is
// ordinary, a writable folder elsewhere in the home folder (~/.config,
// ~/.local/bin) or outside it, or a setting that loosens enforcement, the
// backend, seccomp or the network is not, and is marked with "!".

// Grant is one thing a policy layer asks for, classified.
type Grant struct {
	// Danger is true when the grant loosens the sandbox.
	Danger bool
	// Category is where a path lies ("inside the project", "elsewhere in
	// your home folder", "outside your home folder") or what a setting
	// does ("loosens seccomp", "tightens", "sets").
	Category string
	// Text is "key = value", escaped for the terminal.
	Text string
}

// String renders the grant as one line: "!" for a dangerous one, then the
// category and the text.
func (g Grant) String() string {
	mark := " "
	if g.Danger {
		mark = "!"
	}
	return mark + " " + g.Category + ": " + g.Text
}

// Categories of grants.
const (
	inProject   = "inside the project"
	inHome      = "elsewhere in your home folder"
	outsideHome = "outside your home folder"
	tightens    = "tightens"
	sets        = "sets"
	unchanged   = "unchanged"
)

// Baseline is what each setting (a scalar key, "network.mode") is without
// the policy being classified: the built-in defaults with your own
// configuration over them. A setting a policy gives the value it has
// anyway changes nothing, and is not marked, whatever that value is.
type Baseline map[string]string

// BaselineOf is the baseline the layers make, the last one winning.
func BaselineOf(layers []*Layer) Baseline {
	b := Baseline{}
	for k, e := range merge(layers).scalars {
		b[k] = e.Value
	}
	return b
}

// UserBaseline is the baseline a project policy is classified against:
// the built-in defaults and your own configuration (the defaults alone
// when it cannot be read).
func UserBaseline(env Env) Baseline {
	layers := []*Layer{Defaults()}
	if l, err := loadFile(env, "user", ConfigPath(env), true); err == nil {
		layers = append(layers, l)
	}
	return BaselineOf(layers)
}

// value is what base says key is, with the defaults that live in code
// rather than in the defaults layer (a tool's cache mode).
func (base Baseline) value(key string) string {
	if v, ok := base[key]; ok {
		return v
	}
	if tool, ok := strings.CutPrefix(key, "caches."); ok {
		if v, ok := base["caches.default"]; ok && tool != "default" {
			return v
		}
		return cache.Private
	}
	return ""
}

// sameSetting reports whether v is what key is anyway: the same value, or
// for a limit, zero and unset, which both mean unlimited.
func sameSetting(key, v, base string) bool {
	if v == base {
		return true
	}
	if strings.HasPrefix(key, "limits.") {
		return (v == "" || v == "0") && (base == "" || base == "0")
	}
	return false
}

// Classify lists what layer l asks for, classified against base (what
// each setting is without l), in a stable order: the paths it makes
// writable one by one, then the other lists, the settings and the
// providers it declares. env gives the home folder and the variables
// paths are expanded with.
func Classify(l *Layer, env Env, base Baseline) []Grant {
	if l == nil {
		return nil
	}
	var out []Grant
	add := func(danger bool, category, text string) {
		out = append(out, Grant{Danger: danger, Category: category, Text: text})
	}
	path := func(key string, e Entry) {
		add(pathGrant(key, e, env))
	}
	for _, e := range l.Lists["filesystem.writable"] {
		path("filesystem.writable", e)
	}
	for _, key := range []string{"filesystem.read_only", "filesystem.deny"} {
		for _, e := range l.Lists[key] {
			add(false, tightens, fmt.Sprintf("%s = %s", key, printable(e.Value)))
		}
	}
	joined := func(key string) string {
		var vals []string
		for _, e := range l.Lists[key] {
			vals = append(vals, printable(e.Value))
		}
		return key + " = " + strings.Join(vals, ", ")
	}
	for _, lk := range []struct {
		key, category string
		danger        bool
	}{
		{"network.allow", "loosens the network", true},
		{"network.unix_sockets", "loosens the network (host services behind these unix sockets answer the box)", true},
		{"network.deny", tightens, false},
		// The box's server becomes reachable from the host: any local
		// user or page can open it, and on localhost a page it serves
		// shares cookies with the host's other local services.
		{"network.publish", "opens a way in (the host's port reaches the box's server)", true},
		{"env.pass", "loosens the environment (passes these variables into the box)", true},
		{"env.deny", tightens, false},
		{"seccomp.allow", "loosens seccomp", true},
	} {
		if len(l.Lists[lk.key]) > 0 {
			add(lk.danger, lk.category, joined(lk.key))
		}
	}
	keys := make([]string, 0, len(l.Scalars))
	for k := range l.Scalars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := l.Scalars[k].Value
		danger, category, why := classifyScalar(k, v)
		if sameSetting(k, v, base.value(k)) {
			danger, category, why = false, unchanged, "already so without this policy"
		}
		if k == "network.upstream" {
			v = redact(v) // a password written in the URL is not shown
		}
		text := fmt.Sprintf("%s = %s", k, printable(v))
		if why != "" {
			text += ": " + why
		}
		add(danger, category, text)
	}
	for _, k := range sortedKeys(l.EnvSet) {
		add(false, sets, fmt.Sprintf("env.set.%s = (a value)", printable(k)))
	}
	for _, d := range l.Secrets {
		// The proxy sends the real value where the policy says, the
		// value of a file the box cannot read included: a policy that
		// names the hosts decides who gets the secret.
		from := "agentbox's environment"
		if d.File.Value != "" {
			from = printable(d.File.Value)
		}
		var hosts []string
		for _, h := range d.Hosts {
			hosts = append(hosts, printable(h.Value))
		}
		add(true, "sends a secret", fmt.Sprintf("network.secret %s (from %s) to %s", printable(d.Env), from, strings.Join(hosts, ", ")))
	}
	for _, p := range l.Providers {
		var cmds []string
		for _, c := range p.Commands {
			cmds = append(cmds, printable(c))
		}
		name := printable(p.Name)
		if p.Sandbox {
			add(true, "declares a provider", fmt.Sprintf("providers.%s: commands %s run confined with its writable folders, for any command named so", name, strings.Join(cmds, ", ")))
		} else {
			add(false, sets, fmt.Sprintf("providers.%s: commands %s", name, strings.Join(cmds, ", ")))
		}
		for _, e := range p.Writable {
			path("providers."+name+".writable", e)
		}
	}
	return out
}

// pathGrant classifies a writable path by where it leads once expanded and
// its links followed: in the policy's own folder, elsewhere in the home
// folder, or outside it.
func pathGrant(key string, e Entry, env Env) (bool, string, string) {
	text := fmt.Sprintf("%s = %s", key, printable(e.Value))
	p, err := (&resolver{env: env}).expand(e)
	if err != nil {
		return true, "cannot be placed", text + " (" + printable(err.Error()) + ")"
	}
	// Where it leads, links followed: a path inside the project that is
	// a link to a folder elsewhere is elsewhere.
	r := &resolver{env: env}
	real := r.realMaybe(p)
	switch {
	case real != p:
		text += " (" + printable(p) + ", a link to " + printable(real) + ")"
	case p != e.Value:
		text += " (" + printable(p) + ")"
	}
	base, home := e.Base, env.Home
	if base != "" {
		base = r.realMaybe(base)
	}
	if home != "" {
		home = r.realMaybe(home)
	}
	switch {
	case base != "" && plan.Within(real, base):
		return false, inProject, text
	case home != "" && plan.Within(real, home):
		return true, inHome, text
	}
	return true, outsideHome, text
}

// classifyScalar says whether a setting loosens the sandbox, its category,
// and a few words on what it does when that is not obvious.
func classifyScalar(k, v string) (bool, string, string) {
	if strings.HasPrefix(k, "caches.") {
		if v == cache.HostWritable {
			return true, "shares your own caches", "the box could change your own cache, which the tool uses outside the box later"
		}
		return false, sets, ""
	}
	switch k {
	case "sandbox.enforce":
		if v == plan.BestEffort {
			return true, "loosens enforcement", "runs the command unconfined when no backend can confine it"
		}
		return false, tightens, ""
	case "sandbox.backend":
		switch v {
		case "bwrap":
			return false, tightens, ""
		case "auto":
			return false, sets, ""
		}
		return true, "loosens the backend", "a backend weaker than bubblewrap, or one that cannot run here (with best-effort: unconfined)"
	case "sandbox.project_may_loosen":
		return v == "true", "loosens trust", ""
	case "network.mode":
		if v == plan.NetOpen {
			return true, "loosens the network", "the host's network"
		}
		return false, tightens, ""
	case "network.upstream":
		if v == "" || v == "none" {
			return false, sets, ""
		}
		// Every allowed connection goes through it: it sees each host
		// name and all plain HTTP, and gets the proxy password, which
		// "${NAME}" takes from any variable of agentbox's environment.
		return true, "loosens the network", "allowed hosts are reached through this proxy, which sees every host and all plain HTTP, and gets its password"
	case "tmp.mode":
		if v == plan.TmpHost {
			return true, "loosens /tmp", "the host's /tmp, shared with every program"
		}
		return false, sets, ""
	case "env.mode":
		if v == "inherit" {
			return true, "loosens the environment", "every variable reaches the box"
		}
		return false, tightens, ""
	case "filesystem.scan_limit":
		if n, err := strconv.Atoi(v); err == nil && n < hostexec.DefaultMaxDirs {
			return false, sets, "a smaller bound on the folders the search for what host programs run keeps: a run in a bigger tree is refused"
		}
		return false, sets, ""
	case "filesystem.ssh_keys":
		if v == "visible" {
			return true, "exposes your SSH private keys", "everything in the box can read and copy them"
		}
		return false, tightens, ""
	case "provider.name":
		switch v {
		case "none":
			return false, tightens, ""
		case "auto", "":
			return false, sets, ""
		}
		return true, "chooses the provider", "its folders become writable whatever the command"
	case "notice.backend":
		return false, sets, "how often a run says which backend confines it"
	case "limits.processes", "limits.open_files", "limits.memory", "limits.cpu_time", "limits.file_size":
		if v == "" || v == "0" {
			return true, "loosens limits", "unlimited"
		}
		return false, tightens, ""
	}
	return false, sets, ""
}

// Diff lists what changed between the grants of two versions of a policy:
// "+ " before what is new, "- " before what is gone; unchanged grants are
// left out.
func Diff(old, new []Grant) []string {
	had, has := map[string]bool{}, map[string]bool{}
	for _, g := range old {
		had[g.String()] = true
	}
	for _, g := range new {
		has[g.String()] = true
	}
	var out []string
	for _, g := range new {
		if !had[g.String()] {
			out = append(out, "+ "+g.String())
		}
	}
	for _, g := range old {
		if !has[g.String()] {
			out = append(out, "- "+g.String())
		}
	}
	if len(out) == 0 {
		out = append(out, "  (nothing it grants changed: only comments or layout)")
	}
	return out
}

// printable shows s as is when it holds only printable characters, and
// quoted otherwise: a policy must not be able to move the cursor, clear
// the lines or reorder the text (a right-to-left override) of the very
// message that asks the user to review it.
func printable(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// Escape makes text safe to print on a terminal: every character that is
// not printable (control characters and escape sequences, carriage
// returns, newlines, bidirectional overrides) and every byte that is not
// UTF-8 becomes a Go-style escape; the rest is kept. Names from the file
// system (a folder called "\x1b]0;…") and from policies pass through it
// before they reach the user's terminal. It is plan.Escape, which the
// readable plan uses.
func Escape(s string) string { return plan.Escape(s) }

// MissingWritable says, one line each, which of l's writable folders do not
// exist, and what a run does about each: makes it (in the policy's own
// folder, the project) or, elsewhere, refuses the run under require and
// skips it under best-effort, with the mkdir that makes it.
func MissingWritable(l *Layer, env Env) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, e := range l.Lists["filesystem.writable"] {
		p, err := (&resolver{env: env}).expand(e)
		if err != nil {
			continue // pathGrant says it cannot be placed
		}
		if _, err := env.FS.Lstat(p); err == nil {
			continue
		}
		if e.Base != "" && plan.Within(p, e.Base) && p != e.Base && !hiddenBelow(p, e.Base) {
			out = append(out, fmt.Sprintf("%s does not exist yet: a run makes it (0700)", printable(p)))
			continue
		}
		out = append(out, fmt.Sprintf("%s does not exist: a run is refused (under best-effort: not writable) until you run mkdir -p %s", printable(p), shellQuote(p)))
	}
	return out
}
