//go:build linux && (amd64 || arm64)

package fslog

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// With sockets, every connect goes to the supervisor, and a unix socket
// can be made only as a stream or seqpacket one (with any flags); the
// other calls are decided as without.
func TestProgramSockets(t *testing.T) {
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	arch := nativeArch()
	for _, sp := range []spec{{sockets: true}, {sockets: true, log: true}, {sockets: true, broker: true}} {
		prog := program(sp)
		if got := run(t, prog, unix.SYS_CONNECT, arch, 3, 0x1000, 110); got != unix.SECCOMP_RET_USER_NOTIF {
			t.Errorf("%+v: connect: %#x, want user notification", sp, got)
		}
		for _, tc := range []struct {
			name         string
			domain, kind uint64
			want         uint32
		}{
			{"unix stream", unix.AF_UNIX, unix.SOCK_STREAM, unix.SECCOMP_RET_ALLOW},
			{"unix stream, flags", unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, unix.SECCOMP_RET_ALLOW},
			{"unix seqpacket", unix.AF_UNIX, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC, unix.SECCOMP_RET_ALLOW},
			{"unix datagram", unix.AF_UNIX, unix.SOCK_DGRAM, eperm},
			{"unix datagram, flags", unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, eperm},
			{"unix raw (a datagram socket)", unix.AF_UNIX, unix.SOCK_RAW, eperm},
			{"unix datagram, high bits", unix.AF_UNIX | 1<<32, unix.SOCK_DGRAM | 1<<40, eperm},
			{"inet datagram", unix.AF_INET, unix.SOCK_DGRAM, unix.SECCOMP_RET_ALLOW},
			{"inet6 stream", unix.AF_INET6, unix.SOCK_STREAM, unix.SECCOMP_RET_ALLOW},
		} {
			for _, nr := range []int{unix.SYS_SOCKET, unix.SYS_SOCKETPAIR} {
				if got := run(t, prog, nr, arch, tc.domain, tc.kind, 0); got != tc.want {
					t.Errorf("%+v: syscall %d, %s: %#x, want %#x", sp, nr, tc.name, got, tc.want)
				}
			}
		}
		for _, nr := range []int{unix.SYS_READ, unix.SYS_SENDTO, unix.SYS_SENDMSG, unix.SYS_BIND} {
			if got := run(t, prog, nr, arch); got != unix.SECCOMP_RET_ALLOW {
				t.Errorf("%+v: syscall %d: %#x, want allow", sp, nr, got)
			}
		}
		if sp.log {
			if got := run(t, prog, unix.SYS_MKDIRAT, arch); got != unix.SECCOMP_RET_USER_NOTIF {
				t.Errorf("%+v: mkdirat: %#x, want user notification", sp, got)
			}
		}
	}
	if got := run(t, program(spec{log: true}), unix.SYS_CONNECT, arch); got != unix.SECCOMP_RET_ALLOW {
		t.Errorf("without sockets, connect: %#x, want allow", got)
	}
}

func sockaddr(family uint16, path string) []byte {
	b := make([]byte, 2)
	binary.NativeEndian.PutUint16(b, family)
	return append(b, path...)
}

func TestParseUnixAddr(t *testing.T) {
	type out struct {
		Kind int
		Path string
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want out
	}{
		{"a path", sockaddr(unix.AF_UNIX, "/home/u/.editor/ipc.sock\x00"), out{addrPath, "/home/u/.editor/ipc.sock"}},
		{"a path without its NUL", sockaddr(unix.AF_UNIX, "rel.sock"), out{addrPath, "rel.sock"}},
		{"a path, bytes after its NUL", sockaddr(unix.AF_UNIX, "/a\x00/b"), out{addrPath, "/a"}},
		{"abstract", sockaddr(unix.AF_UNIX, "\x00name\x00x"), out{addrAbstract, "\x00name\x00x"}},
		{"the family alone", sockaddr(unix.AF_UNIX, ""), out{addrInvalid, ""}},
		{"short", []byte{1}, out{addrInvalid, ""}},
		{"empty", nil, out{addrInvalid, ""}},
		{"another family", sockaddr(unix.AF_INET, "/etc/x"), out{addrInvalid, ""}},
		{"unspecified", sockaddr(unix.AF_UNSPEC, "/etc/x"), out{addrInvalid, ""}},
	} {
		k, p := parseUnixAddr(tc.in)
		if diff := cmp.Diff(tc.want, out{k, p}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// The last mount that covers a socket decides: a writable root or a tmpfs
// of the box's own answers; the read-only root, a read-only path inside a
// writable root, a hidden file, /dev do not.
func TestSocketPlace(t *testing.T) {
	mounts := []plan.Mount{
		{Op: plan.ROBind, Path: "/", Access: plan.ReadOnly},
		{Op: plan.Dev, Path: "/dev"},
		{Op: plan.Tmpfs, Path: "/tmp", Access: plan.ReadWrite},
		{Op: plan.Tmpfs, Path: "/run", Access: plan.Hidden},
		{Op: plan.ROBind, Path: "/run/user/1000/ssh.sock", Access: plan.ReadOnly},
		{Op: plan.Bind, Path: "/home/u/proj", Access: plan.ReadWrite},
		{Op: plan.ROBind, Path: "/home/u/proj/.git/hooks", Access: plan.ReadOnly},
		{Op: plan.Pin, Path: "/home/u/proj/.git", Access: plan.ReadWrite},
		{Op: plan.HideFile, Path: "/home/u/proj/.env", Access: plan.Hidden},
		{Op: plan.Tmpfs, Path: "/home/u/.docker/desktop", Access: plan.Hidden},
	}
	for p, want := range map[string]bool{
		"/home/u/proj/app.sock":            true,
		"/home/u/proj/.git/x.sock":         true,
		"/home/u/proj/.git/hooks/x.sock":   false,
		"/home/u/proj/.env":                false,
		"/home/u/projx/app.sock":           false,
		"/home/u/.myeditor/ipc.sock":       false,
		"/home/u/.docker/desktop/d.sock":   true,
		"/tmp/.X11-unix/X0":                true,
		"/run/box.sock":                    true,
		"/run/user/1000/ssh.sock":          false,
		"/var/run/docker.sock":             false,
		"/dev/log":                         false,
		"/":                                false,
		"relative/x.sock":                  false,
		"/home/u/proj/../.myeditor/i.sock": false,
	} {
		if got := socketPlace(mounts, p); got != want {
			t.Errorf("socketPlace(%q) = %v, want %v", p, got, want)
		}
	}
}
