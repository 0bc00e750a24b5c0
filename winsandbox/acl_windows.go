package winsandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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

// self is this run: this process's ID and creation time (a variable so
// that tests can stand for another run).
var self = func() aclHolder {
	var c, e, k, u windows.Filetime
	windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u)
	return aclHolder{PID: uint32(os.Getpid()), Started: c.Nanoseconds()}
}

// alive reports whether the run h is alive: a process of its ID, created
// at its time, has not exited. One that cannot be opened to tell counts
// as gone (a grant's holder: see placeholderAlive for the other way).
func alive(h aclHolder) bool { return processAlive(h, false) }

// placeholderAlive is alive for the holders of a placeholder, failing
// the other way: a run is gone only when no process has its ID, or the
// one that has it was created at another time or has exited. A process
// that cannot be opened to tell (another user's, a protected one) may be
// the run, and its placeholder stays: removing one a live run relies on
// would let its box create what the placeholder keeps. (A grant's holder
// is alive only when shown to be: a grant left behind lets other boxes
// read.)
func placeholderAlive(h aclHolder) bool { return processAlive(h, true) }

// processAlive tells whether run h is alive, answering unknown when its
// ID belongs to a process that cannot be opened to tell.
func processAlive(h aclHolder, unknown bool) bool {
	p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, h.PID)
	if err != nil {
		// ERROR_INVALID_PARAMETER: no process has that ID.
		return unknown && !errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(p)
	var c, e, k, u windows.Filetime
	if windows.GetProcessTimes(p, &c, &e, &k, &u) != nil {
		return unknown
	}
	var code uint32
	if windows.GetExitCodeProcess(p, &code) != nil {
		return unknown
	}
	return c.Nanoseconds() == h.Started && code == 259 // STILL_ACTIVE
}

// aclRecordFile is the calling user's record, acl\<SID>.json in the
// machine folder, and the user's SID.
func aclRecordFile() (path, user string, err error) {
	dir, err := machineDir()
	if err != nil {
		return "", "", err
	}
	sid, err := currentUserSID()
	if err != nil {
		return "", "", err
	}
	return filepath.Join(dir, "acl", sid+".json"), sid, nil
}

// withRecord runs f on the record at path, which belongs to the user whose
// SID is user, under an exclusive lock on path+".lock": every run of the
// user that changes ACLs goes through it, so two runs on the same root
// never write one DACL at the same time. The lock and the record are used
// only when they are the user's own (trustProblem, read through their
// handles); of the record, only the ACEs of agentbox's own SIDs (keepOwn).
// create makes a missing lock and writes the record back (a run); setup
// --uninstall, which runs elevated and may not own another user's files,
// uses the lock only when it exists and writes nothing. f calls save to
// write the record before it changes a DACL (a no-op without create), so
// that no ACE is ever on disk without the record naming it.
func withRecord(path, user, groupSID string, create bool, f func(rec *aclRecord, save func() error) error) error {
	lock, err := openRecordFile(path+".lock", windows.GENERIC_READ|windows.GENERIC_WRITE, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, create, user)
	switch {
	case err == nil:
		defer windows.CloseHandle(lock)
		ol := new(windows.Overlapped)
		if err := windows.LockFileEx(lock, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol); err != nil {
			return fmt.Errorf("locking the ACL record: %w", err)
		}
		defer windows.UnlockFileEx(lock, 0, 1, 0, ol)
	case create || !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("the ACL record's lock: %w", err)
	}
	rec := &aclRecord{Version: aclRecordVersion}
	if err := readRecord(path, user, rec); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the ACL record: %w", err)
	}
	rec.keepOwn(groupSID)
	rec.prune(alive)
	save := func() error {
		if !create {
			return nil
		}
		return writeRecord(path, user, rec)
	}
	ferr := f(rec, save)
	if !create {
		// Uninstall removes the record when it is done; a record it
		// could not finish stays as it was, and names no more than what
		// may still be on disk.
		return ferr
	}
	// What f recorded is kept even when it failed part way: the record
	// must never miss an ACE that is on disk.
	if err := writeRecord(path, user, rec); err != nil {
		return errors.Join(ferr, fmt.Errorf("writing the ACL record: %w", err))
	}
	return ferr
}

