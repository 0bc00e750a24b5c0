package hostexec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTodoSafe(t *testing.T) {
	cases := []struct {
		name string
		todo string
		want bool
	}{
		{"picks and comments", "pick 1234 a\nfixup -C 5678 b\n# exec not this\n\n", true},
		{"every command that runs nothing", "p 1 a\nr 2\ne 3\ns 4\nf 5\nb\nd 6\nlabel onto\nreset onto\nmerge -C 7 x # y\nupdate-ref refs/heads/x\nnoop\nt onto\nl x\nm x\nu refs/heads/y\n", true},
		{"exec", "pick 1 a\nexec make\n", false},
		{"x", "pick 1 a\nx make\n", false},
		{"break then exec", "break\nexec touch /tmp/x\n", false},
		{"indented exec", " \texec make\n", false},
		{"exec ending at a tab", "exec\tmake\n", false},
		{"exec ending at a CR", "exec\rmake\n", false},
		{"exec at the end of the file", "pick 1 a\nexec true", false},
		{"unknown command", "frobnicate 1\n", false},
		{"command glued to its argument", "pick1 a\n", false},
		{"nul", "pick 1 a\x00\nexec x\n", false},
		{"empty", "", true},
		{"CRLF lines", "pick 1 a\r\nbreak\r\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, why := TodoSafe([]byte(tc.todo))
			if got != tc.want {
				t.Errorf("TodoSafe(%q) = %v (%s), want %v", tc.todo, got, why, tc.want)
			}
		})
	}
}

func TestGitStateSafe(t *testing.T) {
	cases := []struct {
		name  string
		state string
		files map[string]string
		want  bool
	}{
		{"a stop at edit", "rebase-merge", map[string]string{"git-rebase-todo": "pick 1 a\n", "done": "edit 2 b\n", "head-name": "refs/heads/main", "onto": "3", "orig-head": "4", "interactive": "", "stopped-sha": "2", "amend": "2", "author-script": "GIT_AUTHOR_NAME='t'\n"}, true},
		{"exec in the todo", "rebase-merge", map[string]string{"git-rebase-todo": "break\nexec make\n", "onto": "3"}, false},
		{"exec in the backup", "rebase-merge", map[string]string{"git-rebase-todo": "pick 1 a\n", "git-rebase-todo.backup": "exec make\n"}, false},
		{"a file git does not write", "rebase-merge", map[string]string{"git-rebase-todo": "", "hooks": ""}, false},
		{"a built-in strategy", "rebase-merge", map[string]string{"strategy": "ort\n"}, true},
		{"a strategy git runs a program for", "rebase-merge", map[string]string{"strategy": "evil\n"}, false},
		{"am with its patches", "rebase-apply", map[string]string{"0001": "x", "0002": "y", "next": "1", "last": "2", "applying": ""}, true},
		{"am with options for git apply", "rebase-apply", map[string]string{"apply-opt": "'--unsafe-paths'"}, false},
		{"cherry-pick", "sequencer", map[string]string{"todo": "pick 1 a\n", "opts": "[options]\n\tedit = true\n\tstrategy = ort\n", "head": "1"}, true},
		{"cherry-pick with exec", "sequencer", map[string]string{"todo": "exec make\n"}, false},
		{"cherry-pick with a strategy program", "sequencer", map[string]string{"opts": "[options]\n\tstrategy = evil\n"}, false},
		{"cherry-pick opts with another section", "sequencer", map[string]string{"opts": "[core]\n\tfsmonitor = x\n"}, false},
		{"not a state folder", "hooks", map[string]string{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string][]byte{}
			for k, v := range tc.files {
				files[k] = []byte(v)
			}
			got, why := GitStateSafe(tc.state, files)
			if got != tc.want {
				t.Errorf("GitStateSafe = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

func TestGitMayWrite(t *testing.T) {
	var got []string
	for _, n := range []string{"objects", "refs", "index", "HEAD", "ORIG_HEAD", "COMMIT_EDITMSG", "index.lock", "sharedindex.abc",
		"rebase-merge", "rebase-apply", "sequencer", "remotes", "evil", "hooks", "config"} {
		if !GitMayWrite(n) {
			got = append(got, n)
		}
	}
	want := []string{"rebase-merge", "rebase-apply", "sequencer", "remotes", "evil"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("not written freely (-want +got):\n%s", d)
	}
}

func TestHgrcRefs(t *testing.T) {
	in := "[ui]\nusername = t\n%include local.rc\n%include  ~/shared.rc \n[extensions]\nrebase =\nmine = tools/ext.py\noff = !tools/off.py\n[hooks]\npre-status = ./scripts/check.sh --fast\n  and more\nprecommit.py = python:hooks/check.py:run\n# [hooks]\n; x = /nope\n"
	want := []string{"local.rc", "~/shared.rc", "../tools/ext.py", "../scripts/check.sh", "../hooks/check.py"}
	if d := cmp.Diff(want, HgrcRefs([]byte(in))); d != "" {
		t.Errorf("HgrcRefs (-want +got):\n%s", d)
	}
	// hg cuts lines as Python's bytes.splitlines does (a lone \r ends one)
	// and its \s holds \v: found by fuzzing.
	odd := "[hooks]\rpre-commit = ./evil.sh\r%include inc.rc\v\n"
	if d := cmp.Diff([]string{"inc.rc", "../evil.sh"}, HgrcRefs([]byte(odd))); d != "" {
		t.Errorf("HgrcRefs with a lone \\r and a \\v (-want +got):\n%s", d)
	}
}
