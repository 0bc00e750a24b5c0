package box

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/doctor"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/provider"
)

// Init writes the starter policy (policy.Starter) as .agentbox.toml in the
// working directory; force overwrites one that exists.
func Init(force bool, w io.Writer) error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	path := filepath.Join(cwd, policy.ProjectFile)
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return hint(fmt.Errorf("%s already exists", path), "pass --force to overwrite it")
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(policy.Starter); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s\nreview it, then: agentbox trust %s\n", path, ShellQuote(path))
	return nil
}

// Trust trusts the project policy file (the nearest one when file is ""),
// or forgets the trust with revoke, and says what it grants, classified
// against what you have without it. Trust pins what the policy means
// (policy.Meaning), so an edit of its comments or layout needs no new
// trust. With proposal, it applies the policy agentbox learn proposed for
// the file instead: it shows what that changes, writes it over the file
// and trusts it.
func Trust(file string, revoke, proposal bool, w io.Writer) error {
	env, err := World()
	if err != nil {
		return err
	}
	if proposal && revoke {
		return errors.New("trust: --proposal and --revoke cannot be used together")
	}
	props := policy.ProposalsOf(env)
	if file == "" {
		file = policy.FindProject(env, env.Cwd)
	}
	if file == "" && proposal {
		p, ok, err := props.Nearest(env.Cwd)
		if err != nil {
			return err
		}
		if ok {
			file = p.File
		}
	}
	if file == "" {
		return fmt.Errorf("no %s here or in any parent folder", policy.ProjectFile)
	}
	if file, err = filepath.Abs(file); err != nil {
		return err
	}
	store := policy.TrustStore{Path: policy.StorePath(env)}
	if revoke {
		ok, err := store.Revoke(file)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(w, "%s was not trusted\n", policy.Escape(file))
			return nil
		}
		fmt.Fprintf(w, "revoked trust in %s\n", policy.Escape(file))
		return nil
	}
	base := policy.UserBaseline(env)
	if proposal {
		return applyProposal(env, props, store, base, file, w)
	}
	// Bounded and regular only, as when a run loads it.
	data, err := env.FS.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading policy: %w", err)
	}
	l, err := policy.Parse("project", file, data)
	if err != nil {
		return err
	}
	before, err := store.Lookup(file)
	if err != nil {
		return err
	}
	was := trustedVersion(store, file, before)
	linked, err := pin(env, store, file, l, data)
	if err != nil {
		return err
	}
	name := policy.Escape(file)
	meaning := policy.Meaning(l)
	switch {
	case before == meaning || before == policy.Hash(data):
		fmt.Fprintf(w, "trusted %s (%s; unchanged)\n", name, meaning[:16])
	case was != nil:
		fmt.Fprintf(w, "trusted %s (%s); what changed since you last trusted it (+ added, - removed; ! loosens your sandbox):\n", name, meaning[:16])
		for _, line := range policy.Diff(policy.Classify(was, env, base), policy.Classify(l, env, base)) {
			fmt.Fprintf(w, "  %s\n", line)
		}
	default:
		fmt.Fprintf(w, "trusted %s (%s); it grants (! loosens your sandbox):\n", name, meaning[:16])
		for _, g := range policy.Classify(l, env, base) {
			fmt.Fprintf(w, "  %s\n", g)
		}
	}
	showLinked(w, linked)
	for _, m := range policy.MissingWritable(l, env) {
		fmt.Fprintf(w, "note: %s\n", m)
	}
	if props.Waiting(file) {
		fmt.Fprintln(w, "agentbox learn left a proposal for it: agentbox trust --proposal shows and applies it")
	}
	return nil
}

// trustedVersion is the version of file pinned as hash, when the store
// kept it; nil otherwise.
func trustedVersion(store policy.TrustStore, file, hash string) *policy.Layer {
	if hash == "" {
		return nil
	}
	old, err := store.Content(hash)
	if err != nil {
		return nil
	}
	l, err := policy.Parse("project", file, old)
	if err != nil {
		return nil
	}
	return l
}

// pin trusts what l (parsed from data) means, and keeps data, so that a
// later edit can be shown as what changed.
func pin(env policy.Env, store policy.TrustStore, file string, l *policy.Layer, data []byte) ([]policy.LinkedPath, error) {
	meaning := policy.Meaning(l)
	if err := store.Save(meaning, data); err != nil {
		return nil, err
	}
	// What its paths lead through now is part of what is trusted: a run
	// refuses a path that leads through any other link (a box may have
	// made it).
	links, linked := policy.PathLinks(l, env)
	if err := store.SaveLinks(file, links); err != nil {
		return nil, err
	}
	return linked, store.Trust(file, meaning)
}

// showLinked says where each path that leads through a link leads.
func showLinked(w io.Writer, linked []policy.LinkedPath) {
	if len(linked) > 0 {
		fmt.Fprintln(w, "paths that lead through links (trusted as they are now; a run refuses any other link):")
	}
	for _, lp := range linked {
		to := lp.Target
		if to == "" {
			to = "nothing yet"
		}
		fmt.Fprintf(w, "  %s = %s leads to %s, through %s\n", lp.Key, policy.Escape(lp.Value), policy.Escape(to), policy.Escape(strings.Join(lp.Links, ", ")))
	}
}

