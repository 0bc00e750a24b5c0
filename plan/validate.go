package plan

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// check is one rule a plan must satisfy; Validate runs them all.
type check func(*Plan) error

var checks = []check{
	checkCommand,
	checkPaths,
	checkStages,
	checkRootFirst,
	checkModes,
}

// Validate reports every way in which p breaks the contract that backends rely
// on, joined into one error, or nil.
func Validate(p *Plan) error {
	var errs []error
	for _, c := range checks {
		if err := c(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkCommand(p *Plan) error {
	if len(p.Command) == 0 || p.Command[0] == "" {
		return errors.New("empty command")
	}
	return nil
}

func clean(p string) bool { return path.IsAbs(p) && path.Clean(p) == p }

// winClean accepts an absolute Windows path: a drive path (C:\x) or a UNC
// path (\\server\share\x), with no "." or ".." element and no doubled
// separator.
func winClean(p string) bool {
	rest := ""
	switch {
	case len(p) >= 3 && p[1] == ':' && p[2] == '\\' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z'):
		rest = p[3:]
	case strings.HasPrefix(p, `\\`) && len(p) > 2:
		rest = p[2:]
	default:
		return false
	}
	if rest == "" {
		return true
	}
	for _, el := range strings.Split(rest, `\`) {
		if el == "" || el == "." || el == ".." || strings.ContainsAny(el, "/\x00") {
			return false
		}
	}
	return true
}

func checkPaths(p *Plan) error {
	if p.GOOS == "windows" {
		return checkWindowsPaths(p)
	}
	if !clean(p.Cwd) {
		return fmt.Errorf("working directory %q is not a clean absolute path", p.Cwd)
	}
	for i, m := range p.Mounts {
		if !clean(m.Path) {
			return fmt.Errorf("mount %d (%s): path %q is not a clean absolute path", i, m.Op, m.Path)
		}
		if m.Source != "" && !clean(m.Source) {
			return fmt.Errorf("mount %d (%s): source %q is not a clean absolute path", i, m.Op, m.Source)
		}
		if m.Origin.Key == "" {
			return fmt.Errorf("mount %d (%s %s): no origin", i, m.Op, m.Path)
		}
	}
	return nil
}

// checkWindowsPaths is checkPaths for a Windows plan. The stage-1 mounts
// keep their slash paths (/, /dev, /proc): the Windows backend reads them
// as "the rest of the machine", not as folders.
func checkWindowsPaths(p *Plan) error {
	if !winClean(p.Cwd) {
		return fmt.Errorf("working directory %q is not a clean absolute Windows path", p.Cwd)
	}
	for i, m := range p.Mounts {
		if m.Stage == StageRoot || m.Path == "/tmp" {
			continue
		}
		if !winClean(m.Path) || (m.Source != "" && !winClean(m.Source)) {
			return fmt.Errorf("mount %d (%s): %q is not a clean absolute Windows path", i, m.Op, m.Path)
		}
		if m.Origin.Key == "" {
			return fmt.Errorf("mount %d (%s %s): no origin", i, m.Op, m.Path)
		}
	}
	return nil
}

func checkStages(p *Plan) error {
	last := Stage(0)
	for i, m := range p.Mounts {
		if m.Stage < StageRoot || m.Stage > StageDeny {
			return fmt.Errorf("mount %d (%s %s): bad stage %d", i, m.Op, m.Path, m.Stage)
		}
		if m.Stage < last {
			return fmt.Errorf("mount %d (%s %s): stage %s after stage %s", i, m.Op, m.Path, m.Stage, last)
		}
		last = m.Stage
	}
	return nil
}

// checkRootFirst insists that the whole host is read-only before anything is
// made writable: a plan that starts anywhere else would expose the host.
func checkRootFirst(p *Plan) error {
	if len(p.Mounts) == 0 {
		return errors.New("no mounts: the root must be bound read-only first")
	}
	m := p.Mounts[0]
	if m.Op != ROBind || m.Path != "/" || m.Src() != "/" {
		return fmt.Errorf("first mount is %s %s, want ro-bind /", m.Op, m.Path)
	}
	return nil
}

func checkModes(p *Plan) error {
	switch p.Enforce {
	case Require, BestEffort:
	default:
		return fmt.Errorf("enforce %q: want %q or %q", p.Enforce, Require, BestEffort)
	}
	switch p.Network.Mode {
	case NetOpen, NetNone, NetAllowlist:
	default:
		return fmt.Errorf("network mode %q: want open, none or allowlist", p.Network.Mode)
	}
	switch p.Tmp.Mode {
	case TmpWorkspace, TmpPrivate, TmpHost:
	default:
		return fmt.Errorf("tmp mode %q: want workspace, private or host", p.Tmp.Mode)
	}
	if p.Tmp.Mode == TmpWorkspace && p.GOOS != "windows" && !clean(p.Tmp.HostDir) {
		return fmt.Errorf("tmp mode workspace: host folder %q is not a clean absolute path", p.Tmp.HostDir)
	}
	return nil
}
