package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A policy `agentbox learn` proposes is kept apart from the project's
// policy, in agentbox's state folder: out of every box's reach (a box can
// write the project, and so a proposal there), and never read by a run,
// which goes on with the policy the user trusted. `agentbox trust
// --proposal` shows what it would grant and applies it.

// Proposal is a policy proposed for a project's policy file.
type Proposal struct {
	// File is the project policy it is for.
	File string `json:"file"`
	// From is the SHA-256 of the bytes of File it was made from, "" when
	// File did not exist: it applies only to those bytes, so an edit made
	// since is never lost.
	From string `json:"from"`
	// Create are folders it makes writable that do not exist yet; they
	// are made when it is applied.
	Create []string `json:"create,omitempty"`
	// Made is when it was made.
	Made time.Time `json:"made"`
	// Data is the whole proposed policy file.
	Data []byte `json:"-"`
}

// Proposals is the folder that keeps proposals, one per policy file: a
// <key>.json with what Proposal says and a <key>.toml with the policy.
type Proposals struct {
	Dir string
}

// ProposalsOf returns the proposals of the user env describes:
// $XDG_STATE_HOME/agentbox/proposals.
func ProposalsOf(env Env) Proposals { return Proposals{Dir: filepath.Join(StateDir(env), "proposals")} }

func (s Proposals) key(file string) string {
	sum := sha256.Sum256([]byte(file))
	return filepath.Join(s.Dir, hex.EncodeToString(sum[:16]))
}

// Put keeps p, replacing an earlier proposal for the same file.
func (s Proposals) Put(p Proposal) error {
	meta, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("keeping the proposal: %w", err)
	}
	k := s.key(p.File)
	if err := writeFileAtomic(k+".toml", p.Data); err != nil {
		return fmt.Errorf("keeping the proposal: %w", err)
	}
	if err := writeFileAtomic(k+".json", meta); err != nil {
		return fmt.Errorf("keeping the proposal: %w", err)
	}
	return nil
}

// Get returns the proposal for file; ok is false when there is none.
func (s Proposals) Get(file string) (p Proposal, ok bool, err error) {
	k := s.key(file)
	meta, err := OSFS{}.ReadFile(k + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return Proposal{}, false, nil
	}
	if err != nil {
		return Proposal{}, false, fmt.Errorf("reading the proposal for %s: %w", file, err)
	}
	if err := json.Unmarshal(meta, &p); err != nil || p.File != file {
		return Proposal{}, false, fmt.Errorf("reading the proposal for %s: %s is damaged", file, k+".json")
	}
	data, err := OSFS{}.ReadFile(k + ".toml")
	if err != nil {
		return Proposal{}, false, fmt.Errorf("reading the proposal for %s: %w", file, err)
	}
	p.Data = data
	return p, true, nil
}

// Waiting reports whether a proposal waits for file (one stat).
func (s Proposals) Waiting(file string) bool {
	_, err := os.Stat(s.key(file) + ".json")
	return err == nil
}

// Remove forgets the proposal for file.
func (s Proposals) Remove(file string) error {
	k := s.key(file)
	for _, f := range []string{k + ".json", k + ".toml"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Nearest returns the proposal for the policy file nearest dir: in dir or
// the closest folder above it.
func (s Proposals) Nearest(dir string) (p Proposal, ok bool, err error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return Proposal{}, false, nil
	}
	if err != nil {
		return Proposal{}, false, err
	}
	best := ""
	for _, e := range entries {
		name, isMeta := strings.CutSuffix(e.Name(), ".json")
		if !isMeta {
			continue
		}
		var meta Proposal
		data, err := OSFS{}.ReadFile(filepath.Join(s.Dir, e.Name()))
		if err != nil || json.Unmarshal(data, &meta) != nil || s.key(meta.File) != filepath.Join(s.Dir, name) {
			continue
		}
		if folder := filepath.Dir(meta.File); withinDir(dir, folder) && len(folder) > len(filepath.Dir(best)) {
			best = meta.File
		}
	}
	if best == "" {
		return Proposal{}, false, nil
	}
	return s.Get(best)
}

func withinDir(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// writeFileAtomic writes data to a new file beside path (0600) and renames
// it there.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
