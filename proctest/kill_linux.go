package proctest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killSession kills every process of the session sid (the one Start made
// for a command): its process group and any other group a process of it
// moved to. A few rounds catch what was forked meanwhile.
func killSession(sid int) {
	for round := 0; round < 5; round++ {
		found := false
		for _, pid := range sessionMembers(sid) {
			syscall.Kill(pid, syscall.SIGKILL)
			found = true
		}
		if !found {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sessionMembers lists the live processes whose session is sid, from
// /proc/PID/stat (its sixth field; the second, the command, is in
// parentheses and may hold spaces).
func sessionMembers(sid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []int{sid}
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		// state, ppid, pgrp, session
		if len(f) < 4 || f[0] == "Z" {
			continue
		}
		if sess, err := strconv.Atoi(f[3]); err == nil && sess == sid {
			out = append(out, pid)
		}
	}
	return out
}
