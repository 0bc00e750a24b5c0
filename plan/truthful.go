package plan

import "strings"

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
)

// TruthfulVars are the names of the variables only agentbox sets.
var TruthfulVars = []string{VarActive, VarBackend, VarWritable, VarDeny, VarNetwork, VarDegraded, VarDepth}

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
// hidden, the network mode, and TMPDIR. It returns nothing for a plan that
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
	if p.Box.Tmpdir != "" {
		out = append(out, "TMPDIR="+p.Box.Tmpdir)
	}
	return out
}

// BoxEnviron is the whole environment CMD starts with: the resolved
// environment, the backend's variables and the truthful ones (or, for an
// unconfined run, AGENTBOX_DEGRADED).
func (p *Plan) BoxEnviron() []string {
	out := append([]string(nil), p.Environ...)
	if !p.Confined() {
		if p.Box.Degraded != "" {
			out = append(out, VarDegraded+"="+p.Box.Degraded)
		}
		return out
	}
	out = append(out, p.Box.Env...)
	return append(out, p.Truthful()...)
}
