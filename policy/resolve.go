package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/provider"
	"github.com/agentbox/agentbox/seccomp"
	"github.com/agentbox/agentbox/trace"
)

// Options are resolution choices that are not policy values.
type Options struct {
	// AllowBroad permits a writable root that is / or holds the home folder.
	AllowBroad bool
	// Rand is where the secrets' placeholders are drawn from;
	// crypto/rand when nil. Tests give a fixed one.
	Rand io.Reader
}

// merged is the union of all layers: the last layer wins for a single
// value, lists are unioned in layer order.
type merged struct {
	scalars   map[string]Entry
	lists     map[string][]Entry
	envSet    map[string]Entry
	providers []ProviderDecl
	secrets   []SecretDecl
}

func merge(layers []*Layer) merged {
	m := merged{scalars: map[string]Entry{}, lists: map[string][]Entry{}, envSet: map[string]Entry{}}
	for _, l := range layers {
		for k, e := range l.Scalars {
			m.scalars[k] = e
		}
		for _, k := range listKeys {
			m.lists[k] = append(m.lists[k], l.Lists[k]...)
		}
		for k, e := range l.EnvSet {
			m.envSet[k] = e
		}
		m.providers = append(m.providers, l.Providers...)
	}
	m.secrets = mergeSecrets(layers)
	return m
}

// resolver carries the world and the merged layers through resolution.
type resolver struct {
	pinned        map[string]*Layer  // trusted project policies, by file: their paths' links are checked (checkPinned)
	linked        []linkedEntry      // the other layers' paths that lead through links (checkLinked)
	linkFree      map[string]Entry   // the paths walked part by part and found without a link (real)
	changed       []linkedEntry      // those found leading through a link after all, when resolved (checkLinked)
	proxyCreds    []string           // network none: the user's proxy credentials, kept from the box
	registry      *provider.Registry // when a provider is detected or chosen
	all           *provider.Registry // every provider, declared ones included
	providerHome  string             // the provider's own folder, if any
	homeVar       string             // a variable to set to homeVarValue inside the box
	homeVarValue  string
	userHomeVar   bool               // the user set the provider's folder variable (CLAUDE_CONFIG_DIR)
	declared      map[string][]Entry // provider writable entries declared in policies, by "name\x00value"
	cachesMasked  bool               // the workspace stage bound the private caches already
	socketOrigins []plan.Origin      // the rule of each of the plan's Network.UnixSockets
	runtimeDirs   []string           // the runtime folders the box gets empty ones of its own for
	env           Env
	m             merged
	opts          Options
	p             *plan.Plan
	defaults      []denied          // defaultDenied, once worked out
	goEnv         map[string]string // the go command's settings file, once read
}

// Resolve turns layers into a plan for command, in the world env.
func Resolve(layers []*Layer, env Env, command []string, opts Options) (*plan.Plan, error) {
	if len(command) == 0 || command[0] == "" {
		return nil, &policyError{where: "command", msg: "empty command: give the command to run after --"}
	}
	r := &resolver{env: env, m: merge(layers), opts: opts, p: &plan.Plan{
		GOOS:     env.GOOS,
		Identity: plan.Identity{UID: env.UID, GID: env.GID, Home: env.Home},
		Args:     append([]string(nil), command...),
		Command:  append([]string(nil), command...),
		Depth:    depth(env),
	}}
	r.pinned = map[string]*Layer{}
	for _, l := range layers {
		r.p.Layers = append(r.p.Layers, plan.Layer{Name: l.Name, File: l.File, Status: l.Status, Note: l.Note})
		if l.Pinned && l.File != "" {
			r.pinned[l.File] = l
		}
	}
	steps := []func() error{
		r.modes, r.allowedSockets, r.provider, r.workspace, r.cwd, r.rootStage, r.runtimeStage, r.tmpStage,
		r.workspaceStage, r.writableStage, r.readOnlyStage, r.denyStage, r.socketStage,
		r.secretHosts, r.caBundles, r.cacheReads, r.environment, r.limits, r.confinedCommand, r.auditLog, r.notice,
		r.checkLinked,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := plan.Validate(r.p); err != nil {
		return nil, fmt.Errorf("internal error: resolved plan is invalid: %w", err)
	}
	return r.p, nil
}

func (r *resolver) scalar(key string) string { return r.m.scalars[key].Value }

func (r *resolver) modes() error {
	r.p.Enforce = r.scalar("sandbox.enforce")
	r.p.Backend = r.scalar("sandbox.backend")
	r.p.Tmp.Mode = r.scalar("tmp.mode")
	r.p.Network.Mode = r.scalar("network.mode")
	for _, key := range []string{"network.allow", "network.deny"} {
		for _, e := range r.m.lists[key] {
			if err := netproxy.CheckEntry(e.Value); err != nil {
				return originError(e.Origin, fmt.Sprintf("%q: %v", e.Value, err))
			}
			if key == "network.allow" {
				r.p.Network.Allow = appendNew(r.p.Network.Allow, e.Value)
			} else {
				r.p.Network.Deny = appendNew(r.p.Network.Deny, e.Value)
			}
		}
	}
	if err := r.allowMode(); err != nil {
		return err
	}
	if err := r.network(); err != nil {
		return err
	}
	for _, f := range r.p.Network.Forwards() {
		if strings.HasSuffix(f, ":"+strconv.Itoa(plan.ProxyPort)) {
			return &policyError{where: "network.allow", msg: fmt.Sprintf("%q: port %d is the proxy's own port in the box", f, plan.ProxyPort)}
		}
	}
	for _, e := range r.m.lists["seccomp.allow"] {
		if err := seccomp.Check([]string{e.Value}); err != nil {
			return originError(e.Origin, err.Error())
		}
		r.p.Seccomp = appendNew(r.p.Seccomp, e.Value)
	}
	return nil
}

func appendNew(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}

// expand turns an entry's value into a clean absolute path: ~, $HOME and
// ${VAR} expand; a relative path is relative to the policy file's folder and
// may not climb out of it.
func (r *resolver) expand(e Entry) (string, error) {
	v := e.Value
	if v == "" {
		return "", originError(e.Origin, "empty path")
	}
	if v == "~" || strings.HasPrefix(v, "~/") {
		v = r.env.Home + v[1:]
	} else if strings.HasPrefix(v, "~") {
		return "", originError(e.Origin, fmt.Sprintf("%q: only ~ and ~/ are expanded", e.Value))
	}
	var missing string
	v = expandVars(v, func(name string) string {
		if name == "HOME" {
			return r.env.Home
		}
		val := r.env.Getenv(name)
		if val == "" && missing == "" {
			missing = name
		}
		return val
	})
	if missing != "" {
		return "", originError(e.Origin, fmt.Sprintf("%q: variable %s is not set", e.Value, missing))
	}
	if strings.ContainsRune(v, 0) {
		return "", originError(e.Origin, "path holds a NUL byte")
	}
	if !filepath.IsAbs(v) {
		if e.Base == "" {
			return "", originError(e.Origin, fmt.Sprintf("%q: relative path; want an absolute path or ~/", e.Value))
		}
		joined := filepath.Join(e.Base, v)
		if !plan.Within(joined, e.Base) {
			return "", originError(e.Origin, fmt.Sprintf("%q: a relative path may not leave the policy's folder %s", e.Value, e.Base))
		}
		v = joined
	}
	v = filepath.Clean(v)
	if err := r.checkPinned(e, v); err != nil {
		return "", err
	}
	r.noteLinks(e, v)
	return v, nil
}

// expandVars expands $NAME and ${NAME}.
func expandVars(s string, get func(string) string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		j := i + 1
		var name string
		if s[j] == '{' {
			end := strings.IndexByte(s[j:], '}')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name = s[j+1 : j+end]
			i = j + end
		} else {
			k := j
			for k < len(s) && (s[k] == '_' || s[k] >= 'A' && s[k] <= 'Z' || s[k] >= 'a' && s[k] <= 'z' || k > j && s[k] >= '0' && s[k] <= '9') {
				k++
			}
			if k == j {
				b.WriteByte(s[i])
				continue
			}
			name = s[j:k]
			i = k - 1
		}
		b.WriteString(get(name))
	}
	return b.String()
}

