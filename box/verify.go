package box

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/verify"
)

// ErrVerifyFailed is returned by Verify when a rule is not in force (the
// CLI exits 1 for it, having printed the report).
var ErrVerifyFailed = errors.New("some rules of the plan are not in force")

// Verify starts the box the request's plan describes and checks every
// rule from inside it (package verify), printing the report as text (fitted
// to width columns, 0 for no limit) or JSON. It returns ErrVerifyFailed
// when a rule failed.
func Verify(req Request, asJSON bool, width int, w io.Writer) error {
	if len(req.Command) == 0 {
		req.Command = []string{"true"}
	}
	p, b, err := Resolve(req, Backends())
	if err != nil {
		return err
	}
	if b == nil {
		return hint(fmt.Errorf("nothing to verify: the command would run unconfined (%s)", p.Box.Degraded),
			"run `agentbox doctor` to see what this machine can enforce")
	}
	r, err := verifyBox(p, b)
	if err != nil {
		return err
	}
	if asJSON {
		if err := r.WriteJSON(w); err != nil {
			return err
		}
	} else if err := r.WriteText(w, width); err != nil {
		return err
	}
	if r.Count(verify.Failed) > 0 {
		return ErrVerifyFailed
	}
	return nil
}

// verifyBox runs the checks of p in a box of b: the same plan, with the
// probe as its command, under a run ID of its own.
func verifyBox(p *plan.Plan, b backend.Backend) (verify.Report, error) {
	q := p.Clone()
	q.Command = []string{"/proc/self/exe", verify.ProbeCommand}
	q.SelfCommand = true
	q.RunID = newRunID()
	// The probe's refusals are the point, not something to record.
	q.Log.Filesystem, q.Log.Preload = "", ""
	var keep []plan.Prepare
	for _, d := range q.Prepare {
		switch {
		case !d.Fresh:
			keep = append(keep, d)
		case d.Path == q.Tmp.HostDir:
			// The run's own folder (Landlock's private /tmp): the
			// probe's run gets one of its own.
			q.Tmp.HostDir = ""
		}
	}
	q.Prepare = keep
	if err := b.Complete(q); err != nil {
		return verify.Report{}, err
	}
	self, err := SelfPath()
	if err != nil {
		return verify.Report{}, err
	}
	host, done, err := hostFacts(q, b)
	if err != nil {
		return verify.Report{}, err
	}
	defer done()
	input, err := json.Marshal(verify.Input{Plan: q, Host: host})
	if err != nil {
		return verify.Report{}, err
	}
	out, status, err := runProbe(q, b, self, input)
	if err != nil {
		return verify.Report{}, err
	}
	r := verify.Report{Backend: b.Name(), Run: q.RunID}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var res verify.Result
		if err := json.Unmarshal(sc.Bytes(), &res); err == nil {
			r.Results = append(r.Results, res)
		}
	}
	if status != 0 || len(r.Results) == 0 {
		return r, fmt.Errorf("verify: the probe did not run in the box (exit status %d)", status)
	}
	return r, nil
}

// envWant is the environment CMD of q starts with: every name, and the
// values agentbox sets itself.
func envWant(q *plan.Plan) verify.EnvWant {
	w := verify.EnvWant{Values: map[string]string{}}
	seen := map[string]bool{}
	for _, kv := range q.BoxEnviron() {
		k, _, _ := strings.Cut(kv, "=")
		if !seen[k] {
			seen[k] = true
			w.Names = append(w.Names, k)
		}
	}
	if a, err := landlock.AssessmentOf(q); err == nil && q.Box.Backend == landlock.Backend && a.Proxy {
		// The proxy's variables, set when the run has its port.
		for _, kv := range q.Network.ProxyVarsEnv("127.0.0.1:0") {
			if k, _, _ := strings.Cut(kv, "="); !seen[k] {
				seen[k] = true
				w.Names = append(w.Names, k)
			}
		}
		for _, k := range landlock.ProxyVars {
			if !seen[k] {
				seen[k] = true
				w.Names = append(w.Names, k)
			}
		}
	}
	sort.Strings(w.Names)
	for _, kv := range append(append([]string(nil), q.Box.Env...), q.Truthful()...) {
		k, v, _ := strings.Cut(kv, "=")
		w.Values[k] = v
	}
	for k, v := range q.Env.Set {
		w.Values[k] = v
	}
	for _, n := range q.Env.Removed {
		if _, set := w.Values[n]; !set { // set again by the backend
			w.Removed = append(w.Removed, n)
		}
	}
	return w
}
