package policy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/cache"
)

// A project policy comes with the repository, so a stranger may have written
// it. It is used only after the user has trusted exactly these bytes: the
// trust store pins each file's SHA-256, and any edit needs trusting again
// (the model is direnv's and mise's "allow").

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
	data, err := os.ReadFile(s.Path)
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
	return ok, s.write(m)
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
}

func (e *UntrustedError) Error() string {
	if e.Edited {
		return fmt.Sprintf("%s: project policy changed since it was trusted", e.File)
	}
	return fmt.Sprintf("%s: project policy is not trusted", e.File)
}

// printable shows s as is when it holds only printable characters, and
// quoted otherwise: a policy must not be able to move the cursor or clear
// the lines of the very message that asks the user to review it.
func printable(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// Grants describes, one line each, what the untrusted policy would grant.
func (e *UntrustedError) Grants() []string {
	if e.Layer == nil {
		return nil
	}
	var out []string
	for _, key := range listKeys {
		var vals []string
		for _, en := range e.Layer.Lists[key] {
			vals = append(vals, printable(en.Value))
		}
		if len(vals) > 0 {
			out = append(out, fmt.Sprintf("%s = %s", key, strings.Join(vals, ", ")))
		}
	}
	keys := make([]string, 0, len(e.Layer.Scalars))
	for k := range e.Layer.Scalars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		line := fmt.Sprintf("%s = %s", k, printable(e.Layer.Scalars[k].Value))
		if strings.HasPrefix(k, "caches.") && e.Layer.Scalars[k].Value == cache.HostWritable {
			line += " (WARNING: the box could change your own cache, which the tool uses outside the box later)"
		}
		out = append(out, line)
	}
	for _, k := range sortedKeys(e.Layer.EnvSet) {
		out = append(out, fmt.Sprintf("env.set.%s = (a value)", printable(k)))
	}
	for _, p := range e.Layer.Providers {
		var w []string
		for _, en := range p.Writable {
			w = append(w, printable(en.Value))
		}
		var cmds []string
		for _, c := range p.Commands {
			cmds = append(cmds, printable(c))
		}
		out = append(out, fmt.Sprintf("providers.%s: commands %s, writable %s, sandbox %v", printable(p.Name), strings.Join(cmds, ", "), strings.Join(w, ", "), p.Sandbox))
	}
	return out
}
