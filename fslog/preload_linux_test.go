//go:build linux && (amd64 || arm64)

package fslog

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// The checked-in libraries, run for real: a C program built for each
// platform makes refused calls in a read-only bubblewrap root (natively,
// or under qemu-user for the others), and its records come on the socket
// as preload.c writes them. What a box adds (the judge, the audit log,
// both backends, root and not) is the integration tests'.

const refuser = `#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
int main(void) {
	if (open("/usr/abx-open", O_WRONLY | O_CREAT, 0644) >= 0) return 2;
	if (chdir("/usr/lib") != 0) return 3;
	if (mkdir("abx-dir", 0755) == 0) return 4;
	if (rename("abx-a", "/usr/abx-b") == 0) return 5;
	if (fopen("/etc/abx-fopen", "w")) return 6;
	if (open("/usr/abx-read", O_RDONLY) >= 0) return 7; /* ENOENT: not reported */
	return 0;
}
`

type preloadPlatform struct {
	name   string   // $PLATFORM
	cc     []string // the compiler and its flags
	runner []string // how to run its programs here
}

func preloadPlatforms(t *testing.T) []preloadPlatform {
	var out []preloadPlatform
	qemu := func(name string) []string {
		path, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("AGENTBOX_MUST_WORK") != "" {
				t.Errorf("%s is not installed (apt-get install qemu-user-static)", name)
			}
			return nil
		}
		return []string{path}
	}
	switch runtime.GOARCH {
	case "amd64":
		out = append(out, preloadPlatform{name: "x86_64", cc: []string{"gcc"}})
		// i686: a 32-bit program, dynamically linked so that the
		// library is preloaded, built with the i686 cross compiler
		// (gcc-i686-linux-gnu, whose C library lives under
		// /usr/i686-linux-gnu and co-installs with the aarch64 one,
		// where gcc-multilib does not); qemu-user runs it whether or not
		// the kernel runs i386 programs itself.
		if cc, prefix := i686Compiler(); cc == nil {
			if os.Getenv("AGENTBOX_MUST_WORK") != "" {
				t.Errorf("no compiler for 32-bit test programs (apt-get install gcc-i686-linux-gnu)")
			}
			t.Logf("i686 not tested: no compiler for 32-bit programs (apt-get install gcc-i686-linux-gnu)")
		} else if q := qemu("qemu-i386-static"); q != nil {
			if prefix != "" {
				q = append(q, "-L", prefix)
			}
			out = append(out, preloadPlatform{name: "i686", cc: cc, runner: q})
		}
		if _, err := exec.LookPath("aarch64-linux-gnu-gcc"); err == nil {
			if q := qemu("qemu-aarch64-static"); q != nil {
				out = append(out, preloadPlatform{name: "aarch64", cc: []string{"aarch64-linux-gnu-gcc"}, runner: append(q, "-L", "/usr/aarch64-linux-gnu")})
			}
		}
	case "arm64":
		out = append(out, preloadPlatform{name: "aarch64", cc: []string{"gcc"}})
	}
	return out
}

func TestPreloadLibraryReports(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not installed")
	}
	for _, pf := range preloadPlatforms(t) {
		for _, mode := range []string{"socket", "pipe", "foreign"} {
			t.Run(pf.name+"/"+mode, func(t *testing.T) { preloadReports(t, bwrap, pf, mode) })
		}
	}
}

