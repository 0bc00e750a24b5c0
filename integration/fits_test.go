//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every command's readable output fits 100 columns with COLUMNS=100 (what
// a file or a pipe gets by default, too): the help screens, doctor, log
// and log --denials, status, caches, providers, trust, plan --argv (one
// argument a line), a run's refusal summary, an error with its hints (an
// untrusted project policy), and the warning for a missing writable
// folder; --wide and --json keep lines whole. (A line of plan --argv that
// is one argument longer than that is kept whole: a shell word cannot be
// cut.) Before, --help ran to 159
// columns, doctor to 168, log --denials to 329, the untrusted-policy hint
// to 251 and plan --argv was one line of thousands.
func TestOutputFits(t *testing.T) {
	w := newWorld(t)
	w.repo(w.project)
	base := w.env
	var env []string
	for _, e := range base {
		if !strings.HasPrefix(e, "COLUMNS=") {
			env = append(env, e)
		}
	}
	w.env = append(env, "COLUMNS=100")
	long := filepath.Join(w.home, strings.Repeat("a-rather-long-folder-name/", 4))
	mkdir(t, long)
	// A run with refusals, for log --denials and the summary.
	summary := w.run("run", "--", "sh", "-c", "touch /usr/abx-1 "+long+"x 2>/dev/null; echo > ~/.bashrc 2>/dev/null; true")
	outputs := map[string]result{"run with refusals": summary}
	run := func(args ...string) {
		outputs[strings.Join(args, " ")] = w.run(args...)
	}
	for _, args := range [][]string{
		{"--help"}, {"run", "--help"}, {"plan", "--help"}, {"verify", "--help"}, {"doctor", "--help"}, {"log", "--help"},
		{"status", "--help"}, {"caches", "--help"}, {"trust", "--help"}, {"learn", "--help"}, {"shell-init", "--help"},
		{"doctor"}, {"log"}, {"log", "--denials"}, {"status"}, {"caches"}, {"providers"},
		{"plan", "--argv", "--", "true"},
	} {
		run(args...)
	}
	// A project policy with a writable folder outside the project that
	// does not exist: untrusted, trusted, run under best-effort.
	write(t, filepath.Join(w.project, ".agentbox.toml"), "[filesystem]\nwritable = [\""+long+"does-not-exist\"]\n")
	run("run", "--", "true")
	expectCode(t, outputs["run -- true"], 125)
	run("trust")
	run("run", "--best-effort", "--", "true")
	for name, r := range outputs {
		for _, stream := range []struct{ name, text string }{{"stdout", r.stdout}, {"stderr", r.stderr}} {
			for _, l := range strings.Split(stream.text, "\n") {
				if name == "plan --argv -- true" && oneShellWord(strings.TrimSpace(strings.TrimSuffix(l, " \\"))) {
					continue // one argument, which cannot be cut
				}
				if n := utf8.RuneCountInString(l); n > 100 {
					t.Errorf("%s, %s: a line of %d columns: %q", name, stream.name, n, l)
				}
			}
		}
	}
	if r := outputs["plan --argv -- true"]; strings.Count(r.stdout, "\n") < 10 || !strings.Contains(r.stdout, " \\\n  --unshare-pid \\\n") {
		t.Errorf("plan --argv is not one argument a line:\n%s", r.stdout)
	}
	if !strings.Contains(outputs["run --best-effort -- true"].stderr, "agentbox: warning:") {
		t.Errorf("no warning for the missing writable folder:\n%s", outputs["run --best-effort -- true"].stderr)
	}
	os.Remove(filepath.Join(w.project, ".agentbox.toml"))
	// Without $COLUMNS, a pipe gets 100 columns too: plan and verify
	// printed whole lines of about 300 columns to a pipe before.
	w.env = env
	for _, args := range [][]string{{"plan", "--", "true"}, {"verify"}} {
		r := w.run(args...)
		expectCode(t, r, 0)
		if multi, line, _ := widest(r.stdout); multi > 100 {
			t.Errorf("%s without $COLUMNS: a line of %d columns: %q", strings.Join(args, " "), multi, line)
		}
	}
	w.env = append(env, "COLUMNS=100")
	// --wide: whole lines.
	r := w.run("plan", "--argv", "--wide", "--", "true")
	expectCode(t, r, 0)
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("plan --argv --wide is not one line:\n%s", r.stdout)
	}
	r = w.run("doctor", "--wide")
	if d := outputs["doctor"]; strings.Join(strings.Fields(r.stdout), " ") != strings.Join(strings.Fields(d.stdout), " ") {
		t.Errorf("doctor --wide says other than doctor:\n%s\n---\n%s", r.stdout, d.stdout)
	}
}

// oneShellWord reports whether s is one word to a POSIX shell: no blank
// outside quotes (a quoted script, such as the one root's plan --argv
// makes its device nodes with, is one argument however long).
func oneShellWord(s string) bool {
	if s == "" {
		return false
	}
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if quote == '"' && c == '\\' {
				i++
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			i++
		case c == ' ' || c == '\t':
			return false
		}
	}
	return quote == 0
}
