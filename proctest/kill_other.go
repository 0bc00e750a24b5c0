//go:build !linux && !windows

package proctest

import "syscall"

// killSession kills the process group sid (the session's first group).
func killSession(sid int) { syscall.Kill(-sid, syscall.SIGKILL) }
