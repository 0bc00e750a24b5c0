package winsandbox

import (
	"os"
	"testing"
)

// The shim npm's cmd-shim writes today (v4 and later), and the older one.
const (
	npmShimNew = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\nIF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\node_modules\\@anthropic-ai\\claude-code\\cli.js\" %*\r\n"
	npmShimOld = "@IF EXIST \"%~dp0\\node.exe\" (\r\n  \"%~dp0\\node.exe\"  \"%~dp0\\node_modules\\typescript\\bin\\tsc\" %*\r\n) ELSE (\r\n  @SETLOCAL\r\n  @SET PATHEXT=%PATHEXT:;.JS;=;%\r\n  node  \"%~dp0\\node_modules\\typescript\\bin\\tsc\" %*\r\n)\r\n"
)

func TestNpmShimScript(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
		ok                  bool
	}{
		{"cmd-shim today", npmShimNew, `node_modules\@anthropic-ai\claude-code\cli.js`, true},
		{"cmd-shim before v4", npmShimOld, `node_modules\typescript\bin\tsc`, true},
		{"a batch file that runs something else too", npmShimNew + "del /q C:\\x\r\n", "", false},
		{"another program", "@ECHO off\r\n\"%~dp0\\python.exe\" \"%~dp0\\x.py\" %*\r\n", "", false},
		{"two scripts", "@ECHO off\r\nnode \"%~dp0\\a.js\" %*\r\nnode \"%~dp0\\b.js\" %*\r\n", "", false},
		{"a script path with %", "@ECHO off\r\nnode \"%~dp0\\%X%.js\" %*\r\n", "", false},
		{"no script", "@ECHO off\r\n", "", false},
		{"empty", "", "", false},
	} {
		got, ok := npmShimScript(tc.content)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: npmShimScript = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestBuildRunsNpmShimThroughNode: `claude -p "fix 100% of tests"`, claude
// being npm's claude.cmd, runs as node on the shim's script with the
// argument intact; read as a batch file it was refused (% cannot pass
// through cmd.exe safely).
func TestBuildRunsNpmShimThroughNode(t *testing.T) {
	npm := `C:\Users\me\AppData\Roaming\npm`
	have := map[string]bool{
		winKey(npm + `\claude.cmd`):                                    true,
		winKey(npm + `\node.exe`):                                      true,
		winKey(npm + `\node_modules\@anthropic-ai\claude-code\cli.js`): true,
	}
	p := base()
	p.Command = []string{"claude", "-p", "fix 100% of tests"}
	opts := Options{
		Exists: func(x string) bool { return have[winKey(x)] },
		ReadFile: func(x string) ([]byte, error) {
			if winKey(x) == winKey(npm+`\claude.cmd`) {
				return []byte(npmShimNew), nil
			}
			return nil, os.ErrNotExist
		},
	}
	s, err := Build(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.Refuse != nil {
		t.Fatalf("refused: %+v", s.Refuse)
	}
	want := npm + `\node.exe ` + npm + `\node_modules\@anthropic-ai\claude-code\cli.js -p "fix 100% of tests"`
	if s.Spawn.Application != npm+`\node.exe` || s.Spawn.CommandLine != want {
		t.Errorf("spawn %q %q, want node.exe and %q", s.Spawn.Application, s.Spawn.CommandLine, want)
	}
	opts.ReadFile = nil
	s, err = Build(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.Refuse == nil || s.Refuse.Status != 126 {
		t.Errorf("as a batch file: refuse %+v, want 126 (the old behaviour, kept for batch files that are not shims)", s.Refuse)
	}
}
