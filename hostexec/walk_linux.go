package hostexec

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// Walk searches the tree at root (see WalkOptions) and returns what it
// saw. A missing root is an empty tree. Every folder is opened without
// following a symlink in any component (openat2 with RESOLVE_NO_SYMLINKS,
// or one O_NOFOLLOW step at a time where the kernel has no openat2), so a
// folder swapped for a symlink while the walk runs is not followed; its
// entry types come from the listing itself. A folder the earlier search
// saw with the same identity and change time is checked with one statx
// and not listed again. Folders are searched by several workers at once.
//
// Nothing the box can arrange makes the walk conclude "nothing here": a
// folder shaped like a git folder is searched like any other, a folder
// that cannot be listed is marked so (or, with Fix, given back the
// owner's permissions and listed), there is no bound on depth or on the
// number of files, and any other failure is an error.
func Walk(root string, o WalkOptions) (*plan.Tree, error) {
	names := noteTable(o.Names)
	w := &walker{root: root, names: map[string]uint16{}, fix: o.Fix, links: o.Links, shared: o.Shared,
		maxDirs: int64(o.MaxDirs), uid: os.Geteuid()}
	if w.maxDirs <= 0 {
		w.maxDirs = DefaultMaxDirs
	}
	for i, n := range names {
		w.names[n] = uint16(i)
	}
	w.kept = map[string]bool{}
	for _, k := range o.Kept {
		if rel, ok := relTo(root, k); ok {
			w.kept[rel] = true
		}
	}
	if len(o.Skip) > 0 {
		w.skip = map[string]bool{}
		for _, s := range o.Skip {
			if rel, ok := relTo(root, s); ok && rel != "" {
				w.skip[rel] = true
			}
		}
	}
	if sameNames(o.Old, names) && o.Old.Valid() && o.Old.Root == root {
		w.old = o.Old
	}
	taken := time.Now().UnixNano()
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			t := emptyTree(root, names)
			t.Taken = taken
			return t, nil
		}
		return nil, &WalkError{Op: "opening", Path: root, Err: err}
	}
	defer unix.Close(fd)
	w.rootfd = fd
	var sx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_INO, &sx) == nil {
		dev, _, _ := stampOf(&sx)
		w.learn(dev, fd)
	}
	workers := o.Workers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 8)
	}
	t, err := w.run(workers)
	if err != nil {
		return nil, err
	}
	t.Root, t.Taken, t.Names = root, taken, names
	return t, nil
}

// walker is one walk of a root, shared by its workers.
type walker struct {
	root    string
	rootfd  int
	names   map[string]uint16
	skip    map[string]bool // relative paths not entered
	kept    map[string]bool // relative paths of unlisted folders kept read-only
	old     *plan.Tree
	fix     bool
	links   bool
	shared  bool
	uid     int
	maxDirs int64
	dirs    atomic.Int64
	failed  atomic.Bool
	mu      sync.Mutex
	err     error
	stamps  sync.Map // device -> bool: its file system's change times can be trusted
}

// trusted reports whether the change times of folders on device dev were
// found trustworthy (see stampsTrusted); false for a device not seen yet.
func (w *walker) trusted(dev uint64) bool {
	v, ok := w.stamps.Load(dev)
	return ok && v.(bool)
}

// learn records whether the file system of fd, on device dev, keeps
// change times a later search can trust.
func (w *walker) learn(dev uint64, fd int) {
	if _, ok := w.stamps.Load(dev); ok {
		return
	}
	var fs unix.Statfs_t
	ok := unix.Fstatfs(fd, &fs) == nil && stampsTrusted(int64(fs.Type))
	w.stamps.Store(dev, ok)
}

// stampsTrusted reports whether a file system of type magic updates a
// folder's change time, from the kernel's clock and never from a value a
// process chooses, whenever an entry is added, removed or renamed in it,
// and keeps it across remounts: local file systems the kernel writes
// itself. Folders on any other (FAT and exFAT keep no change time, NFS,
// SMB, 9p and FUSE take it from a server or a daemon) are listed by every
// search.
func stampsTrusted(magic int64) bool {
	switch magic {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC,
		unix.TMPFS_MAGIC, unix.F2FS_SUPER_MAGIC, unix.OVERLAYFS_SUPER_MAGIC,
		unix.RAMFS_MAGIC, 0x2fc12fc1 /* zfs */, 0xca451a4e /* bcachefs */ :
		return true
	}
	return false
}

