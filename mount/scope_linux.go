package mount

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// scopeAbstract restricts the calling thread with a Landlock domain that
// handles nothing but abstract unix sockets: it and what it starts may not
// connect to one made outside it (Landlock's scope, ABI 6). no_new_privs
// must be set (bwrap does).
func scopeAbstract() error {
	attr := struct{ fs, net, scoped uint64 }{0, 0, unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET}
	rs, _, errno := unix.RawSyscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 24, 0)
	if errno != 0 {
		return errno
	}
	defer unix.Close(int(rs))
	if _, _, errno := unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rs, 0, 0); errno != 0 {
		return errno
	}
	return nil
}
