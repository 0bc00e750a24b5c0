package supervise

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// resources maps the plan's rlimit names to the kernel's.
var resources = map[string]int{
	"nproc":  unix.RLIMIT_NPROC,
	"nofile": unix.RLIMIT_NOFILE,
	"as":     unix.RLIMIT_AS,
	"cpu":    unix.RLIMIT_CPU,
	"fsize":  unix.RLIMIT_FSIZE,
}

// ParseRlimit reads one NAME=VALUE limit.
func ParseRlimit(spec string) (int, uint64, error) {
	name, val, _ := strings.Cut(spec, "=")
	res, ok := resources[name]
	n, err := strconv.ParseUint(val, 10, 64)
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("bad rlimit %q", spec)
	}
	return res, n, nil
}

// ApplyLimits sets the plan's rlimits, soft and hard, on the calling
// process: the Landlock child calls it right before it execs CMD.
func ApplyLimits(l plan.Limits) error {
	for _, r := range l.Rlimits() {
		res := resources[r.Name]
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: r.Value, Max: r.Value}); err != nil {
			return fmt.Errorf("setting limit %s=%d: %w", r.Name, r.Value, err)
		}
	}
	return nil
}

// RlimitExec is the RlimitCommand: it sets each limit, soft and hard, on
// itself and execs PATH, so CMD and everything it starts inherit limits
// they cannot raise again. Nothing is allocated between the limits and
// execve, so a memory limit far below what a Go program needs still works.
func RlimitExec(args []string) int {
	// Until it becomes CMD, this is agentbox's own process in the box.
	NotDumpable()
	i := 0
	for ; i < len(args) && args[i] != "--"; i++ {
		res, n, err := ParseRlimit(args[i])
		if err == nil {
			err = unix.Setrlimit(res, &unix.Rlimit{Cur: n, Max: n})
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "agentbox: error: limits: %s: %v\n", args[i], err)
			return ExitFailure
		}
	}
	if i+2 >= len(args) {
		fmt.Fprintln(os.Stderr, "agentbox: error: limits: no command")
		return ExitFailure
	}
	err := syscall.Exec(args[i+1], args[i+2:], os.Environ())
	fmt.Fprintf(os.Stderr, "agentbox: error: %s: cannot execute: %v\n", args[i+2], err)
	return ExitCannotExecute
}