func (w *walker) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.failed.Store(true)
}

// kid is a folder to visit: its name and its record in the old tree.
type kid struct {
	name []byte
	old  int32
}

// folder is one folder as a worker saw it: listed (kids are its
// folders), or taken from the old tree (from >= 0: its folders are the old
// tree's).
type folder struct {
	rec   plan.TreeDir
	notes []uint16
	kids  []kid
	from  int32
}

// each calls f for each folder in f, by name order.
func (w *walker) each(f *folder, fn func(name []byte, old int32)) {
	if f.from < 0 {
		for _, c := range f.kids {
			fn(c.name, c.old)
		}
		return
	}
	o := w.old
	for j := f.from + 1; j < o.Dirs[f.from].End; j = o.Dirs[j].End {
		fn(o.NameBytes(int(j)), j)
	}
}

// topNode is a folder of the top of the tree, searched before the
// workers start; job >= 0 is a subtree left to a worker instead.
type topNode struct {
	f    folder
	name []byte
	kids []*topNode
	job  int
}

type job struct {
	rel  string
	name []byte
	old  int32
	out  *plan.Tree
}

// run searches the tree: the top levels one by one until there are
// enough subtrees to share, then those subtrees by the workers, then it
// puts the pieces together in preorder.
func (w *walker) run(workers int) (*plan.Tree, error) {
	k := w.newWorker()
	defer k.close()
	k.out = &plan.Tree{}
	rootOld := int32(-1)
	if w.old != nil && len(w.old.Dirs) > 0 {
		rootOld = 0
	}
	f, ok := k.folder(rootOld)
	if w.failed.Load() {
		return nil, w.err
	}
	if !ok {
		return k.out, nil
	}
	top := &topNode{f: f, job: -1}
	var jobs []*job
	if workers > 1 {
		// Go down level by level until there are enough subtrees for
		// the workers to share evenly.
		level := []*topNode{top}
		rels := map[*topNode]string{top: ""}
		for depth := 0; depth < 6 && len(level) > 0; depth++ {
			n := 0
			for _, t := range level {
				w.each(&t.f, func([]byte, int32) { n++ })
			}
			if n == 0 {
				break
			}
			if n >= 8*workers || depth == 5 {
				for _, t := range level {
					w.each(&t.f, func(name []byte, old int32) {
						jobs = append(jobs, &job{rel: joinRel(rels[t], string(name)), name: name, old: old})
						t.kids = append(t.kids, &topNode{name: name, job: len(jobs) - 1})
					})
				}
				break
			}
			var next []*topNode
			for _, t := range level {
				w.each(&t.f, func(name []byte, old int32) {
					if w.failed.Load() {
						return
					}
					rel := joinRel(rels[t], string(name))
					k.setPath(rel)
					cf, ok := k.folder(old)
					if !ok {
						return
					}
					nt := &topNode{f: cf, name: name, job: -1}
					rels[nt] = rel
					t.kids = append(t.kids, nt)
					next = append(next, nt)
				})
				if w.failed.Load() {
					return nil, w.err
				}
			}
			level = next
		}
	}
	if len(jobs) == 0 && top.kids == nil {
		// One worker searches everything, depth first.
		k.setPath("")
		k.emit(f, nil, -1)
		if w.failed.Load() {
			return nil, w.err
		}
		return k.out, nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := w.newWorker()
			defer k.close()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) || w.failed.Load() {
					return
				}
				j := jobs[i]
				j.out = &plan.Tree{}
				if j.old >= 0 {
					n := int(w.old.Dirs[j.old].End - j.old)
					j.out.Dirs = make([]plan.TreeDir, 0, n+n/8+4)
				}
				k.out = j.out
				k.setPath(j.rel)
				if f, ok := k.folder(j.old); ok {
					k.emit(f, j.name, -1)
				}
			}
		}()
	}
	wg.Wait()
	if w.failed.Load() {
		return nil, w.err
	}
	out := &plan.Tree{Links: k.out.Links, Fixed: k.out.Fixed, Shared: k.out.Shared}
	dirs, text := countTop(top, jobs)
	out.Dirs, out.Text = make([]plan.TreeDir, 0, dirs), make([]byte, 0, text)
	assemble(out, top, -1, jobs)
	return out, nil
}

