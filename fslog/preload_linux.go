//go:build linux && (amd64 || arm64)

package fslog

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// The rate at which agentbox judges the preloaded library's records, in
// all: a box that floods the socket gets the rest counted, not judged.
// Each process of the box sends at most 1,000 a second after a burst of
// 256 (preload.c), so this bounds what many processes together cost.
const (
	preloadRate  = 2000 // records a second
	preloadBurst = 1000
)

// listenPreload prepares the run's folder dir (made fresh by the
// supervisor, for the user alone) for the preloaded log: it writes the
// library for each platform, and binds the socket the library sends its
// records to. It returns the socket. With pipe (Landlock) it makes a pipe
// instead, and returns its read end and its write end (O_NONBLOCK: a full
// pipe drops a record, it never stops a program), whose inode it writes
// to dir's file plan.PreloadPipe.
func listenPreload(dir string, pipe bool) (int, int, error) {
	s, err := listenPreloadSocket(dir, pipe)
	if !pipe || err != nil {
		return s, -1, err
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return -1, -1, fmt.Errorf("making its pipe: %w", err)
	}
	var st unix.Stat_t
	err = unix.Fstat(fds[1], &st)
	if err == nil {
		unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, 1<<20)
		err = writeFile(dir, plan.PreloadPipe, []byte(strconv.FormatUint(st.Ino, 10)))
	}
	if err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return -1, -1, fmt.Errorf("making its pipe: %w", err)
	}
	return fds[0], fds[1], nil
}

// writeFile writes a file of the user's own (read-only) into dir.
func writeFile(dir, name string, b []byte) error {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	f, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return err
	}
	defer unix.Close(f)
	if n, err := unix.Write(f, b); err != nil || n != len(b) {
		return fmt.Errorf("writing %s/%s: %v", dir, name, err)
	}
	return nil
}

// listenPreloadSocket checks dir and writes the libraries into it, then
// binds the socket (not with pipe: -1).
func listenPreloadSocket(dir string, pipe bool) (int, error) {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening its folder %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return -1, fmt.Errorf("opening its folder %s: %w", dir, err)
	}
	if st.Uid != uint32(os.Geteuid()) || st.Mode&0o077 != 0 {
		return -1, fmt.Errorf("its folder %s is not yours alone", dir)
	}
	if err := placeLibraries(dfd, dir); err != nil {
		return -1, err
	}
	if pipe {
		return -1, nil
	}
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("making its socket: %w", err)
	}
	// Bound through the folder's descriptor: the folder opened above,
	// whatever its path's length.
	if err := unix.Bind(s, &unix.SockaddrUnix{Name: "/proc/self/fd/" + strconv.Itoa(dfd) + "/" + plan.PreloadSocket}); err != nil {
		unix.Close(s)
		return -1, fmt.Errorf("making its socket in %s: %w", dir, err)
	}
	// The kernel names each record's sender (SCM_CREDENTIALS): what the
	// box writes in a record cannot change whose it is.
	if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(s)
		return -1, fmt.Errorf("making its socket: %w", err)
	}
	unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20)
	return s, nil
}

// SharedLibraries is the folder, beside the runs' own folders for the
// preloaded log, that keeps one copy of each library for every run to
// link into its folder (placeLibraries).
const SharedLibraries = "preload-libraries"

// placeLibraries puts the library for each platform into the run's fresh
// folder dir, open as dfd: a second name for the copy kept in
// SharedLibraries beside dir, once that copy has been verified, else a
// copy of its own. Writing two libraries into a new folder every run cost
// two new inodes and their data; a link costs a name.
//
// The kept copy is used only when it is verified at this run, by
// identity and by content: a regular file of the user's, mode 0444, with
// no other name (no other run links it now, nothing can write it through a
// second name), whose bytes are the library's, in a folder of the user's
// alone; and the name linked is the descriptor verified (not the path
// again), checked after the link by device and inode. Anything else (a
// file another user, a box or a half-finished write left, a symlink,
// another version's library) is not used: the kept copy is written anew,
// and when that fails too, dir gets a copy of its own.
func placeLibraries(dfd int, dir string) error {
	if err := linkLibraries(dfd, filepath.Dir(dir)); err == nil {
		return nil
	}
	return writeLibraries(dfd, dir)
}

