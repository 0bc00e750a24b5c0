package box

import (
	"os"
	"runtime"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/mount"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/refusal"
)

// filesystemLog chooses how a run of p under b records its filesystem
// refusals (package fslog): Landlock's own audit records when the kernel
// can give them to this process (root, the kernel's audit on, Landlock
// ABI 7), else seccomp notification on both Linux backends; nothing when
// the audit log is off or elsewhere, or inside another box, whose own log
// refuses a second listener (and records what its policy refuses).
func filesystemLog(p *plan.Plan, b backend.Backend) string {
	if !p.Log.Enabled || p.Log.Filesystem == "" || runtime.GOOS != "linux" || p.GOOS != "linux" || p.Depth > 1 {
		return ""
	}
	switch b.Name() {
	case mount.Backend:
		return fslog.Notify
	case landlock.Backend:
		if p.Identity.Root() && auditReadable() {
			return fslog.Audit
		}
		return fslog.Notify
	}
	return ""
}

// auditReadable reports whether Landlock's audit records reach this
// process: ABI 7, the kernel's audit on, and the right to read it.
func auditReadable() bool {
	if abi, err := landlock.ABI(); err != nil || abi < 7 {
		return false
	}
	on, err := fslog.AuditStatus()
	return err == nil && on
}

// judge is what decides, during a run of p, which filesystem calls the
// policy refuses.
func judge(p *plan.Plan) fslog.Judge {
	if p.Log.Filesystem == "" {
		return nil
	}
	return refusal.New(p, func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	}).Func()
}