// countTop counts the folders, and the bytes of their names, that
// assemble will append for t.
func countTop(t *topNode, jobs []*job) (dirs, text int) {
	if t.job >= 0 {
		seg := jobs[t.job].out
		return len(seg.Dirs), len(seg.Text)
	}
	dirs, text = 1, len(t.name)
	for _, c := range t.kids {
		d, x := countTop(c, jobs)
		dirs, text = dirs+d, text+x
	}
	return dirs, text
}

// assemble appends the top node t and everything below it to out, in
// preorder, with the workers' subtrees in their places.
func assemble(out *plan.Tree, t *topNode, parent int32, jobs []*job) {
	if t.job >= 0 {
		seg := jobs[t.job].out
		base := int32(len(out.Dirs))
		text, notes := uint32(len(out.Text)), uint32(len(out.Notes))
		for _, d := range seg.Dirs {
			if d.Parent < 0 {
				d.Parent = parent
			} else {
				d.Parent += base
			}
			d.End += base
			d.NameOff += text
			d.NoteOff += notes
			out.Dirs = append(out.Dirs, d)
		}
		out.Text = append(out.Text, seg.Text...)
		out.Notes = append(out.Notes, seg.Notes...)
		out.Links = append(out.Links, seg.Links...)
		out.Fixed = append(out.Fixed, seg.Fixed...)
		out.Shared = append(out.Shared, seg.Shared...)
		out.Entries += seg.Entries
		return
	}
	i := int32(len(out.Dirs))
	d := t.f.rec
	d.Parent = parent
	d.NameOff, d.NameLen = uint32(len(out.Text)), uint8(len(t.name))
	out.Text = append(out.Text, t.name...)
	d.NoteOff, d.NoteLen = uint32(len(out.Notes)), uint16(len(t.f.notes))
	out.Notes = append(out.Notes, t.f.notes...)
	out.Entries += int64(d.Count)
	out.Dirs = append(out.Dirs, d)
	for _, c := range t.kids {
		assemble(out, c, i, jobs)
	}
	out.Dirs[i].End = int32(len(out.Dirs))
}

// anchor is a folder held open so that paths below it stay short: fd is
// open at path[:off].
type anchor struct {
	fd  int
	off int
}

// worker is one goroutine's state: its buffers, the path it is at and
// the tree it appends to.
type worker struct {
	w       *walker
	buf     []byte // getdents
	path    []byte // relative to the root, slash-separated
	cpath   []byte // NUL-terminated scratch
	anchors []anchor
	out     *plan.Tree
}

func (w *walker) newWorker() *worker {
	return &worker{w: w, buf: make([]byte, 32<<10), anchors: []anchor{{fd: w.rootfd, off: 0}}}
}

func (k *worker) close() {
	for _, a := range k.anchors[1:] {
		unix.Close(a.fd)
	}
	k.anchors = k.anchors[:1]
}

// setPath moves the worker to rel (from anywhere).
func (k *worker) setPath(rel string) {
	k.close()
	k.path = append(k.path[:0], rel...)
}

func (k *worker) push(name []byte) int {
	n := len(k.path)
	if n > 0 {
		k.path = append(k.path, '/')
	}
	k.path = append(k.path, name...)
	return n
}

func (k *worker) pop(n int) {
	k.path = k.path[:n]
	for len(k.anchors) > 1 && k.anchors[len(k.anchors)-1].off > n {
		unix.Close(k.anchors[len(k.anchors)-1].fd)
		k.anchors = k.anchors[:len(k.anchors)-1]
	}
}

// maxRel is the longest path the walk hands the kernel: below PATH_MAX
// with room for a name.
const maxRel = 3000

