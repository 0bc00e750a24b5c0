//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Tracker is a cgroup v2 of one run that limits nothing: it holds every
// process of a box that has no PID namespace of its own (Landlock), so that
// the run's end can kill them all at once, whatever state they are in and
// wherever they moved in the process tree, and a later run can do the same
// after agentbox was killed. The box's first process is cloned straight
// into it (CLONE_INTO_CGROUP, Linux 5.7), so the supervisor never enters
// it and moves nothing; a box process cannot leave it (moving a process
// needs write access to cgroup files, which no box has).
type Tracker struct {
	dir string
	fd  int // O_PATH of dir, for CLONE_INTO_CGROUP
}

// Track makes the cgroup name below the caller's own cgroup v2, or says
// why it cannot: no cgroup v2 mounted where the caller's cgroup shows, the
// caller may not create cgroups there (an unprivileged user whose cgroup
// is not delegated to it), or the kernel cannot kill a cgroup (cgroup.kill,
// Linux 5.14).
func Track(name string) (*Tracker, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\n") {
		return nil, fmt.Errorf("cgroup name %q: must be one path element", name)
	}
	hs, err := load()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var v2 *hierarchy
	for i := range hs {
		if hs[i].Version == 2 {
			v2 = &hs[i]
		}
	}
	switch {
	case v2 == nil:
		return nil, fmt.Errorf("%w: no cgroup v2 is mounted", ErrUnavailable)
	case v2.Hidden != "":
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, v2.Hidden)
	case v2.ReadOnly:
		return nil, fmt.Errorf("%w: %s is mounted read-only", ErrUnavailable, v2.MountPoint)
	}
	// Moving a process (here: cloning one) into a cgroup needs write
	// access to cgroup.procs of the common ancestor: the caller's own.
	if err := usable(v2.Dir, v2.Dir); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	dir := filepath.Join(v2.Dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	t := &Tracker{dir: dir, fd: -1}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		t.Close()
		return nil, fmt.Errorf("%w: the kernel cannot kill a cgroup (no cgroup.kill: Linux 5.14)", ErrUnavailable)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	t.fd = fd
	return t, nil
}

// FD is the cgroup's directory as a descriptor, for SysProcAttr.CgroupFD;
// -1 for a nil Tracker.
func (t *Tracker) FD() int {
	if t == nil {
		return -1
	}
	return t.fd
}

// Dir is the cgroup's folder; "" for a nil Tracker.
func (t *Tracker) Dir() string {
	if t == nil {
		return ""
	}
	return t.dir
}

// Kill kills every process in the cgroup (cgroup.kill: the kernel kills
// them all, a process forking meanwhile included; and each by pid, see
// kill) and waits until none is left in it, at most a few seconds. The killed processes that are the
// caller's descendants still have to be reaped.
func (t *Tracker) Kill() error {
	if t == nil {
		return nil
	}
	return kill(t.dir)
}

// Close removes the cgroup; anything still in it is killed first.
func (t *Tracker) Close() error {
	if t == nil {
		return nil
	}
	if t.fd >= 0 {
		unix.Close(t.fd)
		t.fd = -1
	}
	err := remove(t.dir)
	if err != nil && errors.Is(err, unix.EBUSY) {
		kill(t.dir)
		err = remove(t.dir)
	}
	return err
}

// kill ends every process in the cgroup dir and waits until
// cgroup.events says none is left. cgroup.kill alone is not enough: the
// kernel (6.18 here) skips a zombie thread-group leader whose other threads
// still run, which SIGKILL to its pid does end. So it also kills, by pid,
// every process and thread the cgroup lists, and repeats until it is
// empty.
func kill(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		write(dir, "cgroup.kill", "1")
		for _, file := range []string{"cgroup.procs", "cgroup.threads"} {
			ids, _ := readFields(dir, file)
			for _, id := range ids {
				if n, err := strconv.Atoi(id); err == nil && n > 0 && n != os.Getpid() {
					unix.Kill(n, unix.SIGKILL)
				}
			}
		}
		busy, err := populated(dir)
		if err != nil || !busy {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: processes are still there 5 s after SIGKILL", dir)
		}
		time.Sleep(time.Millisecond)
	}
}

// Kill ends every process in the cgroup v2 folder dir, as Tracker.Kill
// does: for a later run, after agentbox was killed before it could.
func Kill(dir string) error { return kill(dir) }

// populated reads "populated" from dir's cgroup.events: whether a process
// is in the cgroup or below it. A file that cannot be read is an error,
// never "empty".
func populated(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) != "0", nil
		}
	}
	return false, fmt.Errorf("%s/cgroup.events has no populated line", dir)
}

// Kill kills every process in the run's cgroup v2, when Enter made one
// (see Tracker.Kill); it does nothing for cgroup v1, which has no such
// file: the supervisor ends the processes it knows one by one there.
func (g *Group) Kill() error {
	if g == nil {
		return nil
	}
	var errs []error
	for _, p := range g.parts {
		switch {
		case p.version != 2:
		case p.at == p.dir:
			// Release failed: the caller is still inside.
			errs = append(errs, fmt.Errorf("%s: agentbox itself is still in the cgroup", p.dir))
		default:
			errs = append(errs, kill(p.dir))
		}
	}
	return errors.Join(errs...)
}

// HasV2 reports whether the group has a part in cgroup v2: a process can
// be in one cgroup of that hierarchy only, so a run with such a part needs
// no Tracker (and must not have one: the box would leave the limits).
func (g *Group) HasV2() bool {
	if g == nil {
		return false
	}
	for _, p := range g.parts {
		if p.version == 2 {
			return true
		}
	}
	return false
}
