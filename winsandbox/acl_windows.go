package winsandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// ACEs are recorded in %LOCALAPPDATA%\agentbox\acl.json before they are
// applied, with the runs holding each path, so that nothing agentbox writes
// onto a folder is ever unknown to it: a run removes its paths' ACEs at exit
// unless another live run still holds them, a crashed run's holds are
// dropped by the next run that finds its process gone, and
// `setup --uninstall` removes everything recorded.

type aclHolder struct {
	PID     uint32 `json:"pid"`
	Started int64  `json:"started"` // process creation time, to tell a reused PID apart
}

type aclEntry struct {
	Path     string      `json:"path"`
	Trustees []string    `json:"trustees"` // SIDs whose explicit ACEs agentbox owns on Path
	Holders  []aclHolder `json:"holders"`
}

type aclRecord struct {
	Entries map[string]*aclEntry `json:"entries"` // by winKey(path)
}

func self() aclHolder {
	var c, e, k, u windows.Filetime
	windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u)
	return aclHolder{PID: uint32(os.Getpid()), Started: c.Nanoseconds()}
}

func (h aclHolder) alive() bool {
	p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, h.PID)
	if err != nil {
		return false
	}
	defer windows.CloseHandle(p)
	var c, e, k, u windows.Filetime
	if windows.GetProcessTimes(p, &c, &e, &k, &u) != nil {
		return false
	}
	var code uint32
	windows.GetExitCodeProcess(p, &code)
	return c.Nanoseconds() == h.Started && code == 259 // STILL_ACTIVE
}

// withACLRecord runs f on the ACL record under an exclusive file lock.
func withACLRecord(f func(*aclRecord) error) error {
	dir, err := stateDir()
	if err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "acl.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(windows.Handle(lock.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol); err != nil {
		return fmt.Errorf("locking the ACL record: %w", err)
	}
	defer windows.UnlockFileEx(windows.Handle(lock.Fd()), 0, 1, 0, ol)
	rec := &aclRecord{}
	if err := readJSON("acl.json", rec); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the ACL record: %w", err)
	}
	if rec.Entries == nil {
		rec.Entries = map[string]*aclEntry{}
	}
	if err := f(rec); err != nil {
		writeJSON("acl.json", rec) // keep what was recorded before the failure
		return err
	}
	return writeJSON("acl.json", rec)
}

// aclError is a failed ACL step, with the operation and the path.
type aclError struct {
	Op   string
	Path string
	Err  error
}

func (e *aclError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err) }
func (e *aclError) Unwrap() error { return e.Err }

// applyACEs records and applies the spec's ACEs and returns the function
// that releases them.
func applyACEs(s *Spec, groupSID string) (release func(), err error) {
	byPath := map[string][]ACE{}
	var order []string
	for _, a := range s.ACEs {
		k := winKey(a.Path)
		if _, ok := byPath[k]; !ok {
			order = append(order, k)
		}
		byPath[k] = append(byPath[k], a)
	}
	me := self()
	err = withACLRecord(func(rec *aclRecord) error {
		// Record first: a crash after this line leaves recorded ACEs,
		// never unknown ones.
		for _, k := range order {
			e := rec.Entries[k]
			if e == nil {
				e = &aclEntry{Path: byPath[k][0].Path}
				rec.Entries[k] = e
			}
			for _, a := range byPath[k] {
				sid := trusteeSID(a.Trustee, groupSID)
				if !contains(e.Trustees, sid) {
					e.Trustees = append(e.Trustees, sid)
				}
			}
			e.Holders = append(e.Holders, me)
		}
		if err := writeJSON("acl.json", rec); err != nil {
			return err
		}
		for _, k := range order {
			if err := setPathACEs(byPath[k], groupSID); err != nil {
				return err
			}
		}
		return nil
	})
	release = func() {
		withACLRecord(func(rec *aclRecord) error {
			for k, e := range rec.Entries {
				var live []aclHolder
				for _, h := range e.Holders {
					if h != me && h.alive() {
						live = append(live, h)
					}
				}
				e.Holders = live
				if len(live) == 0 {
					if revokePath(e.Path, e.Trustees) == nil {
						delete(rec.Entries, k)
					}
				}
			}
			return nil
		})
	}
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func trusteeSID(trustee, groupSID string) string {
	if trustee == GroupName {
		return groupSID
	}
	return trustee
}

// setPathACEs replaces agentbox's explicit ACEs on one path with aces.
// Inheritance flags are used only on folders; SetNamedSecurityInfo then
// propagates the inheritable ACEs to everything below (which takes a while
// on a large tree).
func setPathACEs(aces []ACE, groupSID string) error {
	p := aces[0].Path
	var trustees []string
	for _, a := range aces {
		trustees = append(trustees, trusteeSID(a.Trustee, groupSID))
	}
	if err := revokePath(p, trustees); err != nil {
		return err
	}
	sd, err := windows.GetNamedSecurityInfo(p, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return &aclError{"reading the ACL of", p, err}
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return &aclError{"reading the ACL of", p, err}
	}
	dir := false
	if fi, err := os.Stat(p); err == nil {
		dir = fi.IsDir()
	}
	var entries []windows.EXPLICIT_ACCESS
	for _, a := range aces {
		if a.IfUsersCannotRead && usersCanRead(dacl) {
			continue
		}
		sid, err := windows.StringToSid(trusteeSID(a.Trustee, groupSID))
		if err != nil {
			return &aclError{"SID for", p, err}
		}
		mode := windows.GRANT_ACCESS
		if a.Deny {
			mode = windows.DENY_ACCESS
		}
		inherit := uint32(windows.NO_INHERITANCE)
		if a.Inherit && dir {
			inherit = windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT
		}
		entries = append(entries, windows.EXPLICIT_ACCESS{
			AccessPermissions: windows.ACCESS_MASK(FileRights(a.Rights)),
			AccessMode:        windows.ACCESS_MODE(mode),
			Inheritance:       inherit,
			Trustee:           windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeType: windows.TRUSTEE_IS_UNKNOWN, TrusteeValue: windows.TrusteeValueFromSID(sid)},
		})
	}
	if len(entries) == 0 {
		return nil
	}
	acl, err := windows.ACLFromEntries(entries, dacl)
	if err != nil {
		return &aclError{"building the ACL of", p, err}
	}
	if err := windows.SetNamedSecurityInfo(p, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION, nil, nil, acl, nil); err != nil {
		return &aclError{"setting the ACL of", p, err}
	}
	return nil
}

