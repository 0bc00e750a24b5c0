package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/hostexec"
	"github.com/agentbox/agentbox/plan"
)

// A write inside the writable roots must never change a file outside
// them. A regular file with more than one link is one inode under several
// names: pnpm links every file of a project's node_modules/.pnpm to a
// content store that every project of the user shares, uv does the same
// for virtual environments, and cp -al and git clone --local link too. A
// box that wrote such a file in its project would change the store's and
// every other project's copy, outside every root, and whatever the host
// runs from them.
//
// Neither backend can carve single files out of a writable folder
// cheaply: bubblewrap would need one mount per file (a pnpm project has
// tens of thousands, beyond the kernel's limit on mounts), and a Landlock
// rule can only grant, never take a file back from a folder it grants.
// So before the box starts, each such file the search found
// (plan.Tree.Shared) gets a copy of its own: a new file beside it, with
// the same content (a reflink where the file system has them), owner,
// mode and times, renamed over it. The other names keep the old inode;
// the box can write only the new one. The box cannot make such a link
// itself to a file outside the roots: bubblewrap's mounts make link(2)
// across them fail (EXDEV), and Landlock's refer right is granted only
// between writable folders.

// unshareWorkers is how many files are given a copy at once.
const unshareWorkers = 4

// SharedError is a file with more than one link that agentbox could not
// give a copy of its own: the run does not start, since the box's writes
// to it would reach its other names.
type SharedError struct {
	Path string
	Err  error
}

func (e *SharedError) Error() string {
	return fmt.Sprintf("%s has more than one link (hard links: another name, maybe outside the writable roots, shares its data) and agentbox could not give it a copy of its own: %v; a write in the box would change every name", e.Path, e.Err)
}

func (e *SharedError) Unwrap() error { return e.Err }

// Hints says how to avoid the links.
func (e *SharedError) Hints() []string {
	return []string{
		"give the file a copy of its own (cp -p FILE FILE.new && mv FILE.new FILE), or make it read-only for the box (--read-only " + e.Path + ")",
		"pnpm links packages to its store unless told to copy: pnpm config set package-import-method copy (or clone on btrfs/xfs); uv: UV_LINK_MODE=copy",
	}
}

// unshareTrees gives every shared file of the trees a copy of its own
// (the roots without a tree are searched for them first) and returns how
// many it gave one.
func unshareTrees(h *plan.HostExec) (int, error) {
	var files []string
	for _, root := range plan.Outermost(h.Roots) {
		t := h.Trees[root]
		if t == nil {
			// A plan read back has no trees: look now.
			var err error
			if t, err = hostexec.Walk(root, hostexec.WalkOptions{Skip: h.ReadOnly, Shared: true, MaxDirs: max(h.Limit, hostexec.DefaultMaxDirs)}); err != nil {
				return 0, err
			}
		}
		for _, rel := range t.Shared {
			files = append(files, path.Join(t.Root, rel))
		}
	}
	return unshareFiles(files)
}

// unshareFiles gives each file a copy of its own, several at once; the
// first failure is returned.
func unshareFiles(files []string) (int, error) {
	if len(files) == 0 {
		return 0, nil
	}
	var (
		mu    sync.Mutex
		first error
		done  int
		wg    sync.WaitGroup
	)
	work := make(chan string)
	for range min(unshareWorkers, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for f := range work {
				did, err := unshare(f)
				if did {
					n++
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = &SharedError{Path: f, Err: err}
					}
					mu.Unlock()
				}
			}
			mu.Lock()
			done += n
			mu.Unlock()
		}()
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	return done, first
}

// unshare gives the regular file at p a copy of its own when it still has
// more than one link. Nothing is followed: the folder is opened without a
// symlink on the way, the file without following one, and the copy
// replaces the name only while it still names the file copied.
func unshare(p string) (bool, error) {
	dfd, name, err := openParent(p)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil // gone since the search: nothing to write
		}
		return false, err
	}
	defer unix.Close(dfd)
	src, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
			return false, nil // gone, or a symlink now: not this file
		}
		return false, err
	}
	fin := os.NewFile(uintptr(src), name)
	defer fin.Close()
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return false, err
	}
	if !isReg(st) || st.Nlink <= 1 {
		return false, nil
	}
	tmp := randomName(".agentbox-copy-")
	dst, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false, err
	}
	fout := os.NewFile(uintptr(dst), tmp)
	err = copyData(fout, fin, st.Size)
	if err == nil && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
		err = unix.Fchown(dst, int(st.Uid), int(st.Gid))
	}
	if err == nil {
		// After fchown, which takes set-id bits away.
		err = unix.Fchmod(dst, st.Mode&0o7777)
	}
	if err == nil {
		err = unix.UtimesNanoAt(dfd, tmp, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
	}
	if cerr := fout.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The name still names the file copied: then the copy takes its
		// place.
		if now, serr := lstatAt(dfd, name); serr != nil || now.Dev != st.Dev || now.Ino != st.Ino {
			err = fmt.Errorf("it changed while agentbox copied it")
		} else {
			err = unix.Renameat(dfd, tmp, dfd, name)
		}
	}
	if err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return false, err
	}
	return true, nil
}

// copyData copies size bytes of in to out: a reflink where the file
// system shares blocks (btrfs, xfs), else the kernel's copy.
func copyData(out, in *os.File, size int64) error {
	if unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) == nil {
		return nil
	}
	_, err := io.Copy(out, in) // copy_file_range where it can
	return err
}

// reportShared tells the user the box's copies were made.
func reportShared(ev event.Emitter, n int) {
	if n == 0 {
		return
	}
	ev.Emit(event.Event{Kind: event.Warning, Detail: fmt.Sprintf("%d files in the writable roots shared their data with other names (hard links, as pnpm, uv, cp -al and git clone --local make them): each now has a copy of its own, so a write in the box cannot change a file outside the roots; pnpm's package-import-method=copy or uv's link-mode=copy avoid the copying", n)})
}

// unshare gives the files with more than one link that the search after
// the run found (links the box made between files of the roots: it cannot
// make one to a file outside them) a copy of their own, so that a later
// run with other writable roots cannot reach one name through the other.
// What fails is said; the next run's search finds the file again (its
// folder is marked plan.DirShared) and refuses to start until it can.
func (c *checker) unshare(t *plan.Tree) {
	files := make([]string, 0, len(t.Shared))
	for _, rel := range t.Shared {
		files = append(files, path.Join(t.Root, rel))
	}
	if _, err := unshareFiles(files); err != nil {
		var se *SharedError
		p := t.Root
		if errors.As(err, &se) {
			p = se.Path
		}
		c.note(p, "hard links", "failed", "a file with more than one link could not be given a copy of its own: "+err.Error()+"; the next run will not start until it can")
	}
}
