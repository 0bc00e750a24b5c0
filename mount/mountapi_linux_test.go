package mount

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestMountAPIRefused: MountAPI says yes only when each system call the C
// init makes its binds with (open_tree, mount_setattr, move_mount) is
// there: under a filter that refuses any one of them (a container's
// seccomp profile) it says no, so the binds stay bwrap's instead of every
// box failing to start at the init's first bind. Each case runs in a
// process of its own with that filter.
func TestMountAPIRefused(t *testing.T) {
	if nr := os.Getenv("AGENTBOX_TEST_REFUSE_NR"); nr != "" {
		n, err1 := strconv.Atoi(nr)
		e, err2 := strconv.Atoi(os.Getenv("AGENTBOX_TEST_REFUSE_ERRNO"))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		runtime.LockOSThread() // the filter is this thread's
		refuseSyscall(t, uint32(n), unix.Errno(e))
		fmt.Printf("mountapi=%v\n", MountAPI())
		return
	}
	if !MountAPI() {
		t.Fatal("this kernel has no mount API (mount_setattr): nothing to refuse")
	}
	// ENOSYS: what runtimes answer for a call their profile does not
	// know. EPERM is told apart where agentbox holds CAP_SYS_ADMIN (root):
	// without it move_mount says EPERM itself.
	errnos := []unix.Errno{unix.ENOSYS}
	if canMount() {
		errnos = append(errnos, unix.EPERM)
	}
	for name, nr := range map[string]int{"open_tree": 428, "move_mount": 429, "mount_setattr": 442} {
		for _, e := range errnos {
			c := exec.Command(os.Args[0], "-test.run=^TestMountAPIRefused$", "-test.v")
			c.Env = append(os.Environ(), "AGENTBOX_TEST_REFUSE_NR="+strconv.Itoa(nr), "AGENTBOX_TEST_REFUSE_ERRNO="+strconv.Itoa(int(e)))
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("%s refused: %v\n%s", name, err, out)
			}
			if !strings.Contains(string(out), "mountapi=false") {
				t.Errorf("%s refused by a filter (%v): MountAPI says yes\n%s", name, e, out)
			}
		}
	}
}

// refuseSyscall installs a seccomp filter on this thread that refuses
// system call nr with errno e.
func refuseSyscall(t *testing.T, nr uint32, e unix.Errno) {
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: nr},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(e)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fp))); e != 0 {
		t.Fatal(e)
	}
}
