package refusal

import (
	"net"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/plan"
)

// Fix is the smallest policy change that would allow a refusal.
type Fix struct {
	// Key is the policy key the change adds a value to
	// ("filesystem.writable", "network.allow", "sandbox.backend"); ""
	// when no policy change allows the refusal.
	Key string `json:"key,omitempty"`
	// Value is what it adds, as a policy file spells it ("~/.npm").
	Value string `json:"value,omitempty"`
	// Flag is the same change on the command line ("--writable ~/.npm").
	Flag string `json:"flag,omitempty"`
	// Create says the folder does not exist yet: a writable folder must.
	Create string `json:"create,omitempty"`
	// Risky says that what the change opens is something a host program
	// runs or obeys later, or a secret, or more than the one refusal:
	// only a person who knows why should make it.
	Risky bool `json:"risky"`
	// Why says what the change opens, or why nothing allows the refusal.
	Why string `json:"why"`
	// Host says the host's own permissions refuse it outside the box too:
	// the box is not why it failed.
	Host bool `json:"host,omitempty"`
}

// String is how the summary and the log show the fix.
func (f Fix) String() string {
	risk := "safe"
	if f.Risky {
		risk = "risky"
	}
	if f.Host {
		return "the host refuses it too, outside the box: " + f.Why
	}
	if f.Key == "" {
		return "nothing a policy adds allows it (" + risk + "): " + f.Why
	}
	s := f.Flag
	if f.Create != "" {
		s = "mkdir " + f.Create + ", then " + s
	}
	return s + " (" + risk + ": " + f.Why + ")"
}

// Advise returns the smallest change that would allow op on p, which
// the plan's mount m refused. exists tells whether a path exists on the
// host (a writable root must); nil takes every path as existing.
func Advise(pl *plan.Plan, op fslog.Op, p string, m plan.Mount, exists func(string) bool) Fix {
	if exists == nil {
		exists = func(string) bool { return true }
	}
	origin := m.Origin.Key
	if fix, ok := kernelFix(pl, p); ok {
		return fix
	}
	for _, own := range ownFolders(pl) {
		if plan.Within(p, own) {
			// Where the home folder is read-only no mount names it, yet
			// a run with it writable protects it all the same.
			return Fix{Risky: true, Why: "always protected (agentbox's own configuration and state, with the after-run check's records): the box must never write it, so no policy makes it writable"}
		}
	}
	switch {
	case strings.HasPrefix(origin, "always: "):
		return Fix{Risky: true, Why: "always protected (" + strings.TrimPrefix(origin, "always: ") +
			"): a host program runs or obeys it later, so no policy makes it writable"}
	case m.Stage == plan.StageDeny:
		return Fix{Risky: true, Why: "hidden by " + m.Origin.String() + "; only taking that entry out shows it, and it may hold secrets"}
	case m.Stage == plan.StageWorkspace:
		return Fix{Risky: true, Why: "it belongs to another workspace; run in that workspace instead (--workspace ID)"}
	case m.Stage == plan.StageReadOnly:
		return Fix{Risky: true, Why: "kept read-only by " + m.Origin.String() + "; only taking that entry out allows it"}
	case m.Access == plan.ReadWrite && pl.Box.Backend == landlock.Backend:
		// A writable folder that Landlock left unchangeable to keep a
		// read-only path below it read-only.
		return Fix{Key: "sandbox.backend", Value: "bwrap", Flag: "--backend bwrap",
			Why: "Landlock cannot keep the read-only paths in " + tilde(pl, m.Path) + " read-only without making the folders above them unchangeable; bubblewrap can"}
	}
	dir, create, why := writableFor(pl, op, p, exists)
	if dir == "" {
		return Fix{Risky: true, Why: why}
	}
	if fix, ok := kernelFix(pl, dir); ok {
		return fix
	}
	f := Fix{Key: "filesystem.writable", Value: tilde(pl, dir), Flag: "--writable " + tilde(pl, dir), Why: why}
	if create {
		f.Create = f.Value
	}
	if risky, rwhy := HostExecuted(pl, dir); risky {
		f.Risky, f.Why = true, rwhy
	}
	return f
}

