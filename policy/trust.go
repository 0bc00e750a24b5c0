package policy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A project policy comes with the repository, so a stranger may have written
// it. It is used only after the user has trusted what it says: the trust
// store pins, per file, the SHA-256 of its meaning (Meaning: the parsed,
// canonical content), so an edit of a comment or of the layout needs no
// new trust and any change of what it says does (the model is direnv's and
// mise's "allow", for meaning rather than bytes).

// Hash returns the hex SHA-256 of a policy file's bytes.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// TrustStore is the file that records trusted project policies, one
// "sha256 path" line each.
type TrustStore struct {
	Path string
}

// StorePath returns where the trust store lives: $XDG_STATE_HOME/agentbox/trusted.
func StorePath(env Env) string { return filepath.Join(StateDir(env), "trusted") }

// StateDir returns agentbox's state folder: $XDG_STATE_HOME/agentbox
// (~/.local/state/agentbox by default).
func StateDir(env Env) string {
	state := env.Getenv("XDG_STATE_HOME")
	if state == "" || !filepath.IsAbs(state) {
		state = filepath.Join(env.Home, ".local", "state")
	}
	return filepath.Join(state, "agentbox")
}

func (s TrustStore) read() (map[string]string, error) {
	out := map[string]string{}
	data, err := OSFS{}.ReadFile(s.Path)
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading trust store: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		hash, path, ok := strings.Cut(sc.Text(), " ")
		if ok && len(hash) == 64 {
			out[path] = hash
		}
	}
	return out, nil
}

// contentDir is where the trusted policies' bytes are kept, by the hash
// they were pinned with, so that a policy edited since can be shown as
// what changed.
func (s TrustStore) contentDir() string { return s.Path + ".d" }

// Save keeps a copy of the policy bytes data being trusted under hash,
// the pin (the policy's Meaning).
func (s TrustStore) Save(hash string, data []byte) error {
	if len(hash) != 64 || strings.ContainsAny(hash, "/.") {
		return fmt.Errorf("writing trust store: %q is not a hash", hash)
	}
	dir := s.contentDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing trust store: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".policy-*")
	if err != nil {
		return fmt.Errorf("writing trust store: %w", err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, hash+".toml"))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing trust store: %w", err)
	}
	return nil
}

// Content returns the bytes of the trusted policy pinned as hash, as Save
// kept them; an error when there are none, or when they neither mean what
// the hash says nor are the bytes it hashes (a pin of bytes, as agentbox
// once made).
func (s TrustStore) Content(hash string) ([]byte, error) {
	if len(hash) != 64 || strings.ContainsAny(hash, "/.") {
		return nil, fmt.Errorf("no trusted content for %q", hash)
	}
	data, err := OSFS{}.ReadFile(filepath.Join(s.contentDir(), hash+".toml"))
	if err != nil {
		return nil, err
	}
	if Hash(data) != hash && meaningOf(data) != hash {
		return nil, fmt.Errorf("the trusted copy %s does not match its hash", hash)
	}
	return data, nil
}

// Lookup returns the pinned hash of path, or "".
func (s TrustStore) Lookup(path string) (string, error) {
	m, err := s.read()
	if err != nil {
		return "", err
	}
	return m[path], nil
}

// Trust pins hash for path.
func (s TrustStore) Trust(path, hash string) error {
	m, err := s.read()
	if err != nil {
		return err
	}
	m[path] = hash
	return s.write(m)
}

// Revoke forgets path; it reports whether path was trusted.
func (s TrustStore) Revoke(path string) (bool, error) {
	m, err := s.read()
	if err != nil {
		return false, err
	}
	_, ok := m[path]
	delete(m, path)
	if err := s.write(m); err != nil {
		return ok, err
	}
	return ok, s.SaveLinks(path, nil)
}

// linksPath is the file that records, per trusted policy, the symbolic
// links its paths led through when it was trusted (PathLinks).
func (s TrustStore) linksPath() string { return s.Path + ".links" }

func (s TrustStore) readLinks() (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	data, err := OSFS{}.ReadFile(s.linksPath())
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading trust store: %w", err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("reading trust store %s: %w", s.linksPath(), err)
	}
	return out, nil
}

// Links returns the links trust recorded for the policy at path (none
// when it recorded none).
func (s TrustStore) Links(path string) (map[string]string, error) {
	m, err := s.readLinks()
	if err != nil {
		return nil, err
	}
	return m[path], nil
}

// SaveLinks records links for the policy at path (none: forgets them).
func (s TrustStore) SaveLinks(path string, links map[string]string) error {
	m, err := s.readLinks()
	if err != nil {
		return err
	}
	if len(links) == 0 {
		if _, ok := m[path]; !ok {
			return nil
		}
		delete(m, path)
	} else {
		m[path] = links
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("writing trust store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return fmt.Errorf("writing trust store: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.Path), ".links-*")
	if err != nil {
		return fmt.Errorf("writing trust store: %w", err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.linksPath())
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing trust store: %w", err)
	}
	return nil
}

func (s TrustStore) write(m map[string]string) error {
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return fmt.Errorf("writing trust store: %w", err)
	}
	var b strings.Builder
	for _, p := range sortedKeys(m) {
		fmt.Fprintf(&b, "%s %s\n", m[p], p)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.Path), ".trusted-*")
	if err != nil {
		return fmt.Errorf("writing trust store: %w", err)
	}
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing trust store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing trust store: %w", err)
	}
	// Rename into place so a crash never leaves a half-written store.
	return os.Rename(tmp.Name(), s.Path)
}

// UntrustedError is returned when the nearest project policy is not trusted,
// or was edited since it was.
type UntrustedError struct {
	File   string
	Edited bool
	Layer  *Layer // what it would add, for the message
	// Trusted is the version that was trusted, when the store kept it.
	Trusted *Layer
	// Env is the world the grants are classified in (home folder,
	// environment); the zero Env classifies without one.
	Env Env
	// Base is what each setting is without the policy (the layers before
	// it), which its grants are classified against.
	Base Baseline
	// Proposal is true when agentbox learn left a proposal for the file.
	Proposal bool
}

func (e *UntrustedError) Error() string {
	if e.Edited {
		return fmt.Sprintf("%s: project policy changed since it was trusted", Escape(e.File))
	}
	return fmt.Sprintf("%s: project policy is not trusted", Escape(e.File))
}

// Explain is what the message about the untrusted policy shows: what it
// would grant, classified, or, when it was edited since it was trusted and
// the trusted version is known, what changed.
func (e *UntrustedError) Explain() []string {
	if e.Edited && e.Trusted != nil {
		out := []string{"what changed since you trusted it (+ added, - removed; ! loosens your sandbox):"}
		return append(out, Diff(Classify(e.Trusted, e.Env, e.Base), Classify(e.Layer, e.Env, e.Base))...)
	}
	out := []string{"it would grant (! loosens your sandbox):"}
	for _, g := range Classify(e.Layer, e.Env, e.Base) {
		out = append(out, "  "+g.String())
	}
	return out
}

// Grants describes, one line each, what the untrusted policy would grant.
func (e *UntrustedError) Grants() []string {
	var out []string
	for _, g := range Classify(e.Layer, e.Env, e.Base) {
		out = append(out, g.String())
	}
	return out
}
