package winsandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// How agentbox keeps the ACEs it puts on folders (the pure half; the Win32
// calls are in acl_windows.go).
//
// Grants last for the run; denials stay. Reads in the box are checked
// against the sandbox users' own SIDs, which every workspace's box shares
// (the capability SIDs of a write-restricted token restrict writes only),
// so an allow ACE left on a folder would let the box of any other
// workspace read it by its path. Every allow ACE (a writable root's
// modify for the sandbox group and its capability SID, a read grant) is
// therefore held by the live runs that use it and no project: it is
// written when a run starts and removed when the last run holding it
// ends. A run killed before it could remove its grants leaves them in the
// record with a holder that is no longer alive; the next run of the same
// user removes them before its command starts, and a grant it cannot
// remove refuses that run with the path and the fix. The record is
// written before any DACL is, so no grant is ever on disk without it.
//
// A deny ACE (read-only, hidden, pinned paths) takes access away only; it
// is recorded with the projects whose last run wanted it and stays, so a
// later run that wants it finds it in the DACL and writes nothing. It
// leaves when the last project that wanted it runs without it and no live
// run holds it, and at `setup --uninstall`. What a DACL should hold is
// computed from the record alone; a DACL is rewritten only when what it
// holds of agentbox's differs from that, so folders agentbox may not
// change (C:\Windows\System32, whose read ACE Users already have) are
// never written.
//
// (The other design, a SID per workspace granted on that workspace's
// folders and carried by its runs' tokens only, does not hold here: the
// runner is logged on by the Secondary Logon service, which puts exactly
// the sandbox user's groups in the token, and a group per workspace would
// need an elevated step for every new workspace. A restricting SID per
// workspace is no help either: a write-restricted token checks restricting
// SIDs for writes only, and a fully restricted one breaks what runs in the
// box.)
//
// The DACL is handled as bytes (the layout of ACL, ACE_HEADER and SID in
// winnt.h), so the decisions are tested on every OS.

// ACE types and flags (winnt.h).
const (
	aceAllow         = 0x0
	aceDeny          = 0x1
	aceDenyObject    = 0x6
	aceDenyCallback  = 0xa
	aceDenyCallObj   = 0xc
	aceObjectInherit = 0x1
	aceContainerInh  = 0x2
	aceInheritOnly   = 0x8
	aceInherited     = 0x10
)

// rawACE is one ACE of a DACL. SID is set for allow and deny ACEs, the only
// kinds agentbox writes; every ACE keeps its bytes, so the ones agentbox
// does not own are written back exactly as they were.
type rawACE struct {
	Type  byte
	Flags byte
	Mask  uint32
	SID   string
	Raw   []byte
}

func (a rawACE) inherited() bool { return a.Flags&aceInherited != 0 }

func (a rawACE) deny() bool {
	switch a.Type {
	case aceDeny, aceDenyObject, aceDenyCallback, aceDenyCallObj:
		return true
	}
	return false
}

// same reports whether two ACEs grant or deny the same thing to the same
// SID (the inherited flag aside).
func (a rawACE) same(b rawACE) bool {
	return a.Type == b.Type && a.Flags&^aceInherited == b.Flags&^aceInherited && a.Mask == b.Mask && strings.EqualFold(a.SID, b.SID)
}

// sidBytes encodes a SID string ("S-1-5-21-…") in its binary form.
func sidBytes(s string) ([]byte, error) {
	parts := strings.Split(s, "-")
	if len(parts) < 3 || !strings.EqualFold(parts[0], "S") || parts[1] != "1" {
		return nil, fmt.Errorf("SID %q: not S-1-…", s)
	}
	auth, err := strconv.ParseUint(parts[2], 0, 48)
	if err != nil {
		return nil, fmt.Errorf("SID %q: identifier authority: %w", s, err)
	}
	subs := parts[3:]
	if len(subs) > 15 {
		return nil, fmt.Errorf("SID %q: more than 15 sub-authorities", s)
	}
	b := make([]byte, 8+4*len(subs))
	b[0], b[1] = 1, byte(len(subs))
	for i := 0; i < 6; i++ {
		b[2+i] = byte(auth >> (8 * (5 - i)))
	}
	for i, sub := range subs {
		v, err := strconv.ParseUint(sub, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("SID %q: sub-authority %q: %w", s, sub, err)
		}
		binary.LittleEndian.PutUint32(b[8+4*i:], uint32(v))
	}
	return b, nil
}