// linkLibraries links the verified kept copy of each library into dfd.
// On an error, what it linked is removed again.
func linkLibraries(dfd int, parent string) (err error) {
	var linked []string
	defer func() {
		if err != nil {
			for _, n := range linked {
				unix.Unlinkat(dfd, n, 0)
			}
		}
	}()
	pfd, err := unix.Open(parent, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, SharedLibraries, 0o700); err != nil && err != unix.EEXIST {
		return err
	}
	cfd, err := unix.Openat(pfd, SharedLibraries, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(cfd)
	var st unix.Stat_t
	if err := unix.Fstat(cfd, &st); err != nil {
		return err
	}
	if st.Uid != uint32(os.Geteuid()) || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o077 != 0 {
		return fmt.Errorf("%s/%s is not a folder of yours alone", parent, SharedLibraries)
	}
	for platform, lib := range preloadLibraries {
		name := "agentbox-fslog-" + platform + ".so"
		fd, err := keptLibrary(cfd, name, lib)
		if err != nil {
			return err
		}
		err = linkVerified(fd, dfd, name)
		unix.Close(fd)
		if err != nil {
			return err
		}
		linked = append(linked, name)
	}
	return nil
}

// keptLibrary returns a descriptor of the kept copy name in cfd, verified
// to hold lib (verifiedLibrary), writing it anew when what is there does
// not verify.
func keptLibrary(cfd int, name string, lib []byte) (int, error) {
	if fd, err := unix.Openat(cfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		if verifiedLibrary(fd, lib) {
			return fd, nil
		}
		unix.Close(fd)
	}
	// A new file under a name no one can have made ahead of time, renamed
	// over whatever stood at name: a run that linked the old one keeps
	// its own.
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return -1, err
	}
	tmp := ".new-" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(cfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return -1, err
	}
	fail := func(err error) (int, error) {
		unix.Close(fd)
		unix.Unlinkat(cfd, tmp, 0)
		return -1, err
	}
	for b := lib; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err != nil {
			return fail(err)
		}
		b = b[n:]
	}
	// The umask may have taken bits off: the mode is part of what is
	// verified.
	if err := unix.Fchmod(fd, 0o444); err != nil {
		return fail(err)
	}
	if !verifiedLibrary(fd, lib) {
		return fail(fmt.Errorf("the new copy of %s does not verify", name))
	}
	if err := unix.Renameat(cfd, tmp, cfd, name); err != nil {
		return fail(err)
	}
	return fd, nil
}

// verifiedLibrary reports whether fd is a regular file of the user's,
// mode 0444, with one name, holding exactly lib.
func verifiedLibrary(fd int, lib []byte) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o7777 != 0o444 ||
		st.Uid != uint32(os.Geteuid()) || st.Nlink != 1 || st.Size != int64(len(lib)) {
		return false
	}
	buf := make([]byte, len(lib)+1)
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if m == 0 {
			break
		}
		n += m
	}
	return bytes.Equal(buf[:n], lib)
}

// linkVerified gives the file open as fd the name name in dfd (a new
// name: O_EXCL's), through the descriptor, and checks that the name is
// that file.
func linkVerified(fd, dfd int, name string) error {
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dfd, name, unix.AT_SYMLINK_FOLLOW); err != nil {
		return err
	}
	var want, got unix.Stat_t
	if unix.Fstat(fd, &want) != nil || unix.Fstatat(dfd, name, &got, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		want.Dev != got.Dev || want.Ino != got.Ino {
		unix.Unlinkat(dfd, name, 0)
		return fmt.Errorf("the link to %s is not the verified file", name)
	}
	return nil
}

// writeLibraries writes the library for each platform into the folder
// dir, open as dfd; one already there is left as it is.
func writeLibraries(dfd int, dir string) error {
	for platform, lib := range preloadLibraries {
		name := "agentbox-fslog-" + platform + ".so"
		f, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return fmt.Errorf("writing %s/%s: %w", dir, name, err)
		}
		for b := lib; len(b) > 0; {
			n, err := unix.Write(f, b)
			if err != nil {
				unix.Close(f)
				return fmt.Errorf("writing %s/%s: %w", dir, name, err)
			}
			b = b[n:]
		}
		unix.Close(f)
	}
	return nil
}

