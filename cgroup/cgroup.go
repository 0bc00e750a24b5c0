package cgroup

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ErrUnavailable is returned (wrapped, with the reason) by Enter when a
// requested limit cannot be put in a cgroup here.
var ErrUnavailable = errors.New("cgroup limits unavailable")

// Limits are the cgroup limits of one run. A zero field sets no limit and
// leaves its controller alone.
type Limits struct {
	// Pids is pids.max: the number of tasks, that is threads, not
	// processes. The caller's own threads count (Group.Overhead).
	Pids uint64
	// Memory is in bytes: memory.max (v2) or memory.limit_in_bytes (v1).
	// Swap beyond it is refused too (memory.swap.max=0, or
	// memory.memsw.limit_in_bytes equal to it), or a hog would only swap.
	Memory uint64
}

// controllers returns the controllers l needs, pids first.
func (l Limits) controllers() []string {
	var c []string
	if l.Pids > 0 {
		c = append(c, "pids")
	}
	if l.Memory > 0 {
		c = append(c, "memory")
	}
	return c
}

// Availability says, for each controller, whether a run's cgroup can be made
// with it here.
type Availability struct {
	Pids   Controller
	Memory Controller
}

// Controller says whether one controller can be used, and where or why not.
type Controller struct {
	OK      bool
	Version int    // 1 or 2 when OK
	Parent  string // when OK: the directory the run's cgroup would be made in
	Reason  string // when not OK: why not, for a human
}

// String is one line per controller, as `agentbox plan` prints it.
func (a Availability) String() string {
	return "pids: " + a.Pids.String() + "\nmemory: " + a.Memory.String()
}

// String says where or why not.
func (c Controller) String() string {
	if !c.OK {
		return "unavailable: " + c.Reason
	}
	return fmt.Sprintf("cgroup v%d under %s", c.Version, c.Parent)
}

// procLine is one line of /proc/<pid>/cgroup: "id:controllers:path".
type procLine struct {
	ID          int
	Controllers []string // empty for the v2 line "0::/path"
	Path        string
}

// parseProcCgroup parses /proc/<pid>/cgroup (see cgroups(7)).
func parseProcCgroup(data string) ([]procLine, error) {
	var out []procLine
	for i, line := range strings.Split(data, "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("/proc/self/cgroup:%d: not id:controllers:path: %q", i+1, line)
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("/proc/self/cgroup:%d: bad hierarchy id %q", i+1, f[0])
		}
		if !strings.HasPrefix(f[2], "/") {
			return nil, fmt.Errorf("/proc/self/cgroup:%d: path %q is not absolute", i+1, f[2])
		}
		l := procLine{ID: id, Path: f[2]}
		if f[1] != "" {
			l.Controllers = strings.Split(f[1], ",")
		}
		out = append(out, l)
	}
	return out, nil
}

// mountLine is the part of one /proc/<pid>/mountinfo line that matters here.
type mountLine struct {
	Root       string // the directory of the file system mounted here
	MountPoint string
	ReadOnly   bool // this mount, or the whole file system, is read-only
	FSType     string
	Options    []string // super options: for cgroup v1 they name the controllers
}

