//go:build linux && (amd64 || arm64)

package fslog

import (
	"bytes"
	"path"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// FuzzConnectAddr gives the judge of connects any address a box may pass
// connect(2) (seeds: what curl, ssh-add, dbus and docker pass): it is no
// unix address, an abstract one, or a path without a NUL, never longer
// than what was given; and a path is judged inside a writable root only
// when it is one, whatever its dots and slashes.
func FuzzConnectAddr(f *testing.F) {
	for _, s := range []string{"/run/user/1000/bus", "/home/u/.docker/desktop/docker.sock\x00", "rel.sock", "/home/u/proj/../.ssh/agent.sock",
		"\x00/tmp/dbus-abc", "", "/home/u/proj/a.sock\x00trailing"} {
		f.Add(sockaddr(unix.AF_UNIX, s))
	}
	f.Add(sockaddr(unix.AF_INET, "\x00\x50\x7f\x00\x00\x01"))
	mounts := []plan.Mount{
		{Op: plan.ROBind, Path: "/", Access: plan.ReadOnly},
		{Op: plan.Tmpfs, Path: "/tmp", Access: plan.ReadWrite},
		{Op: plan.Bind, Path: "/home/u/proj", Access: plan.ReadWrite},
		{Op: plan.ROBind, Path: "/home/u/proj/.git/hooks", Access: plan.ReadOnly},
	}
	f.Fuzz(func(t *testing.T, addr []byte) {
		kind, p := parseUnixAddr(addr)
		switch kind {
		case addrInvalid:
			if p != "" {
				t.Fatalf("an invalid address with a path %q", p)
			}
		case addrAbstract:
			if len(p) == 0 || p[0] != 0 || len(p) != len(addr)-2 {
				t.Fatalf("abstract %q from %q", p, addr)
			}
		case addrPath:
			if p == "" || strings.IndexByte(p, 0) >= 0 || !bytes.HasPrefix(addr[2:], []byte(p)) {
				t.Fatalf("path %q from %q", p, addr)
			}
			if socketPlace(mounts, p) {
				c := path.Clean(p)
				if c != p || !(plan.Within(c, "/tmp") || plan.Within(c, "/home/u/proj")) || plan.Within(c, "/home/u/proj/.git/hooks") {
					t.Fatalf("%q judged in a writable root", p)
				}
			}
		}
	})
}
