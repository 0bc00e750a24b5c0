package landlock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/seccomp"
	"github.com/agentbox/agentbox/supervise"
)

// Backend is the name this backend reports in AGENTBOX_BACKEND.
const Backend = "landlock"

// ProxyVars are the variables a run in allowlist mode gets at its start,
// pointing at the proxy's port (which only the run knows).
var ProxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"}

// ChildCommand is the hidden subcommand of the child that confines itself
// and becomes CMD.
const ChildCommand = "__landlock"

// Landlock is the Landlock backend.
type Landlock struct {
	// KernelABI returns the kernel's Landlock ABI; ABI when nil. Tests
	// give fixed answers.
	KernelABI func() (int, error)
	// Cgroups says what cgroups agentbox can make here; cgroup.Probe when
	// nil.
	Cgroups func() cgroup.Availability
	// TempDir is where the per-run folder of a private /tmp is made;
	// os.TempDir() when empty.
	TempDir string

	// completed is the rule set Complete made last, and its JSON form:
	// Run takes it rather than decoding the plan's copy again when the
	// plan's bytes are these.
	completed     Assessment
	completedJSON []byte
}

// New returns the Landlock backend.
func New() *Landlock { return &Landlock{} }

// Name is "landlock".
func (l *Landlock) Name() string { return Backend }

func (l *Landlock) abi() (int, error) {
	if l.KernelABI != nil {
		return l.KernelABI()
	}
	return ABI()
}

// Available reports whether the kernel has Landlock.
func (l *Landlock) Available() error {
	_, err := l.abi()
	return err
}

// Complete assesses p for this kernel's Landlock ABI and fills p.Box: every
// rule's level, the writable folders, TMPDIR, and the rule set the child
// applies (the detail). A private /tmp becomes a fresh folder for this run
// (Landlock cannot mount a tmpfs): its path is fixed here, from the run's
// ID, and the run creates it and removes it afterwards.
func (l *Landlock) Complete(p *plan.Plan) error {
	abi, err := l.abi()
	if err != nil {
		abi = 0
	}
	if p.Tmp.Mode == plan.TmpPrivate && p.Tmp.HostDir == "" && p.RunID != "" {
		origin := plan.Origin{Key: "tmp.mode private (landlock: a fresh folder per run)"}
		// In the user's own folder for temporary folders (plan Tmp.Base),
		// never in the shared /tmp.
		base := p.Tmp.Base
		if base == "" {
			tmp := l.TempDir
			if tmp == "" {
				tmp = os.TempDir()
			}
			base = filepath.Join(tmp, "agentbox-"+strconv.Itoa(p.Identity.UID))
			p.Prepare = appendPrepare(p.Prepare, plan.Prepare{Path: base, Mode: 0o700, Origin: origin, Private: true})
		}
		p.Tmp.HostDir = filepath.Join(base, "run-"+p.RunID)
		p.Prepare = appendPrepare(p.Prepare, plan.Prepare{Path: p.Tmp.HostDir, Mode: 0o700, Origin: origin, Fresh: true, Private: true})
	}
	keepByRecord(p)
	a := Assess(p, abi)
	var av cgroup.Availability
	if p.Limits.Processes > 0 || p.Limits.Memory > 0 {
		probe := l.Cgroups
		if probe == nil {
			probe = cgroup.Probe
		}
		av = probe()
	}
	box := plan.Box{Backend: Backend, Tmpdir: tmpDir(p), Passed: p.Box.Passed, Rules: a.Rules}
	box.Rules = append(box.Rules, supervise.AssessLimits(p, av)...)
	for _, w := range a.WritePaths {
		// Device nodes are not folders one writes work to; /dev/shm is,
		// and it is the host's, so it is listed.
		if strings.HasPrefix(w, "/dev/") && w != "/dev/shm" {
			continue
		}
		box.Writable = append(box.Writable, w)
	}
	if box.Detail, err = json.Marshal(a); err != nil {
		return err
	}
	l.completed, l.completedJSON = a, box.Detail
	p.Box = box
	return nil
}

// keepByRecord turns the plan's guards that bubblewrap keeps with mounts
// (read-only, or a placeholder for a missing path) into guards kept by the
// after-run check: Landlock cannot keep them read-only without making the
// folders above them unchangeable (see Options), and a placeholder would
// not stop a box that may remove it. The placeholders go, and the host's
// /dev/shm, which the box may write here, is where no symlink the box
// leaves may lead.
func keepByRecord(p *plan.Plan) {
	// A new list rather than changed entries: backend.Select undoes a
	// candidate's Complete by restoring the plan's fields.
	guards := slices.Clone(p.HostExec.Guards)
	for i, g := range guards {
		if g.Rule == plan.RuleUnlisted {
			continue // carved out of the write grant (guardPaths)
		}
		switch g.Keep {
		case plan.KeepReadOnly, plan.KeepBlocked:
			guards[i].Keep = plan.KeepRestored
			if g.Keep == plan.KeepBlocked {
				guards[i].Note = "does not exist: what the box makes here is moved away after the run"
			}
		}
	}
	p.HostExec.Guards = guards
	var keep []plan.Prepare
	for _, d := range p.Prepare {
		if d.Placeholder == "" {
			keep = append(keep, d)
		}
	}
	p.Prepare = keep
	if len(p.HostExec.Roots) > 0 && !slices.Contains(p.HostExec.Outside, "/dev/shm") {
		p.HostExec.Outside = append(p.HostExec.Outside, "/dev/shm")
	}
}

func appendPrepare(list []plan.Prepare, d plan.Prepare) []plan.Prepare {
	for _, have := range list {
		if have.Path == d.Path {
			return list
		}
	}
	return append(list, d)
}

// Describe prints how each rule is enforced under Landlock, and the
// seccomp filter.
func (l *Landlock) Describe(p *plan.Plan, w io.Writer) {
	a, _ := AssessmentOf(p)
	fmt.Fprintf(w, "landlock:  ABI %d; how each rule is enforced:\n", a.ABI)
	for _, r := range p.Box.Rules {
		fmt.Fprintf(w, "  %-16s %-32s %s: %s\n", r.Level, r.Rule, r.Path, r.How)
	}
	seccomp.Describe(p.Seccomp, seccomp.ForNetwork(p.Network.Mode, true), w)
}

// assessmentOf is AssessmentOf, without decoding when p's detail is the
// one l completed last: the same bytes are the same rule set.
func (l *Landlock) assessmentOf(p *plan.Plan) (Assessment, error) {
	if p.Box.Backend == Backend && l.completedJSON != nil && bytes.Equal(p.Box.Detail, l.completedJSON) {
		return l.completed, nil
	}
	return AssessmentOf(p)
}

// AssessmentOf reads the Landlock rule set of a completed plan.
func AssessmentOf(p *plan.Plan) (Assessment, error) {
	var a Assessment
	if p.Box.Backend != Backend {
		return a, fmt.Errorf("the plan is not for landlock (backend %q)", p.Box.Backend)
	}
	err := json.Unmarshal(p.Box.Detail, &a)
	return a, err
}
