package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Level says how well the chosen backend honours one rule of the plan.
type Level string

// The three levels, as `agentbox plan` prints them; every backend uses them.
const (
	// Enforced: the kernel refuses what the rule forbids.
	Enforced Level = "enforced"
	// Weaker: the rule is enforced, but less strictly than the contract
	// says; How says exactly how.
	Weaker Level = "enforced-weaker"
	// NotEnforced: the backend cannot honour the rule at all; How says why.
	// Under enforce = "require" such a rule is an error.
	NotEnforced Level = "not-enforced"
)

// RuleStatus is how one mount or rule of the plan fares under a backend.
type RuleStatus struct {
	Rule   string `json:"rule"` // "root", "dev", "tmp", "workspace", "writable", "read-only", "deny", "network", ...
	Path   string `json:"path,omitempty"`
	Origin string `json:"origin,omitempty"`
	Level  Level  `json:"level"`
	How    string `json:"how,omitempty"`
}

// Box is what the chosen backend makes of the plan. It is filled in while
// the plan is resolved, before it is frozen: `agentbox plan` shows it and
// `agentbox run` does exactly this.
type Box struct {
	// Backend is the backend that confines CMD ("bwrap", "landlock",
	// "windows"), or "" when CMD runs unconfined.
	Backend string `json:"backend"`
	// Degraded is, under enforce = "best-effort", why CMD runs unconfined;
	// with Outer, why it gets no box of its own.
	Degraded string `json:"degraded,omitempty"`
	// Outer is the backend of the box agentbox itself runs in, when CMD
	// runs in that box because no box of its own can be made there.
	Outer string `json:"outer,omitempty"`
	// Passed are the backends auto passed over, each with the reason.
	Passed []string `json:"passed_over,omitempty"`
	// Rules say how the backend enforces each rule of the plan.
	Rules []RuleStatus `json:"rules,omitempty"`
	// Writable are the folders CMD may write, as AGENTBOX_WRITABLE lists them.
	Writable []string `json:"writable,omitempty"`
	// Tmpdir is the TMPDIR CMD gets.
	Tmpdir string `json:"tmpdir,omitempty"`
	// Env are variables the backend sets for CMD besides the truthful ones
	// (the proxy variables in allowlist mode), NAME=value.
	Env []string `json:"env,omitempty"`
	// Detail is the backend's own rendering of the plan: the bwrap
	// arguments, the Landlock rule set, the Windows users, ACEs and
	// firewall rules.
	Detail json.RawMessage `json:"detail,omitempty"`
}

// NotEnforced returns the rules the backend cannot honour at all.
func (b Box) NotEnforced() []RuleStatus { return b.level(NotEnforced) }

// Weaker returns the rules enforced less strictly than the contract says.
func (b Box) Weaker() []RuleStatus { return b.level(Weaker) }

func (b Box) level(l Level) []RuleStatus {
	var out []RuleStatus
	for _, r := range b.Rules {
		if r.Level == l {
			out = append(out, r)
		}
	}
	return out
}

// Confined reports whether a backend confines CMD.
func (p *Plan) Confined() bool { return p.Box.Backend != "" }

// Digest identifies the plan: the SHA-256 of its JSON form. The run ID is
// left out (each resolution draws a new one), so `agentbox plan` and the
// run it describes have the same digest. Environment values are not part
// of the JSON form and so not of the digest.
func (p *Plan) Digest() string {
	q := *p
	id := q.RunID
	q.RunID = ""
	data, err := json.Marshal(&q)
	if err != nil {
		return ""
	}
	if id != "" {
		data = bytes.ReplaceAll(data, []byte(id), []byte("RUN"))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Clone returns a deep copy of p, environment included.
func (p *Plan) Clone() *Plan {
	data, err := json.Marshal(p)
	if err != nil {
		panic("plan: cloning: " + err.Error()) // a Plan always marshals
	}
	q := &Plan{}
	if err := json.Unmarshal(data, q); err != nil {
		panic("plan: cloning: " + err.Error())
	}
	q.Environ = append([]string(nil), p.Environ...)
	// What JSON leaves out: the network's credentials.
	if p.Network.Upstream != nil {
		q.Network.Upstream.Credentials = p.Network.Upstream.Credentials
	}
	for i, s := range p.Network.Secrets {
		q.Network.Secrets[i].Value, q.Network.Secrets[i].Placeholder = s.Value, s.Placeholder
	}
	q.HostExec.Trees = p.HostExec.Trees // read-only once resolved
	return q
}
