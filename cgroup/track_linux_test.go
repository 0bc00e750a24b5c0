//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process cloned into a Tracker is ended by Kill in the state that
// cgroup.kill alone misses: its main thread has left (the leader shows Z)
// while a second thread runs on. Close removes the cgroup.
func TestTrackKillsZombieLeader(t *testing.T) {
	tr, err := Track(fmt.Sprintf("agentbox-test-%d.box", os.Getpid()))
	skipUnless(t, err == nil, fmt.Sprint(err))
	defer tr.Close()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		skipUnless(t, false, "no /usr/bin/python3 to leave a zombie leader with")
	}
	// The main thread leaves with the raw exit syscall (60 on amd64, 93
	// on arm64); the other thread sleeps on.
	nr := map[string]string{"amd64": "60", "arm64": "93"}[runtime.GOARCH]
	cmd := exec.Command("/usr/bin/python3", "-c", `import ctypes, threading, time
threading.Thread(target=time.sleep, args=(60,)).start()
ctypes.CDLL(None).syscall(`+nr+`, 0)`)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: tr.FD()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for !zombieLeader(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never became a zombie leader with a live thread", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tr.Kill(); err != nil {
		t.Fatal(err)
	}
	if busy, err := populated(tr.Dir()); err != nil || busy {
		t.Fatalf("the cgroup still holds processes after Kill (%v)", err)
	}
	cmd.Wait()
	dir := tr.Dir()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is still there after Close", dir)
	}
}

// zombieLeader reports whether pid's leader shows Z while one of its
// threads does not.
func zombieLeader(pid int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	leader, live := false, false
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue
		}
		s := string(b)
		state := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
		if task.Name() == fmt.Sprint(pid) {
			leader = state == "Z"
		} else if state != "Z" {
			live = true
		}
	}
	return leader && live
}
