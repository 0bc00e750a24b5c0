//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// load reads where the caller is in each mounted cgroup hierarchy.
func load() ([]hierarchy, error) {
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	procs, err := parseProcCgroup(string(pc))
	if err != nil {
		return nil, err
	}
	mounts, err := parseMountinfo(string(mi))
	if err != nil {
		return nil, err
	}
	return hierarchies(procs, mounts), nil
}

// Probe says which controllers Enter could use here, and why not otherwise.
// It only reads: /proc/self/cgroup, /proc/self/mountinfo, cgroup files and
// access(2) checks with the effective ids.
func Probe() Availability {
	hs, err := load()
	if err != nil {
		r := Controller{Reason: err.Error()}
		return Availability{Pids: r, Memory: r}
	}
	return Availability{Pids: probe(hs, "pids"), Memory: probe(hs, "memory")}
}

func probe(hs []hierarchy, c string) Controller {
	h, err := locate(hs, c)
	if err != nil {
		return Controller{Reason: err.Error()}
	}
	base, err := pick(h, c)
	if err != nil {
		return Controller{Reason: err.Error()}
	}
	return Controller{OK: true, Version: h.Version, Parent: base}
}

// pick chooses the directory to make the run's cgroup in for controller c
// of hierarchy h, or says why there is none. See the package doc for the
// order: the caller's own cgroup, then (v2) its parent.
func pick(h hierarchy, c string) (string, error) {
	if h.Hidden != "" {
		return "", errors.New(h.Hidden)
	}
	if h.ReadOnly {
		return "", fmt.Errorf("%s is mounted read-only", h.MountPoint)
	}
	if _, err := os.Stat(h.Dir); err != nil {
		return "", err
	}
	own := h.Dir
	if h.Version == 1 {
		return own, usable(own, own)
	}
	ctrls, err := readFields(own, "cgroup.controllers")
	if err != nil {
		return "", err
	}
	if !contains(ctrls, c) {
		if root, err := trueRoot(own); err == nil && !root && h.IsRoot() {
			// The top of a cgroup namespace (a container's): its parent
			// is outside, out of reach.
			return "", fmt.Errorf("the %s controller is not enabled for %s, the top of this cgroup namespace (cgroup.controllers: %q): "+
				"whoever made the namespace (a container runtime) delegates no %s to it", c, own, strings.Join(ctrls, " "), c)
		}
		return "", fmt.Errorf("the %s controller is not enabled for %s (cgroup.controllers: %q): its parent does not delegate it",
			c, own, strings.Join(ctrls, " "))
	}
	errOwn := usable(own, own)
	if errOwn == nil {
		errOwn = canEnable(own, c)
	}
	if errOwn != nil && h.IsRoot() {
		if root, err := trueRoot(own); err == nil && !root {
			errOwn = fmt.Errorf("%v; it is the top of this cgroup namespace (a container's), with no parent in reach to make the box's cgroup beside it", errOwn)
		}
	}
	if errOwn == nil || h.IsRoot() {
		return own, errOwn
	}
	// Beside the caller's cgroup: the parent enables c for its children
	// (it is in our cgroup.controllers), so nothing has to be enabled.
	parent := filepath.Dir(own)
	if err := usable(parent, own); err != nil {
		return "", fmt.Errorf("%v; and beside it: %v", errOwn, err)
	}
	return parent, nil
}

// usable checks that the caller may make a cgroup in base, move itself
// there, and move itself back to its own cgroup from.
func usable(base, from string) error {
	for _, p := range []string{base, filepath.Join(base, "cgroup.procs"), filepath.Join(from, "cgroup.procs")} {
		if err := unix.Faccessat(unix.AT_FDCWD, p, unix.W_OK, unix.AT_EACCESS); err != nil {
			return fmt.Errorf("%s is not writable by uid %d: %v", p, os.Geteuid(), err)
		}
	}
	return nil
}

// canEnable checks that c is, or can be, enabled in the v2 cgroup dir for
// its children: the kernel refuses that in a non-root cgroup with processes
// in it, and Enter moves only the caller out of dir.
func canEnable(dir, c string) error {
	sub, err := readFields(dir, "cgroup.subtree_control")
	if err != nil {
		return err
	}
	if contains(sub, c) {
		return nil
	}
	p := filepath.Join(dir, "cgroup.subtree_control")
	if err := unix.Faccessat(unix.AT_FDCWD, p, unix.W_OK, unix.AT_EACCESS); err != nil {
		return fmt.Errorf("%s is not writable by uid %d: %v", p, os.Geteuid(), err)
	}
	if root, err := trueRoot(dir); err != nil || root {
		return err
	}
	others, err := otherProcs(dir)
	if err != nil {
		return err
	}
	if len(others) > 0 {
		return fmt.Errorf("%s has other processes (%d), and cgroup v2 allows no %s controller for children of a cgroup with processes",
			dir, len(others), c)
	}
	return nil
}

// trueRoot reports whether dir is the root of the v2 hierarchy, the one
// cgroup exempt from the no-internal-processes rule. A cgroup namespace's
// root is not; cgroup.type exists on every cgroup but the real root.
func trueRoot(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, "cgroup.type"))
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	return false, err
}

