package hostexec

import (
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// ReadIndex reads the tree the last search of root left in the state
// folder state (IndexFile), or nil. Only a file that nobody but the user
// could have written is read: the state folder, its index folder and the
// file are each opened by descriptor without following a symlink, and
// each must belong to the user and be writable by no one else.
func ReadIndex(state, root string) *plan.Tree {
	if state == "" {
		return nil
	}
	file := IndexFile(state, root)
	sfd, err := unix.Open(state, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(sfd)
	if !ownOnly(sfd) {
		return nil
	}
	ifd, err := unix.Openat(sfd, filepath.Base(filepath.Dir(file)), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(ifd)
	if !ownOnly(ifd) {
		return nil
	}
	fd, err := unix.Openat(ifd, filepath.Base(file), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !ownOnly(fd) || st.Size > 1<<31 {
		return nil
	}
	data := make([]byte, st.Size)
	for off := 0; off < len(data); {
		n, err := unix.Pread(fd, data[off:], int64(off))
		if err != nil || n <= 0 {
			return nil
		}
		off += n
	}
	return DecodeIndex(data, root)
}

// ownOnly reports whether the file open at fd belongs to this user and
// nobody else can write it.
func ownOnly(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && int(st.Uid) == unix.Geteuid() && st.Mode&0o022 == 0
}
