//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// agentbox verify starts the box a plan describes and checks every rule
// from inside it: it passes for every example policy under both Linux
// backends, and fails, naming the rule, when one mechanism is sabotaged.

// verifyReport is the JSON `agentbox verify --json` prints.
type verifyReport struct {
	Backend string `json:"backend"`
	Results []struct {
		Rule   string `json:"rule"`
		Status string `json:"status"`
		Says   string `json:"says"`
		Why    string `json:"why"`
	} `json:"results"`
}

func (w *world) verify(args ...string) (verifyReport, result) {
	w.t.Helper()
	r := w.run(append([]string{"verify", "--json"}, args...)...)
	var rep verifyReport
	if r.code == 125 && strings.Contains(r.stderr, "agentbox: error: init: ") {
		return rep, r // the box refused to start: the caller looks
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		w.t.Fatalf("verify --json printed no report: %v\n%s", err, r)
	}
	return rep, r
}

func (rep verifyReport) failed() []string {
	var out []string
	for _, x := range rep.Results {
		if x.Status == "failed" {
			out = append(out, x.Rule+": "+x.Says)
		}
	}
	return out
}

// Every example policy verifies under both Linux backends: each rule the
// plan shows is in force.
func TestVerifyExamples(t *testing.T) {
	examples, err := filepath.Glob(filepath.Join("..", "examples", "*.toml"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, ex := range examples {
		abs, _ := filepath.Abs(ex)
		for _, backend := range linuxBackends {
			t.Run(filepath.Base(ex)+"/"+backend, func(t *testing.T) {
				w := newWorld(t)
				gitInit(t, w, w.project)
				for _, d := range []string{".ssh", ".docker", ".claude", ".codex", "agent-work/other", "agent-work/proj"} {
					mkdir(t, filepath.Join(w.home, d))
				}
				write(t, filepath.Join(w.home, ".ssh", "id_ed25519"), "key\n")
				write(t, filepath.Join(w.home, "agent-work", "other", "notes"), "theirs\n")
				write(t, filepath.Join(w.project, "main.go"), "package main\n")
				rep, r := w.verify("--backend", backend, "--policy", abs)
				if r.code != 0 || len(rep.failed()) > 0 {
					t.Fatalf("verify failed:\n%s\n%s", strings.Join(rep.failed(), "\n"), r)
				}
				if rep.Backend != backend || len(rep.Results) < 15 {
					t.Errorf("backend %s with %d results, want %s and every rule", rep.Backend, len(rep.Results), backend)
				}
				verified := map[string]bool{}
				restored := 0
				for _, x := range rep.Results {
					if x.Status == "verified" {
						verified[strings.Fields(x.Rule)[0]] = true
					}
					if strings.Contains(x.Why, "kept by recording and restoring") {
						restored++
					}
				}
				kinds := []string{"root", "writable", "read-only", "network", "seccomp", "env"}
				if backend == "landlock" {
					// The examples' read-only paths are all what host
					// programs run or obey: Landlock keeps them by
					// restoring them after the run, which verify says.
					kinds = []string{"root", "writable", "network", "seccomp", "env"}
					if restored == 0 {
						t.Errorf("no rule reported as kept by restoring under Landlock")
					}
				}
				for _, kind := range kinds {
					if !verified[kind] {
						t.Errorf("no %s rule was verified", kind)
					}
				}
			})
		}
	}
}

// sabotagedBwrap writes a bwrap that starts the real one without the
// arguments drop names (an option, how many values follow it, and a text
// one of them must contain; "" for any), and returns its folder.
func sabotagedBwrap(t *testing.T, w *world, flag string, values int, match string) string {
	t.Helper()
	real, err := exec.LookPath("bwrap")
	if err != nil {
		need(t, false, "bwrap is not installed")
	}
	dir := filepath.Join(w.base, "sabotage-"+strings.Trim(flag, "-"))
	script := `#!/usr/bin/python3
import os, sys
REAL, FLAG, N, MATCH = ` + pyStr(real) + `, ` + pyStr(flag) + `, ` + strconv.Itoa(values) + `, ` + pyStr(match) + `
def drop(args):
    out, i = [], 0
    while i < len(args):
        if args[i] == FLAG and (MATCH == "" or any(MATCH in v for v in args[i+1:i+1+N])):
            i += 1 + N
            continue
        out.append(args[i])
        i += 1
    return out
args = sys.argv[1:]
if "--args" in args:
    # Arguments handed over on a descriptor, NUL-separated.
    k = args.index("--args")
    fd = int(args[k+1])
    data = os.read(fd, 1 << 24)
    while True:
        more = os.read(fd, 1 << 24)
        if not more:
            break
        data += more
    inner = [a.decode() for a in data.split(b"\0") if a]
    r, wr = os.pipe()
    os.write(wr, b"\0".join(a.encode() for a in drop(inner)) + b"\0")
    os.close(wr)
    os.dup2(r, fd)
    os.close(r)
args = drop(args)
os.execv(REAL, [REAL] + args)
`
	write(t, filepath.Join(dir, "bwrap"), script)
	if err := os.Chmod(filepath.Join(dir, "bwrap"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func pyStr(s string) string { b, _ := json.Marshal(s); return string(b) }

// A bwrap that leaves out one mechanism fails verification, naming the
// rule it broke: a read-only path that stays writable, the seccomp filter,
// the network namespace, a hidden path.
func TestVerifySabotage(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		need(t, false, "python3 is not installed")
	}
	tests := []struct {
		name         string
		flag         string
		values       int
		match        string
		extra        []string
		rule         string // the start of the rule that must fail
		ruleProjPath string // the rule's path, in the project
	}{
		{name: "git hooks bound writable", flag: "--ro-bind-fd", values: 2, match: "/.git/hooks", ruleProjPath: ".git/hooks", rule: "read-only "},
		{name: "no seccomp filter", flag: "--add-seccomp-fd", values: 1, rule: "seccomp keyring"},
		{name: "no network namespace", flag: "--unshare-net", extra: []string{"--network", "none"}, rule: "network none"},
		{name: "a hidden folder left writable", flag: "--remount-ro", values: 1, match: "/secrets", extra: []string{"--deny", "HOME/secrets"}, rule: "deny "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			gitInit(t, w, w.project)
			write(t, filepath.Join(w.home, "secrets", "key"), "k\n")
			dir := sabotagedBwrap(t, w, tc.flag, tc.values, tc.match)
			for i, e := range w.env {
				if strings.HasPrefix(e, "PATH=") {
					w.env[i] = "PATH=" + dir + ":" + strings.TrimPrefix(e, "PATH=")
				}
			}
			var extra []string
			for _, a := range tc.extra {
				extra = append(extra, strings.ReplaceAll(a, "HOME", w.home))
			}
			rep, r := w.verify(append([]string{"--backend", "bwrap"}, extra...)...)
			if r.code == 125 && strings.Contains(r.stderr, "agentbox: error: init: ") {
				// The init's own check of every mount (each bind is the
				// file agentbox opened, each hidden path hidden) caught
				// the sabotage before any probe ran: the box never
				// started, which is what verification wants too.
				path := filepath.Join(w.project, tc.ruleProjPath)
				if tc.ruleProjPath == "" {
					path = filepath.Join(w.home, "secrets")
				}
				expectContains(t, "stderr", r.stderr, "init: "+path+": ")
				r = w.run(append(append([]string{"run", "--verify", "--backend", "bwrap"}, extra...), "--", "sh", "-c", "echo STARTED")...)
				expectCode(t, r, 125)
				expectNotContains(t, "stdout", r.stdout, "STARTED")
				return
			}
			if r.code != 1 {
				t.Fatalf("want exit 1 for a sabotaged box, got %s", r)
			}
			want := tc.rule
			if tc.ruleProjPath != "" {
				want += filepath.Join(w.project, tc.ruleProjPath)
			}
			found := false
			for _, f := range rep.failed() {
				found = found || strings.HasPrefix(f, want)
			}
			if !found {
				t.Errorf("no failed rule starting %q; failed:\n%s", want, strings.Join(rep.failed(), "\n"))
			}
			// run --verify refuses to start the command in such a box.
			r = w.run(append(append([]string{"run", "--verify", "--backend", "bwrap"}, extra...), "--", "sh", "-c", "echo STARTED")...)
			expectCode(t, r, 125)
			expectNotContains(t, "stdout", r.stdout, "STARTED")
			expectContains(t, "stderr", r.stderr, "rules of the plan are not in force; CMD was not started")
		})
	}
}

// run --verify runs the command in a box whose rules all hold, and verify
// prints a readable report.
func TestRunVerify(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			gitInit(t, w, w.project)
			r := w.run("run", "--verify", "--backend", backend, "--", "sh", "-c", "echo STARTED")
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "STARTED")
			r = w.run("verify", "--backend", backend)
			expectCode(t, r, 0)
			expectContains(t, "report", r.stdout, "verify: "+backend+" box, run ")
			expectContains(t, "report", r.stdout, "verified    writable "+w.project)
			expectNotContains(t, "report", r.stdout, "failed  ")
		})
	}
}