// otherProcs lists the processes in dir other than the caller.
func otherProcs(dir string) ([]int, error) {
	ids, err := readFields(dir, "cgroup.procs")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, s := range ids {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("%s: bad pid %q", filepath.Join(dir, "cgroup.procs"), s)
		}
		if n != os.Getpid() {
			out = append(out, n)
		}
	}
	return out, nil
}

// Enter makes a cgroup called name for one run in every hierarchy that
// carries a controller l needs, writes the limits, and moves the calling
// process (all its threads) into it, so that the processes it starts from
// now on are inside. Nothing is created when a needed controller is not
// available; the error wraps ErrUnavailable and says why. On any later
// failure Enter undoes what it did.
func Enter(name string, l Limits) (*Group, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\n") {
		return nil, fmt.Errorf("cgroup name %q: must be one path element", name)
	}
	need := l.controllers()
	if len(need) == 0 {
		return nil, errors.New("cgroup: no limit to set")
	}
	return enter(name, l, need)
}

// enter is Enter for the controllers need; tests use a controller this
// machine has in cgroup v2 to exercise v2 placement.
func enter(name string, l Limits, need []string) (*Group, error) {
	hs, err := load()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	// Decide everything before creating anything.
	var parts []*part
	for _, c := range need {
		h, err := locate(hs, c)
		if err == nil {
			var base string
			base, err = pick(h, c)
			if err == nil {
				parts = merge(parts, h, base, name, c)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, c, err)
		}
	}
	g := &Group{}
	for _, p := range parts {
		if err := g.make(p, l); err != nil {
			return nil, errors.Join(err, g.Close())
		}
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, errors.Join(err, g.Close())
	}
	g.Overhead = len(tasks)
	return g, nil
}

// merge adds controller c to the part for hierarchy h, or starts one.
func merge(parts []*part, h hierarchy, base, name, c string) []*part {
	dir := filepath.Join(base, name)
	for _, p := range parts {
		if p.dir == dir {
			p.controllers = append(p.controllers, c)
			return parts
		}
	}
	cg := h.Path
	if base != h.Dir {
		cg = path.Dir(cg)
	}
	return append(parts, &part{
		version:     h.Version,
		controllers: []string{c},
		from:        h.Dir,
		base:        base,
		dir:         dir,
		cgpath:      path.Join(cg, name),
		at:          h.Dir,
	})
}

// make creates p, limits it and moves the caller in. Once the directory
// exists p is in g, so that Close removes it whatever fails next.
func (g *Group) make(p *part, l Limits) error {
	if err := os.Mkdir(p.dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w (left by a run that was killed? remove it with rmdir)", err)
		}
		return err
	}
	g.parts = append(g.parts, p)
	pid := strconv.Itoa(os.Getpid())
	if p.version == 1 {
		// v1: limits first, then in; a child cgroup has every
		// controller of its hierarchy.
		if err := p.limit(l); err != nil {
			return err
		}
		return p.move(p.dir, pid)
	}
	// v2: in first, so that the caller's cgroup may be empty when the
	// controllers are enabled there (the no-internal-processes rule).
	if err := p.move(p.dir, pid); err != nil {
		return err
	}
	sub, err := readFields(p.base, "cgroup.subtree_control")
	if err != nil {
		return err
	}
	root, err := trueRoot(p.base)
	if err != nil {
		return err
	}
	for _, c := range p.controllers {
		if contains(sub, c) {
			continue
		}
		if err := write(p.base, "cgroup.subtree_control", "+"+c); err != nil {
			return err
		}
		// Undone by Close, except in the root cgroup, where systemd and
		// others may have started to rely on it meanwhile.
		if !root {
			p.enabled = append(p.enabled, c)
		}
	}
	return p.limit(l)
}

// limit writes l into p for the controllers of p.
func (p *part) limit(l Limits) error {
	set := func(file string, v uint64, optional bool) error {
		if optional {
			if _, err := os.Stat(filepath.Join(p.dir, file)); err != nil {
				return nil
			}
		}
		s := strconv.FormatUint(v, 10)
		if err := write(p.dir, file, s); err != nil {
			return err
		}
		p.settings = append(p.settings, file+"="+s)
		return nil
	}
	var errs []error
	if contains(p.controllers, "pids") {
		errs = append(errs, set("pids.max", l.Pids, false))
	}
	if contains(p.controllers, "memory") {
		if p.version == 1 {
			// memsw (memory+swap) exists with swap accounting; it
			// must be set after, and not below, limit_in_bytes.
			errs = append(errs, set("memory.limit_in_bytes", l.Memory, false),
				set("memory.memsw.limit_in_bytes", l.Memory, true))
		} else {
			errs = append(errs, set("memory.max", l.Memory, false),
				set("memory.swap.max", 0, true))
		}
	}
	return errors.Join(errs...)
}

// move writes pid into dir's cgroup.procs, which moves the whole thread
// group, and remembers where the caller is.
func (p *part) move(dir, pid string) error {
	if err := write(dir, "cgroup.procs", pid); err != nil {
		return err
	}
	p.at = dir
	return nil
}

