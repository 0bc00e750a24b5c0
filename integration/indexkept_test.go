//go:build linux

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The after-run check does not write a writable root's index again when
// the run changed nothing in it (the file there already says what the
// check saw), and that kept index still tells the next search what changed
// after it: a folder made then is listed again, and a repository planted
// there by the next box is found by its check.
func TestSearchIndexKeptWhenUnchanged(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		extra := filepath.Join(w.base, "extra")
		for i := 0; i < 5; i++ {
			mkdir(t, filepath.Join(extra, fmt.Sprintf("d%d", i), "sub"))
		}
		sum := sha256.Sum256([]byte(extra))
		index := filepath.Join(w.home, ".local", "state", "agentbox", "index", hex.EncodeToString(sum[:16]))
		flags := []string{"--writable", extra}
		// Changes less than two seconds before a search are listed again
		// whatever their stamps say.
		time.Sleep(2100 * time.Millisecond)
		expectCode(t, w.boxed(be, flags, "true"), 0)
		var first unix.Stat_t
		if err := unix.Stat(index, &first); err != nil {
			t.Fatalf("the first run wrote no index of %s: %v", extra, err)
		}
		time.Sleep(2100 * time.Millisecond)
		expectCode(t, w.boxed(be, flags, "true"), 0)
		var second unix.Stat_t
		if err := unix.Stat(index, &second); err != nil {
			t.Fatal(err)
		}
		if second.Ino != first.Ino || second.Mtim != first.Mtim {
			t.Errorf("the index of the unchanged %s was written again (inode %d, then %d)", extra, first.Ino, second.Ino)
		}
		// A change after the kept index: the next box plants a
		// repository with a hook-running config in a folder made since,
		// and the check (through the kept index) finds it.
		mkdir(t, filepath.Join(extra, "d3", "sub", "new"))
		time.Sleep(2100 * time.Millisecond)
		r := w.boxed(be, flags, `git -C `+filepath.Join(extra, "d3", "sub", "new")+` init -q && git -C `+filepath.Join(extra, "d3", "sub", "new")+
			` config core.fsmonitor '`+w.payload("fsmonitor")+`; false' && echo planted`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "planted")
		w.hostGit(filepath.Join(extra, "d3", "sub", "new"), "status")
		w.expectNoMark("fsmonitor", "host git status in a repository planted in a folder made after a kept index")
		var third unix.Stat_t
		unix.Stat(index, &third)
		if third.Ino == second.Ino && third.Mtim == second.Mtim {
			t.Errorf("the index was not written after the tree changed")
		}
	})
}
