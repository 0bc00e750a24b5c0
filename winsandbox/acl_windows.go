package winsandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The Windows half of the ACE record (acl.go): reading and writing DACLs as
// bytes, the record file under a lock, and applying a spec's ACEs.

// aclError is a failed ACL step, with the operation and the path.
type aclError struct {
	Op   string
	Path string
	Err  error
}

func (e *aclError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err) }
func (e *aclError) Unwrap() error { return e.Err }

func self() aclHolder {
	var c, e, k, u windows.Filetime
	windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u)
	return aclHolder{PID: uint32(os.Getpid()), Started: c.Nanoseconds()}
}

func alive(h aclHolder) bool {
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

// aclRecordFile is the calling user's record: acl\<SID>.json in the machine
// folder.
func aclRecordFile() (string, error) {
	dir, err := machineDir()
	if err != nil {
		return "", err
	}
	sid, err := currentUserSID()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "acl", sid+".json"), nil
}

// withRecord runs f on the record at path under an exclusive lock on
// path+".lock": every run of the user that changes ACLs goes through it,
// so two runs on the same root never write one DACL at the same time.
func withRecord(path string, f func(*aclRecord) error) error {
	_, statErr := os.Stat(path + ".lock")
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("opening the ACL record's lock: %w", err)
	}
	defer lock.Close()
	if statErr != nil {
		if err := ownFile(path + ".lock"); err != nil {
			return err
		}
	}
	ol := new(windows.Overlapped)
	h := windows.Handle(lock.Fd())
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol); err != nil {
		return fmt.Errorf("locking the ACL record: %w", err)
	}
	defer windows.UnlockFileEx(h, 0, 1, 0, ol)
	rec := &aclRecord{Version: aclRecordVersion}
	if err := readJSON(path, rec); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the ACL record: %w", err)
	}
	rec.prune(alive)
	ferr := f(rec)
	// What f recorded is kept even when it failed part way: the record
	// must never miss an ACE that is on disk.
	if err := writeRecord(path, rec); err != nil {
		return errors.Join(ferr, fmt.Errorf("writing the ACL record: %w", err))
	}
	return ferr
}

// ownFile gives a file of the ACL folder to the calling user: SYSTEM,
// Administrators and the user's own SID, nothing inherited. The folder's
// CREATOR OWNER entry would give it to Administrators when an elevated
// process makes it, and the same user's later, unelevated runs could then
// not write their own record.
func ownFile(path string) error {
	sid, err := currentUserSID()
	if err != nil {
		return err
	}
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;" + sid + ")")
	if err != nil {
		return err
	}
	d, _, err := sd.DACL()
	if err != nil {
		return err
	}
	err = windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, d, nil)
	if err != nil {
		return &aclError{"setting the ACL of", path, err}
	}
	return nil
}

// writeRecord writes the record through a temporary file of the user's
// own (ownFile) and a rename.
func writeRecord(path string, rec *aclRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := ownFile(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// dacl is a path's DACL as read: its ACEs, its revision, whether it is NULL
// (everyone may do everything) and whether the path is a folder.
type dacl struct {
	revision byte
	aces     []rawACE
	null     bool
	dir      bool
}

// readDACL reads the DACL of path. ok is false when the path does not
// exist.
func readDACL(path string) (d dacl, ok bool, err error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
		return d, false, nil
	}
	if err != nil {
		return d, false, &aclError{"reading the ACL of", path, err}
	}
	acl, _, err := sd.DACL()
	if err != nil && !errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) {
		return d, false, &aclError{"reading the ACL of", path, err}
	}
	if acl == nil {
		d.null = true
	} else {
		size := int(*(*uint16)(unsafe.Add(unsafe.Pointer(acl), 2)))
		b := unsafe.Slice((*byte)(unsafe.Pointer(acl)), size)
		if d.revision, d.aces, err = parseACL(b); err != nil {
			return d, false, &aclError{"reading the ACL of", path, err}
		}
	}
	if fi, err := os.Lstat(path); err == nil {
		d.dir = fi.IsDir()
	}
	return d, true, nil
}

// writeDACL sets path's DACL to aces. SetNamedSecurityInfo keeps the DACL
// unprotected, recomputes the inherited entries from the parent, and
// propagates inheritable entries to everything below a folder (which
// takes a while on a large tree; it happens only when something changed).
func writeDACL(path string, revision byte, aces []rawACE) error {
	b, err := buildACL(revision, aces)
	if err != nil {
		return &aclError{"building the ACL of", path, err}
	}
	acl := (*windows.ACL)(unsafe.Pointer(&b[0]))
	err = windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION, nil, nil, acl, nil)
	if err != nil {
		return &aclError{"setting the ACL of", path, err}
	}
	return nil
}