// Release moves the caller out of the run's cgroups, leaving the processes
// it started inside, so that the supervisor no longer counts against the
// limits and cannot be the one to hit them (a Go program that cannot make a
// thread dies). Call it once the box is started. Where the caller's own v2
// cgroup now has controllers enabled (it was alone there) it cannot go back
// until Close, and waits in a sibling leaf named name+".caller" instead.
func (g *Group) Release() error {
	if g == nil || g.closed {
		return nil
	}
	pid := strconv.Itoa(os.Getpid())
	for i := len(g.parts) - 1; i >= 0; i-- {
		p := g.parts[i]
		if p.at != p.dir {
			continue
		}
		if len(p.enabled) == 0 {
			if err := p.move(p.from, pid); err != nil {
				return err
			}
			continue
		}
		leaf := p.dir + ".caller"
		if err := os.Mkdir(leaf, 0o755); err != nil {
			return err
		}
		p.leaf = leaf
		if err := p.move(leaf, pid); err != nil {
			return err
		}
	}
	return nil
}

// Close moves the caller back to its original cgroups and removes the ones
// Enter made. Processes still in them get a moment to finish exiting, and
// are then killed: the run is over. Close may be called more than once, and
// after a failed Enter.
func (g *Group) Close() error {
	if g == nil || g.closed {
		return nil
	}
	g.closed = true
	var errs []error
	for i := len(g.parts) - 1; i >= 0; i-- {
		errs = append(errs, g.parts[i].close())
	}
	return errors.Join(errs...)
}

func (p *part) close() error {
	pid := strconv.Itoa(os.Getpid())
	if err := drain(p.dir); err != nil {
		return err
	}
	// Only the caller may be left inside, so the limits can go.
	for _, c := range p.enabled {
		if err := write(p.base, "cgroup.subtree_control", "-"+c); err != nil {
			return err
		}
	}
	p.enabled = nil
	if p.at != p.from {
		if err := p.move(p.from, pid); err != nil {
			return err
		}
	}
	if err := remove(p.dir); err != nil {
		return err
	}
	if p.leaf != "" {
		return remove(p.leaf)
	}
	return nil
}

// drain waits for the processes in dir other than the caller to exit, and
// kills those still there after a second.
func drain(dir string) error {
	deadline := time.Now().Add(time.Second)
	for {
		others, err := otherProcs(dir)
		if err != nil || len(others) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			for _, pid := range others {
				unix.Kill(pid, unix.SIGKILL)
			}
			if time.Now().After(deadline.Add(2 * time.Second)) {
				return fmt.Errorf("%s: %d processes still there after SIGKILL", dir, len(others))
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// remove removes a cgroup directory, retrying while the kernel still
// counts exiting tasks in it (EBUSY).
func remove(dir string) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := unix.Rmdir(dir)
		switch {
		case err == nil || errors.Is(err, unix.ENOENT):
			return nil
		case !errors.Is(err, unix.EBUSY) || time.Now().After(deadline):
			return &os.PathError{Op: "rmdir", Path: dir, Err: err}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// write writes value to the cgroup file dir/file, which must exist.
func write(dir, file, value string) error {
	p := filepath.Join(dir, file)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(value)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &writeError{Path: p, Value: value, Err: err}
	}
	return nil
}

// readFields returns the words of the cgroup file dir/file.
func readFields(dir, file string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// Hits reads the counters the kernel keeps of the limits being reached:
// pids.events "max" (a fork refused), and for memory the OOM kills
// (v2 memory.events "oom_kill", v1 memory.oom_control "oom_kill") or, on
// v1 kernels without that field, memory.failcnt. Read it before Close.
func (g *Group) Hits() []Hit {
	if g == nil {
		return nil
	}
	var out []Hit
	for _, p := range g.parts {
		if contains(p.controllers, "pids") {
			if n := counter(p.dir, "pids.events", "max"); n > 0 {
				out = append(out, Hit{Limit: "processes", Detail: fmt.Sprintf("%d process creations refused at pids.max", n)})
			}
		}
		if contains(p.controllers, "memory") {
			file := "memory.events"
			if p.version == 1 {
				file = "memory.oom_control"
			}
			if n := counter(p.dir, file, "oom_kill"); n > 0 {
				out = append(out, Hit{Limit: "memory", Detail: fmt.Sprintf("%d processes killed by the out-of-memory killer at the memory limit", n)})
			} else if p.version == 1 {
				if n := counter(p.dir, "memory.failcnt", ""); n > 0 {
					out = append(out, Hit{Limit: "memory", Detail: fmt.Sprintf("the memory limit was reached %d times", n)})
				}
			}
		}
	}
	return out
}

// counter reads the number after key in a "key value" file, or the whole
// file's number when key is "".
func counter(dir, file, key string) uint64 {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case key == "" && len(f) == 1:
			n, _ := strconv.ParseUint(f[0], 10, 64)
			return n
		case len(f) == 2 && f[0] == key:
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return n
		}
	}
	return 0
}