// real resolves symlinks of a path that must exist.
func (r *resolver) real(p string) (string, error) {
	real, err := r.env.FS.EvalSymlinks(p)
	if err == nil && real != p {
		// Walked part by part without a link a moment ago (noteLinks),
		// and through one now: something on its way was swapped
		// meanwhile. The stages use what they resolve; checkLinked
		// refuses the plan.
		if e, ok := r.linkFree[p]; ok {
			r.changed = append(r.changed, linkedEntry{e: e, path: p, links: [][2]string{{p, real}}})
		}
	}
	return real, err
}

// unresolvable says whether a read-only or deny path p that could not be
// resolved (err) may be taken as missing: yes when it does not exist, or
// when it lies outside every writable root, as named and as far as its
// links resolve (a box cannot change what keeps it from there). Inside
// one, any other failure (a link that stopped being one half way, a loop,
// a folder closed to the user) is something a box can make for the moment
// the plan is made and undo while it runs, so the plan is refused rather
// than made without the rule.
func (r *resolver) unresolvable(p string, err error, o plan.Origin) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || !r.inHostWritable(p) && !r.inHostWritable(r.realMaybe(p)) {
		return nil
	}
	return originError(o, fmt.Sprintf("%s cannot be followed (%v) inside a writable folder, where a box may be changing it: nothing ran; run again, or look at what is on its way",
		Escape(p), err))
}

