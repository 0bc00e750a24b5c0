//go:build linux && (amd64 || arm64)

package fslog

import "golang.org/x/sys/unix"

// call says where a watched syscall keeps its paths and what it does.
type call struct {
	name string
	// op is what the call does; "" for the open calls, whose flags say.
	op Op
	// dirfd and path are the arguments of the first path and the folder
	// descriptor it is relative to (-1: the working folder, as for
	// AT_FDCWD); dirfd2 and path2 the second path's (-1: none).
	dirfd, path, dirfd2, path2 int
	// open is the argument of the open flags; how is set for openat2,
	// whose flags are in a struct open_how in the caller's memory.
	open int
	how  bool
	// at is the argument of the AT_* flags (-1: none); follow says the
	// call follows a final symbolic link unless told not to.
	at     int
	follow bool
}

// calls are the syscalls the log's filter stops, by number: every open
// (a read of a hidden or denied path is a refusal too) and every call that
// creates, removes, renames, links, truncates or changes the metadata of a
// path. Calls on a descriptor alone need no watching: the descriptor was
// opened by a watched call.
var calls = map[uint32]call{
	unix.SYS_OPENAT:        {name: "openat", dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: 2, at: -1, follow: true},
	unix.SYS_OPENAT2:       {name: "openat2", dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, how: true, at: -1, follow: true},
	unix.SYS_MKDIRAT:       {name: "mkdirat", op: Mkdir, dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_MKNODAT:       {name: "mknodat", op: Create, dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_UNLINKAT:      {name: "unlinkat", op: Remove, dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, at: 2},
	unix.SYS_RENAMEAT:      {name: "renameat", op: Rename, dirfd: 0, path: 1, dirfd2: 2, path2: 3, open: -1, at: -1},
	unix.SYS_RENAMEAT2:     {name: "renameat2", op: Rename, dirfd: 0, path: 1, dirfd2: 2, path2: 3, open: -1, at: -1},
	unix.SYS_LINKAT:        {name: "linkat", op: Link, dirfd: 0, path: 1, dirfd2: 2, path2: 3, open: -1, at: 4},
	unix.SYS_SYMLINKAT:     {name: "symlinkat", op: Symlink, dirfd: 1, path: 2, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_TRUNCATE:      {name: "truncate", op: Truncate, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1, follow: true},
	unix.SYS_FCHMODAT:      {name: "fchmodat", op: Chmod, dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, at: -1, follow: true},
	unix.SYS_FCHMODAT2:     {name: "fchmodat2", op: Chmod, dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, at: 3, follow: true},
	unix.SYS_FCHOWNAT:      {name: "fchownat", op: Chown, dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, at: 4, follow: true},
	unix.SYS_UTIMENSAT:     {name: "utimensat", op: Utime, dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, at: 3, follow: true},
	unix.SYS_SETXATTR:      {name: "setxattr", op: Xattr, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1, follow: true},
	unix.SYS_LSETXATTR:     {name: "lsetxattr", op: Xattr, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_REMOVEXATTR:   {name: "removexattr", op: Xattr, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1, follow: true},
	unix.SYS_LREMOVEXATTR:  {name: "lremovexattr", op: Xattr, dirfd: -1, path: 0, dirfd2: -1, path2: -1, open: -1, at: -1},
	unix.SYS_SETXATTRAT:    {name: "setxattrat", op: Xattr, dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, at: 2, follow: true},
	unix.SYS_REMOVEXATTRAT: {name: "removexattrat", op: Xattr, dirfd: 0, path: 1, dirfd2: -1, path2: -1, open: -1, at: 2, follow: true},
}

func init() {
	for nr, c := range legacyCalls {
		calls[nr] = c
	}
}
