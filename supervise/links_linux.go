package supervise

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
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
	n, err := unshareFiles(files)
	if err != nil {
		return n, err
	}
	for _, root := range plan.Outermost(h.Roots) {
		if t := h.Trees[root]; t != nil {
			restamp(t)
		}
	}
	return n, nil
}

// restamp takes, in tree t, the new change time of each folder whose
// shared files were all given copies (agentbox's renames, not the box's),
// and takes its plan.DirShared mark away: it holds none now. The check
// after the run then does not count these folders as the box's changes.
// Only a folder with the same identity as in t gets it.
func restamp(t *plan.Tree) {
	seen := map[string]bool{}
	for _, rel := range t.Shared {
		d := path.Dir(rel)
		if d == "." {
			d = ""
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		i := t.Find(d)
		if i < 0 {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(t.Path(i), &st) != nil || !isDir(st) {
			continue
		}
		rec := &t.Dirs[i]
		if rec.Ino == st.Ino && rec.Dev == uint64(unix.Major(st.Dev))<<32|uint64(unix.Minor(st.Dev)) {
			rec.Ctime = st.Ctim.Nano()
			rec.Flags &^= plan.DirShared
			if t.Unshared == nil {
				t.Unshared = map[string]bool{}
			}
			t.Unshared[d] = true
		}
	}
}

// unshareFiles gives each file a copy of its own, several folders at
// once (each folder is opened once, for all its files); the first
// failure is returned.
func unshareFiles(files []string) (int, error) {
	if len(files) == 0 {
		return 0, nil
	}
	// By folder, in the order met (the search's order groups them).
	var dirs []string
	names := map[string][]string{}
	for _, f := range files {
		d, n := path.Split(f)
		if _, ok := names[d]; !ok {
			dirs = append(dirs, d)
		}
		names[d] = append(names[d], n)
	}
	var (
		mu    sync.Mutex
		first error
		done  int
		wg    sync.WaitGroup
	)
	work := make(chan string)
	for range min(unshareWorkers, len(dirs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for d := range work {
				did, bad, err := unshareIn(d, names[d])
				n += did
				if err != nil {
					mu.Lock()
					if first == nil {
						first = &SharedError{Path: path.Join(d, bad), Err: err}
					}
					mu.Unlock()
				}
			}
			mu.Lock()
			done += n
			mu.Unlock()
		}()
	}
	for _, d := range dirs {
		work <- d
	}
	close(work)
	wg.Wait()
	return done, first
}

// unshareIn gives each file of folder dir named in names a copy of its
// own when it still has more than one link; it stops at the first
// failure, and returns how many it gave one and the name that failed.
func unshareIn(dir string, names []string) (int, string, error) {
	dfd, err := openDir(strings.TrimSuffix(dir, "/"))
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, "", nil // gone since the search: nothing to write
		}
		return 0, "", err
	}
	defer unix.Close(dfd)
	n := 0
	for _, name := range names {
		did, err := unshare(dfd, name)
		if err != nil {
			return n, name, err
		}
		if did {
			n++
		}
	}
	return n, "", nil
}

// unshare gives the regular file name in folder dfd a copy of its own
// when it still has more than one link. Nothing is followed: the folder
// was opened without a symlink on the way, the file is opened without
// following one, and the copy replaces the name only while it still
// names the file copied. Raw descriptors: a pnpm project has tens of
// thousands of such files, and os.File's bookkeeping per file costs more
// than the copy of a small one.
func unshare(dfd int, name string) (bool, error) {
	src, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
			return false, nil // gone, or a symlink now: not this file
		}
		return false, err
	}
	defer unix.Close(src)
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
	err = copyData(dst, src, st.Size)
	if err == nil && (int(st.Uid) != euid || int(st.Gid) != egid) {
		err = unix.Fchown(dst, int(st.Uid), int(st.Gid))
	}
	if err == nil {
		// After fchown, which takes set-id bits away.
		err = unix.Fchmod(dst, st.Mode&0o7777)
	}
	if err == nil {
		err = unix.UtimesNanoAt(dfd, tmp, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
	}
	if cerr := unix.Close(dst); err == nil {
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

var euid, egid = os.Geteuid(), os.Getegid()

// copyData copies size bytes of src to dst: a reflink where the file
// system shares blocks (btrfs, xfs), else the kernel's copy, else reads
// and writes.
func copyData(dst, src int, size int64) error {
	if size == 0 {
		return nil
	}
	if unix.IoctlFileClone(dst, src) == nil {
		return nil
	}
	var off int64
	for off < size {
		n, err := unix.CopyFileRange(src, nil, dst, nil, int(min(size-off, 1<<30)), 0)
		if err != nil {
			if off == 0 && (errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP)) {
				break // copied below
			}
			return err
		}
		if n == 0 {
			return nil // shorter than it was: what there is is copied
		}
		off += int64(n)
	}
	if off >= size {
		return nil
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(src, buf)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		for w := 0; w < n; {
			m, err := unix.Write(dst, buf[w:n])
			if err != nil {
				return err
			}
			w += m
		}
	}
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
