//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A root box's device nodes are handed from one run to the next (they cost
// more to make than anything else the supervisor does while a box is
// built), never with what the earlier box did to them: the next box's
// /dev/null is the same node, with the host's mode and new times again.
func TestDevNodesHandedOnClean(t *testing.T) {
	rootOnly(t, "only a root box has device nodes of its own")
	w := newWorld(t)
	be := []string{"--backend", "bwrap"}
	r := w.sh(be, "stat -c %i /dev/null; chmod 600 /dev/null /dev/tty; touch -d 2001-01-01 /dev/zero")
	expectCode(t, r, 0)
	first := strings.TrimSpace(r.stdout)
	r = w.sh(be, "stat -c '%i %a' /dev/null; stat -c %a /dev/tty; stat -c %Y /dev/zero")
	expectCode(t, r, 0)
	f := strings.Fields(r.stdout)
	if len(f) != 4 {
		t.Fatalf("want inode, two modes and a time, got %q", r.stdout)
	}
	if f[0] != first {
		t.Errorf("the second box's /dev/null is inode %s, the first's %s: the nodes were not handed on", f[0], first)
	}
	if f[1] != "666" || f[2] != "666" {
		t.Errorf("the second box's /dev/null and /dev/tty have modes %s and %s, want 666: the first box's chmod reached it", f[1], f[2])
	}
	if f[3] == "978307200" {
		t.Error("the second box's /dev/zero has the time the first box gave it")
	}
}

// Two boxes at once never share a node: the one that starts while another
// runs gets nodes of its own.
func TestDevNodesNotShared(t *testing.T) {
	rootOnly(t, "only a root box has device nodes of its own")
	w := newWorld(t)
	be := []string{"--backend", "bwrap"}
	// A run first, so that the pool holds a folder.
	expectCode(t, w.sh(be, "true"), 0)
	a := w.cmd(append(append([]string{"run"}, be...), "--", "sh", "-c",
		"stat -c %i /dev/null > a.ino; i=0; while [ ! -e b.ino ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done")...)
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
	r := w.sh(be, "stat -c %i /dev/null > b.ino")
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
		t.Errorf("the boxes' /dev/null: inodes %q and %q, want two nodes", ia, ib)
	}
}
