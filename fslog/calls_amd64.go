//go:build linux

package fslog

import "golang.org/x/sys/unix"

// legacyCalls are the path calls x86-64 has besides the *at ones (arm64
// has only those).
var legacyCalls = map[uint32]call{
	unix.SYS_OPEN:      {name: "open", dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: 1, at: -1, follow: true},
	unix.SYS_CREAT:     {name: "creat", op: Create, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1, follow: true},
	unix.SYS_MKDIR:     {name: "mkdir", op: Mkdir, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_MKNOD:     {name: "mknod", op: Create, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_UNLINK:    {name: "unlink", op: Remove, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_RMDIR:     {name: "rmdir", op: Rmdir, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_RENAME:    {name: "rename", op: Rename, dirfd: -1, path: 0, dirfd2: -1, path2: 1, open: -1, at: -1},
	unix.SYS_LINK:      {name: "link", op: Link, dirfd: -1, path: 0, dirfd2: -1, path2: 1, open: -1, at: -1},
	unix.SYS_SYMLINK:   {name: "symlink", op: Symlink, dirfd: -1, path: 1, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_CHMOD:     {name: "chmod", op: Chmod, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1, follow: true},
	unix.SYS_CHOWN:     {name: "chown", op: Chown, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1, follow: true},
	unix.SYS_LCHOWN:    {name: "lchown", op: Chown, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_UTIME:     {name: "utime", op: Utime, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1, follow: true},
	unix.SYS_UTIMES:    {name: "utimes", op: Utime, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1, follow: true},
	unix.SYS_FUTIMESAT: {name: "futimesat", op: Utime, dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, at: -1, follow: true},
}
