package supervise

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The after-run check works on what the box left, possibly while another
// box of the same user still runs in the same tree. So it never follows a
// path twice and never follows a symlink: every folder is opened from its
// parent's descriptor with O_NOFOLLOW (or in one openat2 call with
// RESOLVE_NO_SYMLINKS), every file is read, created, renamed and removed
// relative to a folder descriptor, new files are created with O_EXCL, and
// renames that must not replace anything use RENAME_NOREPLACE. A path
// swapped for a symlink meanwhile makes an operation fail (ELOOP, ENOTDIR),
// never land elsewhere.

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openDir opens the folder at the absolute path p without following any
// symlink on the way.
func openDir(p string) (int, error) {
	how := unix.OpenHow{Flags: uint64(dirFlags), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &how)
	if err == nil || !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.ENAMETOOLONG) {
		return fd, err
	}
	// Before Linux 5.6, or a path longer than the kernel takes at once
	// (PATH_MAX, which a box can make inside a writable root): one
	// component at a time.
	fd, err = unix.Open("/", dirFlags, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(strings.Trim(filepath.Clean(p), "/"), "/") {
		if c == "" {
			continue
		}
		next, err := unix.Openat(fd, c, dirFlags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// openParent opens the folder holding p and returns it with p's name.
func openParent(p string) (int, string, error) {
	fd, err := openDir(filepath.Dir(p))
	return fd, filepath.Base(p), err
}

// lstatAt stats name in folder dfd, not following a symlink.
func lstatAt(dfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

func isDir(st unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isReg(st unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFREG }
func isLink(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }

// readAt reads the regular file name in dfd, at most max bytes; a symlink
// or anything but a regular file is an error (ELOOP, EINVAL).
func readAt(dfd int, name string, max int64) ([]byte, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, st, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, st, err
	}
	if !isReg(st) {
		return nil, st, unix.EINVAL
	}
	if st.Size > max {
		return nil, st, unix.EFBIG
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if int64(len(data)) > max {
		return nil, st, unix.EFBIG
	}
	return data, st, err
}

// listAt lists folder dfd.
func listAt(dfd int) ([]string, error) {
	dup, err := unix.Openat(dfd, ".", dirFlags, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}

// randomName is a name no one can have made ahead of time: 128 random bits.
func randomName(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// writeNew writes data to a new file in dfd under a random name and
// returns the name; the file never replaces anything (O_EXCL).
func writeNew(dfd int, data []byte, mode uint32) (string, error) {
	name := randomName(".agentbox-new-")
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode&0o7777)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = f.Write(data)
	if err == nil {
		// The umask may have taken bits off; the hooks' x bits matter.
		err = unix.Fchmod(fd, mode&0o7777)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(dfd, name, 0)
		return "", err
	}
	return name, nil
}

// removeAllAt removes name in dfd and, for a folder, everything in it,
// by descriptor.
func removeAllAt(dfd int, name string) error {
	st, err := lstatAt(dfd, name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if !isDir(st) {
		return unix.Unlinkat(dfd, name, 0)
	}
	sub, err := unix.Openat(dfd, name, dirFlags, 0)
	if err != nil {
		return err
	}
	names, err := listAt(sub)
	for _, n := range names {
		if e := removeAllAt(sub, n); e != nil && err == nil {
			err = e
		}
	}
	unix.Close(sub)
	if e := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); e != nil && err == nil {
		err = e
	}
	return err
}

// copyAt copies name in sdfd to a new entry dname in ddfd: files with
// their content and mode, symlinks as symlinks, folders recursively;
// nothing is followed and nothing existing is replaced.
func copyAt(sdfd int, name string, ddfd int, dname string) error {
	st, err := lstatAt(sdfd, name)
	if err != nil {
		return err
	}
	switch {
	case isLink(st):
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(sdfd, name, buf)
		if err != nil {
			return err
		}
		return unix.Symlinkat(string(buf[:n]), ddfd, dname)
	case isReg(st):
		in, err := unix.Openat(sdfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return err
		}
		fin := os.NewFile(uintptr(in), name)
		defer fin.Close()
		out, err := unix.Openat(ddfd, dname, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		fout := os.NewFile(uintptr(out), dname)
		_, err = io.Copy(fout, fin)
		if cerr := fout.Close(); err == nil {
			err = cerr
		}
		return err
	case isDir(st):
		if err := unix.Mkdirat(ddfd, dname, 0o700); err != nil {
			return err
		}
		src, err := unix.Openat(sdfd, name, dirFlags, 0)
		if err != nil {
			return err
		}
		defer unix.Close(src)
		dst, err := unix.Openat(ddfd, dname, dirFlags, 0)
		if err != nil {
			return err
		}
		defer unix.Close(dst)
		names, err := listAt(src)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := copyAt(src, n, dst, n); err != nil {
				return err
			}
		}
		return nil
	}
	// Devices, sockets, fifos: nothing a host program runs; not kept.
	return nil
}
