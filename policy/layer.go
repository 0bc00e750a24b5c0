package policy

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/agentbox/agentbox/cache"
	"github.com/agentbox/agentbox/plan"
)

// Entry is one value a layer sets, with the rule that set it.
type Entry struct {
	Value  string
	Origin plan.Origin
	// Base is the folder a relative path is relative to (a policy file's
	// folder). Empty means a relative path is an error (flags, environment).
	Base string
}

// ProviderDecl is a [providers.NAME] table: a provider declared or extended.
type ProviderDecl struct {
	Name     string
	Commands []string
	Writable []Entry
	Sandbox  bool
	Origin   plan.Origin
}

// SecretDecl is a [[network.secret]] table.
type SecretDecl struct {
	Env    string
	File   Entry // Value "" for agentbox's own environment
	Hosts  []Entry
	Origin plan.Origin
}

// Layer is one source of policy: built-in defaults, a policy file, the
// environment or the command line. Later layers win for single values; lists
// are unioned.
type Layer struct {
	Name   string // "defaults", "user", "project", "env", "policy", "flags"
	File   string // the policy file, if any
	Status string // "loaded", "absent", "trusted", "set"
	Hash   string // SHA-256 of a policy file's bytes, hex
	// Meaning is the SHA-256 of what the file says (see Meaning), hex:
	// what trust pins.
	Meaning string
	// Note says what was left out of the layer and why.
	Note string

	Scalars   map[string]Entry
	Lists     map[string][]Entry
	EnvSet    map[string]Entry
	Providers []ProviderDecl
	Secrets   []SecretDecl

	// Pinned is set on a trusted project policy: its paths must lead
	// through no link but Links, the ones trust recorded (a link's path
	// and what it says; see PathLinks).
	Pinned bool
	Links  map[string]string
}

func newLayer(name, file, status string) *Layer {
	return &Layer{Name: name, File: file, Status: status,
		Scalars: map[string]Entry{}, Lists: map[string][]Entry{}, EnvSet: map[string]Entry{}}
}

// listKeys are the list keys of the schema, as they appear in TOML.
var listKeys = []string{
	"filesystem.writable", "filesystem.read_only", "filesystem.deny",
	"network.allow", "network.deny", "network.publish", "network.unix_sockets", "env.pass", "env.deny", "seccomp.allow",
}

// choices lists the values a scalar key accepts, where the set is closed.
var choices = map[string][]string{
	"sandbox.enforce":     {plan.Require, plan.BestEffort},
	"sandbox.backend":     {"auto", "bwrap", "landlock", "windows", "seatbelt"},
	"tmp.mode":            {plan.TmpWorkspace, plan.TmpPrivate, plan.TmpHost},
	"network.mode":        {plan.NetOpen, plan.NetNone, plan.NetAllowlist},
	"env.mode":            {"inherit", "clean"},
	"filesystem.ssh_keys": {"hidden", "visible"},
	"log.enabled":         {"true", "false"},
	"notice.backend":      {plan.NoticeOnce, plan.NoticeAlways, plan.NoticeNever},
}

// Choices returns the values the scalar key accepts ("network.mode"), nil
// when any value goes. The command line's help and completion list the
// same values the policy checks.
func Choices(key string) []string {
	return append([]string(nil), choices[key]...)
}

// ErrPolicy marks an error in a policy's content (as opposed to I/O).
var ErrPolicy = errors.New("bad policy")

// policyError is an error located in a policy file or on the command line.
type policyError struct {
	where string // "file:line" or "flag --writable" or "env AGENTBOX_DENY"
	key   string
	msg   string
}

