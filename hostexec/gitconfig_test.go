package hostexec

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		want  []string // name=value, or name for a bare boolean
		plain bool
	}{
		{"git init", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n",
			[]string{"core.repositoryformatversion=0", "core.filemode=true", "core.bare=false", "core.logallrefupdates=true"}, true},
		{"subsection and comments", "# c\n[remote \"origin\"] ; c\n\turl = https://x/y.git # c\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
			[]string{"remote.origin.url=https://x/y.git", "remote.origin.fetch=+refs/heads/*:refs/remotes/origin/*"}, true},
		{"case", "[CORE]\n\tFileMode = yes\n[Remote \"Up\"]\n\tURL = u\n", []string{"core.filemode=yes", "remote.Up.url=u"}, true},
		{"bare boolean", "[core]\n\tbare\n", []string{"core.bare"}, true},
		{"quotes and escapes", "[a]\n\tb = \"x # y\" z\\\"\\\\\n", []string{`a.b=x # y z"\`}, true},
		{"inner blanks kept, outer dropped", "[a]\n\tb =   x   y  \n", []string{"a.b=x   y"}, true},
		{"key on the header's line", "[core] fsmonitor = evil\n", []string{"core.fsmonitor=evil"}, false},
		{"continuation line", "[core]\n\tfsmonitor = ev\\\nil\n", []string{"core.fsmonitor=evil"}, false},
		{"old-style subsection", "[branch.main]\n\tremote = o\n", []string{"branch.main.remote=o"}, false},
		{"newline escape", "[a]\n\tb = x\\ny\n", []string{"a.b=x\ny"}, false},
		{"carriage returns", "[core]\r\n\tbare = false\r\n", []string{"core.bare=false"}, false},
		{"unknown escape", "[a]\n\tb = x\\qy\n\tc = 1\n", []string{"a.c=1"}, false},
		{"unterminated quote", "[a]\n\tb = \"x\n\tc = 1\n", []string{"a.c=1"}, false},
		{"variable before any section", "b = 1\n[a]\n\tc = 2\n", []string{"a.c=2"}, false},
		{"escaped subsection", "[a \"x\\\"y\\\\z\"]\n\tb = 1\n", []string{`a.x"y\z.b=1`}, true},
		{"bom", "\xef\xbb\xbf[a]\n\tb = 1\n", []string{"a.b=1"}, false},
		{"nul in a value", "[a]\n\tb = x\x00y\n\tc = 1\n", []string{"a.c=1"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pc := ParseConfig([]byte(tc.in))
			var got []string
			for _, v := range pc.Vars {
				if v.Bool {
					got = append(got, v.Name())
				} else {
					got = append(got, v.Name()+"="+v.Value)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("vars (-want +got):\n%s", diff)
			}
			if pc.Plain != tc.plain {
				t.Errorf("plain = %v, want %v", pc.Plain, tc.plain)
			}
		})
	}
}

func TestSanitize(t *testing.T) {
	inTree := func(p string) bool { return strings.HasPrefix(p, "/proj/") }
	cases := []struct {
		name    string
		in      string
		dropped []string
		changed bool
	}{
		{"git init stays as it is", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n", nil, false},
		{"git clone stays as it is", "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.invalid/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", nil, false},
		{"fsmonitor", "[core]\n\tbare = false\n\tfsmonitor = touch /x\n", []string{"core.fsmonitor"}, true},
		{"every key that runs a program", "[core]\n\thooksPath = h\n\tsshCommand = s\n\tpager = p\n\teditor = e\n\tgitProxy = g\n\taskPass = a\n" +
			"[diff \"x\"]\n\ttextconv = t\n\tcommand = c\n[merge \"x\"]\n\tdriver = d\n[filter \"x\"]\n\tclean = c\n\tsmudge = s\n\tprocess = p\n" +
			"[credential]\n\thelper = h\n[alias]\n\tst = !sh\n\tco = checkout\n[include]\n\tpath = /tmp/x\n[includeIf \"gitdir:/\"]\n\tpath = y\n" +
			"[hook \"x\"]\n\tcommand = c\n[uploadpack]\n\tpackObjectsHook = h\n[sequence]\n\teditor = e\n[gpg]\n\tprogram = p\n[interactive]\n\tdiffFilter = d\n" +
			"[remote \"o\"]\n\tuploadpack = u\n\treceivepack = r\n\tvcs = v\n[protocol \"ext\"]\n\tallow = always\n[submodule \"s\"]\n\tupdate = !cmd\n[core]\n\tworktree = /home/u\n",
			[]string{"core.hookspath", "core.sshcommand", "core.pager", "core.editor", "core.gitproxy", "core.askpass",
				"diff.x.textconv", "diff.x.command", "merge.x.driver", "filter.x.clean", "filter.x.smudge", "filter.x.process",
				"credential.helper", "alias.st", "alias.co", "include.path", "includeif.gitdir:/.path", "hook.x.command",
				"uploadpack.packobjectshook", "sequence.editor", "gpg.program", "interactive.difffilter",
				"remote.o.uploadpack", "remote.o.receivepack", "remote.o.vcs", "protocol.ext.allow", "submodule.s.update", "core.worktree"}, true},
		{"transports that run programs", "[remote \"a\"]\n\turl = ext::sh -c evil\n[remote \"b\"]\n\turl = fd::3\n[submodule \"c\"]\n\turl = -uevil\n",
			[]string{"remote.a.url", "remote.b.url", "submodule.c.url"}, true},
		{"submodule update modes", "[submodule \"s\"]\n\tupdate = rebase\n\tactive = true\n\turl = https://x/s\n", nil, false},
		{"git lfs install --local", "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n\tprocess = git-lfs filter-process\n\trequired = true\n", nil, false},
		{"an lfs filter that runs something else", "[filter \"lfs\"]\n\tprocess = sh -c evil\n", []string{"filter.lfs.process"}, true},
		{"a submodule's worktree in the tree", "[core]\n\tworktree = /proj/sub\n", nil, false},
		{"a worktree outside the tree", "[core]\n\tworktree = /home/u\n", []string{"core.worktree"}, true},
		{"safe but not plain", "[core] bare = false\n", nil, true},
		// What `git config --list` shows line by line, or a terminal shows,
		// must be what git reads: a control character in a value or a
		// subsection is never kept (found by FuzzSanitize: a \b kept
		// was written back as a value that is not plain).
		{"control characters in values", "[user]\n\tname = \"a\\bb\"\n\temail = \"x\\ncore.fsmonitor=evil\"\n[core]\n\tbare = false\n",
			[]string{"user.name", "user.email"}, true},
		{"a control character in a subsection", "[branch \"m\x08x\"]\n\tremote = o\n", []string{"branch.m\x08x.remote"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, dropped, changed := Sanitize([]byte(tc.in), inTree)
			if diff := cmp.Diff(tc.dropped, dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if !changed && string(out) != tc.in {
				t.Errorf("unchanged, but the output differs: %q", out)
			}
			pc := ParseConfig(out)
			if !pc.Plain {
				t.Errorf("the output is not plain:\n%s", out)
			}
			for _, v := range pc.Vars {
				if !Safe(v, inTree) {
					t.Errorf("the output keeps %s", v.Name())
				}
			}
		})
	}
}

// TestSanitizeAsGitReadsIt runs real git on what Sanitize writes: git must
// read exactly the variables kept, and none that runs a program.
func TestSanitizeAsGitReadsIt(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed for this test: %v", err)
	}
	in := "[core]\n\tbare = false\n\tfsmonitor = evil\n[core] pager = evil\n[remote \"o\\\"x\"]\n\turl = \"a b\\\\c\"\n" +
		"[branch.main]\n\tremote = o\n[alias]\n\tx = !evil\n[user]\n\tname = \"tab\\there\"\n\temail = \"line\\nbreak\"\n"
	out, _, changed := Sanitize([]byte(in), nil)
	if !changed {
		t.Fatal("want a rewrite")
	}
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, out, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "-f", f, "--list", "-z")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cannot read the rewritten config: %v\n%s", err, out)
	}
	var got []string
	for _, e := range strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00") {
		got = append(got, strings.Replace(e, "\n", "=", 1))
	}
	sort.Strings(got)
	want := []string{"branch.main.remote=o", "core.bare=false", "remote.o\"x.url=a b\\c", "user.name=tab\there"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what git reads (-want +got):\n%s", diff)
	}
}

