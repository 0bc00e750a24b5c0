package box

import (
	"io"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/refusal"
	"github.com/agentbox/agentbox/supervise"
	"github.com/agentbox/agentbox/verify"
)

// runProbe runs q's box on the one run path with input on its stdin and
// returns what it wrote on its stdout. The backends give the box
// agentbox's own descriptors 0 and 1, so for the probe's run they are
// pipes, and afterwards what they were.
func runProbe(q *plan.Plan, b backend.Backend, self string, input []byte) (string, int, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return "", 0, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return "", 0, err
	}
	saved0, err := unix.Dup(0)
	if err != nil {
		return "", 0, err
	}
	saved1, err := unix.Dup(1)
	if err != nil {
		return "", 0, err
	}
	restore := func() {
		unix.Dup2(saved0, 0)
		unix.Dup2(saved1, 1)
		unix.Close(saved0)
		unix.Close(saved1)
	}
	if err := unix.Dup2(int(inR.Fd()), 0); err != nil {
		return "", 0, err
	}
	if err := unix.Dup2(int(outW.Fd()), 1); err != nil {
		restore()
		return "", 0, err
	}
	inR.Close()
	outW.Close()
	go func() {
		inW.Write(input)
		inW.Close()
	}()
	got := make(chan string, 1)
	go func() {
		data, _ := io.ReadAll(outR)
		outR.Close()
		got <- string(data)
	}()
	events := event.NewStream(q.RunID, &event.Summary{W: os.Stderr})
	if log := auditLog(q, os.Stderr); log != nil {
		events.Add(log)
	}
	status, err := supervise.Run(b, q, backend.Context{Self: self, Events: events,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	events.Close()
	restore()
	return <-got, status, err
}

// hostFacts gathers what the checks need from outside the box, and
// returns what undoes it (the marker in /tmp, the listener).
func hostFacts(q *plan.Plan, b backend.Backend) (verify.Host, func(), error) {
	j := refusal.New(q, nil)
	h := verify.Host{Pid: os.Getpid(), Hidden: map[string]int64{}, Others: map[string][]string{}, Files: map[string]string{}}
	var undo []func()
	done := func() {
		for _, f := range undo {
			f()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		h.Listener = ln.Addr().String()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		undo = append(undo, func() { ln.Close() })
	}
	if f, err := os.CreateTemp("/tmp", ".agentbox-verify-"); err == nil {
		h.Marker = f.Name()
		f.Close()
		undo = append(undo, func() { os.Remove(h.Marker) })
	}
	// Folders outside the writable roots where the user could create a
	// file without the box: the home folder, the project's parent, /var/tmp.
	cands := []string{q.Identity.Home}
	for _, m := range q.Mounts {
		if m.Stage == plan.StageWritable && m.Op == plan.Bind {
			cands = append(cands, filepath.Dir(m.Path))
			break
		}
	}
	cands = append(cands, "/var/tmp", "/")
	seen := map[string]bool{}
	for _, d := range cands {
		if acc, ok := j.Access(d); seen[d] || !ok || acc != plan.ReadOnly || len(h.Outside) == 2 {
			continue
		}
		seen[d] = true
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && unix.Access(d, unix.W_OK) == nil {
			h.Outside = append(h.Outside, d)
		}
	}
	for _, m := range q.Mounts {
		switch {
		case m.Op == plan.HideDir:
			entries, _ := os.ReadDir(m.Path)
			h.Hidden[m.Path] = int64(len(entries))
		case m.Op == plan.HideFile:
			if fi, err := os.Stat(m.Path); err == nil {
				h.Hidden[m.Path] = fi.Size()
			}
		case m.Stage == plan.StageWorkspace && m.Op == plan.Tmpfs:
			// What the mask binds back (this workspace's folder, or its
			// caches) is not another workspace's.
			own := map[string]bool{q.Workspace.ID: true, ".repos": true}
			for _, n := range q.Mounts {
				if n.Stage == plan.StageWorkspace && n.Op != plan.Tmpfs && filepath.Dir(n.Path) == m.Path {
					own[filepath.Base(n.Path)] = true
				}
			}
			entries, _ := os.ReadDir(m.Path)
			for _, e := range entries {
				if !own[e.Name()] && len(h.Others[m.Path]) < 3 {
					h.Others[m.Path] = append(h.Others[m.Path], e.Name())
				}
			}
		case m.Stage == plan.StageWritable && m.Op == plan.Bind && m.Access == plan.ReadWrite:
			if f := sampleFile(j, m.Path); f != "" {
				h.Files[m.Path] = f
			}
		}
	}
	for _, d := range []string{"/dev/kmsg", "/dev/mem", "/dev/port", "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/kvm", "/dev/fuse", "/dev/loop0", "/dev/tty0"} {
		if len(h.Devices) == 3 {
			break
		}
		if _, err := os.Stat(d); err == nil && (b.Name() == "bwrap" || unix.Access(d, unix.R_OK) == nil) {
			h.Devices = append(h.Devices, d)
		}
	}
	h.Env = envWant(q)
	return h, done, nil
}

// sampleFile finds, near the top of the writable folder root, a regular
// file the plan leaves writable and the user may write.
func sampleFile(j *refusal.Judge, root string) string {
	queue := []string{root}
	for n := 0; len(queue) > 0 && n < 200; {
		dir := queue[0]
		queue = queue[1:]
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			n++
			p := filepath.Join(dir, e.Name())
			if acc, _ := j.Access(p); acc != plan.ReadWrite || e.Name() == ".git" {
				continue
			}
			switch {
			case e.Type().IsRegular():
				if unix.Access(p, unix.W_OK) == nil {
					return p
				}
			case e.IsDir():
				queue = append(queue, p)
			}
		}
	}
	return ""
}