// realMaybe resolves the symlinks of the longest existing prefix of p, for a
// path agentbox may still have to create.
func (r *resolver) realMaybe(p string) string {
	rest := []string{}
	cur := p
	for {
		if real, err := r.env.FS.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

func (r *resolver) provider() error {
	reg := provider.NewRegistry()
	r.declared = map[string][]Entry{}
	for _, d := range r.m.providers {
		var w []string
		for _, e := range d.Writable {
			w = append(w, e.Value)
			r.declared[d.Name+"\x00"+e.Value] = append(r.declared[d.Name+"\x00"+e.Value], e)
		}
		reg.Declare(provider.Provider{Name: d.Name, Title: d.Name, Commands: d.Commands, Writable: w, Supported: d.Sandbox})
	}
	r.all = reg
	name := r.scalar("provider.name")
	origin := r.m.scalars["provider.name"].Origin
	switch name {
	case "none":
		r.p.Provider = plan.Provider{Reason: "turned off by " + origin.String()}
		return nil
	case "auto", "":
		d := reg.Detect(r.p.Command)
		if d.Name == "" {
			r.p.Provider = plan.Provider{Reason: d.Reason}
			return nil
		}
		p, _ := reg.Lookup(d.Name)
		r.p.Provider = plan.Provider{Name: p.Name, Reason: "detected from " + d.Reason, Supported: p.Supported, Index: d.Index}
	default:
		p, ok := reg.Lookup(name)
		if !ok {
			var names []string
			for _, p := range reg.List() {
				names = append(names, p.Name)
			}
			return originError(origin, fmt.Sprintf("unknown provider %q (known: %s, none, auto)", name, strings.Join(names, ", ")))
		}
		r.p.Provider = plan.Provider{Name: p.Name, Reason: "chosen by " + origin.String(), Supported: p.Supported, Index: reg.Detect(r.p.Command).Index}
	}
	r.registry = reg
	if pr, ok := r.providerInfo(); ok && pr.Supported && r.p.Network.Mode == plan.NetAllowlist {
		// The domains the provider needs come first; a policy's allow adds
		// to them and its deny still wins.
		allow := append([]string(nil), pr.Domains...)
		for _, a := range r.p.Network.Allow {
			allow = appendNew(allow, a)
		}
		r.p.Network.Allow = allow
	}
	return nil
}

func (r *resolver) providerInfo() (provider.Provider, bool) {
	if r.registry == nil || r.p.Provider.Name == "" {
		return provider.Provider{}, false
	}
	pr, ok := r.registry.Lookup(r.p.Provider.Name)
	if ok && r.userHomeVar && pr.Config != "" {
		// The user's own folder variable: the CLI's configuration in it is
		// the one used outside the box too (see providerState).
		pr.ReadOnly = append(pr.ReadOnly, filepath.Base(pr.Config))
	}
	return pr, ok
}

func (r *resolver) workspace() error {
	id := r.m.scalars["workspace.id"]
	task := r.m.scalars["workspace.task"]
	if id.Value == "" {
		if task.Value != "" {
			return originError(task.Origin, "a task needs a workspace: set workspace.id or --workspace")
		}
		return nil
	}
	rootEntry, ok := r.m.scalars["workspace.root"]
	if !ok || rootEntry.Value == "" {
		rootEntry = Entry{Value: "~/agent-work", Origin: plan.Origin{Key: "default workspace.root"}}
	}
	root, err := r.expand(rootEntry)
	if err != nil {
		return err
	}
	root = r.realMaybe(root)
	if root == "/" || plan.Within(r.env.Home, root) {
		return originError(rootEntry.Origin, fmt.Sprintf("%s: the workspace root is hidden as a whole, so it cannot be / or hold the home folder", root))
	}
	ws := plan.Workspace{Root: root, ID: id.Value, Task: task.Value,
		Dir: filepath.Join(root, id.Value), RepoDir: filepath.Join(root, ".repos", id.Value)}
	prep := func(p string, o plan.Origin) {
		r.p.Prepare = append(r.p.Prepare, plan.Prepare{Path: p, Mode: 0o700, Origin: o})
	}
	prep(root, rootEntry.Origin)
	prep(ws.Dir, id.Origin)
	prep(filepath.Join(root, ".repos"), id.Origin)
	prep(ws.RepoDir, id.Origin)
	if task.Value != "" {
		ws.TaskDir = filepath.Join(ws.Dir, task.Value)
		prep(ws.TaskDir, task.Origin)
	}
	r.p.Workspace = ws
	return nil
}

// hiddenByWorkspace reports whether p lies in the masked workspace root but
// outside the current workspace's folders.
func (r *resolver) hiddenByWorkspace(p string) bool {
	ws := r.p.Workspace
	if ws.Root == "" || !plan.Within(p, ws.Root) {
		return false
	}
	return !plan.Within(p, ws.Dir) && !plan.Within(p, ws.RepoDir)
}

// projectRoot is the git top-level of the working directory, or the
// working directory itself.
func (r *resolver) projectRoot() (string, string) {
	cwd := r.realMaybe(r.env.Cwd)
	for dir := cwd; ; dir = filepath.Dir(dir) {
		if _, err := r.env.FS.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir, "default: git top-level of the working directory"
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return cwd, "default: the working directory"
}

// projectTop is the project the run is about for the registry: the git
// top-level of the working directory, or the working directory.
func (r *resolver) projectTop() string {
	dir, _ := r.projectRoot()
	return dir
}

func (r *resolver) cwd() error {
	ws := r.p.Workspace
	switch {
	case ws.TaskDir != "":
		r.p.Cwd = ws.TaskDir
	default:
		r.p.Cwd = r.realMaybe(r.env.Cwd)
		if ws.Root != "" && r.hiddenByWorkspace(r.p.Cwd) {
			r.p.Cwd = ws.Dir
		}
	}
	return nil
}

func (r *resolver) add(m plan.Mount) { r.p.Mounts = append(r.p.Mounts, m) }

func (r *resolver) rootStage() error {
	def := plan.Origin{Key: "default"}
	r.add(plan.Mount{Stage: plan.StageRoot, Op: plan.ROBind, Path: "/", Access: plan.ReadOnly, Origin: def})
	r.add(plan.Mount{Stage: plan.StageRoot, Op: plan.Dev, Path: "/dev", Access: plan.ReadWrite, Origin: def})
	r.add(plan.Mount{Stage: plan.StageRoot, Op: plan.Proc, Path: "/proc", Access: plan.ReadWrite, Origin: def})
	return nil
}

func (r *resolver) tmpStage() error {
	origin := r.m.scalars["tmp.mode"].Origin
	// The folder of every workspace's temporary folder is the user's own,
	// and hidden in the box before /tmp is set up (the box's own folder is
	// bound there from its descriptor). Under /tmp (a home folder there),
	// replacing /tmp hides it already, but for the host's /tmp: then it is
	// hidden after /tmp, its parent.
	var hide *plan.Mount
	if r.env.GOOS != "windows" {
		r.p.Tmp.Base = r.prepareTmpBase(origin)
		hide = &plan.Mount{Stage: plan.StageTmp, Op: plan.HideDir, Path: r.p.Tmp.Base, Access: plan.Hidden, Origin: origin, Note: "the temporary folders of every workspace"}
	}
	underTmp := hide != nil && plan.Within(hide.Path, "/tmp")
	if hide != nil && !underTmp {
		r.add(*hide)
	}
	if underTmp && r.p.Tmp.Mode == plan.TmpHost {
		defer r.add(*hide)
	}
	switch r.p.Tmp.Mode {
	case plan.TmpPrivate:
		r.add(plan.Mount{Stage: plan.StageTmp, Op: plan.Tmpfs, Path: "/tmp", Access: plan.ReadWrite, Origin: origin, Note: "fresh and empty for this run"})
	case plan.TmpHost:
		r.add(plan.Mount{Stage: plan.StageTmp, Op: plan.Bind, Path: "/tmp", Access: plan.ReadWrite, Origin: origin, Note: "the host's /tmp, shared with everything"})
	default:
		id := r.workspaceKey()
		base := r.p.Tmp.Base
		if r.env.GOOS == "windows" {
			// %TEMP% is the user's own there.
			tmp := r.env.TempDir
			if tmp == "" {
				tmp = "/tmp"
			}
			owner := strconv.Itoa(r.env.UID)
			if r.env.User != "" {
				owner = r.env.User // UID is -1 for everyone on Windows
			}
			base = filepath.Join(r.realMaybe(tmp), "agentbox-"+owner)
			r.p.Prepare = append(r.p.Prepare, plan.Prepare{Path: base, Mode: 0o700, Origin: origin})
		}
		r.p.Tmp.HostDir = filepath.Join(base, id)
		r.p.Prepare = append(r.p.Prepare, plan.Prepare{Path: r.p.Tmp.HostDir, Mode: 0o700, Origin: origin, Private: true})
		r.add(plan.Mount{Stage: plan.StageTmp, Op: plan.Bind, Source: r.p.Tmp.HostDir, Path: "/tmp", Access: plan.ReadWrite, Origin: origin, Note: "shared by workspace " + id})
	}
	return nil
}

// workspaceKey names the workspace a run belongs to, for its /tmp and its
// private caches: the workspace id, else the project's folder name and a
// hash of its path.
func (r *resolver) workspaceKey() string {
	if id := r.p.Workspace.ID; id != "" {
		return id
	}
	root, _ := r.projectRoot()
	sum := sha256.Sum256([]byte(root))
	return sanitize(filepath.Base(root)) + "-" + hex.EncodeToString(sum[:4])
}

func sanitize(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c == '-' || c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 || strings.HasPrefix(b.String(), ".") {
		return "root"
	}
	return b.String()
}

func (r *resolver) workspaceStage() error {
	ws := r.p.Workspace
	if ws.Root == "" {
		r.maskCaches()
		return nil
	}
	id := r.m.scalars["workspace.id"].Origin
	r.add(plan.Mount{Stage: plan.StageWorkspace, Op: plan.Tmpfs, Path: ws.Root, Access: plan.Hidden, Origin: id, Note: "every other workspace is hidden"})
	r.add(plan.Mount{Stage: plan.StageWorkspace, Op: plan.Bind, Path: ws.Dir, Access: plan.ReadWrite, Origin: id})
	r.add(plan.Mount{Stage: plan.StageWorkspace, Op: plan.Bind, Path: ws.RepoDir, Access: plan.ReadWrite, Origin: id})
	r.add(plan.Mount{Stage: plan.StageWorkspace, Op: plan.RemountRO, Path: ws.Root, Access: plan.Hidden, Origin: id, Note: "nothing can be written beside the workspace folders"})
	r.maskCaches()
	return nil
}

// missingWritable decides for a writable root p that does not exist: in
// the project (its git top-level or working folder, which exists) and in
// no hidden folder of it, p is made for the run (0700, as agentbox makes its own folders: each missing
// folder from the project down, through descriptors, never following a
// link) and returned; elsewhere it is skipped with one warning line, or,
// under enforce = "require", refused; either way with the mkdir to run.
func (r *resolver) missingWritable(p string, o plan.Origin) (string, error) {
	mkdir := "mkdir -p " + shellQuote(p)
	target := r.realMaybe(p)
	if r.p.Workspace.Root == "" {
		root, _ := r.projectRoot()
		if realRoot, err := r.real(root); err == nil && target != realRoot && plan.Within(target, realRoot) && !hiddenBelow(target, realRoot) {
			var missing []string
			for d := target; d != realRoot; d = filepath.Dir(d) {
				if _, err := r.env.FS.Lstat(d); err == nil {
					break
				}
				missing = append(missing, d)
			}
			for i := len(missing) - 1; i >= 0; i-- {
				r.p.Prepare = append(r.p.Prepare, plan.Prepare{Path: missing[i], Mode: 0o700, Origin: o})
			}
			return target, nil
		}
	}
	if r.p.Enforce == plan.Require {
		return "", originError(o, fmt.Sprintf("%s: writable folder does not exist (and lies outside the project, or in a hidden folder, so agentbox does not make it): %s, or take it out of the policy", p, mkdir))
	}
	r.p.Skipped = append(r.p.Skipped, plan.Skip{Path: p, Reason: "writable folder does not exist, so it is not writable: " + mkdir, Origin: o, Warn: true})
	return "", nil
}

// hiddenBelow reports whether a part of path below dir starts with a dot:
// hidden folders hold what host programs run or obey (.git, .vscode,
// .claude, .husky, ...), where agentbox makes nothing.
func hiddenBelow(path, dir string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, dir), "/")
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c == '/' || c == '.' || c == '_' || c == '-' || c == '~' || c == '+' || c == ',' || c == ':' || c == '@' ||
			c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type pathEntry struct {
	path   string
	origin plan.Origin
	note   string
	pin    bool // bind read-write onto itself: a mount point cannot be renamed away
}

// sortParentsFirst orders paths so that a parent is mounted before its
// children, keeping the given order otherwise.
func sortParentsFirst(list []pathEntry) {
	sort.SliceStable(list, func(i, j int) bool {
		return strings.Count(list[i].path, "/") < strings.Count(list[j].path, "/")
	})
}

func (r *resolver) writableStage() error {
	var list []pathEntry
	seen := map[string]bool{}
	addPath := func(p string, o plan.Origin, note string) {
		if !seen[p] {
			seen[p] = true
			list = append(list, pathEntry{path: p, origin: o, note: note})
		}
	}
	if r.p.Workspace.Root == "" {
		root, why := r.projectRoot()
		if err := r.checkDefaultWritable(root, why); err != nil {
			return err
		}
		addPath(root, plan.Origin{Key: why}, "")
	}
	for _, e := range r.m.lists["filesystem.writable"] {
		p, err := r.expand(e)
		if err != nil {
			return err
		}
		real, err := r.real(p)
		if err != nil {
			made, err := r.missingWritable(p, e.Origin)
			if err != nil {
				return err
			}
			if made != "" {
				addPath(made, e.Origin, "created")
			}
			continue
		}
		if fi, err := r.env.FS.Stat(real); err == nil && !fi.IsDir() {
			addPath(real, e.Origin, "a single file")
		} else {
			addPath(real, e.Origin, "")
		}
	}
	if pr, ok := r.providerInfo(); ok && pr.Supported {
		origin := plan.Origin{Key: "provider " + pr.Name}
		for i, w := range pr.Writable {
			e := Entry{Value: w, Origin: origin}
			if d := r.declared[pr.Name+"\x00"+w]; len(d) > 0 {
				e = d[0] // declared in a policy: its file, line and folder
			}
			if i == 0 && pr.HomeVar != "" {
				if v := r.env.Getenv(pr.HomeVar); v != "" {
					e = Entry{Value: v, Origin: plan.Origin{Key: "provider " + pr.Name + " (" + pr.HomeVar + ")"}}
					r.userHomeVar = true
				} else if pr.SetHomeVar {
					r.homeVar = pr.HomeVar
				}
			}
			p, err := r.expand(e)
			if err != nil {
				return err
			}
			if i == 0 {
				r.providerHome = p
				r.homeVarValue = p
			}
			real, err := r.real(p)
			if err != nil {
				if i == 0 && filepath.Dir(p) == r.env.Home {
					// The CLI's own folder in the home folder: created (0700)
					// so it can be bound; the CLI fills it.
					r.p.Prepare = append(r.p.Prepare, plan.Prepare{Path: p, Mode: 0o700, Origin: e.Origin})
					addPath(p, e.Origin, "created")
					continue
				}
				r.p.Skipped = append(r.p.Skipped, plan.Skip{Path: p, Reason: "provider path does not exist yet, so it is not writable", Origin: e.Origin})
				continue
			}
			addPath(real, e.Origin, "")
		}
		r.providerState(pr)
	}
	for _, w := range list {
		if w.path == "/" || plan.Within(r.env.Home, w.path) {
			if !r.opts.AllowBroad {
				what := "the home folder"
				if w.path == "/" {
					what = "/"
				} else if w.path != r.env.Home {
					what = "a folder that holds the home folder"
				}
				return &NeedFlags{Flags: []string{"--allow-broad-writable"},
					Err: originError(w.origin, fmt.Sprintf("%s: making %s writable lets the agent change your shell startup files and tools, unless you also pass --allow-broad-writable, which keeps those read-only", w.path, what))}
			}
			r.p.Warnings = append(r.p.Warnings, fmt.Sprintf("WRITABLE %s (%s): allowed by --allow-broad-writable; what the home folder runs at login, in shells and in common tools stays read-only, or is blocked for the run when missing (see host programs below)", w.path, w.origin))
		}
		if ws := r.p.Workspace.Root; ws != "" && plan.Within(ws, w.path) {
			return originError(w.origin, fmt.Sprintf("%s: this writable root holds the workspace root %s; binding it would undo the masking of other workspaces", w.path, ws))
		}
		if r.hiddenByWorkspace(w.path) {
			return originError(w.origin, fmt.Sprintf("%s: this writable root lies in the workspace root %s, which is hidden except workspace %s", w.path, r.p.Workspace.Root, r.p.Workspace.ID))
		}
	}
	sortParentsFirst(list)
	for _, w := range list {
		r.add(plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Path: w.path, Access: plan.ReadWrite, Origin: w.origin, Note: w.note})
	}
	return r.cacheStage()
}

// writableRegions are the folders the sandbox can write: writable roots and
// the workspace folders.
func (r *resolver) writableRegions() []string {
	var out []string
	for _, m := range r.p.Mounts {
		if m.Op == plan.Bind && m.Access == plan.ReadWrite && m.Path != "/tmp" {
			out = append(out, m.Path)
		}
	}
	return out
}

func (r *resolver) inWritable(p string) bool {
	for _, w := range r.writableRegions() {
		if plan.Within(p, w) {
			return true
		}
	}
	return false
}

// hostTmp reports whether the box writes the host's own /tmp (tmp.mode
// host). writableRegions leaves /tmp out, since in the other modes the
// box's /tmp is not the host's; but with the host's shared, what lies
// there (agentbox's own folders when an XDG variable points there, a
// policy file) must be kept read-only as in any writable root.
func (r *resolver) hostTmp(p string) bool {
	return r.p.Tmp.Mode == plan.TmpHost && r.env.GOOS != "windows" && plan.Within(p, "/tmp")
}

// inHostWritable reports whether the box can change p on the host: it
// lies in a writable root or in the host's /tmp shared with the box.
func (r *resolver) inHostWritable(p string) bool {
	return r.inWritable(p) || r.hostTmp(p)
}

func (r *resolver) readOnlyStage() error {
	var list []pathEntry
	seen := map[string]bool{}
	addPath := func(p string, o plan.Origin, note string) {
		if !seen[p] && r.inHostWritable(p) && !r.hiddenByWorkspace(p) {
			seen[p] = true
			list = append(list, pathEntry{path: p, origin: o, note: note})
		}
	}
	var userRO []string
	for _, e := range r.m.lists["filesystem.read_only"] {
		p, err := r.expand(e)
		if err != nil {
			return err
		}
		real, err := r.real(p)
		if err != nil {
			if err := r.unresolvable(p, err, e.Origin); err != nil {
				return err
			}
			r.p.Skipped = append(r.p.Skipped, plan.Skip{Path: p, Reason: "read-only path does not exist", Origin: e.Origin})
			continue
		}
		addPath(real, e.Origin, "")
		userRO = append(userRO, real)
	}
	var own []hostexec.Own
	var made []string // folders agentbox makes before the run
	// Every loaded policy file: the agent must not loosen its own sandbox.
	for _, l := range r.p.Layers {
		if l.File != "" && (l.Status == "loaded" || l.Status == "trusted") {
			if real, err := r.real(l.File); err == nil {
				addPath(real, plan.Origin{Key: "always: loaded policy file"}, "")
				own = append(own, hostexec.Own{Path: real, Rule: "loaded policy file"})
			}
		}
	}
	// agentbox's own configuration, trust store, probe cache and state
	// (the after-run check's records and quarantine), when they lie in a
	// writable folder: the agent must not trust its own edited policy,
	// write a looser user config for the next run, make auto believe bwrap
	// is broken here, or tamper with the after-run check. The folders are
	// agentbox's own, so they are created (0700) when missing.
	for _, dir := range []string{filepath.Dir(ConfigPath(r.env)), StateDir(r.env), CacheDir(r.env)} {
		if !r.inHostWritable(dir) {
			continue
		}
		origin := plan.Origin{Key: "always: agentbox's own configuration"}
		real, err := r.real(dir)
		if err != nil {
			// Create the missing folders, outermost first (~/.config,
			// then ~/.config/agentbox), so none can be made by the agent.
			var missing []string
			for d := dir; (plan.Within(d, r.env.Home) && d != r.env.Home) || (r.hostTmp(d) && d != "/tmp"); d = filepath.Dir(d) {
				if _, err := r.env.FS.Lstat(d); err == nil {
					break
				}
				missing = append([]string{d}, missing...)
			}
			for _, d := range missing {
				r.p.Prepare = append(r.p.Prepare, plan.Prepare{Path: d, Mode: 0o700, Origin: origin})
				made = append(made, d)
			}
			real = dir
		}
		// Not a guard kept by recording under Landlock: the after-run
		// check's own records live here, so the box must never write it;
		// Landlock keeps it read-only by carving it out (and says what
		// that costs the folders above it).
		addPath(real, origin, "")
	}
	// What host programs run or obey (package hostexec): git, every known
	// agent CLI, editors, the home folder's autostart files.
	if err := r.hostExec(userRO, own, made); err != nil {
		return err
	}
	// What host programs run or obey, within a budget of mounts: beyond it
	// (a tree with thousands of repositories), a guard is kept by
	// recording and restoring instead, as under Landlock, so the run
	// neither refuses nor pays a mount per file.
	mounted, gitPins := r.guardBudget()
	// Each git folder within reach that holds a guard kept by a mount is
	// bound onto itself: a mount point cannot be renamed, so the agent
	// cannot move .git away and put a folder with hooks of its own in its
	// place.
	for _, d := range r.p.HostExec.GitDirs {
		if gitPins[d] && !seen[d] {
			seen[d] = true
			list = append(list, pathEntry{path: d, origin: plan.Origin{Key: "always: git folder"}, note: "pinned: cannot be renamed or replaced", pin: true})
		}
	}
	for _, g := range r.p.HostExec.Guards {
		if mounted[g.Path] {
			addPath(g.Path, plan.Origin{Key: "always: " + g.Rule}, g.Note)
		}
	}
	// Every folder between a writable root and a read-only path is bound
	// onto itself as well: a mount point cannot be renamed, so the agent
	// cannot move the folder away and put one of its own, without the
	// protection, in its place (mv .claude .old; mkdir .claude; …).
	var pins []pathEntry
	for _, e := range list {
		for d := filepath.Dir(e.path); d != "/" && !r.isRegion(d) && r.inHostWritable(d); d = filepath.Dir(d) {
			if !seen[d] {
				seen[d] = true
				pins = append(pins, pathEntry{path: d, origin: plan.Origin{Key: "always: folder holding a read-only path"}, note: "pinned: cannot be renamed or replaced", pin: true})
			}
		}
	}
	// The same for every folder between a writable root and a deny path:
	// renamed, it would carry the hidden file out of the path that this
	// and every later run hides.
	for _, p := range r.denyPaths() {
		for d := filepath.Dir(p); d != "/" && !r.isRegion(d) && r.inHostWritable(d) && !r.hiddenByWorkspace(d); d = filepath.Dir(d) {
			if !seen[d] {
				seen[d] = true
				pins = append(pins, pathEntry{path: d, origin: plan.Origin{Key: "always: folder holding a deny path"}, note: "pinned: cannot be renamed or replaced", pin: true})
			}
		}
	}
	list = append(list, pins...)
	if n := len(list); n > maxReadOnly {
		return &policyError{where: "filesystem", msg: fmt.Sprintf("%d paths to keep read-only in the writable roots (more than %d): that many mounts would make every run slow; name fewer read_only and deny paths inside the writable roots", n, maxReadOnly)}
	}
	sortParentsFirst(list)
	for _, e := range list {
		if e.pin {
			r.add(plan.Mount{Stage: plan.StageReadOnly, Op: plan.Pin, Path: e.path, Access: plan.ReadWrite, Origin: e.origin, Note: e.note})
			continue
		}
		r.add(plan.Mount{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: e.path, Access: plan.ReadOnly, Origin: e.origin, Note: e.note})
	}
	return nil
}

// isRegion reports whether d is a writable root itself (or the host's
// /tmp shared with the box).
func (r *resolver) isRegion(d string) bool {
	if d == "/tmp" && r.hostTmp(d) {
		return true
	}
	for _, w := range r.writableRegions() {
		if d == w {
			return true
		}
	}
	return false
}

// maxGuardMounts bounds the mounts the registry's guards take (read-only
// binds, their git folders and the folders above them): a mount costs
// the launch of every run, and a tree of thousands of repositories must
// neither refuse to run nor take thousands of mounts.
const maxGuardMounts = 256

// guardBudget decides which guards kept read-only or blocked get their
// mount, in order of priority — nearest a writable root first, then by
// path — while the mounts they take (with the git folder holding them and
// the folders above them, pinned) stay within maxGuardMounts. The others
// are kept by recording and restoring (plan.KeepRestored), and their
// placeholders are dropped. A folder the search could not list always
// gets its mount. It returns the guards mounted and the git folders to
// pin.
func (r *resolver) guardBudget() (mounted, gitPins map[string]bool) {
	h := &r.p.HostExec
	mounted, gitPins = map[string]bool{}, map[string]bool{}
	depth := func(p string) int {
		best := ""
		for _, w := range r.writableRegions() {
			if plan.Within(p, w) && len(w) > len(best) {
				best = w
			}
		}
		return strings.Count(strings.TrimPrefix(p, best), "/")
	}
	var order []int
	for i, g := range h.Guards {
		if (g.Keep == plan.KeepReadOnly || g.Keep == plan.KeepBlocked) && r.inHostWritable(g.Path) && !r.hiddenByWorkspace(g.Path) {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := h.Guards[order[a]].Path, h.Guards[order[b]].Path
		if da, db := depth(pa), depth(pb); da != db {
			return da < db
		}
		return pa < pb
	})
	gitDirs := map[string]bool{}
	for _, d := range h.GitDirs {
		gitDirs[d] = true
	}
	// The innermost git folder holding p (not p itself).
	gitDirOf := func(p string) string {
		best := ""
		for d := filepath.Dir(p); d != filepath.Dir(d); d = filepath.Dir(d) {
			if gitDirs[d] {
				best = d
				break
			}
		}
		if best == "" || r.inPackageTree(best) || !r.inWritable(best) {
			return ""
		}
		if fi, err := r.env.FS.Lstat(best); err != nil || !fi.IsDir() {
			return ""
		}
		return best
	}
	taken := map[string]bool{} // paths that take a mount already
	used := 0
	demoted := map[string]bool{}
	for _, i := range order {
		g := &h.Guards[i]
		need := []string{g.Path}
		gd := gitDirOf(g.Path)
		if gd != "" {
			need = append(need, gd)
		}
		for _, p := range slices.Clone(need) {
			for d := filepath.Dir(p); d != "/" && !r.isRegion(d) && r.inHostWritable(d); d = filepath.Dir(d) {
				need = append(need, d)
			}
		}
		n := 0
		for _, p := range need {
			if !taken[p] {
				n++
			}
		}
		if used+n > maxGuardMounts && g.Rule != plan.RuleUnlisted {
			demoted[g.Path] = g.Keep == plan.KeepBlocked
			g.Keep = plan.KeepRestored
			g.Note = fmt.Sprintf("more paths to keep than one run mounts (%d): recorded before the run and put back after it; a host program that reads it while the box runs can see the box's version", maxGuardMounts)
			continue
		}
		used += n
		for _, p := range need {
			taken[p] = true
		}
		mounted[g.Path] = true
		if gd != "" {
			gitPins[gd] = true
		}
	}
	if len(demoted) > 0 {
		var keep []plan.Prepare
		for _, d := range r.p.Prepare {
			if d.Placeholder != "" && demoted[d.Path] {
				continue
			}
			keep = append(keep, d)
		}
		r.p.Prepare = keep
	}
	return mounted, gitPins
}

// inPackageTree reports whether p lies in a folder a package manager owns
// within a writable root (hostexec.InPackageTree).
func (r *resolver) inPackageTree(p string) bool {
	for _, w := range r.writableRegions() {
		if plan.Within(p, w) && p != w && hostexec.InPackageTree(filepath.ToSlash(strings.TrimPrefix(p, w+"/"))) {
			return true
		}
	}
	return false
}

// maxReadOnly bounds the read-only paths and pins in the writable roots:
// beyond it resolution fails closed (a box that planted thousands of
// repositories makes the next run refuse with a clear message, not start
// slowly or fail in bwrap).
const maxReadOnly = 4096

// hostExec asks the registry (package hostexec) what within the writable
// roots host programs run or obey, and records it with how each is kept.
func (r *resolver) hostExec(userRO []string, own []hostexec.Own, made []string) error {
	regions := r.writableRegions()
	// The project: the writable root the command works in (by default the
	// git top-level of the working directory), or the workspace's folders.
	// Missing control files are blocked at its top; in other writable
	// roots, what the box makes is moved away after the run.
	var projects []string
	for _, w := range regions {
		if w == r.env.Home || plan.Within(r.env.Home, w) {
			continue // the home folder gets its own list
		}
		if plan.Within(r.p.Cwd, w) || w == r.p.Workspace.Dir || w == r.p.Workspace.RepoDir {
			projects = append(projects, w)
		}
	}
	homes := map[string]string{}
	var providers []provider.Provider
	if r.all != nil {
		providers = r.all.List()
		for _, pr := range providers {
			if pr.HomeVar != "" {
				if v := r.env.Getenv(pr.HomeVar); v != "" && filepath.IsAbs(v) {
					homes[pr.Name] = r.realMaybe(filepath.Clean(v))
				}
			}
		}
		if pr, ok := r.providerInfo(); ok {
			// The detected provider as this run sees it (with the user's
			// configuration file when they moved its folder).
			for i := range providers {
				if providers[i].Name == pr.Name {
					providers[i] = pr
				}
			}
			if r.providerHome != "" {
				homes[pr.Name] = r.realMaybe(r.providerHome)
			}
		}
	}
	limit, _ := strconv.Atoi(r.scalar("filesystem.scan_limit"))
	// The host folder behind the box's /tmp: the box writes it, but no
	// one runs git there; a symlink from the project into it is what the
	// check looks for.
	var outside []string
	if r.p.Tmp.HostDir != "" {
		outside = append(outside, r.p.Tmp.HostDir)
	}
	res, err := hostexec.Resolve(hostexec.Input{
		GOOS: r.env.GOOS, Home: r.env.Home, Getenv: r.env.Getenv, FS: r.env.FS,
		Regions: regions, Skip: userRO, Projects: projects, Project: r.projectTop(),
		Providers: providers, ProviderHomes: homes, Own: own, Made: made, MaxDirs: limit,
		State: r.realMaybe(StateDir(r.env)),
	})
	if err != nil {
		return err
	}
	r.p.HostExec = plan.HostExec{Guards: res.Guards, Roots: regions, ReadOnly: userRO, Outside: outside, Controls: res.Controls, Limit: limit, Visited: res.Visited,
		Folders: res.Folders, Listed: res.Listed, Noted: res.Noted, Shared: res.Shared,
		GitDirs: res.GitDirs, Metadata: res.Metadata, State: r.realMaybe(StateDir(r.env)), Trees: res.Trees}
	for _, d := range res.Create {
		r.p.Prepare = append(r.p.Prepare, plan.Prepare{Path: d, Mode: 0o755, Origin: plan.Origin{Key: "always: git hooks"}})
	}
	r.p.Prepare = append(r.p.Prepare, res.Placeholders...)
	return nil
}

func (r *resolver) denyStage() error {
	type denyEntry struct {
		pathEntry
		dir bool
	}
	var list []denyEntry
	seen := map[string]bool{}
	add := func(p string, o plan.Origin, reportMissing bool) error {
		if p == "/" {
			return originError(o, "cannot deny /: nothing would be left to run")
		}
		real, err := r.real(p)
		if err != nil {
			if err := r.unresolvable(p, err, o); err != nil {
				return err
			}
			if reportMissing {
				r.p.Skipped = append(r.p.Skipped, plan.Skip{Path: p, Reason: "deny path does not exist", Origin: o})
			}
			return nil
		}
		if seen[real] {
			return nil
		}
		seen[real] = true
		if r.hiddenByWorkspace(real) && real != r.p.Workspace.Root {
			r.p.Skipped = append(r.p.Skipped, plan.Skip{Path: real, Reason: "already hidden by workspace masking", Origin: o})
			return nil
		}
		fi, err := r.env.FS.Stat(real)
		if err != nil {
			return nil
		}
		note := ""
		if real != p {
			note = "symlink " + p
		}
		for _, w := range r.writableRegions() {
			if plan.Within(w, real) {
				note = strings.TrimPrefix(note+"; deny wins over writable "+w, "; ")
			}
		}
		list = append(list, denyEntry{pathEntry{path: real, origin: o, note: note}, fi.IsDir()})
		return nil
	}
	for _, e := range r.m.lists["filesystem.deny"] {
		p, err := r.expand(e)
		if err != nil {
			return err
		}
		if err := add(p, e.Origin, true); err != nil {
			return err
		}
	}
	for _, d := range r.defaultDenied() {
		if err := add(d.path, d.origin, false); err != nil {
			return err
		}
	}
	// A secret's file is hidden: the box holds the placeholder, never the
	// value.
	for _, s := range r.p.Network.Secrets {
		if s.File != "" {
			if err := add(s.File, s.Origin, true); err != nil {
				return err
			}
		}
	}
	sort.SliceStable(list, func(i, j int) bool {
		return strings.Count(list[i].path, "/") < strings.Count(list[j].path, "/")
	})
	var hidden []string
	for _, d := range list {
		covered := ""
		for _, h := range hidden {
			if plan.Within(d.path, h) {
				covered = h
			}
		}
		if covered != "" {
			// Already inside an empty, read-only folder: nothing to hide,
			// and bwrap could not make a mount point there.
			r.p.Skipped = append(r.p.Skipped, plan.Skip{Path: d.path, Reason: "already hidden by deny " + covered, Origin: d.origin})
			continue
		}
		if d.dir {
			hidden = append(hidden, d.path)
		}
		op := plan.HideFile
		if d.dir {
			op = plan.HideDir
		}
		r.add(plan.Mount{Stage: plan.StageDeny, Op: op, Path: d.path, Access: plan.Hidden, Origin: d.origin, Note: d.note})
	}
	return nil
}

// truthful are the variables only agentbox sets, and only when confinement
// is in force; inherited copies are never passed on.
var truthful = plan.TruthfulVars

// depth is how many boxes a command started from env runs in: one more
// than the box env is in, as that box's AGENTBOX_DEPTH says (a box of an
// agentbox that did not count says AGENTBOX=1 alone: one box).
func depth(env Env) int {
	if env.Getenv(plan.VarActive) != "1" {
		return 1
	}
	n, err := strconv.Atoi(env.Getenv(plan.VarDepth))
	if err != nil || n < 1 || n > 1000 {
		n = 1
	}
	return n + 1
}

// cleanBaseline is kept in clean mode besides env.pass: none of it is a
// secret and without it most tools cannot start.
var cleanBaseline = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "LANG", "LC_*", "TZ"}

