//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A root box's device nodes are its own, made for the run: what one box
// does to them (chmod, touch) is not what the next box finds.
func TestDevNodesFreshEachRun(t *testing.T) {
	rootOnly(t, "only a root box has device nodes of its own")
	w := newWorld(t)
	be := []string{"--backend", "bwrap"}
	r := w.sh(be, "stat -c %d:%i /dev/null; chmod 600 /dev/null /dev/tty; touch -d 2001-01-01 /dev/zero")
	expectCode(t, r, 0)
	r = w.sh(be, "stat -c '%a' /dev/null; stat -c %a /dev/tty; stat -c %Y /dev/zero")
	expectCode(t, r, 0)
	f := strings.Fields(r.stdout)
	if len(f) != 3 {
		t.Fatalf("want two modes and a time, got %q", r.stdout)
	}
	if f[0] != "666" || f[1] != "666" {
		t.Errorf("the second box's /dev/null and /dev/tty have modes %s and %s, want 666: the first box's chmod reached it", f[0], f[1])
	}
	if f[2] == "978307200" {
		t.Error("the second box's /dev/zero has the time the first box gave it")
	}
}

// Two boxes at once never share a node: the one that starts while another
// runs gets nodes of its own.
func TestDevNodesNotShared(t *testing.T) {
	rootOnly(t, "only a root box has device nodes of its own")
	w := newWorld(t)
	be := []string{"--backend", "bwrap"}
	a := w.cmd(append(append([]string{"run"}, be...), "--", "sh", "-c",
		"stat -c %d:%i /dev/null > a.ino; i=0; while [ ! -e b.ino ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done")...)
	a.Dir = w.project
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(w.project, "a.ino")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first box did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := w.sh(be, "stat -c %d:%i /dev/null > b.ino")
	expectCode(t, r, 0)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the first box: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the first box did not end")
	}
	ia, _ := os.ReadFile(filepath.Join(w.project, "a.ino"))
	ib, _ := os.ReadFile(filepath.Join(w.project, "b.ino"))
	if len(ia) == 0 || string(ia) == string(ib) {
		t.Errorf("the boxes' /dev/null: device:inode %q and %q, want two nodes", ia, ib)
	}
}

// A root box's own nodes are made in a tmpfs over /dev in a mount
// namespace of bwrap's own before bwrap starts (so that bwrap's --dev
// binds them): nothing of it may reach the host's mount table, where it
// would give every program of the machine the box's /dev.
func TestDevNodesNotBoundOnHost(t *testing.T) {
	rootOnly(t, "only a root box has device nodes of its own")
	w := newWorld(t)
	c, br, errb := w.startWaiting("bwrap", "stat -c %d:%i /dev/null")
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		switch f[4] {
		case "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/console":
			t.Errorf("the host's mount table has a device node mounted while the box runs: %s", line)
		case "/dev":
			if strings.Contains(line, " - tmpfs ") {
				t.Errorf("the host's mount table has a tmpfs over /dev while the box runs: %s", line)
			}
		}
	}
	write(t, filepath.Join(w.project, "go"), "")
	ino := strings.TrimSpace(readRest(t, br))
	if err := waitCmd(t, c); err != nil {
		t.Fatalf("agentbox: %v\n%s", err, errb)
	}
	var host unix.Stat_t
	if err := unix.Stat("/dev/null", &host); err != nil {
		t.Fatal(err)
	}
	if ino == "" || ino == fmt.Sprintf("%d:%d", host.Dev, host.Ino) {
		t.Errorf("the box's /dev/null is device:inode %q, the host's is %d:%d: want a node of the box's own", ino, host.Dev, host.Ino)
	}
}
