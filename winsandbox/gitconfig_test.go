package winsandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/hostexec"
)

// userGitconfig is a caller's global configuration with what the box's
// git needs and what it must not get.
const userGitconfig = `[user]
	name = Old Name
	name = Ada Lovelace
	email = ada@example.com
[core]
	autocrlf = true
	excludesFile = ~/.gitignore_global
	editor = code --wait
[credential]
	helper = manager
[url "https://x-access-token:ghp_secret@github.com/"]
	insteadOf = https://github.com/
[alias]
	st = !sh -c 'curl evil'
[init]
	defaultBranch = main
`

// TestBoxGit: the box's git gets who commits and how files are checked
// in and out, copies of the global ignore and attributes files, and
// nothing that names a program or may hold a secret.
func TestBoxGit(t *testing.T) {
	facts := &GitFacts{Vars: hostexec.ParseConfig([]byte(userGitconfig)).Vars, Ignore: ".env\n*.log\n"}
	dir := `C:\Users\me\AppData\Local\Temp\agentbox-S-1\proj\agentbox-git-RUN`
	files, env := boxGit(nil, facts, dir)
	if diff := cmp.Diff([]string{"GIT_CONFIG_GLOBAL=" + dir + `\config`}, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	want := []GitFile{
		{Path: dir + `\config`, Content: "[user]\n\tname = \"Ada Lovelace\"\n\temail = \"ada@example.com\"\n[core]\n\tautocrlf = \"true\"\n" +
			"[init]\n\tdefaultbranch = \"main\"\n[core]\n" +
			"\texcludesfile = \"C:/Users/me/AppData/Local/Temp/agentbox-S-1/proj/agentbox-git-RUN/ignore\"\n" +
			"\tattributesfile = \"C:/Users/me/AppData/Local/Temp/agentbox-S-1/proj/agentbox-git-RUN/attributes\"\n"},
		{Path: dir + `\ignore`, Content: ".env\n*.log\n"},
		{Path: dir + `\attributes`, Content: ""},
	}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for _, leak := range []string{"ghp_secret", "manager", "curl", "code --wait"} {
		if strings.Contains(files[0].Content, leak) {
			t.Errorf("the box's git config holds %q", leak)
		}
	}
	// A global configuration the caller chose is left alone.
	if files, env := boxGit([]string{`GIT_CONFIG_GLOBAL=D:\git\config`}, facts, dir); files != nil || env != nil {
		t.Errorf("with GIT_CONFIG_GLOBAL set: %v, %v; want nothing", files, env)
	}
	if files, _ := boxGit(nil, nil, dir); files != nil {
		t.Error("without facts: files written")
	}
}

func TestGitGlobalFiles(t *testing.T) {
	for _, tc := range []struct {
		environ  []string
		home     string
		want     []string
		wantXDG  string
		side     [2]string
		sideVars string
	}{
		{nil, `C:\Users\me`, []string{`C:\Users\me\.config\git\config`, `C:\Users\me\.gitconfig`}, `C:\Users\me\.config\git`,
			[2]string{`C:\Users\me\.config\git\ignore`, `C:\Users\me\.config\git\attributes`}, ""},
		{[]string{`HOME=D:\home`, `XDG_CONFIG_HOME=D:\xdg`}, `C:\Users\me`, []string{`D:\xdg\git\config`, `D:\home\.gitconfig`}, `D:\xdg\git`,
			[2]string{`D:\home\g\ignore`, `E:\attrs`}, "[core]\n\texcludesFile = ~/g/ignore\n\tattributesFile = E:/attrs\n"},
		{[]string{`HOME=/home/me`}, `C:\Users\me`, []string{`C:\Users\me\.config\git\config`, `C:\Users\me\.gitconfig`}, `C:\Users\me\.config\git`,
			[2]string{"", `C:\Users\me\.config\git\attributes`}, "[core]\n\texcludesFile = relative/ignore\n"},
		{nil, "", nil, "", [2]string{"", ""}, ""},
	} {
		got, xdg := gitGlobalFiles(tc.environ, tc.home)
		if diff := cmp.Diff(tc.want, got); diff != "" || xdg != tc.wantXDG {
			t.Errorf("gitGlobalFiles(%v, %q) = %v, %q (-want +got):\n%s", tc.environ, tc.home, got, xdg, diff)
		}
		home := tc.home
		if h := envGet(tc.environ, "HOME"); winAbs(h) {
			home = h
		}
		ig, at := gitSideFiles(hostexec.ParseConfig([]byte(tc.sideVars)).Vars, xdg, home)
		if [2]string{ig, at} != tc.side {
			t.Errorf("gitSideFiles = %q, %q; want %q", ig, at, tc.side)
		}
	}
}
