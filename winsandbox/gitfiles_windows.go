package winsandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/agentbox/agentbox/plan"
)

// holdPlaceholders makes each missing control folder of the spec
// (controlfolder.go), empty, and each missing git file (gitfiles.go) with
// its content, records each one it made in the user's ACL record with its
// identity (leftover.go), and returns those this run holds. A placeholder a killed run left that is still the very file it
// made is taken over by this run (reused, removed after it); a recorded
// one that is another file now is forgotten and left to the checks. One
// that exists by now and is not ours (the user or git made it since the
// plan was made) is left alone: the deny ACE applies to it all the same,
// and the after-run check judges it. Something other than a plain file
// (a plain folder) there, or one that cannot be made, fails the run: what
// it stands for would be unprotected.
func holdPlaceholders(dirs []string, files []GitPlaceholder, roots []string, groupSID string) ([]recPlaceholder, error) {
	path, user, err := aclRecordFile()
	if err != nil {
		return nil, err
	}
	me := self()
	var held []recPlaceholder
	err = withRecord(path, user, groupSID, true, func(rec *aclRecord, save func() error) error {
		taken := map[string]bool{}
		for i := range rec.Placeholders {
			r := &rec.Placeholders[i]
			live := r.held(placeholderAlive)
			ours := judgeLeftover(*r, false, placeholderFacts(r.Path)) == leftoverOurs
			switch {
			case live && ours && slices.ContainsFunc(roots, func(root string) bool { return winWithin(r.Path, root) }):
				// Another run's, still the very one it made, in a
				// writable root of this run: this run may have planned
				// it as there (a deny ACE on it, no placeholder of its
				// own), so it holds it too, and it stays until the last
				// of them ends.
				r.join(me)
				taken[winKey(r.Path)] = true
				held = append(held, *r)
			case live:
				// Another run's, changed from outside the box: left to
				// that run and the checks.
			case ours:
				r.keepHolders([]aclHolder{me})
				taken[winKey(r.Path)] = true
				held = append(held, *r)
			default:
				r.keepHolders(nil) // forgotten below
			}
		}
		rec.Placeholders = dropForgotten(rec.Placeholders)
		for _, d := range dirs {
			if taken[winKey(d)] {
				continue
			}
			r, made, err := makeDirPlaceholder(d, me)
			if made {
				held = append(held, r)
				rec.Placeholders = append(rec.Placeholders, r)
			}
			if err != nil {
				return err
			}
		}
		for _, g := range files {
			if taken[winKey(g.Path)] {
				continue
			}
			id, made, err := makeGitPlaceholder(g)
			if made {
				r := recPlaceholder{Path: g.Path, Content: g.Content, Volume: id.VolumeSerialNumber, FileID: uint64(id.FileIndexHigh)<<32 | uint64(id.FileIndexLow), Holder: me}
				held = append(held, r)
				rec.Placeholders = append(rec.Placeholders, r)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return held, err
}

// dropForgotten drops the placeholders whose holder was cleared.
func dropForgotten(ps []recPlaceholder) []recPlaceholder {
	out := ps[:0]
	for _, p := range ps {
		if len(p.holders()) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// makeDirPlaceholder makes one control folder placeholder, empty, and
// returns its record; made is set once the folder exists.
func makeDirPlaceholder(path string, me aclHolder) (recPlaceholder, bool, error) {
	r := recPlaceholder{Path: path, Dir: true, Holder: me}
	err := os.Mkdir(path, 0o755)
	if errors.Is(err, os.ErrExist) {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.IsDir() && fi.Mode()&(os.ModeSymlink|os.ModeIrregular) == 0 {
			return r, false, nil
		}
		return r, false, fmt.Errorf("placeholder %s: something other than a folder is there now", path)
	}
	if err != nil {
		return r, false, fmt.Errorf("placeholder %s: %w", path, err)
	}
	h, f, err := openPlaceholder(path)
	if err != nil || h == 0 {
		return r, true, fmt.Errorf("placeholder %s: reading what was made: %v", path, err)
	}
	windows.CloseHandle(h)
	r.Volume, r.FileID = f.Volume, f.FileID
	return r, true, nil
}

// makeGitPlaceholder makes one placeholder and returns its identity; made
// is set once the file exists, even when writing it failed.
func makeGitPlaceholder(g GitPlaceholder) (id windows.ByHandleFileInformation, made bool, err error) {
	f, err := os.OpenFile(g.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		if fi, lerr := os.Lstat(g.Path); lerr == nil && fi.Mode().IsRegular() {
			return id, false, nil
		}
		return id, false, fmt.Errorf("placeholder %s: something other than a file is there now", g.Path)
	}
	if err != nil {
		return id, false, fmt.Errorf("placeholder %s: %w", g.Path, err)
	}
	ierr := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &id)
	_, werr := f.WriteString(g.Content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = ierr
	}
	if werr != nil {
		return id, true, fmt.Errorf("placeholder %s: %w", g.Path, werr)
	}
	return id, true, nil
}

// openPlaceholder opens path without following a reparse point, for
// reading and deleting, and reads what it is.
func openPlaceholder(path string) (windows.Handle, fileFacts, error) {
	p, err := windows.UTF16PtrFromString(extendedPath(path))
	if err != nil {
		return 0, fileFacts{}, err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.DELETE|windows.FILE_WRITE_ATTRIBUTES, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
			return 0, fileFacts{}, nil
		}
		return 0, fileFacts{}, err
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return 0, fileFacts{}, err
	}
	f := fileFacts{
		Exists:  true,
		Regular: info.FileAttributes&(windows.FILE_ATTRIBUTE_DIRECTORY|windows.FILE_ATTRIBUTE_REPARSE_POINT) == 0,
		Dir:     info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 && info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT == 0,
		Links:   info.NumberOfLinks,
		Volume:  info.VolumeSerialNumber,
		FileID:  uint64(info.FileIndexHigh)<<32 | uint64(info.FileIndexLow),
	}
	if f.Dir {
		// Deleting a folder through the handle fails anyway when
		// something is in it.
		f.Empty = dirEmpty(h)
	} else if f.Regular && info.FileSizeHigh == 0 && info.FileSizeLow <= 64 {
		buf := make([]byte, 65)
		var n uint32
		if err := windows.ReadFile(h, buf, &n, nil); err != nil {
			windows.CloseHandle(h)
			return 0, fileFacts{}, err
		}
		f.Content = buf[:n]
	} else {
		f.Content = []byte("\x00too large to be a placeholder")
	}
	return h, f, nil
}

// dirEmpty reports whether the folder open as h holds nothing but "."
// and ".." (read through the handle: FILE_FULL_DIR_INFO entries, the name
// length at offset 60 and the name at 68). It is false when the folder
// cannot be read.
func dirEmpty(h windows.Handle) bool {
	const fullDirInfo, fullDirRestartInfo = 14, 15
	buf := make([]byte, 4096)
	class := uint32(fullDirRestartInfo)
	for {
		err := windows.GetFileInformationByHandleEx(h, class, &buf[0], uint32(len(buf)))
		if errors.Is(err, windows.ERROR_NO_MORE_FILES) {
			return true
		}
		if err != nil {
			return false
		}
		class = fullDirInfo
		for off := 0; off+68 <= len(buf); {
			next := *(*uint32)(unsafe.Pointer(&buf[off]))
			n := int(*(*uint32)(unsafe.Pointer(&buf[off+60])))
			if off+68+n > len(buf) {
				return false
			}
			name := unsafe.Slice((*uint16)(unsafe.Pointer(&buf[off+68])), n/2)
			if s := windows.UTF16ToString(name); s != "." && s != ".." {
				return false
			}
			if next == 0 {
				break
			}
			off += int(next)
		}
	}
}

// placeholderFacts is what path holds now (Exists false when it cannot
// be read: nothing is taken for ours then).
func placeholderFacts(path string) fileFacts {
	h, f, err := openPlaceholder(path)
	if err != nil || h == 0 {
		return fileFacts{}
	}
	windows.CloseHandle(h)
	return f
}

// removeOurs removes path when it is still the placeholder r (judged and
// deleted through one handle, so nothing can be swapped in between).
func removeOurs(r recPlaceholder) bool { return removeOwned(r, "") }

// removeOwned is removeOurs that, when owner is set, also wants the file
// or folder owned by that SID. `setup --uninstall` runs elevated on the
// paths every user's record names, and a user may write anything into
// the user's own record: it removes only what that user owns (a
// placeholder that user's run made), which the user could remove anyway,
// never a small file or empty folder of the system's or an
// administrator's the record names with its identity.
func removeOwned(r recPlaceholder, owner string) bool {
	h, f, err := openPlaceholder(r.Path)
	if err != nil || h == 0 {
		return false
	}
	defer windows.CloseHandle(h)
	if judgeLeftover(r, false, f) != leftoverOurs {
		return false
	}
	if owner != "" {
		sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
		if err != nil {
			return false
		}
		o, _, err := sd.Owner()
		if err != nil || o == nil || !strings.EqualFold(o.String(), owner) {
			return false
		}
	}
	del := uint32(1) // FILE_DISPOSITION_INFO.DeleteFile
	dispose := func() error {
		return windows.SetFileInformationByHandle(h, windows.FileDispositionInfo, (*byte)(unsafe.Pointer(&del)), uint32(unsafe.Sizeof(del)))
	}
	if dispose() == nil {
		return true
	}
	// A read-only file cannot be deleted: clear the attribute on the
	// same handle and try again.
	var basic struct {
		CreationTime, LastAccessTime, LastWriteTime, ChangeTime int64
		FileAttributes                                          uint32
		_                                                       uint32
	}
	basic.FileAttributes = windows.FILE_ATTRIBUTE_NORMAL
	if windows.SetFileInformationByHandle(h, windows.FileBasicInfo, (*byte)(unsafe.Pointer(&basic)), uint32(unsafe.Sizeof(basic))) != nil {
		return false
	}
	return dispose() == nil
}

// releasePlaceholders ends this run's hold on the placeholders it holds
// and removes each that no other live run holds while it is still the
// very file made, holding exactly what it was made with, or the very
// folder made, still empty (judged by what this run knows of it, recorded
// or not), last made first, and takes it out of the record; one that is
// not (written from outside the box during the run) stays, and the
// after-run check looks at it. One that another live run holds stays for
// that run (leftover.go), all under the record's lock, so no run can join
// a placeholder while another removes it; it returns those, still the
// very ones made, for this run's check to leave alone (leaveToOthers).
func releasePlaceholders(held []recPlaceholder, groupSID string) (others []recPlaceholder) {
	if len(held) == 0 {
		return nil
	}
	me := self()
	path, user, err := aclRecordFile()
	if err != nil {
		return nil
	}
	withRecord(path, user, groupSID, true, func(rec *aclRecord, _ func() error) error {
		for i := len(held) - 1; i >= 0; i-- {
			h := held[i]
			j := slices.IndexFunc(rec.Placeholders, func(r recPlaceholder) bool {
				return winKey(r.Path) == winKey(h.Path) && r.Volume == h.Volume && r.FileID == h.FileID
			})
			if j < 0 {
				// Not recorded (any more): this run's own knowledge
				// decides.
				removeOurs(h)
				continue
			}
			if rec.Placeholders[j].leave(me, placeholderAlive) {
				// Another live run holds it.
				if judgeLeftover(h, false, placeholderFacts(h.Path)) == leftoverOurs {
					others = append(others, h)
				}
				continue
			}
			removeOurs(h)
			rec.Placeholders = slices.Delete(rec.Placeholders, j, j+1)
		}
		return nil
	})
	return others
}

// MarkLivePlaceholders marks, among the guards of a killed run's plan h,
// the missing places where a live run of this user holds its placeholder
// (the record names a live holder and it is still the very file or folder
// made): the killed run's after-run check, done by a later run, then takes
// it for what was there before (kept read-only; the box could not change
// it) rather than for something the killed run's box planted, which it
// would move away from the live run that relies on it. A record it cannot
// read marks nothing: the check then moves such a placeholder away, as
// before.
func MarkLivePlaceholders(h *plan.HostExec) {
	path, user, err := aclRecordFile()
	if err != nil {
		return
	}
	var rec aclRecord
	if peekRecord(path, user, &rec) != nil {
		return
	}
	var live []recPlaceholder
	for _, r := range rec.Placeholders {
		if r.held(placeholderAlive) && judgeLeftover(r, false, placeholderFacts(r.Path)) == leftoverOurs {
			live = append(live, r)
		}
	}
	leaveToOthers(h, live)
}

// RemoveLeftoverPlaceholders removes the placeholders (control folders,
// git files) runs of this user that were killed left, each only while it is still the very file
// made and untouched (leftover.go); it forgets the others. agentbox run
// calls it before the after-run check of a killed run, which would
// otherwise take them for files the box planted, and before planning,
// which would take them for the user's.
func RemoveLeftoverPlaceholders() error {
	setup, err := loadRecord()
	if err != nil || setup.GroupSID == "" {
		return nil // no setup: no run made any
	}
	return removeLeftoverPlaceholders(setup.GroupSID)
}

// removeLeftoverPlaceholders is RemoveLeftoverPlaceholders for the
// sandbox group groupSID.
func removeLeftoverPlaceholders(groupSID string) error {
	path, user, err := aclRecordFile()
	if err != nil {
		return err
	}
	// Most runs find none: look (under a shared hold of the lock) before
	// taking the lock to write.
	var peek aclRecord
	if err := peekRecord(path, user, &peek); err != nil || len(peek.Placeholders) == 0 {
		return nil
	}
	return withRecord(path, user, groupSID, true, func(rec *aclRecord, _ func() error) error {
		kept := rec.Placeholders[:0]
		for _, r := range rec.Placeholders {
			if r.held(placeholderAlive) {
				kept = append(kept, r)
				continue
			}
			removeOurs(r)
		}
		rec.Placeholders = kept
		return nil
	})
}
