package plan

import (
	"errors"
	"fmt"
	"path"
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

func checkPaths(p *Plan) error {
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
	if p.Tmp.Mode == TmpWorkspace && !clean(p.Tmp.HostDir) {
		return fmt.Errorf("tmp mode workspace: host folder %q is not a clean absolute path", p.Tmp.HostDir)
	}
	return nil
}
