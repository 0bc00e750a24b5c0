package seatbelt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/cgroup"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
)

// Backend is the name this backend reports in AGENTBOX_BACKEND.
const Backend = "seatbelt"

// SandboxExec is the program that applies a profile and runs the command
// under it: by its absolute path, never through PATH.
const SandboxExec = "/usr/bin/sandbox-exec"

// Seatbelt is the macOS backend: the plan as a Seatbelt profile, applied by
// sandbox-exec.
type Seatbelt struct {
	// Canon resolves a path the way the kernel names it when Seatbelt
	// matches it (/tmp is /private/tmp on macOS); Canonical when nil.
	// Tests give fixed answers.
	Canon func(string) string
}

// New returns the Seatbelt backend.
func New() *Seatbelt { return &Seatbelt{} }

// Name is "seatbelt".
func (s *Seatbelt) Name() string { return Backend }

// Detail is what the backend records in the plan: the rules and the
// profile made from them.
type Detail struct {
	Rules   Rules  `json:"rules"`
	Profile string `json:"profile"`
}

// Canonical names path as macOS does once the symlinks at the top of the
// file system are followed: /tmp, /var and /etc are /private's. Complete
// on a Mac resolves every path through the file system first (CanonFS).
func Canonical(path string) string {
	for _, top := range []string{"/tmp", "/var", "/etc"} {
		if path == top || strings.HasPrefix(path, top+"/") {
			return "/private" + path
		}
	}
	return path
}

// Complete turns p into a Seatbelt profile and fills p.Box: every rule's
// level, the writable folders, TMPDIR, and the profile (the detail). The
// guards the other backends keep with read-only mounts or by restoring
// are denied to the box for the whole run here: Seatbelt can refuse a path
// inside a writable root, whether it exists or not, so no placeholder is
// made. Control files the search would look for after the run are refused
// at any depth of the writable roots.
func (s *Seatbelt) Complete(p *plan.Plan) error {
	canon := s.Canon
	if canon == nil {
		canon = canonFS
	}
	if p.Tmp.Mode == plan.TmpPrivate && p.Tmp.HostDir == "" && p.RunID != "" && p.Tmp.Base != "" {
		origin := plan.Origin{Key: "tmp.mode private (seatbelt: a fresh folder per run)"}
		p.Tmp.HostDir = filepath.Join(p.Tmp.Base, "run-"+p.RunID)
		p.Prepare = append(slices.Clone(p.Prepare), plan.Prepare{Path: p.Tmp.HostDir, Mode: 0o700, Origin: origin, Fresh: true, Private: true})
	}
	keepDenied(p)
	q := *p
	q.Mounts = canonMounts(p.Mounts, canon)
	q.Network.UnixSockets = canonAll(p.Network.UnixSockets, canon)
	if q.Tmp.HostDir != "" {
		q.Tmp.HostDir = canon(q.Tmp.HostDir)
	}
	r, err := Translate(&q)
	if err != nil {
		return err
	}
	r.Controls = controlsOf(p)
	for _, g := range p.HostExec.Guards {
		if g.Keep == plan.KeepReadOnly {
			r.Guards = append(r.Guards, canon(g.Path))
		}
	}
	d := Detail{Rules: r, Profile: Profile(r)}
	box := plan.Box{Backend: Backend, Tmpdir: r.Tmpdir, Passed: p.Box.Passed, Rules: assess(p, r)}
	box.Rules = append(box.Rules, supervise.AssessLimits(p, cgroup.Availability{})...)
	for _, w := range r.Write {
		box.Writable = append(box.Writable, w.Path)
	}
	if box.Detail, err = json.Marshal(d); err != nil {
		return err
	}
	p.Box = box
	return nil
}

// keepDenied keeps every guard from the box for the run: Seatbelt refuses
// writes to its path inside the writable roots (a missing one cannot be
// created), so no placeholder is made. Folders a host program puts on
// PATH or whose .pth files an interpreter runs stay writable (a package
// manager writes there) and are not covered: macOS has no after-run check
// yet, and plan says so. A new list rather than changed entries: backend
// selection undoes a candidate's Complete by restoring the plan's fields.
func keepDenied(p *plan.Plan) {
	guards := slices.Clone(p.HostExec.Guards)
	for i, g := range guards {
		switch g.Keep {
		case plan.KeepPathDir, plan.KeepPthDir:
			guards[i].Keep = plan.KeepNone
			guards[i].Note = "seatbelt: no after-run check on macOS yet; a program the box leaves here is not moved away"
		default:
			guards[i].Keep = plan.KeepReadOnly
			guards[i].Note = "seatbelt: refused to the box for the whole run"
		}
	}
	p.HostExec.Guards = guards
	var prep []plan.Prepare
	for _, d := range p.Prepare {
		if d.Placeholder == "" {
			prep = append(prep, d)
		}
	}
	p.Prepare = prep
}

