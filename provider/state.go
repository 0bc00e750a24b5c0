package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"time"
)

// An agent CLI that keeps its user configuration and state in one file in
// the home folder (Claude Code: ~/.claude.json) cannot write that file in
// the box: it rewrites it through a temporary file and a lock beside it,
// and the home folder is read-only. Inside the box the CLI is pointed at
// its own folder instead (CLAUDE_CONFIG_DIR=~/.claude), where it keeps a
// copy (~/.claude/.claude.json).
//
// The host's file is a control file: it names the MCP servers the CLI
// starts, the tools it may use per project and which projects are
// trusted, so the box must never write it, directly or through anything
// agentbox copies back. The box's copy is refreshed from it before every
// confined run by a three-way merge of JSON objects:
//
//   - base: the host's file as it was at the last refresh (kept in
//     agentbox's state folder, where the box cannot write);
//   - ours: the box's copy, with what the box changed since;
//   - theirs: the host's file now.
//
// A value the box did not change takes the host's (a login, a new MCP
// server, a setting made outside reaches the box); a value the host did not
// change keeps the box's (what the box did is not lost); where both
// changed, objects are merged key by key and for anything else the box's
// value wins inside the box. Nothing flows back: the host's file is only
// ever read.

// maxState bounds the files the merge reads: the box writes its copy, and
// a huge one must not make agentbox allocate without limit.
const maxState = 64 << 20

// StateSync is one refresh of a box's copy of a CLI's configuration.
type StateSync struct {
	// Host is the host's file (~/.claude.json); only read.
	Host string
	// Box is the box's copy (~/.claude/.claude.json), in Dir.
	Box string
	// Base is the host's file at the last refresh, in agentbox's state
	// folder.
	Base string
}

// StateResult says what a refresh did.
type StateResult struct {
	// Wrote is true when the box's copy was written.
	Wrote bool
	// FromHost and KeptBox count the top-level keys that took the host's
	// value and that kept the box's own.
	FromHost, KeptBox int
}

// Sync refreshes the box's copy from the host's file (see above). It
// never writes s.Host. The box's copy is replaced through a temporary file
// and a rename inside its folder, opened as an os.Root: a link the box put
// in place of its copy is replaced, never followed.
func Sync(s StateSync) (StateResult, error) {
	var res StateResult
	theirs, err := readState(os.ReadFile, s.Host)
	if errors.Is(err, fs.ErrNotExist) {
		// Nothing on the host to bring in; the box's copy is its own.
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("reading %s: %w", s.Host, err)
	}
	dir, name := filepath.Split(s.Box)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return res, err
	}
	defer root.Close()
	unlock := lockState(root, name)
	defer unlock()

	ours, oursErr := readState(root.ReadFile, name)
	base, baseErr := readState(os.ReadFile, s.Base)
	var merged map[string]any
	switch {
	case oursErr != nil:
		// No copy yet (or one that is not a JSON object): the host's
		// file as it is.
		merged = theirs
		res.FromHost = len(theirs)
	case baseErr != nil:
		// A copy made before agentbox kept a base (the CLI started
		// from nothing in the box): the host's values win where both
		// have one, the box keeps what only it has.
		merged = mergeObjects(map[string]any{}, ours, theirs, true, &res)
	default:
		merged = mergeObjects(base, ours, theirs, false, &res)
	}
	if oursErr != nil || !reflect.DeepEqual(merged, ours) {
		if err := writeState(root, name, merged); err != nil {
			return res, fmt.Errorf("writing %s: %w", s.Box, err)
		}
		res.Wrote = true
	}
	if err := saveBase(s.Base, theirs); err != nil {
		return res, fmt.Errorf("keeping the merge base %s: %w", s.Base, err)
	}
	return res, nil
}

// readState reads a JSON object, numbers kept exact.
func readState(read func(string) ([]byte, error), name string) (map[string]any, error) {
	data, err := read(name)
	if err != nil {
		return nil, err
	}
	if len(data) > maxState {
		return nil, fmt.Errorf("larger than %d MiB", maxState>>20)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	if v == nil {
		return nil, errors.New("not a JSON object")
	}
	return v, nil
}

// mergeObjects merges three versions of an object (see the package
// comment). With theirsWin, both changed means the host's value.
func mergeObjects(base, ours, theirs map[string]any, theirsWin bool, res *StateResult) map[string]any {
	out := map[string]any{}
	keys := map[string]bool{}
	for _, m := range []map[string]any{base, ours, theirs} {
		for k := range m {
			keys[k] = true
		}
	}
	top := res != nil
	for k := range keys {
		b, inB := base[k]
		o, inO := ours[k]
		t, inT := theirs[k]
		v, in, fromHost := mergeValue(b, inB, o, inO, t, inT, theirsWin)
		if in {
			out[k] = v
		}
		if top {
			if fromHost {
				res.FromHost++
			} else if inO {
				res.KeptBox++
			}
		}
	}
	return out
}

// mergeValue merges one key; in is false when the key is absent from the
// result. fromHost says the host's version was taken.
func mergeValue(b any, inB bool, o any, inO bool, t any, inT bool, theirsWin bool) (v any, in, fromHost bool) {
	sameO := inO == inB && (!inO || reflect.DeepEqual(o, b))
	sameT := inT == inB && (!inT || reflect.DeepEqual(t, b))
	switch {
	case sameO:
		return t, inT, true
	case sameT:
		return o, inO, false
	}
	om, oObj := o.(map[string]any)
	tm, tObj := t.(map[string]any)
	if oObj && tObj {
		bm, _ := b.(map[string]any)
		return mergeObjects(bm, om, tm, theirsWin, nil), true, false
	}
	if theirsWin {
		return t, inT, true
	}
	return o, inO, false
}

// writeState replaces name in root with v: a temporary file beside it,
// then a rename, so a reader never sees half of it and a link in its place
// is replaced rather than followed.
func writeState(root *os.Root, name string, v map[string]any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf(".%s.agentbox-%d", name, os.Getpid())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(append(data, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Rename(tmp, name)
	}
	if werr != nil {
		root.Remove(tmp)
	}
	return werr
}

// saveBase keeps the host's file as the next merge's base, private (0600
// in a 0700 folder).
func saveBase(path string, v map[string]any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// lockState takes the CLI's own lock on its file while the copy is
// refreshed, so a CLI running in another box does not write it at the same
// moment: Claude Code's lock is a folder NAME.lock beside the file
// (proper-lockfile), refreshed while held and stale after 10 seconds. It
// waits up to two seconds for a held lock, then goes on without it (a CLI
// that holds it longer is writing the same file anyway). It returns the
// unlock.
func lockState(root *os.Root, name string) func() {
	lock := name + ".lock"
	for i := 0; i < 20; i++ {
		err := root.Mkdir(lock, 0o700)
		if err == nil {
			return func() { root.Remove(lock) }
		}
		if !errors.Is(err, fs.ErrExist) {
			return func() {}
		}
		if fi, err := root.Lstat(lock); err == nil && time.Since(fi.ModTime()) > 10*time.Second {
			root.Remove(lock)
			continue
		}
		time.Sleep(100 * time.Millisecond)
	}
	return func() {}
}
