package broker

import (
	"strings"

	"golang.org/x/sys/unix"
)

// walk is what openat2 does for the broker's lookups (a folder, O_PATH,
// by RESOLVE_IN_ROOT, RESOLVE_NO_SYMLINKS and RESOLVE_NO_MAGICLINKS) on a
// kernel that answers openat2 with ENOSYS: one component at a time, each
// opened without following it, the links followed here. It is reached
// where agentbox itself runs in a box whose filter refuses openat2
// (agentbox's own, which cannot read openat2's mode): the kernel has the
// call, but agentbox may not make it.
//
// Every link under /proc is refused, magic or not (stricter than
// RESOLVE_NO_MAGICLINKS). Under RESOLVE_IN_ROOT ".." never goes above
// root, absolute paths and link targets start there, and the folder found
// is checked to lie below root after the walk (a folder renamed away during
// it could have taken a ".." past root): if it does not, the lookup fails
// with EXDEV, as openat2 does.
func walk(dirfd int, p string, resolve uint64) (int, error) {
	inRoot := resolve&unix.RESOLVE_IN_ROOT != 0
	root := unix.AT_FDCWD
	if inRoot {
		root = dirfd
	}
	start := func(abs bool) (int, error) {
		switch {
		case abs && !inRoot:
			return unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		case abs:
			return unix.FcntlInt(uintptr(root), unix.F_DUPFD_CLOEXEC, 0)
		case dirfd == unix.AT_FDCWD:
			return unix.Open(".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		}
		return unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
	}
	var rst unix.Stat_t
	if inRoot {
		if err := unix.Fstat(root, &rst); err != nil {
			return -1, err
		}
	}
	cur, err := start(strings.HasPrefix(p, "/"))
	if err != nil {
		return -1, err
	}
	rest := strings.Split(p, "/")
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		if name == "" || name == "." {
			continue
		}
		if name == ".." && inRoot && sameFile(cur, rst) {
			continue
		}
		next, err := unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(cur)
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			unix.Close(cur)
			return -1, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			unix.Close(cur)
			cur = next
			continue
		}
		unix.Close(next)
		var fs unix.Statfs_t
		links++
		if resolve&unix.RESOLVE_NO_SYMLINKS != 0 || links > 40 || unix.Fstatfs(cur, &fs) != nil || fs.Type == unix.PROC_SUPER_MAGIC {
			unix.Close(cur)
			return -1, unix.ELOOP
		}
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(cur, name, buf)
		if err != nil {
			unix.Close(cur)
			return -1, err
		}
		target := string(buf[:n])
		if strings.HasPrefix(target, "/") {
			unix.Close(cur)
			if cur, err = start(true); err != nil {
				return -1, err
			}
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	var st unix.Stat_t
	if err := unix.Fstat(cur, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(cur)
		if err == nil {
			err = unix.ENOTDIR
		}
		return -1, err
	}
	if inRoot && !below(cur, rst) {
		unix.Close(cur)
		return -1, unix.EXDEV
	}
	return cur, nil
}

// sameFile reports whether descriptor fd is the file st.
func sameFile(fd int, st unix.Stat_t) bool {
	var f unix.Stat_t
	return unix.Fstat(fd, &f) == nil && f.Dev == st.Dev && f.Ino == st.Ino
}

// below reports whether the folder dir is root's folder st or lies below
// it, going up by "..".
func below(dir int, st unix.Stat_t) bool {
	cur, err := unix.FcntlInt(uintptr(dir), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer func() { unix.Close(cur) }()
	for depth := 0; depth < 4096; depth++ {
		var c unix.Stat_t
		if unix.Fstat(cur, &c) != nil {
			return false
		}
		if c.Dev == st.Dev && c.Ino == st.Ino {
			return true
		}
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		var u unix.Stat_t
		if unix.Fstat(up, &u) != nil || (u.Dev == c.Dev && u.Ino == c.Ino) {
			unix.Close(up)
			return false // the top reached without meeting root
		}
		unix.Close(cur)
		cur = up
	}
	return false
}
