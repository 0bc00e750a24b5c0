package winsandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// splitArgs splits a command line by the Microsoft C runtime rules (the
// program name by its simpler rules), independently of quoteArg, so the two
// check each other.
func splitArgs(line string) []string {
	var args []string
	i := 0
	// Program name: to the next space, or quoted to the next quote.
	var prog strings.Builder
	if strings.HasPrefix(line, `"`) {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return []string{line[1:]}
		}
		prog.WriteString(line[1 : 1+end])
		i = end + 2
	} else {
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			prog.WriteByte(line[i])
			i++
		}
	}
	args = append(args, prog.String())
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			return args
		}
		var a strings.Builder
		quoted := false
		for i < len(line) {
			c := line[i]
			if c == '\\' {
				n := 0
				for i < len(line) && line[i] == '\\' {
					n++
					i++
				}
				if i < len(line) && line[i] == '"' {
					a.WriteString(strings.Repeat(`\`, n/2))
					if n%2 == 1 {
						a.WriteByte('"')
						i++
					}
				} else {
					a.WriteString(strings.Repeat(`\`, n))
				}
				continue
			}
			if c == '"' {
				if quoted && i+1 < len(line) && line[i+1] == '"' {
					// "" inside quotes: a literal quote (post-2008 CRT).
					a.WriteByte('"')
					i += 2
					continue
				}
				quoted = !quoted
				i++
				continue
			}
			if !quoted && (c == ' ' || c == '\t') {
				break
			}
			a.WriteByte(c)
			i++
		}
		args = append(args, a.String())
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"git", "status"}, `git status`},
		{[]string{`C:\Program Files\Git\cmd\git.exe`, "log"}, `"C:\Program Files\Git\cmd\git.exe" log`},
		{[]string{"a", ""}, `a ""`},
		{[]string{"a", "two words"}, `a "two words"`},
		{[]string{"a", `say "hi"`}, `a "say \"hi\""`},
		{[]string{"a", `C:\dir\`}, `a C:\dir\`},
		{[]string{"a", `C:\dir with space\`}, `a "C:\dir with space\\"`},
		{[]string{"a", `\\"`}, `a "\\\\\""`},
		{[]string{"a", `a\\b`}, `a a\\b`},
		{[]string{"a", "tab\there"}, "a \"tab\there\""},
		{[]string{"a", "new\nline"}, "a \"new\nline\""},
		{[]string{"a", `%PATH%`, `&|<>^`}, `a %PATH% &|<>^`},
	} {
		got, err := CommandLine(tc.argv)
		if err != nil {
			t.Fatalf("CommandLine(%q): %v", tc.argv, err)
		}
		if got != tc.want {
			t.Errorf("CommandLine(%q) = %s, want %s", tc.argv, got, tc.want)
		}
		if diff := cmp.Diff(tc.argv, splitArgs(got)); diff != "" {
			t.Errorf("split(CommandLine(%q)) (-want +got):\n%s", tc.argv, diff)
		}
	}
	for _, bad := range [][]string{nil, {""}, {`a"b`}, {"a", "nul\x00"}} {
		if got, err := CommandLine(bad); err == nil {
			t.Errorf("CommandLine(%q) = %s, want an error", bad, got)
		}
	}
}

func FuzzCommandLine(f *testing.F) {
	for _, s := range []string{"", "a b", `a\"b`, `\\`, `x\`, "\"\"", "\t"} {
		f.Add("prog", s, "z")
	}
	f.Fuzz(func(t *testing.T, prog, a, b string) {
		argv := []string{prog, a, b}
		line, err := CommandLine(argv)
		if err != nil {
			return
		}
		if strings.ContainsAny(prog, " \t") && strings.ContainsRune(prog, 0) {
			return
		}
		if diff := cmp.Diff(argv, splitArgs(line)); diff != "" {
			t.Errorf("CommandLine(%q) = %s, split back (-want +got):\n%s", argv, line, diff)
		}
	})
}

func TestBatchCommandLine(t *testing.T) {
	got, err := batchCommandLine(`C:\Windows\system32\cmd.exe`, `C:\npm\claude.cmd`, []string{"-p", "a & b", `dir\`, ""})
	if err != nil {
		t.Fatal(err)
	}
	want := `C:\Windows\system32\cmd.exe /d /v:off /s /c ""C:\npm\claude.cmd" "-p" "a & b" "dir\\" """`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, bad := range []string{`say "x"`, "100%", "%PATH%", "a\nb", "a\rb"} {
		if _, err := batchCommandLine("cmd.exe", `C:\x.cmd`, []string{bad}); err == nil {
			t.Errorf("batch argument %q accepted", bad)
		}
	}
}

func TestLookPath(t *testing.T) {
	env := []string{`PATH=C:\Windows\system32;"C:\Program Files\Git\cmd";C:\Users\me\AppData\Roaming\npm`, "PATHEXT=.COM;.EXE;.BAT;.CMD"}
	for name, want := range map[string]string{
		"git":                              `C:\Program Files\Git\cmd\git.exe`,
		"claude":                           `C:\Users\me\AppData\Roaming\npm\claude.cmd`,
		"claude.cmd":                       `C:\Users\me\AppData\Roaming\npm\claude.cmd`,
		`C:\Program Files\Git\cmd\git`:     `C:\Program Files\Git\cmd\git.exe`,
		`C:\Program Files\Git\cmd\git.exe`: `C:\Program Files\Git\cmd\git.exe`,
		"nosuch":                           "",
		"node_modules":                     "", // a folder without an extension is not a program
	} {
		if got := lookPath(name, env, exists); got != want {
			t.Errorf("lookPath(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestSortEnv(t *testing.T) {
	got := sortEnv([]string{"b=1", "A=2", "=C:=C:\\", "a=3", "Path=x", "PATHEXT=y"})
	want := []string{"=C:=C:\\", "a=3", "b=1", "Path=x", "PATHEXT=y"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sortEnv (-want +got):\n%s", diff)
	}
}