// at returns the descriptor and NUL-terminated path (relative to it) of
// the current folder, holding an anchor further down when the path
// would be too long.
func (k *worker) at() (int, *byte, error) {
	a := k.anchors[len(k.anchors)-1]
	rel := k.path[a.off:]
	if len(rel) > 0 && rel[0] == '/' {
		rel = rel[1:]
	}
	if len(rel) > maxRel {
		// Hold the folder above open: its path from the anchor was
		// short enough when it was visited.
		cut := bytes.LastIndexByte(k.path, '/')
		prel := k.path[a.off:cut]
		if len(prel) > 0 && prel[0] == '/' {
			prel = prel[1:]
		}
		fd, err := openBeneath(a.fd, k.cstr(prel), unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return -1, nil, err
		}
		k.anchors = append(k.anchors, anchor{fd: fd, off: cut})
		a = k.anchors[len(k.anchors)-1]
		rel = k.path[cut+1:]
	}
	if len(rel) == 0 {
		rel = []byte{'.'}
	}
	return a.fd, k.cstr(rel), nil
}

func (k *worker) cstr(b []byte) *byte {
	k.cpath = append(append(k.cpath[:0], b...), 0)
	return &k.cpath[0]
}

func (k *worker) abs() string {
	if len(k.path) == 0 {
		return k.w.root
	}
	return k.w.root + "/" + string(k.path)
}

// emit appends folder f (at the worker's path, called name) and
// everything below it to the worker's tree.
func (k *worker) emit(f folder, name []byte, parent int32) {
	w := k.w
	switch n := w.dirs.Add(1); {
	case n > w.maxDirs:
		w.fail(&LimitError{Root: w.root, Limit: int(w.maxDirs)})
		return
	case n == liftAt:
		liftLimit()
	}
	t := k.out
	i := int32(len(t.Dirs))
	d := f.rec
	d.Parent = parent
	d.NameOff, d.NameLen = uint32(len(t.Text)), uint8(len(name))
	t.Text = append(t.Text, name...)
	d.NoteOff, d.NoteLen = uint32(len(t.Notes)), uint16(len(f.notes))
	t.Notes = append(t.Notes, f.notes...)
	t.Entries += int64(d.Count)
	t.Dirs = append(t.Dirs, d)
	w.each(&f, func(name []byte, old int32) {
		if w.failed.Load() {
			return
		}
		n := k.push(name)
		if cf, ok := k.folder(old); ok {
			k.emit(cf, name, i)
		}
		k.pop(n)
	})
	t.Dirs[i].End = int32(len(t.Dirs))
}

// folder looks at the folder at the worker's path: from the old tree
// when its stamp is the same, else by listing it. It reports false for a
// folder that is gone or is not a folder any more, or on failure (w.err).
func (k *worker) folder(old int32) (folder, bool) {
	w := k.w
	if w.skip != nil && len(k.path) > 0 && w.skip[string(k.path)] {
		// Kept in the tree, marked: a later search that goes in must
		// list it, not take it as empty.
		f := folder{rec: plan.TreeDir{Flags: plan.DirSkipped}, from: -1}
		if dfd, p, err := k.at(); err == nil {
			var sx unix.Statx_t
			if statx(dfd, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, &sx) != nil || sx.Mode&unix.S_IFMT != unix.S_IFDIR {
				return folder{}, false
			}
			f.rec.Dev, f.rec.Ino, f.rec.Ctime = stampOf(&sx)
		}
		return f, true
	}
	reusable := old >= 0 && w.old.Dirs[old].Flags&plan.DirSkipped == 0
	if reusable && w.fix && w.old.Dirs[old].Flags&plan.DirUnlisted != 0 && !w.kept[string(k.path)] {
		// Unknown before, and not kept from the box: look now.
		reusable = false
	}
	if reusable {
		if f, ok, done := k.reuse(old); done {
			return f, ok
		}
	}
	return k.list(old)
}

