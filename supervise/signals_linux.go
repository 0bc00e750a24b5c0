package supervise

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// Signals are the signals agentbox passes on to CMD: sent to agentbox, they
// reach CMD (through the init under bwrap). One list for every backend.
var Signals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2}

// Foreground reports whether agentbox's stdin is a terminal whose
// foreground process group is agentbox's own.
func Foreground() bool {
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// RestoreForeground gives the terminal back to agentbox's process group
// after CMD had it, ignoring the SIGTTOU a background group would get.
func RestoreForeground() {
	signal.Ignore(unix.SIGTTOU)
	defer signal.Reset(unix.SIGTTOU)
	unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
}

// Watcher forwards the signals agentbox gets to the box while it waits for
// the box's first process. Start it before that process is started, so no
// signal sent in between is lost.
type Watcher struct {
	sigs       chan os.Signal
	foreground bool
}

// Watch starts catching Signals. fg says whether agentbox owned the
// terminal (see Foreground): Wait then takes it back at the end.
func Watch(fg bool) *Watcher {
	w := &Watcher{sigs: make(chan os.Signal, 16), foreground: fg}
	signal.Notify(w.sigs, Signals...)
	return w
}

// Stop stops catching signals.
func (w *Watcher) Stop() { signal.Stop(w.sigs) }

// Wait waits for process pid to end, forwarding every caught signal to the
// process target sends (the box's init, known only once it started), or
// to target's first value, and holding signals until there is one. It
// gives the terminal back when agentbox had it, and returns pid's status.
func (w *Watcher) Wait(pid int, target <-chan int) unix.WaitStatus {
	done := make(chan unix.WaitStatus, 1)
	go func() { done <- waitExit(pid) }()
	to := 0
	var pending []os.Signal
	for {
		select {
		case t := <-target:
			to = t
			target = nil
			for _, s := range pending {
				unix.Kill(to, s.(syscall.Signal))
			}
			pending = nil
		case s := <-w.sigs:
			if to > 0 {
				unix.Kill(to, s.(syscall.Signal))
			} else {
				pending = append(pending, s)
			}
		case ws := <-done:
			if w.foreground {
				RestoreForeground()
			}
			return ws
		}
	}
}

// Status is the exit status agentbox reports for ws: the process's own
// code, or 128+N when signal N killed it.
func Status(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