// ownedSDDL is the security descriptor of a record or lock file of the
// user whose SID is user: owned by that user, a protected DACL with full
// access for SYSTEM, Administrators and the user. The machine folder's
// CREATOR OWNER entry would give a file an elevated process makes to
// Administrators; the owner is named so the same user's later,
// unelevated runs own it.
func ownedSDDL(user string) string {
	return "O:" + user + "D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;" + user + ")"
}

// openRecordFile opens a record or lock file without following a reparse
// point, creating it with ownedSDDL when create is set and it is missing,
// and returns its handle only when it is the user's own (trustProblem).
// A missing file, when create is not set, is os.ErrNotExist.
func openRecordFile(path string, access, share uint32, create bool, user string) (windows.Handle, error) {
	sd, err := windows.SecurityDescriptorFromString(ownedSDDL(user))
	if err != nil {
		return 0, fmt.Errorf("security descriptor for %s: %w", user, err)
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	p, err := windows.UTF16PtrFromString(extendedPath(path))
	if err != nil {
		return 0, err
	}
	disposition := uint32(windows.OPEN_EXISTING)
	if create {
		disposition = windows.OPEN_ALWAYS
	}
	h, err := windows.CreateFile(p, access|windows.READ_CONTROL, share, sa, disposition,
		windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	runtime.KeepAlive(sd)
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) {
		return 0, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
	}
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		return 0, fmt.Errorf("refusing %s: %s may not open it, so it is not one agentbox made for that user (another user of this machine could have planted it); an administrator should remove it", path, user)
	}
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	t, err := trustOf(h)
	if err != nil {
		windows.CloseHandle(h)
		return 0, &aclError{"reading the security of", path, err}
	}
	if problem := recordTrustProblem(t, user); problem != "" {
		windows.CloseHandle(h)
		return 0, fmt.Errorf("refusing %s: %s, so it is not one agentbox made for %s (another user of this machine could have planted it); an administrator should remove it", path, problem, user)
	}
	return h, nil
}

// recordTrustProblem is trustProblem; the tests under Wine, which keeps no
// DACL protection flag for a file it creates, replace it (wineTrust).
var recordTrustProblem = trustProblem

// trustOf reads what trustProblem decides on through a file's handle:
// owner, DACL and its protection, link count and attributes.
func trustOf(h windows.Handle) (fileTrust, error) {
	var t fileTrust
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return t, fmt.Errorf("GetSecurityInfo: %w", err)
	}
	owner, _, err := sd.Owner()
	if err != nil || owner == nil {
		return t, fmt.Errorf("owner: %v", err)
	}
	t.Owner = owner.String()
	control, _, err := sd.Control()
	if err != nil {
		return t, fmt.Errorf("control: %w", err)
	}
	t.Protected = control&windows.SE_DACL_PROTECTED != 0
	acl, _, err := sd.DACL()
	if err != nil && !errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) {
		return t, fmt.Errorf("DACL: %w", err)
	}
	if acl == nil {
		t.NullDACL = true
	} else {
		size := int(*(*uint16)(unsafe.Add(unsafe.Pointer(acl), 2)))
		if _, t.ACEs, err = parseACL(unsafe.Slice((*byte)(unsafe.Pointer(acl)), size)); err != nil {
			return t, err
		}
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return t, fmt.Errorf("GetFileInformationByHandle: %w", err)
	}
	t.Links = info.NumberOfLinks
	t.Reparse = info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0
	t.Dir = info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0
	return t, nil
}

// readRecord reads the record at path into rec, through a handle it
// opened only when the file is the user's own, shared for reading only
// (no one holds it open for writing while it is read).
func readRecord(path, user string, rec *aclRecord) error {
	h, err := openRecordFile(path, windows.GENERIC_READ, windows.FILE_SHARE_READ, false, user)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(h), path)
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, rec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// peekRecord reads the record at path into rec under a shared hold of its
// lock, for a look that writes nothing: a read without the lock could
// hold the record open just when a run renames the new record over it,
// and that run's write would fail (and with it the run). A missing lock
// is a missing record (os.ErrNotExist).
func peekRecord(path, user string, rec *aclRecord) error {
	lock, err := openRecordFile(path+".lock", windows.GENERIC_READ|windows.GENERIC_WRITE, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, false, user)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(lock)
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(lock, 0, 0, 1, 0, ol); err != nil {
		return fmt.Errorf("locking the ACL record: %w", err)
	}
	defer windows.UnlockFileEx(lock, 0, 1, 0, ol)
	return readRecord(path, user, rec)
}