// reuse takes folder old from the old tree when the folder's stamp is the
// same. done is false when the folder must be listed.
func (k *worker) reuse(old int32) (f folder, ok, done bool) {
	w := k.w
	o := &w.old.Dirs[old]
	if o.Ino == 0 || o.Ctime >= w.old.Taken-recent {
		return folder{}, false, false
	}
	if w.shared && o.Flags&plan.DirShared != 0 {
		// It held a file with more than one link: whether it still
		// does, or has more, only its files can tell.
		return folder{}, false, false
	}
	dfd, p, err := k.at()
	if err != nil {
		return folder{}, false, false // listed, which reports the error
	}
	var sx unix.Statx_t
	if err := statx(dfd, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, &sx); err != nil {
		if gone(err) {
			return folder{}, false, true
		}
		return folder{}, false, false
	}
	if sx.Mode&unix.S_IFMT != unix.S_IFDIR {
		return folder{}, false, true
	}
	dev, ino, ctime := stampOf(&sx)
	if dev != o.Dev || ino != o.Ino || ctime != o.Ctime || !w.trusted(dev) {
		return folder{}, false, false
	}
	f.rec = plan.TreeDir{Dev: dev, Ino: ino, Ctime: ctime, Count: o.Count, Flags: o.Flags &^ plan.DirListed}
	f.notes = w.old.Notes[o.NoteOff : o.NoteOff+uint32(o.NoteLen)]
	f.from = old
	return f, true, true
}

// gone reports whether err says the entry is no longer a folder there
// (removed, or swapped for a symlink or a file meanwhile).
func gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)
}