func (e *policyError) Error() string {
	if e.key == "" {
		return fmt.Sprintf("%s: %s", e.where, e.msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.where, e.key, e.msg)
}

func (e *policyError) Unwrap() error { return ErrPolicy }

func originError(o plan.Origin, msg string) error {
	where := o.Key
	key := ""
	if o.File != "" {
		where = o.File
		if o.Line > 0 {
			where = fmt.Sprintf("%s:%d", o.File, o.Line)
		}
		key = o.Key
	}
	return &policyError{where: where, key: key, msg: msg}
}

// Parse decodes a policy file strictly. file names the file in errors; base
// is the folder relative paths in it are relative to.
func Parse(name, file string, data []byte) (*Layer, error) {
	var s Schema
	md, err := toml.Decode(string(data), &s)
	pos := positions(data)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			line := pe.Position.Line
			msg := pe.Message
			if strings.Contains(msg, `got '\n'`) && line > 1 {
				// The lexer has already stepped over the end of the line
				// that holds the mistake.
				line--
			}
			if pe.LastKey != "" && strings.Contains(msg, "incompatible types") {
				return nil, &policyError{where: fmt.Sprintf("%s:%d", file, line), key: pe.LastKey, msg: "wrong type: " + typeMessage(msg)}
			}
			return nil, &policyError{where: fmt.Sprintf("%s:%d", file, line), msg: "malformed TOML: " + msg}
		}
		if m := decodeErr().FindStringSubmatch(err.Error()); m != nil {
			return nil, &policyError{where: file + ":" + m[1], key: m[2], msg: "wrong type: " + typeMessage(m[3])}
		}
		return nil, &policyError{where: file, msg: err.Error()}
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0].String()
		return nil, &policyError{where: fmt.Sprintf("%s:%d", file, pos.line(k)), key: k, msg: "unknown key"}
	}
	for _, table := range [][]string{{"env", "set"}, {"providers"}, {"caches"}} {
		// The decoder turns a list into an empty table without a word.
		if md.Type(table...) == "Array" {
			k := strings.Join(table, ".")
			return nil, &policyError{where: fmt.Sprintf("%s:%d", file, pos.line(k)), key: k, msg: "wrong type: want a table"}
		}
	}
	if md.IsDefined("version") && s.Version != 1 {
		return nil, &policyError{where: fmt.Sprintf("%s:%d", file, pos.line("version")), key: "version", msg: fmt.Sprintf("unsupported version %d (this agentbox reads version 1)", s.Version)}
	}

	l := newLayer(name, file, "loaded")
	base := filepath.Dir(file)
	origin := func(key string) plan.Origin { return plan.Origin{File: file, Line: pos.line(key), Key: key} }
	scalar := func(key, v string) {
		if md.IsDefined(strings.Split(key, ".")...) {
			l.Scalars[key] = Entry{Value: v, Origin: origin(key), Base: base}
		}
	}
	list := func(key string, vs []string) {
		for i, v := range vs {
			k := fmt.Sprintf("%s[%d]", key, i)
			l.Lists[key] = append(l.Lists[key], Entry{Value: v, Origin: origin(k), Base: base})
		}
	}
	scalar("sandbox.enforce", s.Sandbox.Enforce)
	scalar("sandbox.backend", s.Sandbox.Backend)
	scalar("sandbox.project_may_loosen", strconv.FormatBool(s.Sandbox.ProjectMayLoosen))
	scalar("filesystem.ssh_keys", s.Filesystem.SSHKeys)
	scalar("filesystem.scan_limit", strconv.FormatInt(s.Filesystem.ScanLimit, 10))
	if s.Filesystem.ProtectDepth != nil {
		return nil, &policyError{where: fmt.Sprintf("%s:%d", file, pos.line("filesystem.protect_depth")), key: "filesystem.protect_depth",
			msg: "no longer exists: git repositories and control files are found at any depth; filesystem.scan_limit bounds the search"}
	}
	scalar("workspace.root", s.Workspace.Root)
	scalar("workspace.id", s.Workspace.ID)
	scalar("workspace.task", s.Workspace.Task)
	scalar("tmp.mode", s.Tmp.Mode)
	scalar("network.mode", s.Network.Mode)
	scalar("network.upstream", s.Network.Upstream)
	scalar("env.mode", s.Env.Mode)
	scalar("limits.processes", strconv.FormatInt(s.Limits.Processes, 10))
	scalar("limits.open_files", strconv.FormatInt(s.Limits.OpenFiles, 10))
	scalar("limits.memory", s.Limits.Memory)
	scalar("limits.cpu_time", s.Limits.CPUTime)
	scalar("limits.file_size", s.Limits.FileSize)
	scalar("provider.name", s.Provider.Name)
	scalar("log.enabled", strconv.FormatBool(s.Log.Enabled))
	switch v := s.Log.Filesystem.(type) {
	case nil:
	case bool:
		scalar("log.filesystem", strconv.FormatBool(v))
	case string:
		if v != "complete" {
			return nil, &policyError{where: fmt.Sprintf("%s:%d", file, pos.line("log.filesystem")), key: "log.filesystem",
				msg: fmt.Sprintf("%q: want true, false or \"complete\"", v)}
		}
		scalar("log.filesystem", v)
	default:
		return nil, &policyError{where: fmt.Sprintf("%s:%d", file, pos.line("log.filesystem")), key: "log.filesystem",
			msg: fmt.Sprintf("wrong type: TOML value has type %s; want true, false or \"complete\"", tomlType(v))}
	}
	scalar("log.filesystem_reads", strconv.FormatBool(s.Log.FilesystemReads))
	scalar("notice.backend", s.Notice.Backend)
	list("filesystem.writable", s.Filesystem.Writable)
	list("filesystem.read_only", s.Filesystem.ReadOnly)
	list("filesystem.deny", s.Filesystem.Deny)
	list("network.allow", s.Network.Allow)
	list("network.deny", s.Network.Deny)
	list("network.publish", s.Network.Publish)
	for i, sec := range s.Network.Secret {
		key := fmt.Sprintf("network.secret[%d]", i)
		d := SecretDecl{Env: sec.Env, Origin: origin(key),
			File: Entry{Value: sec.File, Origin: origin(key + ".file"), Base: base}}
		for j, h := range sec.Hosts {
			d.Hosts = append(d.Hosts, Entry{Value: h, Origin: origin(fmt.Sprintf("%s.hosts[%d]", key, j))})
		}
		l.Secrets = append(l.Secrets, d)
	}
	list("network.unix_sockets", s.Network.UnixSockets)
	list("env.pass", s.Env.Pass)
	list("env.deny", s.Env.Deny)
	list("seccomp.allow", s.Seccomp.Allow)
	for _, k := range sortedKeys(s.Caches) {
		key := "caches." + k
		if _, known := cache.Lookup(k); !known && k != "default" {
			return nil, &policyError{where: fmt.Sprintf("%s:%d", file, pos.line(key)), key: key,
				msg: fmt.Sprintf("unknown tool (known: %s, and default for the others)", strings.Join(cache.Names(), ", "))}
		}
		l.Scalars[key] = Entry{Value: s.Caches[k], Origin: origin(key), Base: base}
	}
	for _, k := range sortedKeys(s.Env.Set) {
		key := "env.set." + k
		l.EnvSet[k] = Entry{Value: s.Env.Set[k], Origin: origin(key)}
	}
	for _, name := range sortedKeys(s.Providers) {
		d := s.Providers[name]
		key := "providers." + name
		pd := ProviderDecl{Name: name, Commands: d.Commands, Sandbox: d.Sandbox, Origin: origin(key)}
		for i, w := range d.Writable {
			pd.Writable = append(pd.Writable, Entry{Value: w, Origin: origin(fmt.Sprintf("%s.writable[%d]", key, i)), Base: base})
		}
		l.Providers = append(l.Providers, pd)
	}
	if err := l.check(); err != nil {
		return nil, err
	}
	return l, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeErr matches the decoder's type errors, which carry the line and key
