package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// meaningSchema names the canonical form Meaning hashes; a change of the
// form changes every pin, which then asks for trust again.
const meaningSchema = "agentbox policy meaning 1"

// meaningForm is what a parsed policy says, and nothing else: no comment,
// layout, quoting, key order, table syntax (a dotted key or an inline
// table) or number spelling survives parsing into it. Lists keep their
// order and repeats: the meaning of a reordered list is not assumed.
type meaningForm struct {
	Schema    string              `json:"schema"`
	Scalars   map[string]string   `json:"scalars,omitempty"`
	Lists     map[string][]string `json:"lists,omitempty"`
	EnvSet    map[string]string   `json:"env_set,omitempty"`
	Providers []meaningProvider   `json:"providers,omitempty"`
	Secrets   []meaningSecret     `json:"secrets,omitempty"`
}

type meaningSecret struct {
	Env   string   `json:"env"`
	File  string   `json:"file,omitempty"`
	Hosts []string `json:"hosts,omitempty"`
}

type meaningProvider struct {
	Name     string   `json:"name"`
	Commands []string `json:"commands,omitempty"`
	Writable []string `json:"writable,omitempty"`
	Sandbox  bool     `json:"sandbox,omitempty"`
}

// Meaning is the hex SHA-256 of what the parsed policy l says (its
// settings, lists in order, env.set, provider declarations and
// [[network.secret]] tables), in a
// canonical form. The trust store pins it, so that editing a comment or
// the layout of a trusted policy needs no new trust, while any change of
// what it says does. Relative paths stay as written: the pin belongs to
// one file, so they always mean the same folder.
func Meaning(l *Layer) string {
	f := meaningForm{Schema: meaningSchema, Scalars: map[string]string{}, Lists: map[string][]string{}, EnvSet: map[string]string{}}
	for k, e := range l.Scalars {
		f.Scalars[k] = e.Value
	}
	for k, es := range l.Lists {
		for _, e := range es {
			f.Lists[k] = append(f.Lists[k], e.Value)
		}
	}
	for k, e := range l.EnvSet {
		f.EnvSet[k] = e.Value
	}
	for _, p := range l.Providers {
		mp := meaningProvider{Name: p.Name, Commands: p.Commands, Sandbox: p.Sandbox}
		for _, e := range p.Writable {
			mp.Writable = append(mp.Writable, e.Value)
		}
		f.Providers = append(f.Providers, mp)
	}
	for _, d := range l.Secrets {
		ms := meaningSecret{Env: d.Env, File: d.File.Value}
		for _, h := range d.Hosts {
			ms.Hosts = append(ms.Hosts, h.Value)
		}
		f.Secrets = append(f.Secrets, ms)
	}
	// encoding/json writes map keys sorted: the form is canonical.
	data, err := json.Marshal(f)
	if err != nil {
		panic("policy: encoding a policy's meaning: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// meaningOf parses data as a policy and returns its Meaning, "" when it
// does not parse.
func meaningOf(data []byte) string {
	l, err := Parse("project", "/policy.toml", data)
	if err != nil {
		return ""
	}
	return Meaning(l)
}