// revokePath removes every explicit ACE of the given SIDs from path (a path
// that no longer exists has nothing to remove).
func revokePath(p string, sids []string) error {
	sd, err := windows.GetNamedSecurityInfo(p, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
		return nil
	}
	if err != nil {
		return &aclError{"reading the ACL of", p, err}
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return &aclError{"reading the ACL of", p, err}
	}
	var entries []windows.EXPLICIT_ACCESS
	for _, s := range sids {
		sid, err := windows.StringToSid(s)
		if err != nil {
			continue
		}
		entries = append(entries, windows.EXPLICIT_ACCESS{
			AccessMode: windows.REVOKE_ACCESS,
			Trustee:    windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeType: windows.TRUSTEE_IS_UNKNOWN, TrusteeValue: windows.TrusteeValueFromSID(sid)},
		})
	}
	acl, err := windows.ACLFromEntries(entries, dacl)
	if err != nil {
		return &aclError{"building the ACL of", p, err}
	}
	if err := windows.SetNamedSecurityInfo(p, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION, nil, nil, acl, nil); err != nil {
		return &aclError{"setting the ACL of", p, err}
	}
	return nil
}

// usersCanRead reports whether the DACL has an allow ACE giving read data to
// Users, Authenticated Users or Everyone. It is an approximation of an
// access check: it ignores deny ACEs for those groups, which are rare on
// folders a user would name.
func usersCanRead(dacl *windows.ACL) bool {
	if dacl == nil {
		return true // a NULL DACL grants everyone everything
	}
	var wanted []*windows.SID
	for _, t := range []windows.WELL_KNOWN_SID_TYPE{windows.WinBuiltinUsersSid, windows.WinAuthenticatedUserSid, windows.WinWorldSid} {
		if s, err := windows.CreateWellKnownSid(t); err == nil {
			wanted = append(wanted, s)
		}
	}
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if windows.GetAce(dacl, i, &ace) != nil || ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE {
			continue
		}
		if ace.Mask&fileReadData == 0 && ace.Mask&windows.GENERIC_READ == 0 && ace.Mask&windows.GENERIC_ALL == 0 {
			continue
		}
		sid := (*windows.SID)(unsafePointer(&ace.SidStart))
		for _, w := range wanted {
			if sid.Equals(w) {
				return true
			}
		}
	}
	return false
}

// removeAllACEs revokes every recorded ACE, whoever holds it.
func removeAllACEs() error {
	return withACLRecord(func(rec *aclRecord) error {
		var errs []error
		for k, e := range rec.Entries {
			if err := revokePath(e.Path, e.Trustees); err != nil {
				errs = append(errs, err)
				continue
			}
			delete(rec.Entries, k)
		}
		return errors.Join(errs...)
	})
}
