package mount

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A root box's own device nodes (see Render). bwrap's --dev binds the
// host's /dev/null, zero, full, random, urandom and tty into the box, and a
// root box owns them there. So agentbox run starts bwrap from a thread in a
// mount namespace of its own, private (nothing mounted in it reaches the
// host, and no mount the host makes while the box runs reaches the box),
// with a tmpfs over /dev that holds a new node for each, of the host
// node's device and mode: those are what bwrap's --dev binds.
// They last as long as the run: what a box does to its nodes reaches
// neither the host nor another box. With a terminal on stdout, which bwrap
// binds at /dev/console when it finds it under /dev (here it does not: the
// tmpfs has no /dev/pts), a node of the terminal's device is made at
// consoleNode and bound at /dev/console.

// consoleNode is the box's own node of the terminal on stdout, in the
// tmpfs over /dev that bwrap's namespace has (a path bwrap resolves there).
const consoleNode = "/dev/.agentbox-console"

// hostNode is a device node to make: its name under /dev, the host node's
// permission bits, device number, owner and group. With the owner and
// group the node gives a process in the box no access the host's node
// would not (a root box is not the owner of a terminal another user
// owns, so it cannot open it for reading).
type hostNode struct {
	path     string
	perm     uint32
	rdev     uint64
	uid, gid uint32
}

// devNodes are the nodes a root run's box gets.
type devNodes struct {
	nodes   []hostNode
	console *hostNode // the terminal on stdout, or nil
	// grants are the host paths under /dev that the box binds (a
	// policy's grant: --writable /dev/shm). bwrap finds a bind's source
	// by its path in the namespace it starts in, where the tmpfs covers
	// the host's /dev: each is bound there at its path, the host's own.
	grants []string
}

// hostDevNodes looks up each of the host's nodes that bwrap's --dev binds,
// and with console the terminal on stdout (by its descriptor): each must
// be a character device.
func hostDevNodes(console bool) (*devNodes, error) {
	d := &devNodes{}
	for _, n := range devNodeNames {
		p := path.Join("/dev", n)
		st, err := charDevice(p)
		if err != nil {
			return nil, err
		}
		d.nodes = append(d.nodes, hostNode{path: p, perm: st.Mode & 0o7777, rdev: st.Rdev, uid: st.Uid, gid: st.Gid})
	}
	if console {
		// The terminal itself, by its descriptor: its name
		// (/proc/self/fd/1's link, /dev/pts/N) can be another node
		// in this mount namespace, another terminal or device.
		var st unix.Stat_t
		if err := unix.Fstat(1, &st); err != nil {
			return nil, &os.PathError{Op: "fstat", Path: "the terminal on stdout", Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR {
			return nil, errors.New("the terminal on stdout is not a character device")
		}
		d.console = &hostNode{path: consoleNode, perm: st.Mode & 0o7777, rdev: st.Rdev, uid: st.Uid, gid: st.Gid}
	}
	return d, nil
}

// charDevice stats path, which must be a character device.
func charDevice(path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return st, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return st, fmt.Errorf("%s is not a character device", path)
	}
	return st, nil
}

// forkWithNodes starts bwrap as syscall.ForkExec does, from a thread of
// its own in a new mount namespace, private, with a tmpfs
// over /dev holding d's nodes. The thread stays until release is closed
// (bwrap's parent-death signal follows the thread that forked it), and
// then ends with its namespace: it is never unlocked, so the Go runtime
// ends it rather than run anything else on it. Never the process's main
// thread: its namespace is the one /proc/self shows every thread (its
// mountinfo, root, ns), and Go does not end that thread but parks it.
func forkWithNodes(bwrap string, argv []string, attr *syscall.ProcAttr, d *devNodes, release <-chan struct{}) (int, error) {
	type started struct {
		pid int
		err error
	}
	sc := make(chan started, 1)
	var work func(onOther chan<- struct{})
	work = func(onOther chan<- struct{}) {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread, held locked (so unused) until the
			// work has locked another thread, then left unchanged.
			other := make(chan struct{})
			go work(other)
			<-other
			runtime.UnlockOSThread()
			return
		}
		if onOther != nil {
			close(onOther)
		}
		pid, err := func() (int, error) {
			// CLONE_NEWNS unshares the thread's root and working
			// folder with it: nothing else of agentbox is affected.
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return 0, nodesError{fmt.Errorf("unshare: %w", err)}
			}
			// Private, not a slave of the host's: nothing mounted
			// here reaches the host, and nothing the host mounts
			// while the box runs reaches bwrap's namespace, a
			// slave of this one. A host mount under a path the box
			// has read-only (a USB stick under /media, an sshfs in
			// the home folder) would come into the box writable.
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return 0, nodesError{fmt.Errorf("making / private: %w", err)}
			}
			// The granted paths under /dev, opened before the tmpfs
			// covers them, in this namespace (a bind's source must
			// be a mount of the namespace it is made in).
			grants, err := openGrants(d.grants)
			defer func() {
				for _, g := range grants {
					unix.Close(g.fd)
				}
			}()
			if err != nil {
				return 0, nodesError{err}
			}
			// The host's /dev and what is mounted in it (its devpts,
			// /dev/shm, ...) are never seen in the box, whose /dev is
			// bwrap's --dev: taken out of this namespace, they are out
			// of the mount table bwrap reads after every bind. Where
			// /dev is no mount of its own this does nothing, and the
			// tmpfs covers it all the same. Not with a grant there,
			// whose mount must stay in the namespace to be bound.
			if len(grants) == 0 {
				unix.Unmount("/dev", unix.MNT_DETACH) //nolint:errcheck // see above
			}
			// Not nodev: the nodes must open.
			if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755"); err != nil {
				return 0, nodesError{fmt.Errorf("a tmpfs on /dev: %w", err)}
			}
			nodes := d.nodes
			if d.console != nil {
				nodes = append(nodes[:len(nodes):len(nodes)], *d.console)
			}
			for _, n := range nodes {
				if err := makeNode(n); err != nil {
					return 0, nodesError{err}
				}
			}
			for _, g := range grants {
				if err := bindGrant(g); err != nil {
					return 0, nodesError{err}
				}
			}
			return syscall.ForkExec(bwrap, argv, attr)
		}()
		sc <- started{pid, err}
		if err == nil {
			<-release
		}
	}
	go work(nil)
	s := <-sc
	return s.pid, s.err
}