// parseMountinfo parses the cgroup and cgroup2 lines of
// /proc/<pid>/mountinfo (see proc(5)) and skips the others.
func parseMountinfo(data string) ([]mountLine, error) {
	var out []mountLine
	for i, line := range strings.Split(data, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		sep := -1
		for j := 6; j < len(f); j++ {
			if f[j] == "-" {
				sep = j
				break
			}
		}
		if len(f) < 6 || sep < 0 || sep+3 > len(f) {
			return nil, fmt.Errorf("/proc/self/mountinfo:%d: malformed line %q", i+1, line)
		}
		fstype := f[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		m := mountLine{
			Root:       UnescapeMountinfo(f[3]),
			MountPoint: UnescapeMountinfo(f[4]),
			FSType:     fstype,
		}
		var super []string
		if sep+3 < len(f) {
			super = strings.Split(f[sep+3], ",")
		}
		for _, o := range strings.Split(f[5], ",") {
			m.ReadOnly = m.ReadOnly || o == "ro"
		}
		for _, o := range super {
			m.ReadOnly = m.ReadOnly || o == "ro"
		}
		m.Options = super
		out = append(out, m)
	}
	return out, nil
}

// UnescapeMountinfo undoes the \ooo escapes mountinfo uses for space, tab,
// newline and backslash in paths.
func UnescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hierarchy is one cgroup hierarchy as the caller sees it: where it is
// mounted and which cgroup the caller is in there.
type hierarchy struct {
	Version     int      // 1 or 2
	Controllers []string // v1: from the mount options; v2: nil (read cgroup.controllers)
	MountPoint  string
	ReadOnly    bool
	Path        string // the caller's cgroup, as /proc/self/cgroup says
	// Dir is the caller's cgroup directory, or "" when the mount does not
	// show it (a mount of another part of the tree), with Hidden saying so.
	Dir    string
	Hidden string
}

// IsRoot reports whether the caller's cgroup is the top of what is mounted.
func (h hierarchy) IsRoot() bool { return h.Dir == h.MountPoint }

// hierarchies pairs the lines of /proc/self/cgroup with the mounts that
// show them. A hierarchy that is not mounted is left out.
func hierarchies(procs []procLine, mounts []mountLine) []hierarchy {
	var out []hierarchy
	for _, p := range procs {
		var m *mountLine
		for i := range mounts {
			if matches(p, mounts[i]) {
				m = &mounts[i]
				break
			}
		}
		if m == nil {
			continue
		}
		h := hierarchy{Version: 1, MountPoint: m.MountPoint, ReadOnly: m.ReadOnly, Path: p.Path}
		if p.ID == 0 {
			h.Version = 2
		} else {
			h.Controllers = p.Controllers
		}
		// The mount shows the cgroup tree from m.Root down, so our
		// cgroup is below it only if Root is a prefix of our path.
		if rel, ok := within(m.Root, p.Path); ok {
			h.Dir = path.Join(m.MountPoint, rel)
		} else {
			h.Hidden = fmt.Sprintf("%s shows the cgroup %s, which does not contain ours (%s)", m.MountPoint, m.Root, p.Path)
		}
		out = append(out, h)
	}
	return out
}

// matches reports whether mount m is a mount of hierarchy p.
func matches(p procLine, m mountLine) bool {
	if p.ID == 0 {
		return m.FSType == "cgroup2"
	}
	if m.FSType != "cgroup" || len(p.Controllers) == 0 {
		return false
	}
	for _, c := range p.Controllers {
		if !contains(m.Options, c) {
			return false
		}
	}
	return true
}

// within returns p relative to root when p is root or below it.
func within(root, p string) (string, bool) {
	root, p = path.Clean(root), path.Clean(p)
	if root == "/" {
		return p, true
	}
	if p == root {
		return "/", true
	}
	rest, ok := strings.CutPrefix(p, root+"/")
	return "/" + rest, ok
}

// locate picks the hierarchy that would carry controller c: a v1 hierarchy
// with c mounted when there is one (in a hybrid layout a controller bound to
// v1 is missing from v2), else the unified one. Whether c is enabled there
// is for the caller to check (cgroup.controllers).
func locate(hs []hierarchy, c string) (hierarchy, error) {
	var v2 *hierarchy
	for i, h := range hs {
		if h.Version == 1 && contains(h.Controllers, c) {
			return h, nil
		}
		if h.Version == 2 {
			v2 = &hs[i]
		}
	}
	if v2 == nil {
		return hierarchy{}, fmt.Errorf("no mounted cgroup hierarchy has the %s controller", c)
	}
	return *v2, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Group is the cgroup, or the cgroups (one per v1 hierarchy), that Enter
// made for one run.
type Group struct {
	// Overhead is the number of tasks (threads) the caller had when it
	// entered. They count against Limits.Pids as long as the caller stays
	// inside (see Release), and so do bwrap's own processes.
	Overhead int

	parts  []*part
	closed bool
}

// Dirs returns the run's cgroup folders, one per hierarchy; none for a nil
// group. A run killed before Close leaves them, and the next run empties
// and removes them.
func (g *Group) Dirs() []string {
	if g == nil {
		return nil
	}
	var out []string
	for _, p := range g.parts {
		out = append(out, p.dir)
	}
	return out
}

// part is the run's cgroup in one hierarchy.
type part struct {
	version     int
	controllers []string
	from        string   // the caller's original cgroup directory
	base        string   // the directory the run's cgroup was made in
	dir         string   // the run's cgroup directory
	cgpath      string   // the run's cgroup as /proc/self/cgroup would name it
	settings    []string // "file=value" as written, for Describe
	enabled     []string // v2: controllers Enter enabled in base's subtree_control
	leaf        string   // v2: where Release parked the caller, when not in from
	at          string   // where the caller is now
}

// Describe says which cgroups the run is in and what was written there, for
// `agentbox plan`: "cgroup v1 pids:/agentbox-1 pids.max=220, memory:/x/agentbox-1
// memory.limit_in_bytes=268435456 memory.memsw.limit_in_bytes=268435456".
func (g *Group) Describe() string {
	if g == nil || len(g.parts) == 0 {
		return "no cgroup"
	}
	same := true
	for _, p := range g.parts {
		same = same && p.version == g.parts[0].version
	}
	var out []string
	for _, p := range g.parts {
		s := p.cgpath
		if p.version == 1 {
			s = strings.Join(p.controllers, ",") + ":" + s
		}
		if !same {
			s = fmt.Sprintf("v%d %s", p.version, s)
		}
		if len(p.settings) > 0 {
			s += " " + strings.Join(p.settings, " ")
		}
		out = append(out, s)
	}
	prefix := "cgroup "
	if same {
		prefix = fmt.Sprintf("cgroup v%d ", g.parts[0].version)
	}
	return prefix + strings.Join(out, ", ")
}

// writeError is a failed write to a cgroup file.
type writeError struct {
	Path, Value string
	Err         error
}

func (e *writeError) Error() string {
	return fmt.Sprintf("writing %q to %s: %v", e.Value, e.Path, e.Err)
}

func (e *writeError) Unwrap() error { return e.Err }

// Hit is a limit the run's processes ran into, read from the cgroup's own
// counters after the run.
type Hit struct {
	Limit  string // "processes" or "memory"
	Detail string // what the kernel counted
}