// WritePreload makes the folder dir (for the user alone) and writes the
// preloaded log's libraries into it, with no socket: what `agentbox plan
// --argv` runs first, so that the printed command line runs as is (the
// library's records then go nowhere).
func WritePreload(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	return writeLibraries(dfd, dir)
}

// preloadServer judges one run's preloaded records.
type preloadServer struct {
	fd int
	// root is the box's root folder (O_PATH), found at the first record
	// (boxRoot); landlock says the box has the host's.
	root     int
	landlock bool
	// pipe says fd is the read end of the pipe (Landlock), whose frames
	// carry the pid their sender wrote; else the socket, whose datagrams
	// carry the kernel's.
	pipe bool
	// first is the box's first process (bwrap, or the Landlock child),
	// once it has started.
	first *atomic.Int64
	judge Judge
	ev    event.Emitter
	seen  *dedup
	// keys are the records already judged, for a box that repeats one.
	keys map[string]bool
	// lost counts the refusals the box's processes did not send (past
	// their rate, or with the socket full), as their records said; over
	// those agentbox did not judge (past its own rate); bad the
	// datagrams that were no record; blind those that came when the
	// box's root could not be found.
	lost, over, bad, blind uint64
	tokens                 float64
	last                   time.Time
}

// serve judges records as they come, until the socket's read deadline
// (Stop), then what is queued still: the box has ended, so everything it
// sent is.
func (s *preloadServer) serve(rc syscall.RawConn) {
	buf := make([]byte, 16+6*(maxRecordPath+1)+1)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	s.tokens, s.last = preloadBurst, time.Now()
	rc.Read(func(uintptr) bool {
		for s.one(buf, oob) {
		}
		return false // wait for more
	})
	for s.one(buf, oob) {
	}
}

// one receives and judges one record; false when none is waiting.
func (s *preloadServer) one(buf, oob []byte) bool {
	n, oobn, flags, _, err := unix.Recvmsg(s.fd, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err == unix.EINTR {
		return true
	}
	if err != nil {
		return false
	}
	pid := 0
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if cred, err := unix.ParseUnixCredentials(&m); err == nil {
				pid = int(cred.Pid)
			}
		}
	}
	if flags&unix.MSG_TRUNC != 0 {
		s.bad++
		return true
	}
	s.record(buf[:n], pid)
	return true
}

// The frames of the pipe (Landlock): each is one write(2) of at most
// PIPE_BUF bytes, which the kernel never interleaves with another's: its
// length (the whole frame's, in 4 bytes), the pid the sender says it has
// (4 bytes), then a record as the socket's datagrams hold it, all in the
// machine's byte order (little-endian).
const (
	pipeBuf   = 4096
	frameHead = 8
)

// serveFrames judges the frames of the pipe as they come, until its read
// deadline (Stop), then what is queued still.
func (s *preloadServer) serveFrames(rc syscall.RawConn) {
	buf := make([]byte, 0, 1<<16)
	s.tokens, s.last = preloadBurst, time.Now()
	rc.Read(func(uintptr) bool {
		for s.frames(&buf) {
		}
		return false // wait for more
	})
	for s.frames(&buf) {
	}
}

// frames reads what the pipe holds into buf (after the part of a frame
// left from the last read) and judges each whole frame; false when nothing
// was waiting. Any process of the box can write to the pipe: a frame whose
// length is no frame's drops what was read with it (the next read starts
// wherever the writers are).
func (s *preloadServer) frames(buf *[]byte) bool {
	b := *buf
	n, err := unix.Read(s.fd, b[len(b):cap(b)])
	if err == unix.EINTR {
		return true
	}
	if err != nil || n <= 0 {
		return false
	}
	b = b[:len(b)+n]
	for len(b) >= frameHead {
		size := int(binary.LittleEndian.Uint32(b))
		if size < frameHead+16 || size > pipeBuf {
			s.bad++
			b = b[:0]
			break
		}
		if len(b) < size {
			break
		}
		s.record(b[frameHead:size], int(int32(binary.LittleEndian.Uint32(b[4:]))))
		b = b[size:]
	}
	*buf = append((*buf)[:0], b...)
	return true
}