// grant is a path under /dev the box binds, opened (O_PATH) in the
// namespace of the box's device nodes.
type grant struct {
	path string
	fd   int
	dir  bool
}

// openGrants opens each path, not following a link at its end.
func openGrants(paths []string) ([]grant, error) {
	var out []grant
	for _, p := range paths {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return out, &os.PathError{Op: "open", Path: p, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return out, &os.PathError{Op: "stat", Path: p, Err: err}
		}
		out = append(out, grant{path: p, fd: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	return out, nil
}

// bindGrant binds g, the host's, at its path in the tmpfs over /dev,
// making the folders above it and a folder or an empty file to bind on.
// The box's init checks that every bind is the very file agentbox
// opened: a path swapped meanwhile makes the box refuse to start.
func bindGrant(g grant) error {
	if err := os.MkdirAll(filepath.Dir(g.path), 0o755); err != nil {
		return err
	}
	var err error
	if g.dir {
		err = unix.Mkdir(g.path, 0o755)
	} else {
		err = unix.Mknod(g.path, unix.S_IFREG|0o600, 0)
	}
	if err != nil && err != unix.EEXIST {
		return &os.PathError{Op: "making a mount point", Path: g.path, Err: err}
	}
	src := "/proc/self/fd/" + strconv.Itoa(g.fd)
	if err := unix.Mount(src, g.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return &os.PathError{Op: "binding the host's", Path: g.path, Err: err}
	}
	return nil
}

// nodesError is forkWithNodes's failure to make the mount namespace and
// its nodes (not to start bwrap).
type nodesError struct{ err error }

func (e nodesError) Error() string { return e.err.Error() }
func (e nodesError) Unwrap() error { return e.err }

// makeNode makes n, with exactly the host's owner, group and permission
// bits (not those the umask leaves), and checks what it made.
func makeNode(n hostNode) error {
	if err := unix.Mknod(n.path, unix.S_IFCHR|n.perm, int(n.rdev)); err != nil {
		return &os.PathError{Op: "mknod", Path: n.path, Err: err}
	}
	if err := unix.Lchown(n.path, int(n.uid), int(n.gid)); err != nil {
		return &os.PathError{Op: "chown", Path: n.path, Err: err}
	}
	// After the chown, which may clear setuid and setgid bits.
	if err := unix.Chmod(n.path, n.perm); err != nil {
		return &os.PathError{Op: "chmod", Path: n.path, Err: err}
	}
	st, err := charDevice(n.path)
	if err != nil {
		return err
	}
	if st.Mode&0o7777 != n.perm || st.Rdev != n.rdev || st.Uid != n.uid || st.Gid != n.gid {
		return fmt.Errorf("%s: made mode %o device %d owner %d:%d, want %o %d %d:%d", n.path, st.Mode&0o7777, st.Rdev, st.Uid, st.Gid, n.perm, n.rdev, n.uid, n.gid)
	}
	return nil
}

// sweepDevDirs removes from parent (<state>/dev) the folders of device
// nodes that earlier versions of agentbox (and shells running their
// agentbox plan --argv) left there, once they are a minute old: no run
// uses them any more. parent is opened once without following a symlink
// on its path and must be agentbox's user's alone; everything is then
// removed through that descriptor, never by path again, so whoever swaps
// a folder on the way for a symlink meanwhile makes it fail, never land
// elsewhere. A parent that is not so is left as it is.
func sweepDevDirs(parent string) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, parent, &how)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return
	}
	// The folder the descriptor holds, as an os.Root: nothing below it
	// resolves out of it.
	root, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return
	}
	defer root.Close()
	f, err := root.Open(".")
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	var here unix.Stat_t
	serr := unix.Fstat(int(f.Fd()), &here)
	f.Close()
	if serr != nil || here.Dev != st.Dev || here.Ino != st.Ino {
		return
	}
	for _, n := range names {
		if info, err := root.Lstat(n); err == nil && time.Since(info.ModTime()) > time.Minute {
			root.RemoveAll(n)
		}
	}
}

