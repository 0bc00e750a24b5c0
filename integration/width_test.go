//go:build linux

package integration

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// widest is the widest line of text that has more than one word (a path
// longer than a line is never cut, and may follow its label alone), in
// characters, that line, and the widest line.
func widest(text string) (multi int, line string, any int) {
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r", ""), "\n") {
		n := utf8.RuneCountInString(l)
		if n > any {
			any = n
		}
		f := strings.Fields(l)
		pathAlone := len(f) == 1 || len(f) == 2 && strings.HasSuffix(f[0], ":")
		if n > multi && !pathAlone {
			multi, line = n, l
		}
	}
	return multi, line, any
}

// plan and verify fit the terminal: with $COLUMNS, or a real terminal's
// width, no line of more than one word is wider; --wide prints every line
// whole, as a pipe gets it, and --json keeps every detail. The figures
// are printed. Before, plan lines ran to about 300 columns and verify's
// to about 400, whatever the terminal.
func TestPlanAndVerifyFitTheTerminal(t *testing.T) {
	w := newWorld(t)
	mkdir(t, w.project+"/.git/hooks")
	write(t, w.project+"/.git/config", "[core]\n")
	outputs := []struct {
		name string
		args []string
	}{
		{"plan (bwrap)", []string{"plan", "--backend", "bwrap", "--", "claude"}},
		{"plan (landlock)", []string{"plan", "--backend", "landlock", "--", "claude"}},
		{"verify (bwrap)", []string{"verify", "--backend", "bwrap"}},
		{"verify (landlock)", []string{"verify", "--backend", "landlock"}},
	}
	base := w.env
	for _, o := range outputs {
		w.env = base
		r := w.run(o.args...)
		expectCode(t, r, 0)
		wide := r.stdout
		wideMulti, _, _ := widest(wide)
		report := []string{"wide " + strconv.Itoa(wideMulti)}
		for _, cols := range []int{60, 80, 100, 120} {
			w.env = append(append([]string(nil), base...), "COLUMNS="+strconv.Itoa(cols))
			r := w.run(o.args...)
			expectCode(t, r, 0)
			multi, line, all := widest(r.stdout)
			report = append(report, strconv.Itoa(cols)+": "+strconv.Itoa(multi)+" ("+strconv.Itoa(all)+" with a path alone)")
			if multi > cols {
				t.Errorf("%s, COLUMNS=%d: a line of %d columns: %q", o.name, cols, multi, line)
			}
			// --wide ignores the width: what a pipe gets.
			rw := w.run(append([]string{o.args[0], "--wide"}, o.args[1:]...)...)
			if o.args[0] == "plan" && stripRun(rw.stdout) != stripRun(wide) {
				t.Errorf("%s --wide with COLUMNS=%d differs from the output to a pipe", o.name, cols)
			}
		}
		t.Logf("%s: widest line of several words: %s", o.name, strings.Join(report, ", "))
	}
	w.env = base

	// A real terminal of 70 columns, through script(1).
	_, err := exec.LookPath("script")
	need(t, err == nil, "script(1) is not installed (bsdutils)")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "script", "-qec", "stty cols 70 rows 40; "+bin+" plan -- claude", "/dev/null")
	c.Dir, c.Env = w.cwd, w.env
	out, err := c.Output()
	if err != nil {
		t.Fatalf("plan on a terminal: %v\n%s", err, out)
	}
	if multi, line, _ := widest(string(out)); multi > 70 || !strings.Contains(string(out), "mounts, in order") {
		t.Errorf("plan on a 70-column terminal: a line of %d columns: %q\n%s", multi, line, out)
	} else {
		t.Logf("plan on a 70-column terminal: widest line of several words %d", multi)
	}

	// Every detail is in --json.
	r := w.run("plan", "--json", "--", "claude")
	expectCode(t, r, 0)
	expectContains(t, "plan --json", r.stdout, "does not exist: an empty read-only folder stands in its place during the run, so the box cannot create it")
}

// stripRun drops the run: line, which differs between two plans.
func stripRun(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if id, ok := strings.CutPrefix(l, "run:"); ok {
			// The run's ID, and what is named after it.
			if id = strings.TrimSpace(id); id != "" {
				s = strings.ReplaceAll(s, id, "RUN")
			}
		}
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "run:") {
			continue
		}
		// How many folders the search listed again depends on the
		// search before it (the index), not on the width.
		l = listedAgain.ReplaceAllString(l, "N of M folders listed")
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

var listedAgain = regexp.MustCompile(`\d+ of \d+ folders listed`)
