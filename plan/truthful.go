package plan

import (
	"strconv"
	"strings"
)

// The variables agentbox sets inside a box to say what is in force, and only
// then (see Truthful); inherited copies are always removed.
const (
	VarActive   = "AGENTBOX"          // "1" inside a box
	VarBackend  = "AGENTBOX_BACKEND"  // the backend that confines
	VarWritable = "AGENTBOX_WRITABLE" // the folders CMD may write
	VarDeny     = "AGENTBOX_DENY"     // the paths hidden
	VarNetwork  = "AGENTBOX_NETWORK"  // the network mode
	VarDegraded = "AGENTBOX_DEGRADED" // set instead, when CMD runs unconfined
	VarDepth    = "AGENTBOX_DEPTH"    // how many boxes CMD runs in
	VarPublish  = "AGENTBOX_PUBLISH"  // the published ports, ADDR:PORT:BOXPORT
)

// TruthfulVars are the names of the variables only agentbox sets.
var TruthfulVars = []string{VarActive, VarBackend, VarWritable, VarDeny, VarNetwork, VarDegraded, VarDepth, VarPublish}

// ListSeparator is the separator of the lists in AGENTBOX_WRITABLE and
// AGENTBOX_DENY: ";" on Windows (paths hold no ";" there as a rule, and
// PATH uses it), "," elsewhere.
func ListSeparator(goos string) string {
	if goos == "windows" {
		return ";"
	}
	return ","
}

// SplitList splits a list variable as Truthful joined it.
func SplitList(goos, s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ListSeparator(goos))
}

// Truthful returns the variables that say what is in force, for a plan
// whose Box is filled in: AGENTBOX=1, the backend, what is writable and
// hidden, the network mode, TMPDIR, and the preloaded filesystem log's
// LD_PRELOAD (PreloadEnv). It returns nothing for a plan that
// runs unconfined: nothing may claim a protection that is not there.
func (p *Plan) Truthful() []string {
	if !p.Confined() {
		return nil
	}
	sep := ListSeparator(p.GOOS)
	out := []string{
		VarActive + "=1",
		VarBackend + "=" + p.Box.Backend,
		VarWritable + "=" + strings.Join(p.Box.Writable, sep),
		VarDeny + "=" + strings.Join(p.Denied(), sep),
		VarNetwork + "=" + p.Network.Mode,
	}
	if p.Depth > 0 {
		out = append(out, VarDepth+"="+strconv.Itoa(p.Depth))
	}
	if len(p.Network.Publish) > 0 {
		var pubs []string
		for _, pub := range p.Network.Publish {
			pubs = append(pubs, pub.Spec())
		}
		out = append(out, VarPublish+"="+strings.Join(pubs, ","))
	}
	if p.Box.Tmpdir != "" {
		out = append(out, "TMPDIR="+p.Box.Tmpdir)
	}
	if v := p.PreloadEnv(); v != "" {
		out = append(out, v)
	}
	return out
}

// PreloadEnv is the LD_PRELOAD variable that loads the preloaded
// filesystem log (Log.Preload) into the box's dynamically linked
// programs, ahead of what the caller's own LD_PRELOAD names (kept after
// it); "" when the run has no preloaded log.
func (p *Plan) PreloadEnv() string {
	if p.Log.Filesystem != "preload" || p.Log.Preload == "" {
		return ""
	}
	v := "LD_PRELOAD=" + p.Log.Preload + "/" + PreloadLibrary
	for _, kv := range p.Environ {
		if old, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok && strings.TrimSpace(old) != "" {
			// The dynamic linker splits the list at spaces and colons.
			v += " " + old
		}
	}
	return v
}

// BoxEnviron is the whole environment CMD starts with: the resolved
// environment, the backend's variables and the truthful ones (or, for an
// unconfined run, AGENTBOX_DEGRADED).
func (p *Plan) BoxEnviron() []string {
	out := append([]string(nil), p.Environ...)
	if !p.Confined() {
		// In the outer box, the outer box's own variables (in Environ)
		// stay true; nothing is degraded.
		if p.Box.Degraded != "" && p.Box.Outer == "" {
			out = append(out, VarDegraded+"="+p.Box.Degraded)
		}
		return out
	}
	set := append(append([]string(nil), p.Box.Env...), p.Truthful()...)
	// A name set here replaces an inherited copy (TMPDIR, the proxy
	// variables): programs read the first copy of a name, so one left
	// before it would win.
	names := map[string]bool{}
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	kept := out[:0]
	for _, kv := range out {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			kept = append(kept, kv)
		}
	}
	return append(kept, set...)
}
