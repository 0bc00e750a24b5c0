//go:build linux

package proctest

import (
	"bufio"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process started while the test binary ignores SIGINT ignores it too,
// until DefaultSignals: then it starts with the default and dies of it.
func TestDefaultSignals(t *testing.T) {
	signal.Ignore(syscall.SIGINT)
	script := `kill -INT $$; echo survived`
	out, _ := exec.Command("sh", "-c", script).Output()
	if string(out) != "survived\n" {
		t.Fatalf("with SIGINT ignored, the child printed %q (the test cannot show the problem here)", out)
	}
	DefaultSignals()
	c := exec.Command("sh", "-c", script)
	out, err := c.Output()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
		t.Errorf("after DefaultSignals the child printed %q and ended with %v, want it killed by SIGINT", out, err)
	}
}

// What a test started, and what that started in other process groups,
// is gone when the test ends.
func TestStartKillsTheSession(t *testing.T) {
	var pids []int
	t.Run("starts", func(t *testing.T) {
		c := exec.Command("sh", "-c", `set -m; sleep 300 & echo $!; sleep 300 & echo $!; wait`)
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		Start(t, c)
		r := bufio.NewReader(out)
		for i := 0; i < 2; i++ {
			pid, err := strconv.Atoi(strings.TrimSpace(Line(t, r, 10*time.Second)))
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
		pids = append(pids, c.Process.Pid)
	})
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && !zombie(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d outlived its test", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// zombie reports whether pid is gone or only waits to be reaped.
func zombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) == 0 || f[0] == "Z"
}

// Line gives up at its deadline; Wait kills what does not end in time.
func TestBounded(t *testing.T) {
	ft := &fakeT{TB: t}
	c := exec.Command("sleep", "300")
	out, _ := c.StdoutPipe()
	Start(t, c)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { recover() }()
		Line(ft, bufio.NewReader(out), 100*time.Millisecond)
	}()
	<-done
	if !ft.failed {
		t.Error("Line returned without a line and without failing")
	}
	ft.failed = false
	done = make(chan struct{})
	go func() {
		defer close(done)
		defer func() { recover() }()
		Wait(ft, c, 100*time.Millisecond)
	}()
	<-done
	if !ft.failed {
		t.Error("Wait returned for a process that had not ended")
	}
	if syscall.Kill(c.Process.Pid, 0) == nil && !zombie(c.Process.Pid) {
		t.Error("Wait left the process running")
	}
}

// fakeT records a failure and stops the goroutine, as t.Fatal does.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Fatalf(string, ...any) { f.failed = true; panic("fatal") }
func (f *fakeT) Helper()               {}