// sidString decodes a binary SID and returns it with its length.
func sidString(b []byte) (string, int, error) {
	if len(b) < 8 || b[0] != 1 {
		return "", 0, errors.New("not a SID")
	}
	n := int(b[1])
	size := 8 + 4*n
	if n > 15 || len(b) < size {
		return "", 0, errors.New("truncated SID")
	}
	var auth uint64
	for i := 0; i < 6; i++ {
		auth = auth<<8 | uint64(b[2+i])
	}
	out := "S-1-" + strconv.FormatUint(auth, 10)
	if auth >= 1<<32 {
		out = fmt.Sprintf("S-1-0x%012X", auth)
	}
	for i := 0; i < n; i++ {
		out += "-" + strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[8+4*i:])), 10)
	}
	return out, size, nil
}

// parseACL decodes an ACL (its header and every ACE).
func parseACL(b []byte) (revision byte, aces []rawACE, err error) {
	if len(b) < 8 {
		return 0, nil, errors.New("ACL shorter than its header")
	}
	revision = b[0]
	size := int(binary.LittleEndian.Uint16(b[2:]))
	count := int(binary.LittleEndian.Uint16(b[4:]))
	if size > len(b) || size < 8 {
		return 0, nil, fmt.Errorf("ACL size %d, %d bytes given", size, len(b))
	}
	off := 8
	for i := 0; i < count; i++ {
		if off+4 > size {
			return 0, nil, fmt.Errorf("ACE %d runs past the ACL", i)
		}
		n := int(binary.LittleEndian.Uint16(b[off+2:]))
		if n < 4 || off+n > size {
			return 0, nil, fmt.Errorf("ACE %d has size %d", i, n)
		}
		a := rawACE{Type: b[off], Flags: b[off+1], Raw: append([]byte(nil), b[off:off+n]...)}
		if n >= 8 {
			a.Mask = binary.LittleEndian.Uint32(b[off+4:])
		}
		if a.Type == aceAllow || a.Type == aceDeny {
			sid, _, err := sidString(b[off+8 : off+n])
			if err != nil {
				return 0, nil, fmt.Errorf("ACE %d: %w", i, err)
			}
			a.SID = sid
		}
		aces = append(aces, a)
		off += n
	}
	return revision, aces, nil
}

// newACE makes an allow or deny ACE.
func newACE(deny bool, flags byte, mask uint32, sid string) (rawACE, error) {
	sb, err := sidBytes(sid)
	if err != nil {
		return rawACE{}, err
	}
	t := byte(aceAllow)
	if deny {
		t = aceDeny
	}
	raw := make([]byte, 8+len(sb))
	raw[0], raw[1] = t, flags
	binary.LittleEndian.PutUint16(raw[2:], uint16(len(raw)))
	binary.LittleEndian.PutUint32(raw[4:], mask)
	copy(raw[8:], sb)
	return rawACE{Type: t, Flags: flags, Mask: mask, SID: sid, Raw: raw}, nil
}

// buildACL encodes an ACL of the given ACEs.
func buildACL(revision byte, aces []rawACE) ([]byte, error) {
	size := 8
	for _, a := range aces {
		size += len(a.Raw)
	}
	if size > 0xffff {
		return nil, fmt.Errorf("ACL of %d bytes is too large", size)
	}
	if revision < 2 {
		revision = 2
	}
	b := make([]byte, 8, size)
	b[0] = revision
	binary.LittleEndian.PutUint16(b[2:], uint16(size))
	binary.LittleEndian.PutUint16(b[4:], uint16(len(aces)))
	for _, a := range aces {
		b = append(b, a.Raw...)
	}
	return b, nil
}

// nextDACL returns what a DACL should hold: every ACE that is not an
// explicit allow or deny of one of agentbox's SIDs (ours) as it was, and
// exactly want as agentbox's, in canonical order (explicit denies, explicit
// allows, then the inherited ones as they were). changed is false when the
// DACL already holds exactly want of agentbox's, so nothing is written.
func nextDACL(cur []rawACE, ours map[string]bool, want []rawACE) (next []rawACE, changed bool) {
	isOurs := func(a rawACE) bool {
		return !a.inherited() && (a.Type == aceAllow || a.Type == aceDeny) && ours[strings.ToUpper(a.SID)]
	}
	var have []rawACE
	for _, a := range cur {
		if isOurs(a) {
			have = append(have, a)
		}
	}
	if sameSet(have, want) {
		return cur, false
	}
	var deny, allow, inherited []rawACE
	for _, a := range cur {
		switch {
		case isOurs(a):
		case a.inherited():
			inherited = append(inherited, a)
		case a.deny():
			deny = append(deny, a)
		default:
			allow = append(allow, a)
		}
	}
	for _, a := range want {
		if a.deny() {
			deny = append(deny, a)
		} else {
			allow = append(allow, a)
		}
	}
	next = append(append(deny, allow...), inherited...)
	return next, true
}

