//go:build linux && (amd64 || arm64)

package verify

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/cgroup"
)

// Main is the ProbeCommand: it reads the Input on stdin, runs every check
// of the plan in the box it runs in, and writes one Result per line on
// stdout. It returns 125 when it cannot read its input.
func Main() int {
	var in Input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil || in.Plan == nil {
		fmt.Fprintf(os.Stderr, "agentbox: error: verify: reading the plan: %v\n", err)
		return 125
	}
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for _, c := range Build(in.Plan, in.Host) {
		var o Outcome
		if c.Why == "" {
			o = run(c.Probe)
		}
		enc.Encode(Judge(c, o))
	}
	if err := out.Flush(); err != nil {
		return 125
	}
	return 0
}

// code names an error as the checks do: its errno, or the text.
func code(err error) string {
	if err == nil {
		return "ok"
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
		return "errno " + strconv.Itoa(int(errno))
	}
	return err.Error()
}

func errnoCode(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	return code(e)
}

// run performs one probe.
func run(p Probe) Outcome {
	switch p.Op {
	case "create":
		return create(p.Path)
	case "openw":
		fd, err := unix.Open(p.Path, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err == nil {
			unix.Close(fd)
		}
		return Outcome{Code: code(err)}
	case "write":
		var st unix.Stat_t
		if err := unix.Stat(p.Path, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			o := run(Probe{Op: "openw", Path: p.Path})
			o.Code = "file:" + o.Code
			return o
		}
		return create(p.Path)
	case "read":
		return read(p.Path, p.Arg)
	case "look":
		var st unix.Stat_t
		if err := unix.Stat(p.Path, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return list(p.Path)
		}
		return read(p.Path, "")
	case "list":
		return list(p.Path)
	case "stat":
		var st unix.Stat_t
		return Outcome{Code: code(unix.Lstat(p.Path, &st))}
	case "rmdir":
		return Outcome{Code: code(unix.Rmdir(p.Path))}
	case "signal":
		pid, _ := strconv.Atoi(p.Arg)
		return Outcome{Code: code(unix.Kill(pid, 0))}
	case "connect":
		return connect(p.Arg)
	case "proxy":
		return proxy(p.Arg, p.Path)
	case "interfaces":
		return interfaces()
	case "syscall":
		return Outcome{Code: errnoCode(call(p.Arg))}
	case "rlimit":
		return rlimit(p.Arg)
	case "cgroup":
		return ownCgroup(p.Path, p.Arg)
	case "status":
		return status(p.Arg)
	case "env":
		return environment(p.Arg)
	}
	return Outcome{Code: "unknown probe " + p.Op}
}

// create makes a new file in dir, exclusively, and removes it at once.
func create(dir string) Outcome {
	name := filepath.Join(dir, fmt.Sprintf(".agentbox-verify-%d-%d", os.Getpid(), time.Now().UnixNano()))
	fd, err := unix.Open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return Outcome{Code: code(err)}
	}
	unix.Close(fd)
	unix.Unlink(name)
	return Outcome{Code: "ok", Text: "created and removed " + name}
}

// read reads path, up to 64 KiB (or max bytes when given).
func read(path, max string) Outcome {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return Outcome{Code: code(err)}
	}
	defer unix.Close(fd)
	limit := 64 << 10
	if n, err := strconv.Atoi(max); err == nil {
		limit = n
	}
	buf := make([]byte, limit)
	var total int64
	for total < int64(limit) {
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		total += int64(n)
	}
	return Outcome{Code: "ok", N: total, Text: fmt.Sprintf("read %d bytes", total)}
}

// list counts the entries of the folder dir.
func list(dir string) Outcome {
	f, err := os.Open(dir)
	if err != nil {
		return Outcome{Code: code(err)}
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return Outcome{Code: code(err)}
	}
	sort.Strings(names)
	if len(names) > 5 {
		names = append(names[:5], "…")
	}
	return Outcome{Code: "ok", N: int64(len(names)), Text: "entries: " + strings.Join(names, ", ")}
}

func connect(addr string) Outcome {
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		var se *os.SyscallError
		if errors.As(err, &se) {
			return Outcome{Code: code(se.Err)}
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return Outcome{Code: "ETIMEDOUT"}
		}
		return Outcome{Code: code(err)}
	}
	c.Close()
	return Outcome{Code: "ok"}
}

// proxy asks the proxy at addr to connect to target: "ok" when it
// refuses, ALLOWED when it connects.
func proxy(addr, target string) Outcome {
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return Outcome{Code: code(err), Text: "the proxy cannot be reached"}
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return Outcome{Code: code(err)}
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return Outcome{Code: "bad answer", Text: line}
	}
	switch fields[1] {
	case "403":
		return Outcome{Code: "ok", Text: "refused: " + strings.TrimSpace(line)}
	case "200":
		return Outcome{Code: "ALLOWED", Text: strings.TrimSpace(line)}
	}
	return Outcome{Code: "HTTP " + fields[1], Text: strings.TrimSpace(line)}
}

func interfaces() Outcome {
	ifs, err := net.Interfaces()
	if err != nil {
		return Outcome{Code: code(err)}
	}
	var names, other []string
	for _, i := range ifs {
		names = append(names, i.Name)
		if i.Flags&net.FlagLoopback == 0 {
			other = append(other, i.Name)
		}
	}
	if len(other) > 0 {
		return Outcome{Code: "MISMATCH", Text: "interfaces: " + strings.Join(names, ", ")}
	}
	return Outcome{Code: "ok", Text: "interfaces: " + strings.Join(names, ", ")}
}

