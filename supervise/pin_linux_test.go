package supervise

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// realTemp is a temporary folder by its real path (the plan's paths have
// their links resolved).
func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestOpenPathFollowsNoLink(t *testing.T) {
	d := realTemp(t)
	os.MkdirAll(filepath.Join(d, "real", "sub"), 0o755)
	os.Symlink(filepath.Join(d, "real"), filepath.Join(d, "link"))
	os.Symlink("real", filepath.Join(d, "rel"))
	for _, p := range []string{"link", "link/sub", "rel/sub"} {
		f, err := OpenPath(filepath.Join(d, p))
		if err == nil && !isLinkFD(int(f.Fd())) {
			t.Errorf("%s: opened through a link", p)
		}
		if f != nil {
			f.Close()
		}
	}
	if _, err := OpenPath(filepath.Join(d, "link/sub")); !errors.Is(err, ErrSymlink) {
		t.Errorf("a link in the middle: %v, want ErrSymlink", err)
	}
	ps := NewPins()
	defer ps.Close()
	if _, err := ps.Open(filepath.Join(d, "link")); !errors.Is(err, ErrSymlink) {
		t.Errorf("Pins.Open of a link: %v, want ErrSymlink", err)
	}
	if _, err := ps.Dir(filepath.Join(d, "real", "sub")); err != nil {
		t.Errorf("a real folder: %v", err)
	}
	os.WriteFile(filepath.Join(d, "file"), nil, 0o644)
	if _, err := ps.Dir(filepath.Join(d, "file")); err == nil {
		t.Error("Pins.Dir accepted a file")
	}
	// The walk used before openat2 existed says the same.
	if _, err := walkNoFollow(unix.AT_FDCWD, filepath.Join(d, "link/sub"), unix.O_PATH); !errors.Is(err, ErrSymlink) {
		t.Errorf("walk through a link: %v, want ErrSymlink", err)
	}
	fd, err := walkNoFollow(unix.AT_FDCWD, filepath.Join(d, "real/sub"), unix.O_PATH)
	if err != nil {
		t.Errorf("walk: %v", err)
	} else {
		unix.Close(fd)
	}
}

func TestPrepare(t *testing.T) {
	d := realTemp(t)
	id := plan.Identity{UID: os.Getuid(), GID: os.Getgid()}
	prep := func(ds ...plan.Prepare) error {
		return Prepare(&plan.Plan{Identity: id, Prepare: ds})
	}
	base := filepath.Join(d, "base")
	if err := prep(plan.Prepare{Path: base, Mode: 0o700, Private: true}, plan.Prepare{Path: filepath.Join(base, "ws"), Mode: 0o700, Private: true}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(base, "ws")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("created folder: %v %v", fi, err)
	}
	// Again: it exists, is ours and private.
	if err := prep(plan.Prepare{Path: base, Mode: 0o700, Private: true}); err != nil {
		t.Errorf("an existing private folder: %v", err)
	}
	cases := []struct {
		name  string
		setup func() plan.Prepare
		want  string
	}{
		{"symlink", func() plan.Prepare {
			os.Symlink(d, filepath.Join(d, "sl"))
			return plan.Prepare{Path: filepath.Join(d, "sl"), Mode: 0o700}
		}, "symlink"},
		{"link in the parent", func() plan.Prepare {
			return plan.Prepare{Path: filepath.Join(d, "sl", "x"), Mode: 0o700}
		}, "symbolic link"},
		{"not a folder", func() plan.Prepare {
			os.WriteFile(filepath.Join(d, "f"), nil, 0o644)
			return plan.Prepare{Path: filepath.Join(d, "f"), Mode: 0o700}
		}, "not a folder"},
		{"open to others", func() plan.Prepare {
			os.Mkdir(filepath.Join(d, "open"), 0o755)
			os.Chmod(filepath.Join(d, "open"), 0o755)
			return plan.Prepare{Path: filepath.Join(d, "open"), Mode: 0o700, Private: true}
		}, "lets other users in"},
		{"fresh but there", func() plan.Prepare {
			os.Mkdir(filepath.Join(d, "fresh"), 0o700)
			return plan.Prepare{Path: filepath.Join(d, "fresh"), Mode: 0o700, Fresh: true}
		}, "must be new"},
		{"another user's", func() plan.Prepare {
			p := filepath.Join(d, "theirs")
			os.Mkdir(p, 0o700)
			if os.Getuid() == 0 {
				os.Chown(p, 65534, 65534)
			} else {
				p = "/proc/1" // root's, whoever runs the test
			}
			return plan.Prepare{Path: p, Mode: 0o700}
		}, "belongs to uid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := prep(tc.setup())
			var pe *PrepareError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a PrepareError saying %q", err, tc.want)
			}
		})
	}
}

func TestOpenHostFile(t *testing.T) {
	d := realTemp(t)
	root := filepath.Join(d, "proj")
	logs := filepath.Join(d, "logs")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(logs, 0o755)
	p := &plan.Plan{Identity: plan.Identity{UID: os.Getuid()}, Mounts: []plan.Mount{
		{Stage: plan.StageWritable, Op: plan.Bind, Path: root, Access: plan.ReadWrite},
	}, Tmp: plan.Tmp{HostDir: filepath.Join(d, "tmpws")}}
	target := filepath.Join(d, "bashrc")
	os.WriteFile(target, []byte("original\n"), 0o644)
	os.Symlink(target, filepath.Join(logs, "link.log"))
	os.Symlink(root, filepath.Join(d, "to-root"))
	os.Link(target, filepath.Join(logs, "hard.log"))
	syscall.Mkfifo(filepath.Join(logs, "fifo.log"), 0o600)
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(root, "net.log"), "inside a writable folder"},
		{filepath.Join(d, "tmpws", "net.log"), "inside a writable folder"},
		{filepath.Join(d, "to-root", "net.log"), "inside a writable folder"},
		{filepath.Join(logs, "link.log"), "symlink"},
		{filepath.Join(logs, "hard.log"), "hard links"},
		{filepath.Join(logs, "fifo.log"), "not a regular file"},
	} {
		f, err := OpenHostFile(tc.path, p)
		if err == nil {
			f.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.path, err, tc.want)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "original\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	good := filepath.Join(logs, "net.log")
	for _, line := range []string{"one\n", "two\n"} {
		f, err := OpenHostFile(good, p)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(line)
		f.Close()
	}
	if b, _ := os.ReadFile(good); string(b) != "one\ntwo\n" {
		t.Errorf("appended log: %q", b)
	}
	if fi, _ := os.Stat(good); fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestCloseOnExec(t *testing.T) {
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0) // no O_CLOEXEC: as if inherited
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := CloseOnExec(); err != nil {
		t.Fatal(err)
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("fd %d flags %#x, %v: want close-on-exec", fd, flags, err)
	}
}

func TestSealedFile(t *testing.T) {
	f, err := SealedFile("test", []byte("a\x00b\x00"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("more")); err == nil {
		t.Error("a sealed file was written")
	}
	buf := make([]byte, 8)
	n, _ := f.Read(buf)
	if string(buf[:n]) != "a\x00b\x00" {
		t.Errorf("content %q", buf[:n])
	}
}