// sameSet reports whether a and b hold the same ACEs, in any order.
func sameSet(a, b []rawACE) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
	for _, x := range a {
		found := false
		for j, y := range b {
			if !used[j] && x.same(y) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Well-known SIDs whose read access makes a read grant unnecessary.
const (
	sidUsers       = "S-1-5-32-545"
	sidAuthUsers   = "S-1-5-11"
	sidEveryone    = "S-1-1-0"
	genericRead    = 0x80000000
	genericAll     = 0x10000000
	fileListOrRead = fileReadData
)

// usersCanRead reports whether a DACL lets BUILTIN\Users, Authenticated
// Users or Everyone read the object (an allow ACE with read data that
// applies to the object itself and comes before any deny of those SIDs for
// reading). Then the sandbox users can read it too, and agentbox adds no
// read ACE.
func usersCanRead(dacl []rawACE, null bool) bool {
	if null {
		return true // a NULL DACL grants everyone everything
	}
	for _, a := range dacl {
		if a.Flags&aceInheritOnly != 0 {
			continue
		}
		if a.SID != sidUsers && a.SID != sidAuthUsers && a.SID != sidEveryone {
			continue
		}
		reads := a.Mask&(fileListOrRead|genericRead|genericAll) != 0
		if a.Type == aceDeny && reads {
			return false
		}
		if a.Type == aceAllow && reads {
			return true
		}
	}
	return false
}

// aceFlags are the flags an ACE of agentbox gets: inheritable to files and
// folders below for an inherited rule on a folder, none otherwise.
func aceFlags(inherit, dir bool) byte {
	if inherit && dir {
		return aceObjectInherit | aceContainerInh
	}
	return 0
}

// aclHolder is a live run that uses an ACE: its process ID and creation
// time (to tell a reused PID apart).
type aclHolder struct {
	PID     uint32 `json:"pid"`
	Started int64  `json:"started"`
}

// recACE is one ACE agentbox wrote: where, to whom, what; the projects
// whose last run wanted it; and the live runs that hold it now.
type recACE struct {
	Path     string      `json:"path"`
	SID      string      `json:"sid"`
	Deny     bool        `json:"deny,omitempty"`
	Mask     uint32      `json:"mask"`
	Inherit  bool        `json:"inherit,omitempty"`
	Projects []string    `json:"projects,omitempty"`
	Holders  []aclHolder `json:"holders,omitempty"`
}

func (a *recACE) key() string {
	return fmt.Sprintf("%s|%s|%t|%x|%t", winKey(a.Path), strings.ToUpper(a.SID), a.Deny, a.Mask, a.Inherit)
}

// perRun reports whether the ACE lasts only while a run holds it: every
// allow ACE (a grant). A deny ACE stays for the projects that want it.
func (a *recACE) perRun() bool { return !a.Deny }

// live reports whether a live run holds the ACE or, for a deny ACE, some
// project still wants it. A grant an older record keeps for a project
// only is not live: the next run removes it.
func (a *recACE) live() bool {
	return len(a.Holders) > 0 || !a.perRun() && len(a.Projects) > 0
}

// recordACE is what the record holds of a spec's ACE, its trustee named
// by SID (groupSID for the sandbox group).
func recordACE(a ACE, groupSID string) recACE {
	return recACE{Path: a.Path, SID: trusteeSID(a.Trustee, groupSID), Deny: a.Deny, Mask: FileRights(a.Rights), Inherit: a.Inherit}
}

// aclRecord is the record of one user's ACEs.
type aclRecord struct {
	Version int       `json:"version"`
	ACEs    []*recACE `json:"aces"`
	// Placeholders are the git placeholders runs made and hold
	// (leftover.go).
	Placeholders []recPlaceholder `json:"placeholders,omitempty"`
}

// aclRecordVersion is the version of the record's format.
const aclRecordVersion = 1

// prune drops the holders that are no longer alive.
func (r *aclRecord) prune(alive func(aclHolder) bool) {
	for _, a := range r.ACEs {
		a.Holders = slices.DeleteFunc(a.Holders, func(h aclHolder) bool { return !alive(h) })
	}
}

// begin records that a run (me) of project wants exactly want: every ACE
// of want gets the run, and a deny ACE the project too (a grant is the
// run's alone); an ACE the project wanted before and wants no more loses
// the project. It returns the paths whose DACL may have to change (with
// every path where the record holds an ACE that is no longer live: a
// killed run's grants, removed before this run's command starts), and the
// keys of the ACEs this call added to the record (so a failed write can
// take them out again).
func (r *aclRecord) begin(want []recACE, project string, me aclHolder) (paths []string, added []string) {
	wanted := map[string]bool{}
	touched := map[string]string{}
	for _, w := range want {
		w := w
		k := w.key()
		if wanted[k] {
			continue
		}
		wanted[k] = true
		touched[winKey(w.Path)] = w.Path
		i := slices.IndexFunc(r.ACEs, func(a *recACE) bool { return a.key() == k })
		if i < 0 {
			w.Projects, w.Holders = nil, nil
			r.ACEs = append(r.ACEs, &w)
			added = append(added, k)
			i = len(r.ACEs) - 1
		}
		a := r.ACEs[i]
		if a.perRun() {
			a.Projects = nil
		} else if !slices.Contains(a.Projects, project) {
			a.Projects = append(a.Projects, project)
		}
		if !slices.Contains(a.Holders, me) {
			a.Holders = append(a.Holders, me)
		}
	}
	for _, a := range r.ACEs {
		if !wanted[a.key()] && slices.Contains(a.Projects, project) {
			a.Projects = slices.DeleteFunc(a.Projects, func(p string) bool { return p == project })
			touched[winKey(a.Path)] = a.Path
		}
		if !a.live() {
			touched[winKey(a.Path)] = a.Path
		}
	}
	for _, p := range touched {
		paths = append(paths, p)
	}
	sortPaths(paths)
	return paths, added
}

// forget takes ACEs begin added back out of the record (their write
// failed: nothing that was not written may stay recorded).
func (r *aclRecord) forget(path string, added []string) {
	r.ACEs = slices.DeleteFunc(r.ACEs, func(a *recACE) bool {
		return winKey(a.Path) == winKey(path) && slices.Contains(added, a.key())
	})
}

// end records that run me is over and returns the paths where an ACE is
// no longer live (wanted by no project, held by no run).
func (r *aclRecord) end(me aclHolder) []string {
	seen := map[string]bool{}
	var paths []string
	for _, a := range r.ACEs {
		a.Holders = slices.DeleteFunc(a.Holders, func(h aclHolder) bool { return h == me })
		if !a.live() && !seen[winKey(a.Path)] {
			seen[winKey(a.Path)] = true
			paths = append(paths, a.Path)
		}
	}
	sortPaths(paths)
	return paths
}

// stale reports whether the record holds a grant on path that is no
// longer live (a killed run's).
func (r *aclRecord) stale(path string) bool {
	for _, a := range r.ACEs {
		if winKey(a.Path) == winKey(path) && a.perRun() && !a.live() {
			return true
		}
	}
	return false
}

// grantFailure is the error of a run whose ACEs could not be written at
// path. When the record held there what an earlier run left (stale), the
// box of this run could read what that run was granted, so the run is
// refused with the fix.
func grantFailure(path string, stale bool, err error) error {
	if stale {
		return fmt.Errorf("%v; an earlier run of agentbox that was killed left a grant of the sandbox users on %s and it could not be removed, so the box of this run could read it: the run is refused. Fix: give your user back the right to change that folder's permissions (or remove the folder), then run again, or run `agentbox setup --uninstall`", err, path)
	}
	return err
}

// want returns the live ACEs of path: what its DACL should hold of
// agentbox's.
func (r *aclRecord) want(path string) []*recACE {
	var out []*recACE
	for _, a := range r.ACEs {
		if winKey(a.Path) == winKey(path) && a.live() {
			out = append(out, a)
		}
	}
	return out
}

// sids returns every SID the record holds for path: the SIDs whose
// explicit ACEs on path are agentbox's.
func (r *aclRecord) sids(path string) map[string]bool {
	out := map[string]bool{}
	for _, a := range r.ACEs {
		if winKey(a.Path) == winKey(path) {
			out[strings.ToUpper(a.SID)] = true
		}
	}
	return out
}

// done drops the ACEs of path that are no longer live, once its DACL no
// longer holds them.
func (r *aclRecord) done(path string) {
	r.ACEs = slices.DeleteFunc(r.ACEs, func(a *recACE) bool { return winKey(a.Path) == winKey(path) && !a.live() })
}

// paths returns every path of the record.
func (r *aclRecord) paths() []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range r.ACEs {
		if !seen[winKey(a.Path)] {
			seen[winKey(a.Path)] = true
			out = append(out, a.Path)
		}
	}
	sortPaths(out)
	return out
}

// sortPaths orders paths so parents come before their children.
func sortPaths(ps []string) {
	sort.SliceStable(ps, func(i, j int) bool { return winKey(ps[i]) < winKey(ps[j]) })
}

// aclFileSystem reports whether a file system keeps NTFS ACLs; on the
// others (FAT, FAT32, exFAT) every user may write everything, so agentbox
// refuses to use such a folder as a root.
func aclFileSystem(name string) bool {
	switch strings.ToUpper(name) {
	case "NTFS", "REFS":
		return true
	}
	return false
}
