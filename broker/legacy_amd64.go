//go:build linux

package broker

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/fslog"
)

// legacy decides the path calls x86-64 has besides the *at ones.
func legacy(b *Broker, c *caller, req fslog.Request, valid func() bool) (int64, int) {
	a := req.Args
	switch req.Nr {
	case unix.SYS_CHMOD:
		return b.onPath(c, unix.AT_FDCWD, a[0], true, false, valid, func(t *target) error { return t.chmod(uint32(a[1])) })
	case unix.SYS_CHOWN, unix.SYS_LCHOWN:
		return b.onPath(c, unix.AT_FDCWD, a[0], req.Nr == unix.SYS_CHOWN, false, valid,
			func(t *target) error { return t.chown(int(int32(a[1])), int(int32(a[2]))) })
	case unix.SYS_UTIME:
		// struct utimbuf { time_t actime; time_t modtime; }, or NULL.
		var ts []unix.Timespec
		if a[1] != 0 {
			var raw [16]byte
			if err := c.mem(a[1], raw[:]); err != nil {
				return 0, errnoOf(err)
			}
			ts = []unix.Timespec{{Sec: int64(binary.LittleEndian.Uint64(raw[0:]))}, {Sec: int64(binary.LittleEndian.Uint64(raw[8:]))}}
		}
		return b.onPath(c, unix.AT_FDCWD, a[0], true, false, valid, func(t *target) error { return t.utimes(ts) })
	case unix.SYS_UTIMES:
		ts, err := c.timevals(a[1])
		if err != nil {
			return 0, errnoOf(err)
		}
		return b.onPath(c, unix.AT_FDCWD, a[0], true, false, valid, func(t *target) error { return t.utimes(ts) })
	case unix.SYS_FUTIMESAT:
		ts, err := c.timevals(a[2])
		if err != nil {
			return 0, errnoOf(err)
		}
		if a[1] == 0 {
			return b.onFD(c, int32(a[0]), func(fd int) error { return utimensat(fd, "", ts, 0) })
		}
		return b.onPath(c, int32(a[0]), a[1], true, false, valid, func(t *target) error { return t.utimes(ts) })
	}
	return 0, int(unix.ENOSYS)
}