// windowsBaseline is kept in clean mode on Windows besides cleanBaseline:
// without SystemRoot even Winsock fails to start, and programs find
// themselves through the others.
var windowsBaseline = []string{"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "OS", "PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS"}

func upperAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.ToUpper(s)
	}
	return out
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

func (r *resolver) environment() error {
	e := &r.p.Env
	e.Mode = r.scalar("env.mode")
	for _, en := range r.m.lists["env.pass"] {
		if _, err := path.Match(en.Value, ""); err != nil {
			return originError(en.Origin, fmt.Sprintf("%q: bad pattern", en.Value))
		}
		e.Pass = appendNew(e.Pass, en.Value)
	}
	for _, en := range r.m.lists["env.deny"] {
		if _, err := path.Match(en.Value, ""); err != nil {
			return originError(en.Origin, fmt.Sprintf("%q: bad pattern", en.Value))
		}
		e.Deny = appendNew(e.Deny, en.Value)
	}
	for _, k := range sortedKeys(r.m.envSet) {
		en := r.m.envSet[k]
		if contains(truthful, k) || k == "TMPDIR" {
			return originError(en.Origin, fmt.Sprintf("%s is set by agentbox itself and cannot be overridden", k))
		}
		if e.Set == nil {
			e.Set = map[string]string{}
		}
		e.Set[k] = en.Value
	}
	// The provider's own credentials survive deny globs such as
	// "*_API_KEY" (the agent cannot work without them); an exact deny
	// still removes them.
	var keys []string
	if pr, ok := r.providerInfo(); ok {
		keys = pr.Keys
	}
	caches := r.cacheVars()
	// Windows variable names are case-insensitive (Path is PATH), so
	// there every name and pattern is compared in upper case, and clean
	// mode keeps what Windows programs cannot start without.
	match, is, baseline := matchAny, contains, cleanBaseline
	if r.env.GOOS == "windows" {
		match = func(globs []string, name string) bool { return matchAny(upperAll(globs), strings.ToUpper(name)) }
		is = func(list []string, name string) bool { return contains(upperAll(list), strings.ToUpper(name)) }
		baseline = append(append([]string(nil), cleanBaseline...), windowsBaseline...)
	}
	cacheNames := sortedKeys(caches)
	var out []string
	for _, kv := range r.env.Environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		keep := !is(cacheNames, name) // a cache's variable replaces the inherited one
		switch {
		case is(truthful, name), name == trace.Variable:
			// The trace names a file of the host's: a run in the box
			// neither writes to it nor says it cannot.
			keep = false
		case match(e.Deny, name) && is(keys, name) && !is(e.Deny, name):
			e.Kept = appendNew(e.Kept, name)
		case match(e.Deny, name):
			keep = false
			e.Removed = appendNew(e.Removed, name)
		case e.Mode == "clean" && is(keys, name) && !match(e.Pass, name):
			// The agent CLI cannot work without its own key: clean mode
			// keeps it, as deny globs do (a CI job runs the agent in a
			// clean environment).
			e.Kept = appendNew(e.Kept, name)
		case e.Mode == "clean" && !match(e.Pass, name) && !match(baseline, name):
			keep = false
			e.Removed = appendNew(e.Removed, name)
		}
		if is(sortedKeys(e.Set), name) {
			keep = false
		}
		if keep {
			out = append(out, kv)
		}
	}
	for _, k := range sortedKeys(e.Set) {
		out = append(out, k+"="+e.Set[k])
	}
	for _, k := range sortedKeys(caches) {
		if _, set := e.Set[k]; !set {
			out = append(out, caches[k])
		}
	}
	// The provider's own variables are set only when a box confines it
	// (box.Complete): run unconfined, it keeps its usual configuration.
	if r.homeVar != "" {
		if _, set := e.Set[r.homeVar]; !set {
			e.Provider = r.homeVar + "=" + r.homeVarValue
			r.p.Provider.ConfinedEnv = append(r.p.Provider.ConfinedEnv, e.Provider)
		}
	}
	if pr, ok := r.providerInfo(); ok && pr.Supported {
		for _, kv := range pr.SandboxEnv {
			if name, _, _ := strings.Cut(kv, "="); e.Set[name] == "" {
				r.p.Provider.ConfinedEnv = append(r.p.Provider.ConfinedEnv, kv)
			}
		}
	}
	// The box holds each secret's placeholder, never its value, and
	// none of the variables the upstream proxy's password came from. The
	// credentials are looked for by value too, whatever a variable's
	// name, in every form a value could hold them (netproxy.
	// CredentialForms): a variable that names a proxy (ftp_proxy,
	// npm_config_proxy, RSYNC_PROXY...) names agentbox's instead, any
	// other is not in the box.
	if u := r.p.Network.Upstream; u != nil {
		forms := netproxy.CredentialForms(u.Credentials)
		kept := out[:0]
		for _, kv := range out {
			name, value, _ := strings.Cut(kv, "=")
			holds := false
			for _, f := range forms {
				holds = holds || strings.Contains(value, f)
			}
			switch {
			case is(u.Vars, name):
				e.Removed = appendNew(e.Removed, name)
			case holds && slices.Contains([]string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}, strings.ToUpper(name)):
				// Every backend sets these to agentbox's proxy.
			case holds && strings.Contains(strings.ToLower(name), "proxy") && strings.Contains(value, "@"):
				// A proxy's address with the credentials in its
				// userinfo.
				v := name
				if !strings.Contains(value, "://") {
					v += ":" // host:port, as RSYNC_PROXY
				}
				r.p.Network.ProxyVars = appendNew(r.p.Network.ProxyVars, v)
			case holds:
				e.Removed = appendNew(e.Removed, name)
			default:
				kept = append(kept, kv)
			}
		}
		out = kept
	}
	for _, c := range r.proxyCreds {
		// Network none reaches no proxy: its credentials, in any
		// variable and any form, stay out of the box.
		forms := netproxy.CredentialForms(c)
		kept := out[:0]
		for _, kv := range out {
			name, value, _ := strings.Cut(kv, "=")
			holds := false
			for _, f := range forms {
				holds = holds || strings.Contains(value, f)
			}
			if holds {
				e.Removed = appendNew(e.Removed, name)
				continue
			}
			kept = append(kept, kv)
		}
		out = kept
	}
	for _, s := range r.p.Network.Secrets {
		// Any other variable that holds the value, in any form the
		// proxy's redaction knows, is not in the box either.
		forms := netproxy.ValueForms(s.Value)
		kept := out[:0]
		for _, kv := range out {
			name, value, _ := strings.Cut(kv, "=")
			holds := false
			for _, f := range forms {
				holds = holds || strings.Contains(value, f)
			}
			switch {
			case name == s.Env:
			case holds:
				e.Removed = appendNew(e.Removed, name)
			default:
				kept = append(kept, kv)
			}
		}
		out = append(kept, s.Env+"="+s.Placeholder)
	}
	sort.Strings(e.Removed)
	if vars := r.shellVars(out); len(vars) > 0 {
		// Each replaces the variable of the same name.
		kept := out[:0]
		for _, kv := range out {
			name, _, _ := strings.Cut(kv, "=")
			replaced := false
			for _, v := range vars {
				replaced = replaced || strings.HasPrefix(v, name+"=")
			}
			if !replaced {
				kept = append(kept, kv)
			}
		}
		out = append(kept, vars...)
	}
	r.p.Environ = out
	return nil
}