// list lists the folder at the worker's path.
func (k *worker) list(old int32) (folder, bool) {
	w := k.w
	dfd, p, err := k.at()
	if err != nil {
		if gone(err) {
			return folder{}, false
		}
		w.fail(&WalkError{Op: "opening", Path: k.abs(), Err: err})
		return folder{}, false
	}
	fd, err := openBeneath(dfd, p, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) && w.fix {
		if k.fixMode(dfd, p) {
			dfd, p, _ = k.at()
			fd, err = openBeneath(dfd, p, unix.O_RDONLY|unix.O_DIRECTORY)
		}
	}
	if err != nil {
		switch {
		case gone(err):
			return folder{}, false
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			// What is in it is unknown: marked so, and kept from the box
			// (or, after the run, a failure: see Fix).
			f := folder{rec: plan.TreeDir{Flags: plan.DirListed | plan.DirUnlisted}, from: -1}
			var sx unix.Statx_t
			if statx(dfd, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, &sx) == nil {
				f.rec.Dev, f.rec.Ino, f.rec.Ctime = stampOf(&sx)
			}
			if w.fix {
				w.fail(&WalkError{Op: "listing", Path: k.abs(), Err: err})
				return folder{}, false
			}
			return f, true
		}
		w.fail(&WalkError{Op: "opening", Path: k.abs(), Err: err})
		return folder{}, false
	}
	defer unix.Close(fd)
	var sx unix.Statx_t
	if err := statx(fd, &empty[0], unix.AT_EMPTY_PATH, &sx); err != nil {
		w.fail(&WalkError{Op: "checking", Path: k.abs(), Err: err})
		return folder{}, false
	}
	if w.fix && k.needsSearch(&sx) {
		// Listed, but not searchable by its owner: what is in it cannot
		// be opened. Give the permission back first.
		if err := unix.Fchmod(fd, uint32(sx.Mode&0o7777|0o100)); err == nil {
			k.fixed()
			statx(fd, &empty[0], unix.AT_EMPTY_PATH, &sx)
		}
	}
	f := folder{rec: plan.TreeDir{Flags: plan.DirListed}, from: -1}
	f.rec.Dev, f.rec.Ino, f.rec.Ctime = stampOf(&sx)
	w.learn(f.rec.Dev, fd)
	has := uint8(0) // gitNames seen, by bit
	var text []byte // the folders' names, one after another
	var subs [][2]int
	for {
		n, err := getdents(fd, k.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			w.fail(&WalkError{Op: "listing", Path: k.abs(), Err: err})
			return folder{}, false
		}
		if n <= 0 {
			break
		}
		for off := 0; off < n; {
			// struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2),
			// d_type (1), d_name (NUL-terminated).
			reclen := int(*(*uint16)(unsafe.Pointer(&k.buf[off+16])))
			typ := k.buf[off+18]
			cname := &k.buf[off+19] // NUL-terminated
			name := k.buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if len(name) == 1 && name[0] == '.' || len(name) == 2 && name[0] == '.' && name[1] == '.' {
				continue
			}
			f.rec.Count++
			if x, ok := w.names[string(name)]; ok {
				f.notes = append(f.notes, x)
				if int(x) < len(gitNames) {
					has |= 1 << x
				}
			}
			if typ == unix.DT_UNKNOWN {
				// Some file systems do not fill d_type: ask.
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					switch st.Mode & unix.S_IFMT {
					case unix.S_IFDIR:
						typ = unix.DT_DIR
					case unix.S_IFLNK:
						typ = unix.DT_LNK
					case unix.S_IFREG:
						typ = unix.DT_REG
					}
				} else {
					typ = unix.DT_DIR // unknown: looked at as a folder, which fails closed
				}
			}
			switch typ {
			case unix.DT_DIR:
				subs = append(subs, [2]int{len(text), len(text) + len(name)})
				text = append(text, name...)
			case unix.DT_LNK:
				if w.links {
					k.out.Links = append(k.out.Links, joinRel(string(k.path), string(name)))
				}
			case unix.DT_REG:
				if w.shared && k.isShared(fd, cname, name) {
					f.rec.Flags |= plan.DirShared
				}
			}
		}
	}
	if isGitDir(func(n string) bool { return has&(1<<slices.Index(gitNames, n)) != 0 }) {
		f.rec.Flags |= plan.DirGit
	}
	if len(subs) > 0 && !k.searchable(fd, &sx) {
		// Listed, but not searchable: nothing in it can be opened, by
		// the walk or by git. What is in it is unknown.
		if w.fix {
			w.fail(&WalkError{Op: "searching", Path: k.abs(), Err: unix.EACCES})
			return folder{}, false
		}
		f.rec.Flags |= plan.DirUnlisted
		return f, true
	}
	f.kids = make([]kid, 0, len(subs))
	for _, s := range subs {
		f.kids = append(f.kids, kid{name: text[s[0]:s[1]:s[1]], old: -1})
	}
	slices.SortFunc(f.kids, func(a, b kid) int { return bytes.Compare(a.name, b.name) })
	if old >= 0 {
		// The old tree's folders in it, matched by name (both in name
		// order), so an unchanged folder below a changed one is still
		// taken from it.
		j := old + 1
		end := w.old.Dirs[old].End
		for i := range f.kids {
			for j < end && bytes.Compare(w.old.NameBytes(int(j)), f.kids[i].name) < 0 {
				j = w.old.Dirs[j].End
			}
			if j < end && bytes.Equal(w.old.NameBytes(int(j)), f.kids[i].name) {
				f.kids[i].old = j
			}
		}
	}
	return f, true
}

// isShared looks at the regular file name (cname, NUL-terminated) in the
// folder open at fd and notes it in Tree.Shared when it has more than
// one link and the box could write it: its user's own (who can give
// himself the write permission), or writable by group or others. A file
// that cannot be looked at for another reason is noted too: whether it
// is shared is unknown.
func (k *worker) isShared(fd int, cname *byte, name []byte) bool {
	var sx unix.Statx_t
	err := statxMask(fd, cname, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_UID|unix.STATX_NLINK, &sx)
	switch {
	case err != nil && gone(err):
		return false // removed or replaced meanwhile: not a file now
	case err != nil && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)):
		// The folder cannot be searched: nor can the box open the file
		// (the folder is kept from it as unlisted).
		return false
	case err == nil && (sx.Mode&unix.S_IFMT != unix.S_IFREG || sx.Nlink <= 1):
		return false
	case err == nil && int(sx.Uid) != k.w.uid && sx.Mode&0o022 == 0:
		return false // the box can neither write it nor make it writable
	}
	k.out.Shared = append(k.out.Shared, joinRel(string(k.path), string(name)))
	return true
}

