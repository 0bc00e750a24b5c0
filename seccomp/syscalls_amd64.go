//go:build linux

package seccomp

import "golang.org/x/sys/unix"

func init() {
	for name, nr := range map[string]uint32{
		"chmod":     unix.SYS_CHMOD,
		"creat":     unix.SYS_CREAT,
		"open":      unix.SYS_OPEN,
		"mknod":     unix.SYS_MKNOD,
		"chown":     unix.SYS_CHOWN,
		"lchown":    unix.SYS_LCHOWN,
		"utime":     unix.SYS_UTIME,
		"utimes":    unix.SYS_UTIMES,
		"futimesat": unix.SYS_FUTIMESAT,
	} {
		syscalls[name] = nr
	}
}