// shellVars are what an interactive shell run in the box gets besides the
// environment: its history in the workspace's private cache folder (the
// home folder's history file is read-only in the box, and a session would
// end with a refusal for it), and, unless AGENTBOX_DISABLE_PROMPT is set,
// debian_chroot=agentbox, which the prompt of Debian's and Ubuntu's bashrc
// shows as "(agentbox)", as a virtual environment marks its own. Only for
// an interactive shell (bash, zsh, sh with options only) as the command,
// and never over a variable the policy sets.
func (r *resolver) shellVars(environ []string) []string {
	if len(r.p.Command) == 0 || r.p.CacheDir == "" || r.env.GOOS == "windows" {
		return nil
	}
	shell := path.Base(r.p.Command[0])
	switch shell {
	case "bash", "zsh", "sh", "dash", "ksh":
	default:
		return nil
	}
	// An interactive shell: options only, no -c and no script.
	for _, a := range r.p.Command[1:] {
		if !strings.HasPrefix(a, "-") || a == "-c" || a == "--" {
			return nil
		}
	}
	set := func(name string) bool {
		if _, ok := r.p.Env.Set[name]; ok {
			return true
		}
		for _, kv := range environ {
			if strings.HasPrefix(kv, name+"=") && name != "HISTFILE" {
				return true
			}
		}
		return false
	}
	var out []string
	if !set("HISTFILE") {
		out = append(out, "HISTFILE="+path.Join(r.p.CacheDir, "."+shell+"_history"))
	}
	if r.env.Getenv("AGENTBOX_DISABLE_PROMPT") == "" && !set("debian_chroot") {
		out = append(out, "debian_chroot=agentbox")
	}
	return out
}

