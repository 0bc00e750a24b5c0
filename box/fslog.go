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
// refusals (package fslog). The preloaded log (the default) on both Linux
// backends (under Landlock, whose box may not make a unix socket, through
// an inherited pipe); the complete mode ([log] filesystem = "complete", or reads
// too): Landlock's own audit records when the kernel can give them to
// this process (root, the kernel's audit on, Landlock ABI 7), else
// seccomp notification on both Linux backends. Nothing when the audit
// log is off or elsewhere, or inside another box, whose own log records
// what its policy refuses (its preloaded library is in the processes
// already; its seccomp log refuses a second listener).
func filesystemLog(p *plan.Plan, b backend.Backend) string {
	if !p.Log.Enabled || p.Log.Filesystem == "" || runtime.GOOS != "linux" || p.GOOS != "linux" || p.Depth > 1 ||
		runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return ""
	}
	if b.Name() != mount.Backend && b.Name() != landlock.Backend {
		return ""
	}
	if p.Log.Filesystem == fslog.Preload {
		return fslog.Preload
	}
	if b.Name() == landlock.Backend && p.Identity.Root() && auditReadable() {
		return fslog.Audit
	}
	return fslog.Notify
}

// planLog completes p for the filesystem log b keeps: the preloaded log
// gets its folder, or is off with the reason when it cannot have one.
func planLog(p *plan.Plan, b backend.Backend) {
	asked := p.Log.Enabled && p.Log.Filesystem != "" && p.Depth <= 1
	p.Log.Filesystem = filesystemLog(p, b)
	if p.Log.Filesystem == "" && asked {
		p.Log.Off = "the " + b.Name() + " backend does not record them here"
	}
	if p.Log.Filesystem != fslog.Preload {
		return
	}
	if why := fslog.PlanPreload(p); why != "" {
		p.Log.Filesystem, p.Log.Off = "", "the preloaded log cannot run: "+why
	}
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

// unplanLog undoes what planLog gave the preloaded log, for a run that
// records its refusals another way.
func unplanLog(p *plan.Plan) {
	if p.Log.Preload == "" {
		return
	}
	kept := p.Prepare[:0]
	for _, d := range p.Prepare {
		if d.Path != p.Log.Preload {
			kept = append(kept, d)
		}
	}
	p.Prepare, p.Log.Preload = kept, ""
}

// judge is what decides, during a run of p, which filesystem calls the
// policy refuses; nil when the run records none.
func judge(p *plan.Plan) *refusal.Judge {
	if p.Log.Filesystem == "" {
		return nil
	}
	return refusal.New(p, func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// judgeFunc is j as the log takes it (nil for none).
func judgeFunc(j *refusal.Judge) fslog.Judge {
	if j == nil {
		return nil
	}
	return j.Func()
}