// preloadReports runs the refuser for platform pf and reads its records
// from the socket, or in mode "pipe" from the pipe at plan.PreloadFD (with
// no socket to fall back to); in mode "foreign" the program has another
// pipe than the one the folder names at plan.PreloadFD, and the records
// still come on the socket, none on that pipe.
func preloadReports(t *testing.T, bwrap string, pf preloadPlatform, mode string) {
	pipe := mode == "pipe"
	{
		{
			if _, err := exec.LookPath(pf.cc[0]); err != nil {
				t.Skipf("%s is not installed", pf.cc[0])
			}
			tmp := t.TempDir()
			src := filepath.Join(tmp, "refuser.c")
			prog := filepath.Join(tmp, "refuser")
			if err := os.WriteFile(src, []byte(refuser), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(pf.cc[0], append(pf.cc[1:], "-o", prog, src)...).CombinedOutput(); err != nil {
				t.Fatalf("building the test program: %v\n%s", err, out)
			}
			dir := filepath.Join(tmp, "fslog")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			fd, wfd, err := listenPreload(dir, pipe)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			var foreign [2]int
			if mode == "foreign" {
				var ours [2]int
				if err := unix.Pipe2(ours[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				var st unix.Stat_t
				unix.Fstat(ours[1], &st)
				if err := writeFile(dir, plan.PreloadPipe, []byte(strconv.FormatUint(st.Ino, 10))); err != nil {
					t.Fatal(err)
				}
				if err := unix.Pipe2(foreign[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				wfd = foreign[1]
				defer unix.Close(ours[0])
				defer unix.Close(ours[1])
				defer unix.Close(foreign[0])
			}
			if _, ok := preloadLibraries[pf.name]; !ok {
				// Another architecture's build, run under qemu-user:
				// the checked-in file, as agentbox there embeds it.
				lib, err := os.ReadFile(filepath.Join("preload", "agentbox-fslog-"+pf.name+".so"))
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, "agentbox-fslog-"+pf.name+".so"), lib, 0o444)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			argv := append(append([]string{bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--"}, pf.runner...), prog)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "LD_PRELOAD="+dir+"/"+plan.PreloadLibrary)
			var wf *os.File
			if wfd >= 0 {
				// Closed through its *os.File only: closed by number as
				// well, the file's finalizer would close whatever
				// descriptor has that number by then.
				wf = os.NewFile(uintptr(wfd), "pipe")
				cmd.ExtraFiles = make([]*os.File, plan.PreloadFD-2)
				cmd.ExtraFiles[plan.PreloadFD-3] = wf
			}
			out, err := cmd.CombinedOutput()
			if wf != nil {
				wf.Close()
			}
			if err != nil || len(out) > 0 {
				// Nothing on stderr: the dynamic linker found the
				// library for this platform.
				t.Fatalf("the test program: %v\n%s", err, out)
			}
			var got []record
			buf := make([]byte, 1<<16)
			deadline := time.Now().Add(5 * time.Second)
			var frames []byte
			for len(got) < 4 && time.Now().Before(deadline) {
				var n int
				var err error
				if pipe {
					n, err = unix.Read(fd, buf)
				} else {
					n, _, err = unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
				}
				if err == unix.EAGAIN {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				msgs := [][]byte{buf[:n]}
				if pipe {
					frames = append(frames, buf[:n]...)
					msgs = nil
					for len(frames) >= frameHead && len(frames) >= int(binary.LittleEndian.Uint32(frames)) {
						size := int(binary.LittleEndian.Uint32(frames))
						if size < frameHead || binary.LittleEndian.Uint32(frames[4:]) == 0 {
							t.Fatalf("not a frame: %q", frames)
						}
						msgs, frames = append(msgs, frames[frameHead:size]), frames[size:]
					}
				}
				for _, m := range msgs {
					r, ok := parseRecord(m)
					if !ok {
						t.Fatalf("not a record: %q", m)
					}
					r.prog = "" // the emulator's name under qemu
					got = append(got, r)
				}
			}
			want := []record{
				{op: Create, errno: uint32(unix.EROFS), call: "open", path: [2]string{"/usr/abx-open", ""}},
				{op: Mkdir, noFollow: true, errno: uint32(unix.EROFS), call: "mkdir", base: [2]string{"/usr/lib", ""}, path: [2]string{"abx-dir", ""}},
				{op: Rename, noFollow: true, errno: uint32(unix.EROFS), call: "rename", base: [2]string{"/usr/lib", ""}, path: [2]string{"abx-a", "/usr/abx-b"}},
				{op: Create, flags: openTrunc, errno: uint32(unix.EROFS), call: "fopen", path: [2]string{"/etc/abx-fopen", ""}},
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(record{})); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if n, _ := unix.Read(fd, buf); n > 0 || len(frames) > 0 {
				t.Errorf("one record more: %q", strings.ToValidUTF8(string(frames)+string(buf[:max(n, 0)]), "?"))
			}
			if mode == "foreign" {
				if n, _ := unix.Read(foreign[0], buf); n > 0 {
					t.Errorf("the library wrote to a pipe not its own: %q", strings.ToValidUTF8(string(buf[:n]), "?"))
				}
			}
		}
	}
}

// frame wraps a record as preload.c writes it to the pipe.
func frame(pid uint32, r []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(frameHead+len(r)))
	return append(binary.LittleEndian.AppendUint32(b, pid), r...)
}

// The pipe's frames are judged whole whatever pieces the reads return;
// a frame whose length is none, and a record that is none, are counted,
// and the frames written after them are read again; the pid is the
// frame's, and names the process only as it says.
func TestPreloadFrames(t *testing.T) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	var got []string
	var names []string
	s := &preloadServer{fd: fds[0], root: -1, landlock: true, pipe: true, judge: func(a Attempt) (event.Event, bool) {
		got = append(got, fmt.Sprintf("%d %s %s", a.Pid, a.Op, a.Targets[0].Given))
		return event.Event{Op: string(a.Op), Path: a.Targets[0].Given}, true
	}, ev: emitFunc(func(e event.Event) { names = append(names, e.Process) }), seen: newDedup(), keys: map[string]bool{}}
	s.tokens, s.last = preloadBurst, time.Now()
	one := frame(1, rec(3, 0, 30, 0, "open", "", "/usr/a", "", "", "tmux"))
	two := frame(42, rec(2, 0, 13, 5, "open", "", "/usr/b", "", "", "sh"))
	buf := make([]byte, 0, 1<<16)
	for _, w := range [][]byte{one[:5], one[5:], append(two, one[:0]...)} {
		unix.Write(fds[1], w)
		for s.frames(&buf) {
		}
	}
	// Garbage, a record that is none, then a good frame in a later write.
	unix.Write(fds[1], []byte("garbage-garbage"))
	for s.frames(&buf) {
	}
	unix.Write(fds[1], frame(7, []byte("fsl1xxxxxxxxxxxxnot a record")))
	unix.Write(fds[1], frame(7, rec(3, 0, 30, 0, "mkdir", "", "/usr/c", "", "", "")))
	for s.frames(&buf) {
	}
	want := []string{"1 create /usr/a", "42 write /usr/b", "7 create /usr/c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("judged (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tmux (pid 1, as it says)", "sh (pid 42, as it says)", "? (pid 7, as it says)"}, names); diff != "" {
		t.Errorf("processes (-want +got):\n%s", diff)
	}
	if s.bad != 2 || s.lost != 5 || len(buf) != 0 {
		t.Errorf("bad %d, lost %d, left %d bytes; want 2, 5, 0", s.bad, s.lost, len(buf))
	}
}

type emitFunc func(event.Event)

func (f emitFunc) Emit(e event.Event) { f(e) }

// i686Compiler is how to build a 32-bit x86 program here, and the folder
// qemu-user finds its C library under ("" for the host's own): the cross
// compiler, or gcc -m32 where gcc-multilib's 32-bit C library is.
func i686Compiler() (cc []string, prefix string) {
	if _, err := exec.LookPath("i686-linux-gnu-gcc"); err == nil {
		return []string{"i686-linux-gnu-gcc"}, "/usr/i686-linux-gnu"
	}
	if _, err := os.Stat("/usr/lib32/crt1.o"); err == nil {
		return []string{"gcc", "-m32"}, ""
	}
	return nil, ""
}