func (r *resolver) limits() error {
	l := &r.p.Limits
	l.Processes, _ = strconv.ParseUint(r.scalar("limits.processes"), 10, 64)
	l.OpenFiles, _ = strconv.ParseUint(r.scalar("limits.open_files"), 10, 64)
	l.Memory, _ = ParseSize(r.scalar("limits.memory"))
	l.FileSize, _ = ParseSize(r.scalar("limits.file_size"))
	l.CPUTime, _ = ParseDuration(r.scalar("limits.cpu_time"))
	return nil
}

// auditLog says whether the run's events are recorded in the audit log
// (log.enabled), and where. The log folder lies in agentbox's own state
// folder, which readOnlyStage keeps read-only when it lies in a writable
// root, so nothing in the box can change what the log recorded.
func (r *resolver) auditLog() error {
	e := r.m.scalars["log.enabled"]
	r.p.Log = plan.Log{Enabled: e.Value != "false", Origin: e.Origin}
	if r.p.Log.Enabled {
		r.p.Log.Dir = LogDir(r.env)
		// Recording reads asks for the complete mode: under bubblewrap a
		// read of a hidden path fails nowhere for a library to see.
		reads := r.m.scalars["log.filesystem_reads"].Value == "true"
		// The backend's completion names the mechanism (package fslog).
		switch fs := r.m.scalars["log.filesystem"].Value; {
		case fs == "complete" || reads:
			r.p.Log.Filesystem = "complete"
			r.p.Log.Reads = reads
		case fs == "true":
			r.p.Log.Filesystem = "preload"
		}
	}
	return nil
}