// FuzzSanitize: whatever the box writes, what Sanitize makes of it is a
// plain config of safe variables only, and sanitizing it again changes
// nothing.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"[core]\n\tbare = false\n", "[core] fsmonitor = x\n", "[a \"b\"]\n\tc = \"d\\\"\"\n", "[x]\n\ty = a\\\nb\n",
		"[core]\n\tworktree = ../x\n", "[alias]\n\tq = !x\n", "[remote \"\\\\\"]\n\turl=u\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _, _ := Sanitize(data, nil)
		pc := ParseConfig(out)
		if !pc.Plain {
			t.Fatalf("not plain: %q -> %q", data, out)
		}
		for _, v := range pc.Vars {
			if !Safe(v, nil) {
				t.Fatalf("unsafe %s kept: %q -> %q", v.Name(), data, out)
			}
		}
		again, dropped, changed := Sanitize(out, nil)
		if changed || len(dropped) > 0 || string(again) != string(out) {
			t.Fatalf("not stable: %q -> %q -> %q", data, out, again)
		}
	})
}

func TestIncludesAndValues(t *testing.T) {
	vars := ParseConfig([]byte("[include]\n\tpath = a\n[includeIf \"gitdir:~/w/\"]\n\tpath = ~/b\n[core]\n\thooksPath = .husky/_\n\thooksPath = h2\n")).Vars
	if diff := cmp.Diff([]string{"a", "~/b"}, Includes(vars)); diff != "" {
		t.Errorf("includes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{".husky/_", "h2"}, Values(vars, "core", "hookspath")); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}
