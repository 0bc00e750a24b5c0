package winsandbox

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Which ACL records and locks agentbox trusts (the pure half; the Win32
// calls are in acl_windows.go).
//
// Any user may create a file in the machine folder's acl\ (each user's
// record lives there, and users run agentbox without elevation), so a
// file named after one user's SID may have been made by another. A record
// names paths and SIDs whose explicit ACEs agentbox writes and removes: a
// forged one would have a user's next run, or `setup --uninstall`
// (elevated), strip the ACEs of any SID from any path. So a record or lock
// is used only when it is what agentbox makes: owned by the user it
// belongs to, with a protected DACL that lets no one else write it, one
// link, no reparse point; and of a record, only the ACEs of agentbox's own
// SIDs are ever written or removed (ownSID).

// The SIDs a record file's DACL may let write it besides its owner:
// SYSTEM and the Administrators group.
const (
	sidSystem = "S-1-5-18"
	sidAdmins = "S-1-5-32-544"
)

// writeRights are the access rights that change a file, its DACL or its
// owner, or remove it.
const writeRights = fileWriteData | fileAppendData | fileWriteEA | fileWriteAttributes | fileDeleteChild |
	accessDelete | writeDAC | writeOwner | genericWrite | genericAll | maximumAllowed

const (
	genericWrite   = 0x40000000
	maximumAllowed = 0x02000000
)

// fileTrust is what agentbox reads of a record or lock file through its
// handle before it uses it.
type fileTrust struct {
	Owner     string   // the owner's SID
	Protected bool     // SE_DACL_PROTECTED
	NullDACL  bool     // no DACL at all: everyone may do everything
	ACEs      []rawACE // the DACL
	Links     uint32   // hard links
	Reparse   bool     // FILE_ATTRIBUTE_REPARSE_POINT
	Dir       bool     // a folder, where a file is expected
}

// trustProblem says why a record or lock file may not be used by the
// user whose SID is user, or "" when it may.
func trustProblem(f fileTrust, user string) string {
	switch {
	case f.Reparse:
		return "it is a reparse point (a link or junction)"
	case f.Dir:
		return "it is a folder"
	case f.Links != 1:
		return fmt.Sprintf("it has %d hard links", f.Links)
	case !strings.EqualFold(f.Owner, user):
		return fmt.Sprintf("it is owned by %s, not by %s", f.Owner, user)
	case f.NullDACL:
		return "it has no DACL: everyone may change it"
	case !f.Protected:
		return "its DACL is not protected: it inherits entries from its folder"
	}
	for _, a := range f.ACEs {
		if a.deny() || a.Flags&aceInheritOnly != 0 || a.Mask&writeRights == 0 {
			continue
		}
		if a.Type != aceAllow {
			return fmt.Sprintf("its DACL holds an entry of type %#x agentbox does not write", a.Type)
		}
		if !strings.EqualFold(a.SID, user) && a.SID != sidSystem && a.SID != sidAdmins {
			return fmt.Sprintf("its DACL lets %s change it", a.SID)
		}
	}
	return ""
}

// recordFileSID is the SID a record file belongs to, from its name
// ("<SID>.json" or "<SID>.json.lock"), or "" when the name is not one.
func recordFileSID(path string) string {
	base := filepath.Base(strings.ReplaceAll(path, `\`, "/"))
	sid, ok := strings.CutSuffix(base, ".json")
	if !ok {
		return ""
	}
	if _, err := sidBytes(sid); err != nil {
		return ""
	}
	return sid
}

// ownSID reports whether sid is one of agentbox's own at path: the
// sandbox group's, or the capability SID of path itself (a writable root's
// ACE is on the root: CapabilitySID(root)). Only the explicit ACEs of
// those SIDs are ever written or removed from what a record names.
func ownSID(sid, path, groupSID string) bool {
	return groupSID != "" && strings.EqualFold(sid, groupSID) || strings.EqualFold(sid, CapabilitySID(path))
}

// keepOwn drops from the record every ACE whose SID is not agentbox's own
// at its path (ownSID) and returns what it dropped.
func (r *aclRecord) keepOwn(groupSID string) (dropped []*recACE) {
	kept := r.ACEs[:0]
	for _, a := range r.ACEs {
		if ownSID(a.SID, a.Path, groupSID) {
			kept = append(kept, a)
		} else {
			dropped = append(dropped, a)
		}
	}
	r.ACEs = kept
	return dropped
}

// trusteeSID is the SID of a spec ACE's trustee.
func trusteeSID(trustee, groupSID string) string {
	if trustee == GroupName {
		return groupSID
	}
	return trustee
}
