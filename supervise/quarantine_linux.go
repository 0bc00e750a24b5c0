package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// quarantine moves what the box left where a host program would run it
// into agentbox's own state folder, <state>/quarantine/<run>/, where the
// box never reaches (it is not in a writable root, or is kept read-only
// there) and whose names the box could not have made in advance.
type quarantine struct {
	state string
	run   string
	dir   int // the run's quarantine folder, opened on first use; -1 before
	path  string
	n     int
}

func newQuarantine(state, run string) *quarantine {
	return &quarantine{state: state, run: run, dir: -1}
}

func (q *quarantine) close() {
	if q.dir >= 0 {
		unix.Close(q.dir)
		q.dir = -1
	}
}

// open opens (making it if needed) the run's quarantine folder, checking
// every step: folders of the calling user, not symlinks, not writable by
// others.
func (q *quarantine) open() (int, error) {
	if q.dir >= 0 {
		return q.dir, nil
	}
	if q.state == "" {
		return -1, errors.New("no state folder")
	}
	if err := os.MkdirAll(q.state, 0o700); err != nil {
		return -1, err
	}
	sfd, err := openDir(q.state)
	if err != nil {
		return -1, fmt.Errorf("opening %s: %w", q.state, err)
	}
	defer unix.Close(sfd)
	if err := ownedDir(sfd); err != nil {
		return -1, fmt.Errorf("%s: %w", q.state, err)
	}
	qfd, err := subdir(sfd, "quarantine")
	if err != nil {
		return -1, err
	}
	defer unix.Close(qfd)
	run := q.run
	if run == "" {
		run = randomName("run-")
	}
	rfd, err := subdir(qfd, run)
	if err != nil {
		return -1, err
	}
	q.dir = rfd
	q.path = filepath.Join(q.state, "quarantine", run)
	return rfd, nil
}

// subdir opens folder name in dfd, making it (0700) if it is not there;
// it must be the caller's own and writable by no one else.
func subdir(dfd int, name string) (int, error) {
	if err := unix.Mkdirat(dfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	fd, err := unix.Openat(dfd, name, dirFlags, 0)
	if err != nil {
		return -1, err
	}
	if err := ownedDir(fd); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", name, err)
	}
	return fd, nil
}

// ownedDir checks that the folder at fd belongs to the caller and no one
// else can write to it.
func ownedDir(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("belongs to uid %d, not to you", st.Uid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("others can write to it (mode %o)", st.Mode&0o777)
	}
	return nil
}

// move takes name out of folder dfd: first renamed in place to a random
// name (atomically out of the way of host programs, which look for fixed
// names), then moved into the quarantine folder (copied and removed when
// that is on another file system). It returns where the item is now;
// parent is dfd's path, for that answer. ENOENT means there was nothing
// to move.
func (q *quarantine) move(dfd int, parent, name string) (string, error) {
	return q.moveAs(dfd, parent, name, name)
}

// moveAs is move, naming the item as in the quarantine folder.
func (q *quarantine) moveAs(dfd int, parent, name, as string) (string, error) {
	tmp := randomName(".agentbox-quarantine-")
	if err := unix.Renameat2(dfd, name, dfd, tmp, unix.RENAME_NOREPLACE); err != nil {
		return "", err
	}
	here := filepath.Join(parent, tmp)
	qfd, err := q.open()
	if err != nil {
		return here + " (the quarantine folder: " + err.Error() + ")", nil
	}
	q.n++
	dest := fmt.Sprintf("%03d-%s", q.n, safeName(as))
	err = unix.Renameat2(dfd, tmp, qfd, dest, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EXDEV) {
		if err = copyAt(dfd, tmp, qfd, dest); err == nil {
			err = removeAllAt(dfd, tmp)
		} else {
			removeAllAt(qfd, dest)
		}
	}
	if err != nil {
		return here + " (moving it to " + q.path + ": " + err.Error() + ")", nil
	}
	return filepath.Join(q.path, dest), nil
}

// safeName makes a file name for the quarantine folder from a name the box
// chose.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '/' {
			return '_'
		}
		return r
	}, s)
	if len(s) > 100 {
		s = s[:100]
	}
	if s == "" || s == "." || s == ".." {
		s = "_"
	}
	return s
}