// call makes the seccomp probe's call, with harmless arguments.
func call(name string) syscall.Errno {
	var e syscall.Errno
	switch name {
	case "ioctl-tiocsti":
		_, _, e = unix.Syscall(unix.SYS_IOCTL, ^uintptr(0), unix.TIOCSTI, 0)
	case "keyctl":
		_, _, e = unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, ^uintptr(2), 0) // KEY_SPEC_SESSION_KEYRING (-3)
	case "bpf":
		_, _, e = unix.Syscall(unix.SYS_BPF, ^uintptr(0), 0, 0)
	case "perf_event_open":
		_, _, e = unix.Syscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0, 0)
	case "userfaultfd":
		_, _, e = unix.Syscall(unix.SYS_USERFAULTFD, 1|1<<30, 0, 0)
	case "kexec_load":
		_, _, e = unix.Syscall6(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0, 0, 0)
	case "init_module":
		empty := []byte{0}
		_, _, e = unix.Syscall(unix.SYS_INIT_MODULE, 0, 0, uintptr(unsafe.Pointer(&empty[0])))
	case "ptrace":
		_, _, e = unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETREGS, uintptr(0x3fffffff), 0, 0, 0, 0)
	case "io_uring_enter":
		_, _, e = unix.Syscall6(unix.SYS_IO_URING_ENTER, ^uintptr(0), 0, 0, 0, 0, 0)
	case "clone3":
		_, _, e = unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
	case "mptcp-socket":
		fd, _, errno := unix.Syscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 262) // IPPROTO_MPTCP
		if errno == 0 {
			unix.Close(int(fd))
		}
		e = errno
	case "prlimit-other":
		_, _, e = unix.Syscall6(unix.SYS_PRLIMIT64, 0x3fffffff, unix.RLIMIT_NOFILE, 0, 0, 0, 0)
	case "chmod-setuid":
		name := []byte("x\x00")
		_, _, e = unix.Syscall(unix.SYS_FCHMODAT, ^uintptr(0), uintptr(unsafe.Pointer(&name[0])), 0o4755)
	case "udp-socket", "unix-socket":
		family, typ := unix.AF_INET, unix.SOCK_DGRAM
		if name == "unix-socket" {
			family, typ = unix.AF_UNIX, unix.SOCK_STREAM
		}
		fd, _, errno := unix.Syscall(unix.SYS_SOCKET, uintptr(family), uintptr(typ|unix.SOCK_CLOEXEC), 0)
		if errno == 0 {
			unix.Close(int(fd))
		}
		e = errno
	case "vsock-socket":
		fd, _, errno := unix.Syscall(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if errno == 0 {
			unix.Close(int(fd))
		}
		e = errno
	default:
		return unix.ENOSYS
	}
	return e
}

var rlimits = map[string]int{"nproc": unix.RLIMIT_NPROC, "nofile": unix.RLIMIT_NOFILE, "as": unix.RLIMIT_AS, "cpu": unix.RLIMIT_CPU, "fsize": unix.RLIMIT_FSIZE}

func rlimit(arg string) Outcome {
	name, v, _ := strings.Cut(arg, "=")
	want, _ := strconv.ParseUint(v, 10, 64)
	var rl unix.Rlimit
	if err := unix.Getrlimit(rlimits[name], &rl); err != nil {
		return Outcome{Code: code(err)}
	}
	text := fmt.Sprintf("soft %d, hard %d", rl.Cur, rl.Max)
	if rl.Cur != want || rl.Max != want {
		return Outcome{Code: "MISMATCH", Text: text}
	}
	return Outcome{Code: "ok", Text: text}
}

func ownCgroup(name, arg string) Outcome {
	ctl, v, _ := strings.Cut(arg, "=")
	want, _ := strconv.ParseUint(v, 10, 64)
	p, got, err := cgroup.Own(ctl)
	if err != nil {
		return Outcome{Code: code(err), Text: p}
	}
	text := fmt.Sprintf("in %s, limit %d", p, got)
	if !strings.Contains(p, name) || got != want {
		return Outcome{Code: "MISMATCH", Text: text}
	}
	return Outcome{Code: "ok", Text: text}
}

func status(arg string) Outcome {
	field, want, _ := strings.Cut(arg, "=")
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Outcome{Code: code(err)}
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && k == field {
			v = strings.TrimSpace(v)
			if v != want {
				return Outcome{Code: "MISMATCH", Text: field + " " + v}
			}
			return Outcome{Code: "ok", Text: field + " " + v}
		}
	}
	return Outcome{Code: "MISMATCH", Text: "no " + field + " in /proc/self/status"}
}

// environment compares the probe's own environment, which is CMD's, with
// what the plan lists; it names the differences, never a value.
func environment(arg string) Outcome {
	var want EnvWant
	if err := json.Unmarshal([]byte(arg), &want); err != nil {
		return Outcome{Code: code(err)}
	}
	have := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		have[k] = v
	}
	var bad []string
	names := map[string]bool{}
	for _, n := range want.Names {
		names[n] = true
		if _, ok := have[n]; !ok {
			bad = append(bad, "missing "+n)
		}
	}
	for n := range have {
		if !names[n] {
			bad = append(bad, "unexpected "+n)
		}
	}
	for _, n := range want.Removed {
		if _, ok := have[n]; ok {
			bad = append(bad, "not removed "+n)
		}
	}
	for n, v := range want.Values {
		if have[n] != v {
			bad = append(bad, "wrong value of "+n)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return Outcome{Code: "MISMATCH", Text: strings.Join(bad, ", ")}
	}
	return Outcome{Code: "ok", Text: fmt.Sprintf("%d variables as listed", len(have))}
}
