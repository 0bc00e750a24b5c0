//go:build unix

package event

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// folder is the log folder, held by a descriptor: every file in it is
// opened relative to that descriptor, without following symbolic links,
// so nothing that replaces a path on the way after the folder was checked
// can send a write elsewhere.
type folder struct {
	fd    int
	path  string
	owner int
}

// openFolder opens the log folder dir. With create, the folder and its
// parent are created (0700) when missing. The folder itself and its parent
// (agentbox's own state folder) are opened without following a symbolic
// link and must belong to owner; group and other permissions are
// taken away from the folder. The folders above them are the user's own layout and are followed.
func openFolder(dir string, owner int, create bool) (*folder, error) {
	dir = filepath.Clean(dir)
	parent, name := filepath.Dir(dir), filepath.Base(dir)
	if create {
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", parent, err)
		}
	}
	pfd, err := openDir(unix.AT_FDCWD, parent, parent)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	if err := checkOwner(pfd, parent, owner); err != nil {
		return nil, err
	}
	if create {
		if err := unix.Mkdirat(pfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	fd, err := openDir(pfd, name, dir)
	if err != nil {
		return nil, err
	}
	if err := checkOwner(fd, dir, owner); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if create {
		if err := tighten(fd, dir); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return &folder{fd: fd, path: dir, owner: owner}, nil
}

// openDir opens name (relative to at) as a folder, refusing a symbolic link.
func openDir(at int, name, path string) (int, error) {
	fd, err := unix.Openat(at, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return -1, fmt.Errorf("%s is not a folder (a symbolic link or a file): refused", path)
	case errors.Is(err, unix.ENOENT):
		return -1, fmt.Errorf("%s: %w", path, os.ErrNotExist)
	case err != nil:
		return -1, fmt.Errorf("opening %s: %w", path, err)
	}
	return fd, nil
}

func checkOwner(fd int, path string, owner int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	if int(st.Uid) != owner {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): refused", path, st.Uid, owner)
	}
	return nil
}

// tighten takes group and other permissions away from what fd is open on;
// the owner's are left as they are (a user who made the folder read-only
// meant it).
func tighten(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	if perm := uint32(st.Mode) & 0o777; perm&0o077 != 0 {
		if err := unix.Fchmod(fd, perm&0o700); err != nil {
			return fmt.Errorf("setting the permissions of %s: %w", path, err)
		}
	}
	return nil
}

// secure takes group and other permissions away from the folder and f
// again.
func (d *folder) secure(f *os.File) {
	tighten(d.fd, d.path)
	tighten(int(f.Fd()), f.Name())
}

// create opens the file name for appending, creating it 0600. It must be
// a regular file of the owner with no other hard link (a link would make
// the log write into a file elsewhere); O_NONBLOCK keeps a FIFO put there
// from blocking the open.
func (d *folder) create(name string) (*os.File, error) {
	path := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link: refused", path)
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := d.checkFile(fd, path); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := tighten(fd, path); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// open opens the file name for reading, with the same checks as create.
func (d *folder) open(name string) (*os.File, error) {
	path := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil, fmt.Errorf("%s: %w", path, os.ErrNotExist)
		case errors.Is(err, unix.ELOOP):
			return nil, fmt.Errorf("%s is a symbolic link: refused", path)
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := d.checkFile(fd, path); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

func (d *folder) checkFile(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("%s is not a regular file: refused", path)
	case int(st.Uid) != d.owner:
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): refused", path, st.Uid, d.owner)
	case st.Nlink > 1:
		return fmt.Errorf("%s has %d hard links: refused", path, st.Nlink)
	}
	return nil
}

// same reports whether name in the folder is still the file f.
func (d *folder) same(f *os.File, name string) bool {
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Fstatat(d.fd, name, &b, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// rename renames from to to within the folder, never replacing an existing
// to (os.ErrExist then).
func (d *folder) rename(from, to string) error {
	if err := renameNoReplace(d.fd, from, to); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return os.ErrExist
		}
		return fmt.Errorf("renaming %s to %s in %s: %w", from, to, d.path, err)
	}
	return nil
}

func (d *folder) remove(name string) error { return unix.Unlinkat(d.fd, name, 0) }

// names lists the folder.
func (d *folder) names() ([]string, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.Readdirnames(-1)
}

// Close closes the folder's descriptor.
func (d *folder) Close() error { return unix.Close(d.fd) }

// renameChecked renames from to to unless to exists. Between the check and
// the rename another run could create to; the rotated names hold the time
// to the nanosecond, and only agentbox writes in the folder.
func renameChecked(dirfd int, from, to string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, to, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return unix.EEXIST
	}
	return unix.Renameat(dirfd, from, dirfd, to)
}
