package fslog

import "strconv"

// processLabel is the one shape of a refusal's process, whichever source
// saw the refusal (the seccomp notification, the preloaded library by its
// socket or its pipe, Landlock's audit records): "NAME (pid N, EXE)".
//
// NAME is the name the process gave itself (its comm, or argv[0] for the
// preloaded library's pipe): a process can choose it, so it is never
// proof of what ran; "?" when it gave none. N is its pid: the host's,
// except for the preloaded library's pipe under bubblewrap, where it is the
// pid the process has in the box. EXE is the executable agentbox read (from
// /proc or the audit record), or "as it says" when agentbox read none (it
// had ended, or it is only known by what it reported).
func processLabel(name string, pid int, exe string) string {
	if name == "" {
		name = "?"
	}
	p := "?"
	if pid > 0 {
		p = strconv.Itoa(pid)
	}
	if exe == "" {
		exe = "as it says"
	}
	return name + " (pid " + p + ", " + exe + ")"
}