// searchable reports whether the folder open at fd can be searched (its
// entries opened) by this process.
func (k *worker) searchable(fd int, sx *unix.Statx_t) bool {
	switch {
	case k.w.uid == 0:
		return true
	case int(sx.Uid) == k.w.uid:
		return sx.Mode&0o100 != 0
	}
	return unix.Faccessat(fd, ".", unix.X_OK, 0) == nil
}

var empty = [1]byte{0}

// needsSearch reports whether a folder of the user's own (not root's
// world: root searches anything) lacks the owner's search permission.
func (k *worker) needsSearch(sx *unix.Statx_t) bool {
	return k.w.uid != 0 && int(sx.Uid) == k.w.uid && sx.Mode&0o100 == 0
}

// fixMode gives the folder at the worker's path, when it is the user's
// own, the owner's read and search permission, which the box may have
// taken away to hide what it planted; it reports whether it did.
func (k *worker) fixMode(dfd int, p *byte) bool {
	fd, err := openBeneath(dfd, p, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var sx unix.Statx_t
	if statx(fd, &empty[0], unix.AT_EMPTY_PATH, &sx) != nil || int(sx.Uid) != k.w.uid || sx.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	// A descriptor opened with O_PATH cannot be passed to fchmod; its
	// /proc/self/fd link names the very folder.
	if unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(sx.Mode&0o7777|0o500)) != nil {
		return false
	}
	k.fixed()
	return true
}

func (k *worker) fixed() {
	k.out.Fixed = append(k.out.Fixed, string(k.path))
}

// stampOf is a folder's identity and change time.
func stampOf(sx *unix.Statx_t) (dev, ino uint64, ctime int64) {
	return uint64(sx.Dev_major)<<32 | uint64(sx.Dev_minor), sx.Ino,
		sx.Ctime.Sec*1_000_000_000 + int64(sx.Ctime.Nsec)
}

// The walk's system calls on a local folder return at once; made raw,
// they skip the Go scheduler's bookkeeping for a call that may block,
// which otherwise costs more than the call itself over tens of thousands
// of folders. Paths are passed as NUL-terminated bytes the walk already
// holds, so no call allocates.

func statx(dfd int, p *byte, flags int, sx *unix.Statx_t) error {
	return statxMask(dfd, p, flags, unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_UID|unix.STATX_INO|unix.STATX_CTIME, sx)
}

func statxMask(dfd int, p *byte, flags, mask int, sx *unix.Statx_t) error {
	_, _, e := unix.RawSyscall6(unix.SYS_STATX, uintptr(dfd), uintptr(unsafe.Pointer(p)), uintptr(flags),
		uintptr(mask), uintptr(unsafe.Pointer(sx)), 0)
	if e != 0 {
		return e
	}
	return nil
}

func getdents(fd int, buf []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// noOpenat2 is set once the kernel has said it has no openat2 (before
// 5.6).
var noOpenat2 atomic.Bool

// openBeneath opens p (relative to dfd, NUL-terminated) following no
// symlink in any component.
func openBeneath(dfd int, p *byte, flags int) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH}
		r, _, e := unix.RawSyscall6(unix.SYS_OPENAT2, uintptr(dfd), uintptr(unsafe.Pointer(p)),
			uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
		switch {
		case e == 0:
			return int(r), nil
		case e == unix.ENOSYS:
			noOpenat2.Store(true)
		case e == unix.EAGAIN || e == unix.EINTR:
			// A rename elsewhere raced the lookup: once more, one step
			// at a time.
		default:
			return -1, e
		}
	}
	return openSteps(dfd, unix.BytePtrToString(p), flags)
}

// openSteps opens rel one component at a time, each with O_NOFOLLOW.
func openSteps(dfd int, rel string, flags int) (int, error) {
	cur := dfd
	defer func() {
		if cur != dfd {
			unix.Close(cur)
		}
	}()
	for {
		name, rest, more := cutSlash(rel)
		if !more {
			return unix.Openat(cur, name, flags, 0)
		}
		next, err := unix.Openat(cur, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		if cur != dfd {
			unix.Close(cur)
		}
		cur, rel = next, rest
	}
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