// writeRecord writes the record through a new temporary file of a random
// name, made with the user's own security descriptor (nobody else ever
// holds a handle to it), and a rename over the record.
func writeRecord(path, user string, rec *aclRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return err
	}
	tmp := path + ".tmp-" + hex.EncodeToString(r[:])
	sd, err := windows.SecurityDescriptorFromString(ownedSDDL(user))
	if err != nil {
		return err
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	p, err := windows.UTF16PtrFromString(extendedPath(tmp))
	if err != nil {
		return err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_WRITE, 0, sa, windows.CREATE_NEW, windows.FILE_ATTRIBUTE_NORMAL, 0)
	runtime.KeepAlive(sd)
	if err != nil {
		return &os.PathError{Op: "create", Path: tmp, Err: err}
	}
	f := os.NewFile(uintptr(h), tmp)
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp)
		return werr
	}
	from, _ := windows.UTF16PtrFromString(extendedPath(tmp))
	to, err := windows.UTF16PtrFromString(extendedPath(path))
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := windows.MoveFileEx(from, to, windows.MOVEFILE_REPLACE_EXISTING); err != nil {
		os.Remove(tmp)
		return &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
	}
	return nil
}

// dacl is a path's DACL as read: its ACEs, its revision, whether it is NULL
// (everyone may do everything) and whether the path is a folder.
type dacl struct {
	revision byte
	aces     []rawACE
	null     bool
	dir      bool
}

// openACLPath opens path to read its DACL (and, with write, to set it).
// Unless follow is set it follows no link: the handle is opened with
// FILE_FLAG_OPEN_REPARSE_POINT, a junction or symbolic link there is
// refused (redirects), and so is a path whose handle resolves elsewhere
// than its own long form (samePath): a link or a subst drive on the way.
// A missing path is os.ErrNotExist.
func openACLPath(path string, write, follow bool) (h windows.Handle, dir bool, err error) {
	p, err := windows.UTF16PtrFromString(extendedPath(path))
	if err != nil {
		return 0, false, err
	}
	access := uint32(windows.READ_CONTROL)
	if write {
		access |= windows.WRITE_DAC
	}
	flags := uint32(windows.FILE_FLAG_BACKUP_SEMANTICS)
	if !follow {
		flags |= windows.FILE_FLAG_OPEN_REPARSE_POINT
	} else if err := linksTrusted(path); err != nil {
		return 0, false, err
	}
	h, err = windows.CreateFile(p, access, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING, flags, 0)
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
		return 0, false, os.ErrNotExist
	}
	if err != nil {
		return 0, false, err
	}
	var tag struct{ FileAttributes, ReparseTag uint32 }
	if err := windows.GetFileInformationByHandleEx(h, windows.FileAttributeTagInfo, (*byte)(unsafe.Pointer(&tag)), uint32(unsafe.Sizeof(tag))); err != nil {
		windows.CloseHandle(h)
		return 0, false, fmt.Errorf("GetFileInformationByHandleEx: %w", err)
	}
	dir = tag.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0
	if follow {
		return h, dir, nil
	}
	if redirects(tag.FileAttributes, tag.ReparseTag) {
		windows.CloseHandle(h)
		return 0, false, fmt.Errorf("it is a junction or symbolic link (reparse tag %#x): agentbox never sets access through a link; name the folder it leads to instead", tag.ReparseTag)
	}
	final, err := finalPath(h)
	if err != nil {
		windows.CloseHandle(h)
		return 0, false, err
	}
	long := longPath(path)
	if !samePath(final, long) {
		windows.CloseHandle(h)
		return 0, false, fmt.Errorf("it leads to %s (a junction, symbolic link or mapped drive lies on the way): agentbox never sets access through a link; name that folder instead", final)
	}
	return h, dir, nil
}

