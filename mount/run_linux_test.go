package mount

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWithoutNodeBinds(t *testing.T) {
	const dir = "/s/dev/run"
	nodes := func(skip string) []string {
		var out []string
		for _, n := range devNodeNames {
			if n != skip {
				out = append(out, "--dev-bind", dir+"/"+n, "/dev/"+n)
			}
		}
		return out
	}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	head := []string{"--ro-bind", "/", "/", "--dev", "/dev"}
	console := []string{"--dev-bind", dir + "/console", "/dev/console"}
	tail := []string{"--proc", "/proc", "--", "/proc/self/fd/5", "__init", "--", "true"}
	for _, tc := range []struct {
		name     string
		args     []string
		want     []string
		removed  int
		mustFail bool
	}{
		{name: "all six", args: cat(head, nodes(""), tail), want: cat(head, tail), removed: 18},
		{name: "the console's node stays", args: cat(head, nodes(""), console, tail), want: cat(head, console, tail), removed: 18},
		{name: "one missing", args: cat(head, nodes("tty"), tail), mustFail: true},
		{name: "another folder's node", args: cat(head, nodes("zero"), []string{"--dev-bind", "/other/zero", "/dev/zero"}, tail), mustFail: true},
		{name: "a node bound elsewhere", args: cat(head, nodes("zero"), []string{"--dev-bind", dir + "/zero", "/dev/null"}, tail), mustFail: true},
		{name: "in the command, not an option", args: cat(head, []string{"--"}, nodes("")), mustFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			commandAt := len(tc.args)
			for i, a := range tc.args {
				if a == "--" {
					commandAt = i
					break
				}
			}
			got, removed, err := withoutNodeBinds(tc.args, commandAt, dir)
			if tc.mustFail {
				if err == nil {
					t.Fatalf("no error; args %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if removed != tc.removed {
				t.Errorf("removed %d, want %d", removed, tc.removed)
			}
		})
	}
}