// controlsOf are the control files (relative paths) the search would look
// for in every folder of the writable roots after the run: Seatbelt
// refuses to create or change them anywhere in the roots during the run.
// A new repository's own files are not among them: git init and git clone
// must work in the box (the repositories known before the run are guards).
func controlsOf(p *plan.Plan) []string {
	out := slices.Clone(p.HostExec.Controls)
	slices.Sort(out)
	return slices.Compact(out)
}

func canonMounts(ms []plan.Mount, canon func(string) string) []plan.Mount {
	out := make([]plan.Mount, len(ms))
	for i, m := range ms {
		m.Path = canon(m.Path)
		if m.Source != "" {
			m.Source = canon(m.Source)
		}
		out[i] = m
	}
	return out
}

func canonAll(paths []string, canon func(string) string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, canon(p))
	}
	return out
}

// assess says how Seatbelt enforces each rule of the plan.
func assess(p *plan.Plan, r Rules) []plan.RuleStatus {
	var out []plan.RuleStatus
	add := func(rule, path, origin string, lv plan.Level, how string) {
		out = append(out, plan.RuleStatus{Rule: rule, Path: path, Origin: origin, Level: lv, How: how})
	}
	for _, m := range p.Mounts {
		origin := m.Origin.String()
		switch {
		case m.Op == plan.Proc:
			// There is no /proc on macOS.
		case m.Op == plan.Dev:
			add("dev", m.Path, origin, plan.Enforced, "the host's /dev refused but the exact nodes "+strings.Join(Devices, ", ")+" and /dev/fd")
		case m.Op == plan.Pin:
			add("pin", m.Path, origin, plan.Enforced, "the folder itself cannot be written (renamed, removed); what is in it keeps its access")
		case m.Op == plan.RemountRO:
			// Part of the mount it makes read-only.
		case m.Stage == plan.StageTmp:
			add("tmp", m.Path, origin, plan.Weaker, "Seatbelt cannot put a folder over /tmp: the host's /tmp is refused and the box's own folder is TMPDIR ("+r.Tmpdir+")")
		case m.Access == plan.Hidden:
			add(m.Stage.String(), m.Path, origin, plan.Weaker, "reads and writes refused; the name stays visible in its folder (no mount namespace)")
		case m.Access == plan.ReadWrite && m.Src() != m.Path:
			add(m.Stage.String(), m.Path, origin, plan.Weaker, "cannot be remapped: the box writes "+m.Src()+" in place, and "+m.Path+" is refused")
		case m.Access == plan.ReadWrite:
			add(m.Stage.String(), m.Path, origin, plan.Enforced, "file-write* allowed")
		case m.Access == plan.ReadOnly:
			add(m.Stage.String(), m.Path, origin, plan.Enforced, "file-read* only")
		}
	}
	switch p.Network.Mode {
	case plan.NetNone:
		add("network", "", "", plan.Enforced, "no network: every socket refused but unix sockets in the writable roots and network.unix_sockets; loopback included")
	case plan.NetAllowlist:
		add("network", "", "", plan.Weaker, "TCP only to agentbox's proxy on the host's loopback, which decides each connection; macOS cannot tell the proxy which user connects, so any local process may use it while the run lasts")
	default:
		add("network", "", "", plan.Enforced, "open")
	}
	add("control files", "", "", plan.Enforced, fmt.Sprintf("%d control paths refused at any depth of the writable roots for the whole run", len(r.Controls)))
	for _, g := range p.HostExec.Guards {
		if g.Keep == plan.KeepNone {
			add("host programs", g.Path, g.Rule, plan.NotEnforced, g.Note)
		}
	}
	return out
}

// DetailOf reads the Seatbelt detail of a completed plan.
func DetailOf(p *plan.Plan) (Detail, error) {
	var d Detail
	if p.Box.Backend != Backend {
		return d, errors.New("the plan is not completed for seatbelt")
	}
	if err := json.Unmarshal(p.Box.Detail, &d); err != nil {
		return d, fmt.Errorf("reading the seatbelt detail: %w", err)
	}
	return d, nil
}

// Describe prints how each rule is enforced and the profile.
func (s *Seatbelt) Describe(p *plan.Plan, w io.Writer) {
	fmt.Fprintln(w, "seatbelt:  how each rule is enforced:")
	for _, r := range p.Box.Rules {
		how := plan.Escape(r.How)
		if r.Path != "" {
			how = plan.Escape(r.Path) + ": " + how
		}
		fmt.Fprintf(w, "  %s\t%s\v%s\n", r.Level, plan.Escape(r.Rule), how)
	}
	fmt.Fprintln(w, "seatbelt:  agentbox plan --profile prints the profile sandbox-exec applies")
}

// controlRegex is the regular expression that matches any of the control
// paths cs (relative, slash-separated) at any depth below root, and
// anything inside one. It stands in a profile as #"…", which SBPL takes
// as it is: Translate refuses a root with a double quote in it.
func controlRegex(root string, cs []string) string {
	alt := make([]string, len(cs))
	for i, c := range cs {
		alt[i] = regexp.QuoteMeta(c)
	}
	return "^" + regexp.QuoteMeta(root) + "(/.*)?/(" + strings.Join(alt, "|") + ")(/.*)?$"
}
