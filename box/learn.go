package box

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/learn"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/refusal"
	"github.com/agentbox/agentbox/supervise"
)

// Learn runs the request's command confined with the current policy,
// collects what the box refused (files and network), and proposes a
// policy that allows the safe part of it, shown as a diff on stdout. The
// proposal is kept in agentbox's state folder (policy.Proposals), never in
// the project's .agentbox.toml: the next run goes on with the policy the
// user trusted, and `agentbox trust --proposal` shows and applies it. With
// output, the proposal (the diff and what was left out) goes to that file
// instead and nothing is kept.
func Learn(req Request, output string, stdout, stderr io.Writer) error {
	if stderr == nil {
		stderr = os.Stderr
	}
	if len(req.Command) == 0 {
		return hint(errors.New("learn: no command"), "usage: agentbox learn [flags] -- CMD [ARGS...]")
	}
	env, err := World()
	if err != nil {
		return err
	}
	p, b, err := Resolve(req, Backends())
	if err != nil {
		return err
	}
	if b == nil {
		return hint(fmt.Errorf("learn: the command would run unconfined (%s): nothing to learn from", p.Box.Degraded),
			"run `agentbox doctor` to see what this machine can enforce")
	}
	if p.Log.Filesystem == "" || !p.Log.Reads {
		// Learning is about refusals: see them all, reads of hidden
		// paths too, even where the policy does not record them.
		// Not inside another box (Depth > 1), whose own log refuses a
		// second listener and records what its policy refuses itself.
		// The complete mode, which sees static programs too: a learning
		// run sees every refusal, whatever it costs.
		unplanLog(p)
		p.Log.Off = ""
		p.Log.Filesystem = filesystemLog(&plan.Plan{GOOS: p.GOOS, Identity: p.Identity, Depth: p.Depth, Log: plan.Log{Enabled: true, Filesystem: "complete"}}, b)
		p.Log.Reads = p.Log.Filesystem != ""
		if err := b.Complete(p); err != nil {
			return err
		}
		if p.Log.Filesystem == "" {
			fmt.Fprintln(stderr, "agentbox: learn: the files refused are not recorded inside another box (its own log records them): only refused connections are learnt")
		}
	}
	file := policy.FindProject(env, env.Cwd)
	if file == "" {
		file = filepath.Join(supervise.Project(p), policy.ProjectFile)
	}
	before, err := readIfExists(file)
	if err != nil {
		return err
	}
	j := refusal.New(p, func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	})
	hr := hostRun(p, summaryLimit)
	j.SetHostRun(hr) // the verdict the summary, the log and the proposal share
	j.SetHostDenies(hostDenies(p))
	nets := &netRefusals{p: p}
	self, err := SelfPath()
	if err != nil {
		return err
	}
	events := event.NewStream(p.RunID, &event.Summary{W: os.Stderr}, &refusal.Summary{W: os.Stderr, Plan: p, Judge: j, HostRun: hr}, nets)
	if log := auditLog(p, os.Stderr); log != nil {
		events.Add(log)
	}
	status, err := supervise.Run(b, p, backend.Context{Self: self, Events: events, Judge: j.Func(),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	events.Close()
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "agentbox learn: %s exited with status %d\n", event.Escape(p.Command[0]), status)

	// The project's policy is read-only in the box, but one that did not
	// exist could have been made there: a proposal is never written into
	// what the box wrote.
	after, err := readIfExists(file)
	if err != nil {
		return err
	}
	if !bytes.Equal(before, after) {
		return hint(fmt.Errorf("learn: %s changed while the command ran; nothing was proposed", file),
			"the box may have written it: look at it before you trust or remove it")
	}
	prop := learn.Propose(p, append(j.Refusals(), nets.refused()...), ShellJoin(req.Command), hostRun(p, 0))
	var report bytes.Buffer
	var diff string
	if len(prop.Adds) > 0 {
		data, err := learn.Edit(file, before, prop.Adds)
		if err != nil {
			return err
		}
		name := filepath.Base(file)
		old := "a/" + name
		if before == nil {
			old = "/dev/null"
		}
		diff = learn.Diff(old, "b/"+name, string(before), string(data))
		if output == "" {
			from := ""
			if before != nil {
				from = policy.Hash(before)
			}
			if err := policy.ProposalsOf(env).Put(policy.Proposal{File: file, From: from, Create: prop.Create, Made: time.Now(), Data: data}); err != nil {
				return fmt.Errorf("learn: %w", err)
			}
		}
	}
	writeProposal(&report, file, diff, prop, output == "")
	if output != "" {
		if err := os.WriteFile(output, report.Bytes(), 0o644); err != nil {
			return fmt.Errorf("learn: writing %s: %w", output, err)
		}
		fmt.Fprintf(stdout, "wrote the proposal to %s\n", output)
		return nil
	}
	_, err = stdout.Write(report.Bytes())
	return err
}

// writeProposal writes what learn proposes: the diff and what it left out.
func writeProposal(w io.Writer, file, diff string, prop learn.Proposal, written bool) {
	if diff == "" {
		fmt.Fprintln(w, "agentbox learn: nothing safe to propose")
	} else {
		fmt.Fprint(w, diff)
		if written {
			fmt.Fprintf(w, "\nkept as a proposal for %s, not in force: runs go on with the policy you trusted.\n"+
				"to review and apply it: agentbox trust --proposal %s\n", file, ShellQuote(file))
		} else {
			fmt.Fprintf(w, "\nto use it, apply this to %s and trust it: agentbox trust\n", file)
		}
	}
	if len(prop.Left) > 0 {
		fmt.Fprintln(w, "not proposed (a person who knows why may change the policy by hand):")
		for _, r := range prop.Left {
			fmt.Fprintf(w, "  %s: %s\n", event.Escape(r.First), event.Escape(r.Fix.String()))
		}
	}
}

// readIfExists reads the file, nil when it does not exist.
func readIfExists(file string) ([]byte, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("learn: reading %s: %w", file, err)
	}
	return data, nil
}

// writeAtomic replaces file with data in one rename, keeping its mode.
func writeAtomic(file string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(file); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".agentbox-learn-*")
	if err != nil {
		return fmt.Errorf("learn: writing %s: %w", file, err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("learn: writing %s: %w", file, err)
	}
	return nil
}

// netRefusals is the sink that keeps the connections the proxy refused.
type netRefusals struct {
	p     *plan.Plan
	mu    sync.Mutex
	count map[string]int
	first map[string]string
}

func (n *netRefusals) Emit(e event.Event) {
	if e.Kind != event.Net || e.Allowed == nil || *e.Allowed {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.count == nil {
		n.count, n.first = map[string]int{}, map[string]string{}
	}
	key := e.Target + "\x00" + e.Reason
	if _, ok := n.count[key]; !ok && len(n.count) >= 256 {
		return
	}
	n.count[key]++
	n.first[key] = "connect " + e.Target + " (" + e.Reason + ")"
}

func (n *netRefusals) Close() error { return nil }

func (n *netRefusals) refused() []refusal.Refused {
	n.mu.Lock()
	defer n.mu.Unlock()
	keys := make([]string, 0, len(n.count))
	for k := range n.count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []refusal.Refused
	for _, k := range keys {
		target, reason, _ := strings.Cut(k, "\x00")
		out = append(out, refusal.Refused{Fix: refusal.AdviseNet(n.p, target, reason), Count: n.count[k], First: n.first[k],
			Rule: "network " + n.p.Network.Mode})
	}
	return out
}

// ShellJoin writes a command line as a shell would take it.
func ShellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = ShellQuote(a)
	}
	return strings.Join(out, " ")
}
