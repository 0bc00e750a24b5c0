//go:build linux && (amd64 || arm64)

package broker

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/fslog"
)

// fuzzCalls are the calls the broker decides that the fuzz target makes:
// each takes a path (relative to the fixture's grant/sub) or one of the
// fixture's descriptors, and reads what else it needs from the caller's
// memory. The ioctls are left out: a flag such as immutable, set in the
// grant, would outlive the fixture.
var fuzzCalls = []uint32{
	unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_FCHOWNAT, unix.SYS_UTIMENSAT,
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR,
	unix.SYS_SETXATTRAT, unix.SYS_REMOVEXATTRAT,
	unix.SYS_FCHMOD, unix.SYS_FCHOWN, unix.SYS_FSETXATTR, unix.SYS_FREMOVEXATTR,
}

// FuzzAnswer hands the broker what a box's metadata call may carry: any
// path, flags, mode, times, attribute name and value, from this very
// process's memory, as the box's filter hands them over. Seeds are the
// calls chmod, touch, tar, cp -a and setfattr make. Whatever comes, nothing
// outside the grant changes (the fixture's other file and folders, by
// mode, owner, times and attributes), no file is left setuid or setgid,
// and the broker answers.
//
// The descriptors are the fixture's: a file outside the grant and the
// folder it is in, open to read; a file in the grant open to read and to
// write; /dev/null. (A file outside the grant open to write is the box's to
// change, by design, and TestAnswer covers it: its changes are no finding.)
//
// The paths stay in the fixture: they are taken relative to grant/sub and
// may climb to the fixture's folder but no higher, so that a finding
// cannot reach a file of the machine.
func FuzzAnswer(f *testing.F) {
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	grant, out := filepath.Join(base, "grant"), filepath.Join(base, "out")
	for _, d := range []string{grant + "/sub", out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, p := range []string{grant + "/sub/file", out + "/file"} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	os.Symlink(out+"/file", grant+"/link")
	os.Symlink("../out", grant+"/sub/up")
	var st unix.Stat_t
	if err := unix.Stat(grant, &st); err != nil {
		f.Fatal(err)
	}
	b, _ := New([]FileID{{Dev: st.Dev, Ino: st.Ino}})
	dirfd, err := unix.Open(grant+"/sub", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		f.Fatal(err)
	}
	var fds []int
	for _, o := range []struct {
		p    string
		mode int
	}{{out + "/file", unix.O_RDONLY}, {grant + "/sub/file", unix.O_RDWR}, {grant + "/sub/file", unix.O_RDONLY}, {"/dev/null", unix.O_RDWR}, {out, unix.O_RDONLY}} {
		fd, err := unix.Open(o.p, o.mode|unix.O_CLOEXEC, 0)
		if err != nil {
			f.Fatal(err)
		}
		fds = append(fds, fd)
	}
	// The broker runs on a thread of its own, as in the supervisor.
	type job struct {
		req  fslog.Request
		done chan int
	}
	jobs := make(chan job)
	go func() {
		b.Prepare()
		for j := range jobs {
			_, errno := b.Answer(j.req, func() bool { return true })
			j.done <- errno
		}
	}()
	outside := func() string {
		var s strings.Builder
		for _, p := range []string{base, out, out + "/file", grant + "/link", grant + "/sub/up"} {
			var st unix.Stat_t
			unix.Lstat(p, &st)
			binary.Write(&s, binary.LittleEndian, []any{st.Mode, st.Uid, st.Gid, st.Mtim, st.Ctim})
			buf := make([]byte, 4096)
			n, _ := unix.Llistxattr(p, buf)
			s.Write(buf[:max(n, 0)])
		}
		return s.String()
	}
	before := outside()

	uid := uint64(os.Getuid())
	ts := func(sec, nsec int64) []byte {
		var m bytes.Buffer
		binary.Write(&m, binary.LittleEndian, []int64{sec, nsec, sec, nsec})
		return m.Bytes()
	}
	for _, s := range []struct {
		call       uint8
		path       string
		a2, a3, a4 uint64
		mem        []byte
	}{
		{0, "file", 0o755, 0, 0, nil},                                  // chmod 755 file
		{0, "../link", 0o600, 0, 0, nil},                               // through a link to outside
		{1, "../../out/file", 0o600, unix.AT_SYMLINK_NOFOLLOW, 0, nil}, // fchmodat2
		{0, "file", 0o4755, 0, 0, nil},                                 // setuid
		{2, "file", uid, uid, 0, nil},                                  // chown
		{2, "up", uid, uid, unix.AT_SYMLINK_NOFOLLOW, nil},             // lchown of a link
		{3, "file", 0, 0, 0, ts(1767323045, 0)},                        // touch -d
		{3, "up/file", 0, 0, 0, ts(0, unix.UTIME_NOW)},                 // through a link
		{4, "file", 0, 0, 0, []byte("user.agentbox\x00value")},         // setfattr -n user.agentbox
		{4, "file", 0, 0, 0, []byte("security.capability\x00\x01\x00\x00\x02\xff\xff\xff\xff")},
		{6, "file", 0, 0, 0, []byte("user.agentbox\x00")},
		{8, "file", 0, 0, 0, []byte("user.x\x00abc")},
		{10, "file", 2, 0o644, 0, nil}, // fchmod of the write descriptor
		{10, "", 0, 0o6755, 0, nil},
		{12, "", 4, 0, 0, []byte("user.x\x00v")},
	} {
		f.Add(s.call, []byte(s.path), s.a2, s.a3, s.a4, s.mem)
	}
	f.Fuzz(func(t *testing.T, call uint8, path []byte, a2, a3, a4 uint64, mem []byte) {
		nr := fuzzCalls[int(call)%len(fuzzCalls)]
		if i := bytes.IndexByte(path, 0); i >= 0 {
			path = path[:i]
		}
		p := strings.TrimLeft(string(path), "/")
		depth := 2 // grant/sub below the fixture's folder
		for _, c := range strings.Split(p, "/") {
			switch c {
			case "..":
				depth--
			case "", ".":
			default:
				depth++
			}
			if depth < 0 {
				t.Skip("a path out of the fixture")
			}
		}
		cpath := append([]byte(p), 0)
		mem = append(mem, 0)
		name := mem
		value := []byte{}
		if i := bytes.IndexByte(mem, 0); i >= 0 && i+1 < len(mem) {
			value = mem[i+1:]
		}
		size := uint64(len(value))
		ptr := func(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }
		own := func(v uint64) uint64 { // -1 or this user: nothing is given to another
			if v&1 == 0 {
				return uint64(^uint32(0))
			}
			return uid
		}
		fd := uint64(fds[int(a2%uint64(len(fds)))])
		var args [6]uint64
		at := uint64(dirfd)
		switch nr {
		case unix.SYS_FCHMODAT:
			args = [6]uint64{at, ptr(cpath), a2}
		case unix.SYS_FCHMODAT2:
			args = [6]uint64{at, ptr(cpath), a2, a3}
		case unix.SYS_FCHOWNAT:
			args = [6]uint64{at, ptr(cpath), own(a2), own(a3), a4}
		case unix.SYS_UTIMENSAT:
			tsp := uint64(0)
			if len(mem) >= 33 {
				tsp = ptr(mem)
			}
			args = [6]uint64{at, ptr(cpath), tsp, a4}
			if a3&1 == 1 {
				args[1] = 0 // futimens on the descriptor
				args[0] = fd
			}
		case unix.SYS_SETXATTR, unix.SYS_LSETXATTR:
			args = [6]uint64{ptr(cpath), ptr(name), ptr(append(value, 0)), size, a4}
		case unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR:
			args = [6]uint64{ptr(cpath), ptr(name)}
		case unix.SYS_SETXATTRAT:
			xa := make([]byte, 16)
			binary.LittleEndian.PutUint64(xa, ptr(append(value, 0)))
			binary.LittleEndian.PutUint32(xa[8:], uint32(size))
			binary.LittleEndian.PutUint32(xa[12:], uint32(a4))
			args = [6]uint64{at, ptr(cpath), a3, ptr(name), ptr(xa), 16}
		case unix.SYS_REMOVEXATTRAT:
			args = [6]uint64{at, ptr(cpath), a3, ptr(name)}
		case unix.SYS_FCHMOD:
			args = [6]uint64{fd, a3}
		case unix.SYS_FCHOWN:
			args = [6]uint64{fd, own(a3), own(a4)}
		case unix.SYS_FSETXATTR:
			args = [6]uint64{fd, ptr(name), ptr(append(value, 0)), size, a4}
		case unix.SYS_FREMOVEXATTR:
			args = [6]uint64{fd, ptr(name)}
		}
		if (nr == unix.SYS_SETXATTR || nr == unix.SYS_LSETXATTR || nr == unix.SYS_REMOVEXATTR || nr == unix.SYS_LREMOVEXATTR) && !strings.HasPrefix(p, "") {
			return
		}
		if nr == unix.SYS_SETXATTR || nr == unix.SYS_LSETXATTR || nr == unix.SYS_REMOVEXATTR || nr == unix.SYS_LREMOVEXATTR {
			// These take a path from the working folder: make it one
			// from grant/sub.
			cpath = append([]byte(grant+"/sub/"+p), 0)
			args[0] = ptr(cpath)
		}
		done := make(chan int)
		// The caller is the broker's own thread's process: this one.
		jobs <- job{req: fslog.Request{Pid: unix.Getpid(), Nr: nr, Args: args}, done: done}
		<-done
		runtime.KeepAlive(cpath)
		runtime.KeepAlive(mem)
		runtime.KeepAlive(value)
		if after := outside(); after != before {
			t.Fatalf("%d(%v): a file outside the grant changed", nr, args)
		}
		filepath.Walk(grant, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				t.Fatalf("%d(%v): %s is left %v", nr, args, p, fi.Mode())
			}
			if n, _ := unix.Lgetxattr(p, "security.capability", nil); n > 0 {
				t.Fatalf("%d(%v): %s is left with file capabilities", nr, args, p)
			}
			return nil
		})
	})
}