// applyProposal applies the policy agentbox learn proposed for file: only
// over the very bytes it was made from, after showing what it changes.
func applyProposal(env policy.Env, props policy.Proposals, store policy.TrustStore, base policy.Baseline, file string, w io.Writer) error {
	p, ok, err := props.Get(file)
	if err != nil {
		return err
	}
	if !ok {
		return hint(fmt.Errorf("trust: no proposal for %s", policy.Escape(file)), "agentbox learn -- CMD proposes one")
	}
	current, err := readIfExists(file)
	if err != nil {
		return err
	}
	now := ""
	if current != nil {
		now = policy.Hash(current)
	}
	if now != p.From {
		return hint(fmt.Errorf("trust: %s changed since agentbox learn made its proposal; nothing was applied", policy.Escape(file)),
			"run agentbox learn again to propose for the policy as it is now")
	}
	l, err := policy.Parse("project", file, p.Data)
	if err != nil {
		return fmt.Errorf("trust: the proposal for %s: %w", policy.Escape(file), err)
	}
	var was *policy.Layer
	if current != nil {
		if was, err = policy.Parse("project", file, current); err != nil {
			was = nil
		}
	}
	for _, d := range p.Create {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("trust: making %s: %w", d, err)
		}
	}
	if err := writeAtomic(file, p.Data); err != nil {
		return err
	}
	linked, err := pin(env, store, file, l, p.Data)
	if err != nil {
		return err
	}
	if err := props.Remove(file); err != nil {
		return err
	}
	fmt.Fprintf(w, "applied agentbox learn's proposal to %s and trusted it (%s); what it changes (+ added, - removed; ! loosens your sandbox):\n",
		policy.Escape(file), policy.Meaning(l)[:16])
	var old []policy.Grant
	if was != nil {
		old = policy.Classify(was, env, base)
	}
	for _, line := range policy.Diff(old, policy.Classify(l, env, base)) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	showLinked(w, linked)
	return nil
}

// ErrNoBackend is returned by Doctor, after the report, when no backend
// can confine commands on this machine (the CLI exits 1 for it).
var ErrNoBackend = errors.New("no backend can confine commands here")

// Doctor tells what this machine can enforce, as text or JSON, and returns
// ErrNoBackend when nothing can confine here.
func Doctor(asJSON bool, w io.Writer) error { return doctorOf(Backends(), asJSON, w) }

// doctorOf is Doctor for the backends all.
func doctorOf(all []backend.Backend, asJSON bool, w io.Writer) error {
	r := doctor.Probe(all)
	if asJSON {
		if err := writeJSON(w, r); err != nil {
			return err
		}
	} else {
		r.Text(w)
	}
	if r.Auto.Backend == doctor.NoBackend {
		return ErrNoBackend
	}
	return nil
}

// writeJSON writes v as indented JSON, as every --json output is.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// installed reports the first command of p found on PATH.
func installed(p provider.Provider) string {
	for _, c := range p.Commands {
		if path, err := exec.LookPath(c); err == nil {
			return path
		}
	}
	return ""
}

// ProvidersSchema is the version of the JSON `agentbox providers --json`
// prints.
const ProvidersSchema = 1

// ProvidersJSON is what `agentbox providers --json` prints.
type ProvidersJSON struct {
	Schema    int                 `json:"schema"`
	Providers []InstalledProvider `json:"providers"`
}

// InstalledProvider is a provider and where its command is installed here.
type InstalledProvider struct {
	provider.Provider
	// Installed is the first of its commands found on PATH, "" for none.
	Installed string `json:"installed,omitempty"`
}

// Providers lists the agent CLIs agentbox knows, as a table or JSON.
func Providers(asJSON bool, w io.Writer) error {
	list := provider.Builtin()
	if asJSON {
		out := ProvidersJSON{Schema: ProvidersSchema, Providers: []InstalledProvider{}}
		for _, p := range list {
			out.Providers = append(out.Providers, InstalledProvider{p, installed(p)})
		}
		return writeJSON(w, out)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tsupported\tinstalled\tcommands\twritable")
	for _, p := range list {
		sup := "no (not verified)"
		if p.Supported {
			sup = "yes"
		}
		inst := installed(p)
		if inst == "" {
			inst = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, sup, inst, strings.Join(p.Commands, ","), strings.Join(p.Writable, ","))
	}
	return tw.Flush()
}

// ShellInit prints aliases that put every installed, supported agent CLI
// behind agentbox. (The CLI adds agentbox's completion after them.)
func ShellInit(shell string, w io.Writer) error {
	switch shell {
	case "bash", "zsh", "fish":
	case "":
		return hint(errors.New("shell-init: which shell? bash, zsh or fish"), `e.g. eval "$(agentbox shell-init bash)" in ~/.bashrc`)
	default:
		return hint(fmt.Errorf("shell-init: %q is not a shell agentbox knows", shell), `use bash, zsh or fish, e.g. eval "$(agentbox shell-init bash)"`)
	}
	self, err := SelfPath()
	if err != nil {
		return err
	}
	// Every supported agent CLI, installed or not: one installed after
	// the shell read this runs confined too (the name is looked up when
	// it is called, by agentbox run).
	var names []string
	for _, p := range provider.Builtin() {
		if p.Supported {
			names = append(names, p.Commands...)
		}
	}
	q := ShellQuote(self)
	fmt.Fprintf(w, "# agentbox: agent CLIs run confined; `command NAME` runs one unconfined\n")
	for _, n := range names {
		if shell == "fish" {
			fmt.Fprintf(w, "function %s --wraps %s; %s run -- %s $argv; end\n", n, n, q, n)
		} else {
			fmt.Fprintf(w, "alias %s='%s run -- %s'\n", n, strings.ReplaceAll(q, "'", `'\''`), n)
		}
	}
	return nil
}
