//go:build linux && (amd64 || arm64)

package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// This file is a small classic-BPF interpreter, enough to run the programs
// compile writes the way the kernel does (kernel/seccomp.c and
// net/core/filter.c), so the unit tests can ask "what does the filter answer
// for this syscall?" without loading it. It refuses any instruction it does
// not know, so a program using more than it understands fails the tests
// instead of being misread.

// call is one syscall as the filter sees it: struct seccomp_data.
type call struct {
	arch uint32
	nr   uint32
	args [6]uint64
}

// bytes lays the call out as struct seccomp_data in little-endian.
func (c call) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], c.nr)
	binary.LittleEndian.PutUint32(b[4:], c.arch)
	// bytes 8..15: instruction_pointer, which no rule reads.
	for i, a := range c.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// decode reads the struct sock_filter array bwrap would read.
func decode(raw []byte) ([]unix.SockFilter, error) {
	if len(raw)%8 != 0 {
		return nil, fmt.Errorf("program is %d bytes, not a multiple of 8", len(raw))
	}
	prog := make([]unix.SockFilter, len(raw)/8)
	for i := range prog {
		b := raw[8*i:]
		prog[i] = unix.SockFilter{
			Code: binary.LittleEndian.Uint16(b),
			Jt:   b[2],
			Jf:   b[3],
			K:    binary.LittleEndian.Uint32(b[4:]),
		}
	}
	return prog, nil
}

// run executes prog on c and returns the value of the RET that ends it.
func run(prog []unix.SockFilter, c call) (uint32, error) {
	data := c.bytes()
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			// The kernel only accepts aligned 32-bit loads inside seccomp_data.
			if in.K%4 != 0 || int(in.K)+4 > len(data) {
				return 0, fmt.Errorf("pc %d: load at offset %d outside seccomp_data", pc, in.K)
			}
			a = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			a &= in.K
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			pc += branch(a == in.K, in)
		case unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K:
			pc += branch(a > in.K, in)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			pc += branch(a >= in.K, in)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			pc += branch(a&in.K != 0, in)
		case unix.BPF_RET | unix.BPF_K:
			return in.K, nil
		default:
			return 0, fmt.Errorf("pc %d: instruction %#x not understood by the test interpreter", pc, in.Code)
		}
	}
	// The kernel's checker refuses programs that can run off the end.
	return 0, fmt.Errorf("program ran off its end")
}

func branch(cond bool, in unix.SockFilter) int {
	if cond {
		return int(in.Jt)
	}
	return int(in.Jf)
}

// verdict is a filter's answer in words, so test failures read well.
type verdict struct {
	Action string
	Errno  unix.Errno
}

var (
	allow  = verdict{Action: "allow"}
	eperm  = verdict{Action: "errno", Errno: unix.EPERM}
	enosys = verdict{Action: "errno", Errno: unix.ENOSYS}
	kill   = verdict{Action: "kill-process"}
	notify = verdict{Action: "notify"}
)

func verdictOf(ret uint32) verdict {
	switch ret & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return allow
	case unix.SECCOMP_RET_ERRNO:
		return verdict{Action: "errno", Errno: unix.Errno(ret & unix.SECCOMP_RET_DATA)}
	case unix.SECCOMP_RET_KILL_PROCESS:
		return kill
	case unix.SECCOMP_RET_USER_NOTIF:
		return notify
	}
	return verdict{Action: fmt.Sprintf("other %#x", ret)}
}