// linksTrusted refuses path, which is about to be opened following links,
// when a step on its way (pathSteps) is a link whose owner is not the
// user or the system (trustedLinkOwner): one a box may have made. A step
// whose owner cannot be read is refused too.
func linksTrusted(path string) error {
	user, err := currentUserSID()
	if err != nil {
		return err
	}
	open := func(step string, access uint32) (windows.Handle, error) {
		p, err := windows.UTF16PtrFromString(extendedPath(step))
		if err != nil {
			return 0, err
		}
		return windows.CreateFile(p, access, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING,
			windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	}
	for _, step := range pathSteps(path) {
		h, err := open(step, windows.FILE_READ_ATTRIBUTES)
		if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
			return nil // the open that follows says so
		}
		if err != nil {
			return fmt.Errorf("%s, on the way: %w", step, err)
		}
		var tag struct{ FileAttributes, ReparseTag uint32 }
		err = windows.GetFileInformationByHandleEx(h, windows.FileAttributeTagInfo, (*byte)(unsafe.Pointer(&tag)), uint32(unsafe.Sizeof(tag)))
		windows.CloseHandle(h)
		if err != nil {
			return fmt.Errorf("%s, on the way: GetFileInformationByHandleEx: %w", step, err)
		}
		if !redirects(tag.FileAttributes, tag.ReparseTag) {
			continue
		}
		owner := ""
		if h, err := open(step, windows.READ_CONTROL); err == nil {
			if sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION); err == nil {
				if o, _, err := sd.Owner(); err == nil && o != nil {
					owner = o.String()
				}
			}
			windows.CloseHandle(h)
		}
		if !trustedLinkOwner(owner, user) {
			if owner == "" {
				owner = "an owner that cannot be read"
			}
			return fmt.Errorf("%s on the way is a link owned by %s, not by you or the system (a box can make links where it writes): agentbox follows no such link; remove it, or name the file it leads to", step, owner)
		}
	}
	return nil
}

// finalPath is GetFinalPathNameByHandle's name of an open file.
func finalPath(h windows.Handle) (string, error) {
	buf := make([]uint16, 512)
	for {
		n, err := windows.GetFinalPathNameByHandle(h, &buf[0], uint32(len(buf)), 0)
		// Windows answers a short buffer with the size it needs; Wine
		// with ERROR_MORE_DATA.
		if errors.Is(err, windows.ERROR_MORE_DATA) && len(buf) < 1<<15 {
			buf = make([]uint16, 2*len(buf))
			continue
		}
		if err != nil {
			return "", fmt.Errorf("GetFinalPathNameByHandle: %w", err)
		}
		if int(n) < len(buf) {
			return windows.UTF16ToString(buf[:n]), nil
		}
		buf = make([]uint16, n+1)
	}
}

// longPath is path with its 8.3 short names expanded (GetLongPathNameW),
// or path itself when that fails.
func longPath(path string) string {
	p, err := windows.UTF16PtrFromString(extendedPath(path))
	if err != nil {
		return path
	}
	buf := make([]uint16, 512)
	for {
		n, err := windows.GetLongPathName(p, &buf[0], uint32(len(buf)))
		if err != nil || n == 0 {
			return path
		}
		if int(n) < len(buf) {
			return windows.UTF16ToString(buf[:n])
		}
		buf = make([]uint16, n+1)
	}
}

// readDACL reads the DACL of path through a handle (openACLPath). ok is
// false when the path does not exist.
func readDACL(path string, follow bool) (d dacl, ok bool, err error) {
	h, dir, err := openACLPath(path, false, follow)
	if errors.Is(err, os.ErrNotExist) {
		return d, false, nil
	}
	if err != nil {
		return d, false, &aclError{"reading the ACL of", path, err}
	}
	defer windows.CloseHandle(h)
	d.dir = dir
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
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
	return d, true, nil
}

