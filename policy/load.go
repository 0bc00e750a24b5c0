package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
)

// Flags are the command-line flags that form the last layer. Every list flag
// is repeatable.
type Flags struct {
	Policy        []string
	Writable      []string
	ReadOnly      []string
	Deny          []string
	Network       string
	Allow         []string
	Publish       []string
	Workspace     string
	WorkspaceRoot string
	Task          string
	Tmp           string
	EnvMode       string
	PassEnv       []string
	DenyEnv       []string
	Provider      string
	Backend       string
	BestEffort    bool
	Require       bool
	// AllowBroad permits a writable root that is / or holds the home folder.
	AllowBroad bool
	// Quiet shows no notices (notice.backend = "never").
	Quiet bool
}

// Defaults is the built-in first layer.
func Defaults() *Layer {
	l := newLayer("defaults", "", "built in")
	set := func(k, v string) { l.Scalars[k] = Entry{Value: v, Origin: plan.Origin{Key: "default"}} }
	set("sandbox.enforce", plan.Require)
	set("sandbox.backend", "auto")
	set("filesystem.scan_limit", strconv.Itoa(hostexec.DefaultMaxDirs))
	set("filesystem.ssh_keys", "hidden")
	set("tmp.mode", plan.TmpWorkspace)
	set("network.mode", plan.NetOpen)
	set("env.mode", "inherit")
	set("provider.name", "auto")
	set("log.enabled", "true")
	// On by default: the preloaded log costs a successful call nothing
	// but a branch (scripts/bench-fslog.sh). "complete", the seccomp log,
	// sees static programs too, at a round trip to agentbox per watched
	// call (+20-30% on an npm ci); agentbox learn uses it for its run.
	set("log.filesystem", "true")
	set("log.filesystem_reads", "false")
	set("notice.backend", plan.NoticeOnce)
	return l
}

// Load reads every layer SPEC names, in order: defaults, the user's config,
// the nearest project policy (only if trusted), the environment
// (AGENTBOX_POLICY and the AGENTBOX_* values), --policy files, and the flags.
// An untrusted project policy is an *UntrustedError.
func Load(env Env, flags Flags) ([]*Layer, error) {
	layers := []*Layer{Defaults()}

	user := ConfigPath(env)
	if l, err := loadFile(env, "user", user, true); err != nil {
		return nil, err
	} else {
		layers = append(layers, l)
	}

	if proj := FindProject(env, env.Cwd); proj != "" && proj != user {
		l, err := loadFile(env, "project", proj, false)
		var ue *UntrustedError
		if errors.As(err, &ue) {
			ue.Base = BaselineOf(layers)
			ue.Proposal = ProposalsOf(env).Waiting(proj)
		}
		if err != nil {
			return nil, err
		}
		if ProposalsOf(env).Waiting(proj) {
			l.Note = "agentbox learn left a proposal for it, not in force: agentbox trust --proposal shows and applies it"
		}
		layers = append(layers, l)
	} else {
		layers = append(layers, newLayer("project", "", "absent"))
	}

	if p := env.Getenv("AGENTBOX_POLICY"); p != "" {
		if !filepath.IsAbs(p) {
			return nil, &policyError{where: "env AGENTBOX_POLICY", msg: fmt.Sprintf("%q: want an absolute path", p)}
		}
		l, err := loadFile(env, "policy", p, true)
		if err != nil {
			return nil, err
		}
		if l.Status == "absent" {
			return nil, &policyError{where: "env AGENTBOX_POLICY", msg: fmt.Sprintf("%s: no such file", p)}
		}
		layers = append(layers, l)
	}
	el, err := envLayer(env)
	if err != nil {
		return nil, err
	}
	layers = append(layers, el)

	for _, p := range flags.Policy {
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(env.Cwd, p)
		}
		l, err := loadFile(env, "policy", filepath.Clean(abs), true)
		if err != nil {
			return nil, err
		}
		if l.Status == "absent" {
			return nil, &policyError{where: "flag --policy", msg: fmt.Sprintf("%s: no such file", p)}
		}
		layers = append(layers, l)
	}
	fl, err := flagLayer(flags)
	if err != nil {
		return nil, err
	}
	layers = append(layers, fl)
	if err := checkLoosening(layers); err != nil {
		return nil, err
	}
	return layers, nil
}

