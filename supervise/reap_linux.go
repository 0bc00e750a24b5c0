package supervise

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// subreaper makes agentbox the reaper of every process the box leaves
// behind: an orphan of the box is re-parented to agentbox rather than to
// init, so every process of the run stays a descendant of agentbox and
// endAll can find it. Under bwrap the box's PID namespace does this
// already; under Landlock there is none.
func subreaper() {
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// endAll ends every process of the run once the box's first process has
// ended, and reaps them, so that nothing of the run can change a file after
// the after-run check, or take the terminal after agentbox has returned.
// Orphans came to agentbox (subreaper); the rest descend from them.
//
// It kills by pid whatever state a process is in: a zombie thread-group
// leader is killed too, because its other threads may still run (the
// leader shows Z in /proc once its own thread has left, and wait4 does
// not report it until the last thread is gone; SIGKILL to its pid ends
// them all). It stops the processes first (a stopped process cannot
// fork), then kills them, reaps what it can, and repeats until wait4 says
// agentbox has no child left. It gives up after a few seconds and returns
// the processes it could not end (a task the kernel holds in an
// uninterruptible sleep dies only when that ends).
//
// When agentbox has no child at all (wait4 says so once the ended ones
// are reaped, as after most runs: the backend reaped the box's first
// process), the run has no process left: every other one descends from a
// child, orphans included, so there is nothing to list in /proc.
func endAll() []int {
	if reapAll() {
		return nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := descendants(os.Getpid())
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGSTOP)
		}
		for _, pid := range descendants(os.Getpid()) {
			unix.Kill(pid, unix.SIGKILL)
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		if reapAll() {
			return nil
		}
		if time.Now().After(deadline) {
			return descendants(os.Getpid())
		}
		time.Sleep(time.Millisecond)
	}
}

// reapAll reaps every child that has ended, without waiting, and reports
// whether agentbox has no child left at all (ECHILD). A child that is
// still running, or a zombie leader whose threads are not all gone yet,
// keeps it false.
func reapAll() bool {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WALL, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ECHILD:
			return true
		case pid <= 0 || err != nil:
			return false
		}
	}
}

// descendants lists the descendants of pid, children first, in every state
// (zombies too: see endAll). It reads /proc/PID/task/TID/children where the
// kernel has it, and otherwise the parent of every process in /proc.
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		kids, ok := children(p)
		if !ok {
			return scanDescendants(pid)
		}
		for _, k := range kids {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
				queue = append(queue, k)
			}
		}
	}
	return out
}

// children lists pid's children from /proc/PID/task/*/children; ok is false
// when the kernel has no such file (CONFIG_PROC_CHILDREN).
func children(pid int) ([]int, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, true // gone
	}
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if os.IsNotExist(err) {
			return nil, false
		}
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, true
}

// stat reads the state and parent of pid from /proc/PID/stat.
func stat(pid int) (state byte, ppid, pgrp int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, 0, 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 3 {
		return 0, 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	pgrp, _ = strconv.Atoi(f[2])
	return f[0][0], ppid, pgrp, true
}

// scanDescendants is descendants by a scan of every process's parent.
func scanDescendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, pp, _, ok := stat(n); ok {
			parent[n] = pp
		}
	}
	var out []int
	for n := range parent {
		for p, hops := parent[n], 0; p > 1 && hops < 4096; p, hops = parent[p], hops+1 {
			if p == pid {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// killGroup kills, after agentbox itself was killed, what is left of a run
// whose processes agentbox could no longer reap: every process of the
// caller's user in process group pgrp that runs under no_new_privs and a
// seccomp filter, as every process of a box does, in any state (a zombie
// leader may have live threads). A process that left the group is not
// found this way: a run with a cgroup of its own is ended through it.
func killGroup(pgrp int) {
	if pgrp <= 1 {
		return
	}
	for round := 0; round < 50; round++ {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		found := false
		for _, e := range entries {
			n, err := strconv.Atoi(e.Name())
			if err != nil || n == os.Getpid() {
				continue
			}
			_, _, g, ok := stat(n)
			if !ok || g != pgrp {
				continue
			}
			status, err := os.ReadFile("/proc/" + e.Name() + "/status")
			if err != nil || !strings.Contains(string(status), "NoNewPrivs:\t1") || !strings.Contains(string(status), "Seccomp:\t2") {
				continue
			}
			if !strings.Contains(string(status), "\nUid:\t"+strconv.Itoa(os.Getuid())+"\t") {
				continue
			}
			unix.Kill(n, unix.SIGKILL)
			found = true
		}
		if !found {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}
