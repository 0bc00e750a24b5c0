package seatbelt

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
)

// Available reports whether sandbox-exec is there to apply a profile.
func (s *Seatbelt) Available() error {
	if _, err := os.Stat(SandboxExec); err != nil {
		return &backend.Unavailable{Code: "seatbelt-missing", Reason: SandboxExec + " is missing: " + err.Error(),
			Fix: "agentbox needs macOS's own sandbox-exec; a system that removed it cannot be confined"}
	}
	return nil
}

// Run runs the plan's command under sandbox-exec with the plan's profile,
// the allowlist proxy beside it when the plan asks for one.
func (s *Seatbelt) Run(p *plan.Plan, c *backend.Context) (int, error) {
	d, err := DetailOf(p)
	if err != nil {
		return supervise.ExitFailure, err
	}
	env := p.BoxEnviron()
	args := []string{"sandbox-exec", "-p", d.Profile}
	if p.Network.Mode == plan.NetAllowlist {
		px, err := startProxy(p, c)
		if err != nil {
			return supervise.ExitFailure, err
		}
		defer px.Stop()
		args = append(args, "-D", ProxyPortParam+"="+strconv.Itoa(px.Port))
		env = netproxy.WithVars(env, px.Env)
	}
	if p.Tmp.HostDir != "" {
		if err := os.MkdirAll(p.Tmp.HostDir, 0o700); err != nil {
			return supervise.ExitFailure, fmt.Errorf("making the box's temporary folder: %w", err)
		}
	}
	if len(p.Command) == 0 {
		return supervise.ExitFailure, errors.New("no command to run")
	}
	cmd, err := lookPath(p.Command[0], env)
	if err != nil {
		return 127, &backend.StatusError{Status: 127, Err: err}
	}
	// The command by its absolute path: sandbox-exec takes a first word
	// that starts with '-' for an option of its own.
	args = append(args, cmd)
	args = append(args, p.Command[1:]...)
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGWINCH, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	attr := &syscall.ProcAttr{Dir: p.Cwd, Env: env,
		Files: []uintptr{c.Stdin.Fd(), c.Stdout.Fd(), c.Stderr.Fd()}}
	pid, err := syscall.ForkExec(SandboxExec, args, attr)
	if c.Started != nil {
		c.Started(pid)
	}
	if err != nil {
		return supervise.ExitFailure, fmt.Errorf("starting %s: %w", SandboxExec, err)
	}
	done := make(chan syscall.WaitStatus, 1)
	go func() {
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if err != syscall.EINTR {
				break
			}
		}
		done <- ws
	}()
	for {
		select {
		case sig := <-sigs:
			syscall.Kill(pid, sig.(syscall.Signal))
		case ws := <-done:
			if ws.Signaled() {
				return 128 + int(ws.Signal()), nil
			}
			return ws.ExitStatus(), nil
		}
	}
}

// SelfCheck tells whether this process runs under a Seatbelt profile: a
// write to the user's home folder is refused inside every box.
func (s *Seatbelt) SelfCheck() (string, bool) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "no home folder to probe", false
	}
	f, err := os.CreateTemp(home, ".agentbox-probe-")
	if err == nil {
		name := f.Name()
		f.Close()
		os.Remove(name)
		return "a file could be created in " + home + ": not confined", false
	}
	return "writing in " + home + " is refused: " + err.Error(), true
}

// lookPath finds name as the box's PATH would.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return filepath.Abs(name)
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		full := filepath.Join(dir, name)
		if fi, err := os.Stat(full); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return filepath.Abs(full)
		}
	}
	return "", fmt.Errorf("%s: command not found", name)
}

// startProxy starts the allowlist proxy of a run on the host's loopback:
// the profile lets the box reach its port and nothing else. macOS cannot
// tell the proxy which user connects: any local process may use it while
// the run lasts (plan says so).
func startProxy(p *plan.Plan, c *backend.Context) (*netproxy.Loopback, error) {
	return netproxy.StartLoopback(p.Network, c.NetLog, func(d netproxy.Decided) {
		c.Emit(event.Event{Kind: event.Net, Allowed: event.Bool(d.Allowed), Proto: d.Proto, Target: d.Target, Reason: d.Reason,
			Unreachable: d.Unreachable})
	}, func(net.Conn) error { return nil })
}