// ownFolders are agentbox's own folders the plan names: its state folder
// and the folder of the user's policy file.
func ownFolders(pl *plan.Plan) []string {
	var out []string
	if pl.HostExec.State != "" {
		out = append(out, pl.HostExec.State)
	}
	for _, l := range pl.Layers {
		if i := strings.LastIndexAny(l.File, `/\`); l.Name == "user" && i > 0 {
			out = append(out, l.File[:i]) // either system's separator
		}
	}
	return out
}

// kernelFix is the answer for a path that is, lies in or holds a kernel
// interface (KernelInterface): no policy change.
func kernelFix(pl *plan.Plan, p string) (Fix, bool) {
	if k, why := KernelInterface(pl, p); k {
		return Fix{Risky: true, Why: why}, true
	}
	return Fix{}, false
}

// containers are folders of the home folder that hold one folder per
// program: the program's own folder is what to make writable.
var containers = []string{".config", ".cache", ".local", ".local/share", ".local/state", ".var/app"}

// caches are the package and build caches of everyday tools, relative to
// the home folder.
var caches = map[string]string{
	".npm": "npm's package cache", ".yarn": "yarn's cache", ".pnpm-store": "pnpm's store",
	".local/share/pnpm": "pnpm's store", ".cache": "the user cache folder", "go/pkg/mod": "Go's module cache",
	".cargo/registry": "cargo's registry cache", ".cargo/git": "cargo's git cache", ".m2/repository": "Maven's repository",
	".gradle/caches": "Gradle's caches", ".bun/install/cache": "bun's cache", ".nuget/packages": "NuGet's packages",
	".deno": "Deno's cache", ".cache/go-build": "Go's build cache", ".cache/pip": "pip's cache",
}

// cacheNames returns the caches' folders, the longest first, so that a
// cache inside another (~/.cache/pip in ~/.cache) is found first.
func cacheNames() []string {
	names := make([]string, 0, len(caches))
	for c := range caches {
		names = append(names, c)
	}
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
	return names
}

// writableFor returns the smallest folder whose being writable allows op
// on p, whether it must be made first, and what it is.
func writableFor(pl *plan.Plan, op fslog.Op, p string, exists func(string) bool) (string, bool, string) {
	home := pl.Identity.Home
	// The folder the call changes: a new entry's, or the file's own
	// (programs replace files by renaming a new one over them).
	dir := path.Dir(p)
	if home != "" && plan.Within(p, home) && p != home {
		rel := strings.TrimPrefix(p, home+"/")
		for _, c := range cacheNames() {
			what := caches[c]
			if rel == c || strings.HasPrefix(rel, c+"/") {
				if c == ".cache" {
					break // one program's folder in it, below
				}
				dir := path.Join(home, c)
				return dir, !exists(dir), what + ": the box may add to it, and the tool uses what it finds there outside the box too"
			}
		}
		parts := strings.Split(rel, "/")
		n := 1
		for _, c := range containers {
			cp := strings.Split(c, "/")
			if len(parts) > len(cp) && strings.Join(parts[:len(cp)], "/") == c {
				n = max(n, len(cp)+1)
			}
		}
		if n >= len(parts) && !(op == fslog.Write || op == fslog.Truncate || op == fslog.Chmod || op == fslog.Chown || op == fslog.Utime || op == fslog.Xattr) {
			// A new entry directly in the home folder (or in ~/.config):
			// only the whole folder being writable allows it.
			parent := path.Join(home, strings.Join(parts[:len(parts)-1], "/"))
			return "", false, "it would be created directly in " + tilde(pl, parent) + ", which only making that whole folder writable allows (--writable " + tilde(pl, parent) + " --allow-broad-writable)"
		}
		top := path.Join(home, strings.Join(parts[:min(n, len(parts))], "/"))
		return top, !exists(top), "the folder " + tilde(pl, top) + " in your home folder"
	}
	if op == fslog.Mkdir || op == fslog.Create || op == fslog.Symlink || op == fslog.Link || op == fslog.Remove || op == fslog.Rmdir || op == fslog.Rename {
		return dir, false, "the folder " + dir
	}
	return dir, false, "the folder " + dir + " of " + path.Base(p)
}

// tilde writes p with ~ for the home folder.
func tilde(pl *plan.Plan, p string) string {
	home := pl.Identity.Home
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

// registries are the package registries and module proxies of everyday
// tools: what a build fetches from.
var registries = []string{
	"registry.npmjs.org", "registry.yarnpkg.com", "proxy.golang.org", "sum.golang.org", "storage.googleapis.com",
	"pypi.org", "files.pythonhosted.org", "crates.io", "index.crates.io", "static.crates.io",
	"rubygems.org", "repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "api.nuget.org",
	"registry.bun.sh", "jsr.io", "deno.land",
}

// AdviseNet returns the smallest change that would allow a connection to
// target ("host:port") that the allowlist refused, for the reason the
// proxy gave.
func AdviseNet(pl *plan.Plan, target, reason string) Fix {
	if strings.HasPrefix(reason, "matches deny rule") {
		return Fix{Risky: true, Why: "it " + reason + ", and a deny rule wins over every allow; only taking it out of network.deny allows it"}
	}
	if strings.HasPrefix(reason, "TLS handshake with the box's client failed") {
		return Fix{Why: "no policy change: the client in the box does not trust the run's certificate authority; it must read the box's bundle (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, the system's) and not pin the host's certificate"}
	}
	if strings.HasPrefix(reason, "exfiltration attempt") {
		// The box sent a secret's placeholder where the secret may not
		// go: nothing should allow that.
		return Fix{Risky: true, Why: "no policy change should allow it: the box sent a secret's placeholder where the secret may not go; network.secret says which hosts get it"}
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		host, port = target, ""
	}
	// A request a request rule did not allow: "no allow rule matches
	// POST /path" or "POST /path matches deny rule ...".
	if what, ok := strings.CutPrefix(reason, "no allow rule matches "); ok && strings.Contains(what, " /") {
		method, path, _ := strings.Cut(what, " ")
		value := method + " " + host
		if n, _ := strconv.Atoi(port); port != "" && n != 80 && n != 443 {
			value = method + " " + net.JoinHostPort(host, port)
		}
		value += path
		return Fix{Key: "network.allow", Value: value, Flag: "--allow '" + value + "'", Risky: true,
			Why: "the box could send " + method + " requests to " + host + path}
	}
	if strings.Contains(reason, " matches deny rule ") {
		return Fix{Risky: true, Why: "the request " + reason + ", and a deny rule wins over every allow; only taking it out of network.deny allows it"}
	}
	value := host
	if n, _ := strconv.Atoi(port); port != "" && n != 80 && n != 443 {
		value = net.JoinHostPort(host, port)
	}
	f := Fix{Key: "network.allow", Value: value, Flag: "--allow " + value,
		Risky: true, Why: "the box could send what it reads to " + host}
	for _, k := range registries {
		if strings.EqualFold(k, host) {
			f.Risky, f.Why = false, host+" is a package registry or the agent's own service"
		}
	}
	return f
}
