package main

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// selfCheck verifies what a process can see of its own confinement: under
// bwrap / is a read-only mount; under Landlock there is no mount to look at,
// but agentbox's child always sets no_new_privs and a seccomp filter before
// it execs, which an unconfined process does not have.
func selfCheck(backend string) (string, bool) {
	if backend == "landlock" {
		status, _ := os.ReadFile("/proc/self/status")
		nnp := strings.Contains(string(status), "NoNewPrivs:\t1")
		filtered := strings.Contains(string(status), "Seccomp:\t2")
		if nnp && filtered {
			return "no_new_privs and a seccomp filter are set", true
		}
		return "this process has no no_new_privs or no seccomp filter", false
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err == nil && st.Flags&unix.ST_RDONLY != 0 {
		return "/ is read-only", true
	}
	return "/ is writable", false
}