// record judges one record of the process pid: the kernel's word for a
// datagram, the sender's own in a frame of the pipe (s.pipe).
func (s *preloadServer) record(b []byte, pid int) {
	r, ok := parseRecord(b)
	if !ok || pid <= 0 {
		s.bad++
		return
	}
	s.lost += uint64(r.lost)
	if r.op == "" {
		return // only a count of what was lost
	}
	if !s.take() {
		s.over++
		return
	}
	key := r.key()
	if s.keys[key] {
		return
	}
	if len(s.keys) < maxSeen {
		s.keys[key] = true
	}
	if s.root < 0 {
		if s.root = s.boxRoot(pid); s.root < 0 {
			s.blind++
			return
		}
	}
	a := Attempt{Pid: pid, Syscall: r.call, Op: r.op, Flags: r.flags}
	// The source of a rename or link is judged where it is now; a link
	// to a symbolic link is made of the link itself.
	follow := !r.noFollow && r.path[1] == ""
	a.Targets = append(a.Targets, resolveIn(s.root, r.path[0], r.absolute(0), follow))
	if r.path[1] != "" {
		a.Targets = append(a.Targets, resolveIn(s.root, r.path[1], r.absolute(1), false))
	}
	e, refused := s.judge(a)
	if refused && s.seen.first(e) {
		if s.pipe {
			// The pid is only what the sender wrote: agentbox does not
			// look at another process it may name.
			e.Process = claimedName(r.prog, pid)
		} else {
			e.Process = processName(pid)
			if strings.HasPrefix(e.Process, "? ") && r.prog != "" {
				// Gone already: the name it gave itself.
				e.Process = processLabel(r.prog, pid, "")
			}
		}
		s.ev.Emit(e)
	}
}

// claimedName names the sender of a frame of the pipe as it named itself.
func claimedName(prog string, pid int) string { return processLabel(prog, pid, "") }

// boxRoot opens the box's root folder: the host's under Landlock (the
// box cannot chroot: that needs a capability no boxed process has); under
// bwrap, the root of bwrap's child, the box's pid 1, which lives as long
// as the box. When that cannot be read (the box has ended before agentbox
// read its first record), the root of the record's sender if it still
// runs, else the host's: the box's mounts put its folders at their own
// paths, so only what a mount hides or replaces (/tmp, a hidden folder)
// resolves differently there.
func (s *preloadServer) boxRoot(sender int) int {
	open := func(p string) int {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1
		}
		return fd
	}
	if s.landlock {
		return open("/")
	}
	if first := int(s.first.Load()); first > 0 {
		f := strconv.Itoa(first)
		if kids, err := os.ReadFile("/proc/" + f + "/task/" + f + "/children"); err == nil {
			if k := strings.Fields(string(kids)); len(k) > 0 {
				if fd := open("/proc/" + k[0] + "/root"); fd >= 0 {
					return fd
				}
			}
		}
	}
	if s.pipe {
		// Never the sender's: a frame's pid is what its sender wrote.
		return open("/")
	}
	if fd := open("/proc/" + strconv.Itoa(sender) + "/root"); fd >= 0 {
		return fd
	}
	return open("/")
}

// take reports whether a record may be judged now: a token bucket of
// preloadBurst records refilled at preloadRate a second.
func (s *preloadServer) take() bool {
	now := time.Now()
	s.tokens = min(preloadBurst, s.tokens+now.Sub(s.last).Seconds()*preloadRate)
	s.last = now
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

// done says, once the run is over, what was not recorded.
func (s *preloadServer) done() {
	if s.root >= 0 {
		unix.Close(s.root)
	}
	if n := s.lost + s.over + s.blind; n > 0 {
		why := ""
		if s.pipe {
			why = ", or a record was longer than the pipe takes at once (4,096 bytes)"
		}
		s.ev.Emit(event.Event{Kind: event.Warning, Detail: fmt.Sprintf(
			"filesystem log: %d refusals were not recorded: the box made them faster than the log takes them "+
				"(each process reports at most 1,000 a second, and agentbox judges at most %d a second)%s", n, preloadRate, why)})
	}
	if s.bad > 0 {
		what := "socket"
		if s.pipe {
			what = "pipe"
		}
		s.ev.Emit(event.Event{Kind: event.Warning, Detail: fmt.Sprintf(
			"filesystem log: %d messages on its %s were not records of the preloaded library, and were ignored", s.bad, what)})
	}
}
