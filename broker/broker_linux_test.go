//go:build linux && (amd64 || arm64)

package broker

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/fslog"
)

// The broker decides calls of this very process (its thread as the caller):
// what a path or descriptor leads to is checked against the grant, by
// device and inode, whatever links or names lead there, and performed
// only inside it.
func TestAnswer(t *testing.T) {
	for _, proc := range []bool{false, true} {
		t.Run(map[bool]string{false: "pidfd_getfd", true: "proc"}[proc], func(t *testing.T) {
			viaProc = proc
			defer func() { viaProc = false }()
			testAnswer(t)
		})
	}
}

func testAnswer(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	grant := filepath.Join(dir, "grant")
	out := filepath.Join(dir, "out")
	for _, d := range []string{grant + "/sub", out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{grant + "/sub/file", out + "/file"} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(out+"/file", grant+"/link"); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(grant, &st); err != nil {
		t.Fatal(err)
	}
	b, err := New([]FileID{{Dev: st.Dev, Ino: st.Ino}})
	if err != nil {
		t.Fatal(err)
	}
	outRO, err := os.Open(out + "/file")
	if err != nil {
		t.Fatal(err)
	}
	defer outRO.Close()
	outRW, err := os.OpenFile(out+"/file", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer outRW.Close()
	inRO, err := os.Open(grant + "/sub/file")
	if err != nil {
		t.Fatal(err)
	}
	defer inRO.Close()
	null, err := os.OpenFile("/dev/null", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()

	type tc struct {
		name string
		nr   uint32
		args func(str func(string) uint64) [6]uint64
		want int // errno, 0 for done
	}
	fdcwd := int32(unix.AT_FDCWD)
	at := uint64(uint32(fdcwd))
	chmodAt := func(p string, mode uint64) func(func(string) uint64) [6]uint64 {
		return func(s func(string) uint64) [6]uint64 { return [6]uint64{at, s(p), mode} }
	}
	tests := []tc{
		{"chmod in the grant", unix.SYS_FCHMODAT, chmodAt(grant+"/sub/file", 0o600), 0},
		{"chmod outside", unix.SYS_FCHMODAT, chmodAt(out+"/file", 0o600), int(unix.EACCES)},
		{"chmod through a link in the grant to outside", unix.SYS_FCHMODAT, chmodAt(grant+"/link", 0o600), int(unix.EACCES)},
		{"chmod through .. out of the grant", unix.SYS_FCHMODAT, chmodAt(grant+"/sub/../../out/file", 0o600), int(unix.EACCES)},
		{"chmod of the folder above the grant", unix.SYS_FCHMODAT, chmodAt(dir, 0o700), int(unix.EACCES)},
		{"chmod through /proc/self/fd of an outside file", unix.SYS_FCHMODAT, chmodAt("/proc/self/fd/"+strconv.Itoa(int(outRO.Fd())), 0o600), int(unix.EACCES)},
		{"chmod through /proc/self/fd of a file in the grant", unix.SYS_FCHMODAT, chmodAt("/proc/self/fd/"+strconv.Itoa(int(inRO.Fd())), 0o640), 0},
		{"chmod of a missing file", unix.SYS_FCHMODAT, chmodAt(grant+"/nothing", 0o600), int(unix.ENOENT)},
		{"fchmod of an outside file open to read", unix.SYS_FCHMOD, func(func(string) uint64) [6]uint64 { return [6]uint64{uint64(outRO.Fd()), 0o600} }, int(unix.EACCES)},
		{"fchmod of a file open to write (its content is the box's)", unix.SYS_FCHMOD, func(func(string) uint64) [6]uint64 { return [6]uint64{uint64(outRW.Fd()), 0o644} }, 0},
		{"fchmod of /dev/null open to write", unix.SYS_FCHMOD, func(func(string) uint64) [6]uint64 { return [6]uint64{uint64(null.Fd()), 0o666} }, int(unix.EACCES)},
		{"fchmod of a file in the grant open to read", unix.SYS_FCHMOD, func(func(string) uint64) [6]uint64 { return [6]uint64{uint64(inRO.Fd()), 0o644} }, 0},
		{"lchown of the link itself, in the grant", unix.SYS_FCHOWNAT, func(s func(string) uint64) [6]uint64 {
			return [6]uint64{at, s(grant + "/link"), uint64(uint32(os.Getuid())), ^uint64(0) >> 32, unix.AT_SYMLINK_NOFOLLOW}
		}, 0},
		{"chown through the link, outside", unix.SYS_FCHOWNAT, func(s func(string) uint64) [6]uint64 {
			return [6]uint64{at, s(grant + "/link"), uint64(uint32(os.Getuid())), ^uint64(0) >> 32, 0}
		}, int(unix.EACCES)},
		{"utimensat now, outside", unix.SYS_UTIMENSAT, func(s func(string) uint64) [6]uint64 { return [6]uint64{at, s(out + "/file"), 0, 0} }, int(unix.EACCES)},
		{"utimensat now, in the grant", unix.SYS_UTIMENSAT, func(s func(string) uint64) [6]uint64 { return [6]uint64{at, s(grant + "/sub/file"), 0, 0} }, 0},
		{"removexattr outside", unix.SYS_REMOVEXATTR, func(s func(string) uint64) [6]uint64 { return [6]uint64{s(out + "/file"), s("user.x")} }, int(unix.EACCES)},
	}
	var before unix.Stat_t
	unix.Stat(out+"/file", &before)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := b.Prepare(); err != nil {
			t.Error(err)
			return
		}
		var keep [][]byte
		str := func(s string) uint64 {
			p := append([]byte(s), 0)
			keep = append(keep, p)
			return uint64(uintptr(unsafe.Pointer(&p[0])))
		}
		for _, tc := range tests {
			req := fslog.Request{Pid: unix.Gettid(), Nr: tc.nr, Args: tc.args(str)}
			_, errno := b.Answer(req, func() bool { return true })
			if errno != tc.want {
				t.Errorf("%s: errno %d (%v), want %d (%v)", tc.name, errno, unix.Errno(errno), tc.want, unix.Errno(tc.want))
			}
		}
		runtime.KeepAlive(keep)
	}()
	<-done
	var after unix.Stat_t
	unix.Stat(out+"/file", &after)
	if after.Mtim != before.Mtim || after.Uid != before.Uid {
		t.Errorf("the file outside the grant changed: %+v -> %+v", before, after)
	}
	if after.Mode&0o777 != 0o644 {
		t.Errorf("outside file mode %o, want 644 (only the write descriptor's fchmod may set it)", after.Mode&0o777)
	}
	unix.Stat(grant+"/sub/file", &st)
	if st.Mode&0o777 != 0o644 {
		t.Errorf("file in the grant has mode %o, want 644 (the last fchmod)", st.Mode&0o777)
	}
}