// writeDACL sets path's DACL to aces through a handle (openACLPath).
// SetSecurityInfo keeps the DACL unprotected and propagates inheritable
// entries to everything below a folder (which takes a while on a large
// tree; it happens only when something changed).
func writeDACL(path string, follow bool, revision byte, aces []rawACE) error {
	b, err := buildACL(revision, aces)
	if err != nil {
		return &aclError{"building the ACL of", path, err}
	}
	h, _, err := openACLPath(path, true, follow)
	if err != nil {
		return &aclError{"setting the ACL of", path, err}
	}
	defer windows.CloseHandle(h)
	acl := (*windows.ACL)(unsafe.Pointer(&b[0]))
	if err := windows.SetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION, nil, nil, acl, nil); err != nil {
		return &aclError{"setting the ACL of", path, err}
	}
	return nil
}

// syncPath makes path's DACL hold exactly what the record wants of
// agentbox's there, writing only when that differs from what it holds.
//
// It follows no link at path unless every ACE the record has there is a
// read grant on one file (mayFollow): a junction swapped in for a
// writable root is refused, never granted.
func syncPath(rec *aclRecord, path, groupSID string) error {
	follow := rec.mayFollow(path)
	d, ok, err := readDACL(path, follow)
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
	return writeDACL(path, follow, d.revision, next)
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
func applyACEs(s *Spec, project, groupSID string) (release func() error, err error) {
	path, user, err := aclRecordFile()
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
				d, ok, err := readDACL(a.Path, !a.Inherit)
				if err != nil {
					return nil, err
				}
				readable[k] = ok && usersCanRead(d.aces, d.null)
			}
			if readable[k] {
				continue // Users read it already: never touch it
			}
		}
		want = append(want, recordACE(a, groupSID))
	}
	me := self()
	project = winKey(project)
	err = withRecord(path, user, groupSID, true, func(rec *aclRecord, save func() error) error {
		paths, added := rec.begin(want, project, me)
		// Recorded first: a run killed while it writes leaves grants its
		// record names, and the next run removes them.
		if err := save(); err != nil {
			return fmt.Errorf("recording the ACEs of this run in %s before writing them: %w; nothing was granted, and the run is refused", path, err)
		}
		for _, p := range paths {
			stale := rec.stale(p)
			if err := syncPath(rec, p, groupSID); err != nil {
				kept := slices.Clone(rec.ACEs)
				rec.forget(p, added)
				// Put the path back as the record now says it should be
				// (without what failed); when that fails too, the DACL
				// may hold what failed, and the record keeps naming it.
				if syncPath(rec, p, groupSID) != nil {
					rec.ACEs = kept
				}
				return grantFailure(p, stale, err)
			}
			rec.done(p)
		}
		return nil
	})
	release = func() error {
		return withRecord(path, user, groupSID, true, func(rec *aclRecord, _ func() error) error {
			var errs []error
			for _, p := range rec.end(me) {
				if err := syncPath(rec, p, groupSID); err != nil {
					errs = append(errs, fmt.Errorf("removing this run's grant on %s: %w (it stays recorded: the next run removes it, or refuses to start until it can)", p, err))
					continue
				}
				rec.done(p)
			}
			return errors.Join(errs...)
		})
	}
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// removeAllACEs removes every ACE in every user's record (setup
// --uninstall, elevated): each path's DACL loses the explicit entries of
// agentbox's own SIDs the record names for it (ownSID: the sandbox group,
// a root's capability SID on that root), and of the sandbox group. A
// record that is not its user's own (trustProblem) is not used, and says
// so; no other SID's entries are touched.
func removeAllACEs(groupSID string) error {
	dir, err := machineDir()
	if err != nil {
		return err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "acl", "*.json"))
	var errs []error
	for _, f := range files {
		user := recordFileSID(f)
		if user == "" {
			errs = append(errs, fmt.Errorf("refusing %s: its name is not a user's SID", f))
			continue
		}
		err := withRecord(f, user, groupSID, false, func(rec *aclRecord, _ func() error) error {
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
			// A killed run's placeholders go too, each only while it is
			// the very file or folder made (leftover.go), and only once
			// the grants are gone. One a live run holds is that run's to
			// remove when it ends: removing it now would let its box
			// create what it keeps while the run still has its grants.
			for _, r := range rec.Placeholders {
				if !r.held(placeholderAlive) {
					removeOwned(r, user)
				}
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