// syncPath makes path's DACL hold exactly what the record wants of
// agentbox's there, writing only when that differs from what it holds.
func syncPath(rec *aclRecord, path, groupSID string) error {
	d, ok, err := readDACL(path)
	if err != nil {
		return err
	}
	want := rec.want(path)
	if !ok {
		if len(want) == 0 {
			return nil // gone, and nothing to keep there
		}
		return &aclError{"setting the ACL of", path, errors.New("it does not exist")}
	}
	ours := rec.sids(path)
	ours[strings.ToUpper(groupSID)] = true
	var aces []rawACE
	for _, w := range want {
		a, err := newACE(w.Deny, aceFlags(w.Inherit, d.dir), w.Mask, w.SID)
		if err != nil {
			return &aclError{"building the ACL of", path, err}
		}
		aces = append(aces, a)
	}
	if d.null && len(aces) == 0 {
		return nil
	}
	next, changed := nextDACL(d.aces, ours, aces)
	if !changed {
		return nil
	}
	return writeDACL(path, d.revision, next)
}

// volumeFS returns the file system of the volume path lies on ("NTFS").
func volumeFS(path string) (string, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return "", err
	}
	vol := make([]uint16, windows.MAX_PATH+1)
	if err := windows.GetVolumePathName(p, &vol[0], uint32(len(vol))); err != nil {
		return "", fmt.Errorf("GetVolumePathName %s: %w", path, err)
	}
	fs := make([]uint16, windows.MAX_PATH+1)
	if err := windows.GetVolumeInformation(&vol[0], nil, 0, nil, nil, nil, &fs[0], uint32(len(fs))); err != nil {
		return "", fmt.Errorf("GetVolumeInformation %s: %w", windows.UTF16ToString(vol), err)
	}
	return windows.UTF16ToString(fs), nil
}

// applyACEs records and applies the spec's ACEs for project and returns
// the function that ends this run's hold on them. It writes only what is
// missing, refuses paths on volumes that keep no ACLs, adds a read ACE
// only where Users cannot read already, and records exactly what it wrote.
func applyACEs(s *Spec, project, groupSID string) (release func(), err error) {
	path, err := aclRecordFile()
	if err != nil {
		return nil, err
	}
	// Decide, without writing anything, which ACEs are needed.
	var want []recACE
	checkedVolume := map[string]bool{}
	readable := map[string]bool{}
	for _, a := range s.ACEs {
		if _, err := os.Lstat(a.Path); err != nil {
			if a.Deny && errors.Is(err, os.ErrNotExist) {
				continue // nothing there to deny
			}
			return nil, &aclError{"checking", a.Path, err}
		}
		vol := strings.ToLower(filepath.VolumeName(a.Path))
		if !checkedVolume[vol] && (a.Deny || a.Rights == RightsModify) {
			fs, err := volumeFS(a.Path)
			if err != nil {
				return nil, &aclError{"checking the volume of", a.Path, err}
			}
			if !aclFileSystem(fs) {
				return nil, &aclError{"refusing", a.Path, fmt.Errorf("it is on a %s volume, which keeps no access control lists, so the sandbox could not be kept from writing there", fs)}
			}
			checkedVolume[vol] = true
		}
		if a.IfUsersCannotRead {
			k := winKey(a.Path)
			if _, done := readable[k]; !done {
				d, ok, err := readDACL(a.Path)
				if err != nil {
					return nil, err
				}
				readable[k] = ok && usersCanRead(d.aces, d.null)
			}
			if readable[k] {
				continue // Users read it already: never touch it
			}
		}
		want = append(want, recACE{Path: a.Path, SID: trusteeSID(a.Trustee, groupSID), Deny: a.Deny, Mask: FileRights(a.Rights), Inherit: a.Inherit})
	}
	me := self()
	project = winKey(project)
	err = withRecord(path, func(rec *aclRecord) error {
		paths, added := rec.begin(want, project, me)
		for _, p := range paths {
			if err := syncPath(rec, p, groupSID); err != nil {
				rec.forget(p, added)
				// Put the path back as the record now says it should be
				// (without what failed); ignore a second failure.
				syncPath(rec, p, groupSID)
				return err
			}
			rec.done(p)
		}
		return nil
	})
	release = func() {
		withRecord(path, func(rec *aclRecord) error {
			for _, p := range rec.end(me) {
				if syncPath(rec, p, groupSID) == nil {
					rec.done(p)
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

func trusteeSID(trustee, groupSID string) string {
	if trustee == GroupName {
		return groupSID
	}
	return trustee
}

// removeAllACEs removes every ACE in every user's record (setup
// --uninstall, elevated): each path's DACL loses the explicit entries of
// the SIDs recorded for it, and of the sandbox group.
func removeAllACEs(groupSID string) error {
	dir, err := machineDir()
	if err != nil {
		return err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "acl", "*.json"))
	var errs []error
	for _, f := range files {
		err := withRecord(f, func(rec *aclRecord) error {
			var errs []error
			for _, a := range rec.ACEs {
				a.Projects, a.Holders = nil, nil
			}
			for _, p := range rec.paths() {
				if err := syncPath(rec, p, groupSID); err != nil {
					errs = append(errs, err)
					continue
				}
				rec.done(p)
			}
			return errors.Join(errs...)
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		os.Remove(f)
		os.Remove(f + ".lock")
	}
	return errors.Join(errs...)
}