// loadFile reads one policy file. trusted is true for files the user named or
// owns; a project policy must match its pinned hash. The file must be a
// regular file of at most MaxFileSize bytes, checked before it is read
// whole (OSFS.ReadFile).
func loadFile(env Env, name, path string, trusted bool) (*Layer, error) {
	data, err := env.FS.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := env.FS.Lstat(path); lerr == nil {
			return nil, fmt.Errorf("reading policy %s: it is a symbolic link to nothing", path)
		}
		return newLayer(name, path, "absent"), nil
	}
	if err != nil {
		var fe *FileError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("reading policy %s: %s", path, fe.Why)
		}
		return nil, fmt.Errorf("reading policy %s: %w", path, err)
	}
	l, err := Parse(name, path, data)
	if err != nil {
		return nil, err
	}
	l.Hash = Hash(data)
	l.Meaning = Meaning(l)
	if trusted {
		return l, nil
	}
	store := TrustStore{Path: StorePath(env)}
	pinned, err := store.Lookup(path)
	if err != nil {
		return nil, err
	}
	// The pin is what the policy means; a pin of its exact bytes (as
	// agentbox once pinned) means the same.
	if pinned != l.Meaning && pinned != l.Hash {
		ue := &UntrustedError{File: path, Edited: pinned != "", Layer: l, Env: env}
		if old, err := store.Content(pinned); err == nil {
			ue.Trusted, _ = Parse(name, path, old)
		}
		return nil, ue
	}
	l.Status = "trusted"
	l.Pinned = true
	if l.Links, err = store.Links(path); err != nil {
		return nil, err
	}
	return l, nil
}

// informational are the setting variables that share their names with
// what agentbox sets inside a box to say what is in force (plan.Truthful).
// Inside a box (AGENTBOX=1) their values are the outer box's description,
// not the user's wishes, so an agentbox started there does not read them
// as settings: an inner run would otherwise insist on the outer box's
// backend (which cannot start inside it) or copy its rules by accident.
var informational = []string{plan.VarBackend, plan.VarNetwork, plan.VarDeny}

// checkLoosening refuses a trusted project policy that sets sandbox.enforce
// or sandbox.backend looser than the user's own configuration (the layers
// before it), when its value is the one that would count (no later layer
// sets the key), unless the user's own policy files set
// sandbox.project_may_loosen. A project policy comes with a repository, and
// best-effort with a backend that cannot run here (windows on Linux) runs
// the agent unconfined.
func checkLoosening(layers []*Layer) error {
	proj := -1
	for i, l := range layers {
		if l.Name == "project" && l.File != "" {
			proj = i
		}
	}
	if proj < 0 {
		return nil
	}
	p := layers[proj]
	if e, ok := p.Scalars["sandbox.project_may_loosen"]; ok {
		return originError(e.Origin, "only your own configuration can set this (~/.config/agentbox/config.toml or --policy)")
	}
	for _, l := range layers {
		if l.Name != "project" && l.Scalars["sandbox.project_may_loosen"].Value == "true" {
			return nil
		}
	}
	for _, key := range []string{"sandbox.enforce", "sandbox.backend"} {
		e, ok := p.Scalars[key]
		if !ok {
			continue
		}
		later := false
		for _, l := range layers[proj+1:] {
			_, set := l.Scalars[key]
			later = later || set
		}
		own := merge(layers[:proj]).scalars[key]
		if later || !looser(key, own.Value, e.Value) {
			continue
		}
		return &policyError{where: fmt.Sprintf("%s:%d", e.Origin.File, e.Origin.Line), key: key,
			msg: fmt.Sprintf("%q would loosen your own setting (%q, from %s); a project policy may only tighten it. "+
				"To let trusted projects loosen it, set [sandbox] project_may_loosen = true in your own config", e.Value, own.Value, own.Origin)}
	}
	return nil
}