// notice works out how often the run's notices are shown, and where what
// they said is kept.
func (r *resolver) notice() error {
	e := r.m.scalars["notice.backend"]
	r.p.Notice = plan.Notice{Backend: e.Value, Origin: e.Origin}
	if e.Value == plan.NoticeOnce {
		r.p.Notice.Dir = filepath.Join(StateDir(r.env), "notices")
	}
	return nil
}

// LogDir returns the audit log's folder: $XDG_STATE_HOME/agentbox/log.
func LogDir(env Env) string {
	return filepath.Join(filepath.Dir(StorePath(env)), "log")
}

// confinedCommand works out the command as it runs confined: a provider
// with a sandbox of its own gets it turned off (two nested sandboxes lock
// each other up), unless the user chose a mode. It applies only when a
// backend really confines the command (see plan.Provider.Confined).
func (r *resolver) confinedCommand() error {
	pr, ok := r.providerInfo()
	if !ok || !pr.Supported || pr.InnerSandbox == nil {
		return nil
	}
	is := pr.InnerSandbox
	var configs [][]byte
	for _, f := range is.ConfigPaths(r.providerHome, r.p.Cwd) {
		if data, err := r.env.FS.ReadFile(f); err == nil {
			configs = append(configs, data)
		}
	}
	argv, why := is.Adjust(r.p.Command, r.p.Provider.Index, pr.Packages, configs)
	r.p.Provider.Adjusted = why
	if strings.Join(argv, "\x00") != strings.Join(r.p.Command, "\x00") {
		r.p.Provider.Confined = argv
	}
	return nil
}