// only in their text.
// It is compiled on first use: package init runs on every start of
// agentbox, including the init inside every box.
var decodeErr = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]+)"\): (.*)$`)
})

// tomlType names the TOML type of a value the decoder gave as any.
func tomlType(v any) string {
	switch v.(type) {
	case int64:
		return "int64"
	case float64:
		return "float64"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	}
	return fmt.Sprintf("%T", v)
}

// typeMessage turns the TOML decoder's type complaint into plain words.
func typeMessage(msg string) string {
	msg = strings.TrimPrefix(msg, "incompatible types: ")
	if i := strings.Index(msg, "; destination has type "); i >= 0 {
		want := msg[i+len("; destination has type "):]
		words := map[string]string{"[]string": "a list of strings", "slice": "a list", "string": "a string",
			"int64": "an integer", "int": "an integer", "integer": "an integer", "bool": "true or false", "boolean": "true or false", "map": "a table", "struct": "a table", "map[string]string": "a table of strings"}
		w, ok := words[want]
		if !ok {
			w = "another type"
		}
		return msg[:i] + "; want " + w
	}
	if strings.Contains(msg, "type mismatch for ") {
		// The decoder names Go types here; say it in TOML's words.
		if _, after, ok := strings.Cut(msg, "expected type "); ok {
			words := map[string]string{"bool": "true or false", "string": "a string", "int64": "an integer", "int": "an integer"}
			t, _, _ := strings.Cut(after, ",")
			if w, ok := words[strings.TrimSpace(t)]; ok {
				return "want " + w
			}
		}
		return "wrong type for this key"
	}
	return msg
}

