package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/plan"
)

// Prepare creates and checks the folders agentbox owns, as PreparePinned
// does, for a backend that does not use their descriptors.
func Prepare(p *plan.Plan) error {
	pins, err := PreparePinned(p)
	pins.Close()
	return err
}

// PreparePinned creates the folders agentbox owns (plan.Prepare) and
// returns them pinned: each is opened by descriptor relative to its parent's descriptor,
// without following a link, created there when it is missing, and checked
// through that descriptor — a folder, not a symlink, the user's own, and
// for a private one (the temporary folders) closed to everyone else. An
// existing one is refused when it is a symlink, is not a folder, or belongs
// to another user: it may lie in ground another user or another box can
// write. The backend binds these very descriptors, so what was checked is
// what the box gets.
func PreparePinned(p *plan.Plan) (*Pins, error) {
	pins := NewPins()
	for _, d := range p.Prepare {
		if d.Placeholder != "" {
			continue // made by placeholders, with the other runs' in mind
		}
		if err := prepare(pins, d, p.Identity); err != nil {
			pins.Close()
			return nil, err
		}
	}
	return pins, nil
}

func prepare(pins *Pins, d plan.Prepare, id plan.Identity) error {
	parent, err := pins.Dir(filepath.Dir(d.Path))
	if err != nil {
		return &PrepareError{Op: "checking", Path: d.Path, Err: err}
	}
	name := filepath.Base(d.Path)
	created := false
	err = unix.Mkdirat(int(parent.Fd()), name, d.Mode)
	switch {
	case err == nil:
		created = true
	case err != unix.EEXIST:
		return &PrepareError{Op: "creating", Path: d.Path, Err: err}
	}
	fd, err := unix.Openat(int(parent.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &PrepareError{Op: "opening", Path: d.Path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.Path)
	if err := checkPrepared(f, d, id, created); err != nil {
		f.Close()
		return &PrepareError{Op: "refusing", Path: d.Path, Err: err}
	}
	if old, ok := pins.files[d.Path]; ok {
		old.Close()
	}
	pins.files[d.Path] = f
	return nil
}

// checkPrepared checks the folder agentbox opened for d through its
// descriptor.
func checkPrepared(f *os.File, d plan.Prepare, id plan.Identity, created bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return errors.New("it is a symlink; agentbox only uses folders it owns")
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return errors.New("it is not a folder")
	case int(st.Uid) != id.UID:
		return fmt.Errorf("it belongs to uid %d, not to you (uid %d)", st.Uid, id.UID)
	case d.Fresh && !created:
		return errors.New("it exists already, and this run's own folder must be new")
	case d.Private && st.Mode&0o077 != 0:
		return fmt.Errorf("its mode %04o lets other users in; agentbox keeps its temporary folders to you alone (chmod 700 it)", st.Mode&0o7777)
	}
	return nil
}