// looser reports whether a project's value v for key loosens the user's
// value own: best-effort where the user requires confinement; any backend
// but the user's own, except bwrap where the user lets auto choose (it
// only refuses to fall back to Landlock).
func looser(key, own, v string) bool {
	switch key {
	case "sandbox.enforce":
		return own == plan.Require && v == plan.BestEffort
	case "sandbox.backend":
		return v != own && !(own == "auto" && v == "bwrap")
	}
	return false
}

// envLayer turns the AGENTBOX_* variables into a layer.
func envLayer(env Env) (*Layer, error) {
	l := newLayer("env", "", "absent")
	inBox := env.Getenv(plan.VarActive) == "1"
	var ignored []string
	read := func(name string) string {
		v := env.Getenv(name)
		if v != "" && inBox && contains(informational, name) {
			ignored = append(ignored, name)
			return ""
		}
		return v
	}
	scalar := func(name, key string) {
		if v := read(name); v != "" {
			l.Scalars[key] = Entry{Value: v, Origin: plan.Origin{Key: "env " + name}}
			l.Status = "set"
		}
	}
	scalar("AGENTBOX_NETWORK", "network.mode")
	scalar("AGENTBOX_WORKSPACE", "workspace.id")
	scalar("AGENTBOX_ENFORCE", "sandbox.enforce")
	scalar("AGENTBOX_BACKEND", "sandbox.backend")
	if v := read("AGENTBOX_DENY"); v != "" {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				l.Lists["filesystem.deny"] = append(l.Lists["filesystem.deny"], Entry{Value: p, Origin: plan.Origin{Key: "env AGENTBOX_DENY"}})
			}
		}
		l.Status = "set"
	}
	if len(ignored) > 0 {
		sort.Strings(ignored)
		l.Note = "inside a box: " + strings.Join(ignored, ", ") + " describe the outer box and are not read as settings"
	}
	return l, l.check()
}

// flagLayer turns the command-line flags into a layer.
func flagLayer(f Flags) (*Layer, error) {
	l := newLayer("flags", "", "absent")
	scalar := func(flag, key, v string) {
		if v != "" {
			l.Scalars[key] = Entry{Value: v, Origin: plan.Origin{Key: "flag --" + flag}}
			l.Status = "set"
		}
	}
	list := func(flag, key string, vs []string) {
		for _, v := range vs {
			l.Lists[key] = append(l.Lists[key], Entry{Value: v, Origin: plan.Origin{Key: "flag --" + flag}})
			l.Status = "set"
		}
	}
	if f.BestEffort && f.Require {
		return nil, &policyError{where: "flags", msg: "--best-effort and --require contradict each other"}
	}
	if f.BestEffort {
		scalar("best-effort", "sandbox.enforce", plan.BestEffort)
	}
	if f.Require {
		scalar("require", "sandbox.enforce", plan.Require)
	}
	if f.Quiet {
		scalar("quiet", "notice.backend", plan.NoticeNever)
	}
	scalar("backend", "sandbox.backend", f.Backend)
	scalar("network", "network.mode", f.Network)
	scalar("workspace", "workspace.id", f.Workspace)
	scalar("workspace-root", "workspace.root", f.WorkspaceRoot)
	scalar("task", "workspace.task", f.Task)
	scalar("tmp", "tmp.mode", f.Tmp)
	scalar("env-mode", "env.mode", f.EnvMode)
	scalar("provider", "provider.name", f.Provider)
	list("writable", "filesystem.writable", f.Writable)
	list("read-only", "filesystem.read_only", f.ReadOnly)
	list("deny", "filesystem.deny", f.Deny)
	list("allow", "network.allow", f.Allow)
	list("publish", "network.publish", f.Publish)
	list("pass-env", "env.pass", f.PassEnv)
	list("deny-env", "env.deny", f.DenyEnv)
	return l, l.check()
}