// nodesPrefix starts the probe's answer when the mount namespace of a
// root run's device nodes could not be made (fixFor).
const nodesPrefix = "the mount namespace of the box's device nodes: "

// probeWithNodes is probe for root: bwrap's trivial box started as a
// root run starts it, from forkWithNodes. It returns why it failed, ""
// when it worked.
func probeWithNodes(path string) string {
	d, err := hostDevNodes(false)
	if err != nil {
		return nodesPrefix + err.Error()
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err.Error()
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err.Error()
	}
	defer r.Close()
	env := append(os.Environ(), "LC_ALL=C")
	attr := &syscall.ProcAttr{Env: env, Files: []uintptr{null.Fd(), w.Fd(), w.Fd()},
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	release := make(chan struct{})
	defer close(release)
	pid, err := forkWithNodes(path, append([]string{path}, ProbeArgs...), attr, d, release)
	w.Close()
	if err != nil {
		if errors.As(err, new(nodesError)) {
			return nodesPrefix + err.Error()
		}
		return err.Error()
	}
	outc := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 1<<16))
		outc <- b
	}()
	type waited struct {
		ws  unix.WaitStatus
		err error
	}
	waitc := make(chan waited, 1)
	go func() {
		var w waited
		for {
			if _, w.err = unix.Wait4(pid, &w.ws, 0, nil); w.err != unix.EINTR {
				break
			}
		}
		waitc <- w
	}()
	var wt waited
	select {
	case wt = <-waitc:
	case <-time.After(probeTimeout):
		unix.Kill(-pid, unix.SIGKILL)
		<-waitc
		return "did not finish within " + probeTimeout.String()
	}
	if wt.err != nil {
		return "waiting for bwrap: " + wt.err.Error()
	}
	ws := wt.ws
	out := <-outc
	if ws.Exited() && ws.ExitStatus() == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return strings.TrimPrefix(last, "bwrap: ")
	}
	if ws.Signaled() {
		return "bwrap was killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("bwrap exited %d", ws.ExitStatus())
}