// allowMode applies the rule that ties network.allow to the network mode:
// an allow entry only means something in allowlist mode, so entries with
// no mode chosen anywhere (only the default "open") turn allowlist on, and
// entries with a mode a layer chose as "open" or "none" are an error naming
// both. Silently ignoring them would leave the network open while the user
// believes it filtered.
func (r *resolver) allowMode() error {
	allow := r.m.lists["network.allow"]
	if len(allow) == 0 {
		return nil
	}
	mode := r.m.scalars["network.mode"]
	if mode.Origin.Key == "default" {
		r.p.Network.Mode = plan.NetAllowlist
		r.p.Network.Implied = "allowlist because " + allow[0].Origin.String() + " allows " + allow[0].Value
		return nil
	}
	if mode.Value == plan.NetAllowlist {
		return nil
	}
	return originError(allow[0].Origin, fmt.Sprintf("%q: allowing a host needs network mode allowlist, but %s sets the network to %q; drop one of them, or use allowlist",
		allow[0].Value, modeSource(mode.Origin), mode.Value))
}

// modeSource names where network.mode was set, in the words the user wrote
// it: "--network", "AGENTBOX_NETWORK", or "file:line network.mode".
func modeSource(o plan.Origin) string {
	switch {
	case strings.HasPrefix(o.Key, "flag "):
		return strings.TrimPrefix(o.Key, "flag ")
	case strings.HasPrefix(o.Key, "env "):
		return strings.TrimPrefix(o.Key, "env ")
	}
	return o.String()
}