// check validates the values of a layer that can be checked without the
// world: closed choices, numbers, sizes and durations.
func (l *Layer) check() error {
	for key, e := range l.Scalars {
		if cs, ok := choices[key]; ok && !contains(cs, e.Value) {
			return originError(e.Origin, fmt.Sprintf("%q is not one of %s", e.Value, strings.Join(cs, ", ")))
		}
	}
	for key, e := range l.Scalars {
		if strings.HasPrefix(key, "caches.") && !contains(cache.Modes, e.Value) {
			return originError(e.Origin, fmt.Sprintf("%q is not one of %s", e.Value, strings.Join(cache.Modes, ", ")))
		}
	}
	if e, ok := l.Scalars["filesystem.scan_limit"]; ok {
		if n, err := strconv.ParseInt(e.Value, 10, 64); err != nil || n < 1000 || n > 1_000_000_000 {
			return originError(e.Origin, fmt.Sprintf("%q: want a number of folders from 1000 to 1000000000", e.Value))
		}
	}
	for _, key := range []string{"limits.processes", "limits.open_files"} {
		if e, ok := l.Scalars[key]; ok {
			if n, err := strconv.ParseInt(e.Value, 10, 64); err != nil || n < 0 {
				return originError(e.Origin, fmt.Sprintf("%q: want a whole number, 0 for unlimited", e.Value))
			}
		}
	}
	for _, key := range []string{"limits.memory", "limits.file_size"} {
		if e, ok := l.Scalars[key]; ok {
			if _, err := ParseSize(e.Value); err != nil {
				return originError(e.Origin, err.Error())
			}
		}
	}
	if e, ok := l.Scalars["limits.cpu_time"]; ok {
		if _, err := ParseDuration(e.Value); err != nil {
			return originError(e.Origin, err.Error())
		}
	}
	for _, key := range []string{"workspace.id", "workspace.task"} {
		if e, ok := l.Scalars[key]; ok && e.Value != "" {
			if err := checkName(e.Value); err != nil {
				return originError(e.Origin, err.Error())
			}
		}
	}
	for k, e := range l.EnvSet {
		if !validEnvName(k) {
			return originError(e.Origin, fmt.Sprintf("%q is not a valid variable name", k))
		}
	}
	for _, e := range l.Lists["network.publish"] {
		if _, err := ParsePublish(e.Value); err != nil {
			return originError(e.Origin, err.Error())
		}
	}
	for _, d := range l.Secrets {
		if err := d.check(); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// checkName accepts a workspace or task id: one plain path element.
func checkName(s string) error {
	if s == "." || s == ".." || strings.HasPrefix(s, ".") {
		return fmt.Errorf("%q: an id cannot start with a dot", s)
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return fmt.Errorf("%q: an id may hold only letters, digits, '-', '_' and '.'", s)
		}
	}
	if len(s) > 128 {
		return fmt.Errorf("%q: an id is at most 128 characters", s)
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// ParseSize reads a size such as "512MiB", "8GiB", "1G" or "4096".
func ParseSize(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   uint64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
	}
	num, mult := s, uint64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n == 0 || n > (1<<63)/mult {
		return 0, fmt.Errorf("%q: want a size such as \"512MiB\" or \"8GiB\"", s)
	}
	return n * mult, nil
}

// ParseDuration reads a CPU time such as "90s", "30m", "2h" or "1d", in seconds.
func ParseDuration(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	bad := fmt.Errorf("%q: want a duration such as \"90s\", \"30m\", \"2h\" or \"1d\"", s)
	mult := uint64(0)
	switch {
	case strings.HasSuffix(s, "s"):
		mult = 1
	case strings.HasSuffix(s, "m"):
		mult = 60
	case strings.HasSuffix(s, "h"):
		mult = 3600
	case strings.HasSuffix(s, "d"):
		mult = 86400
	default:
		return 0, bad
	}
	n, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	if err != nil || n == 0 {
		return 0, bad
	}
	return n * mult, nil
}
