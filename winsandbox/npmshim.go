package winsandbox

import (
	"regexp"
	"strings"
	"sync"
)

// npm's .cmd shims, run through node (the pure half).
//
// A command npm installs globally (claude, codex, tsc) is a .cmd file
// written by npm's cmd-shim: a batch file that runs node.exe on a script
// with the caller's arguments (%*). A batch file's line is re-read by
// cmd.exe, where no quoting makes % and " safe (batchCommandLine refuses
// them), so `claude -p "fix 100% of tests"` could not run. When a .cmd is
// exactly such a shim, agentbox runs what it would run: node.exe (the one
// beside the shim, as the shim prefers, else node from PATH) on the
// script, with the arguments quoted for the C runtime as for any program.
// A batch file of any other form is run as a batch file.

// npmShimLine matches the line of a cmd-shim that runs the script: the
// older form ("%~dp0\node.exe" or node, then "%~dp0\script") and the
// current one (…title %COMSPEC% & "%_prog%"  "%dp0%\script" %*).
// Compiled on first use: the package is in every agentbox binary, and a
// run on Linux or macOS never needs it.
var npmShimLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:endLocal & goto #_undefined_# 2>NUL \|\| title %COMSPEC% & )?(?:"%_prog%"|"%~dp0\\node\.exe"|node)\s+"(?:%dp0%|%~dp0)\\([^"%]+)"\s+%\*\s*$`)
})

// npmShimScript returns the script a cmd-shim runs, relative to the
// shim's folder, when content is one; ok is false otherwise. Every line
// must be one cmd-shim writes (no other commands run), and the lines that
// run a script all run the same one.
func npmShimScript(content string) (script string, ok bool) {
	allowed := regexp.MustCompile(`^(?:@ECHO off|@SETLOCAL|GOTO start|:find_dp0|SET dp0=%~dp0|EXIT /b|:start|SETLOCAL|CALL :find_dp0|IF EXIST "%dp0%\\node\.exe" \(|IF EXIST "%~dp0\\node\.exe" \(|SET "_prog=%dp0%\\node\.exe"|SET "_prog=node"|@?SET PATHEXT=%PATHEXT:;\.JS;=;%|\) ELSE \(|\)|@IF EXIST "%~dp0\\node\.exe" \(|\) ELSE \(|)$`)
	for _, line := range strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if m := npmShimLine().FindStringSubmatch(line); m != nil {
			if script != "" && m[1] != script {
				return "", false
			}
			script = m[1]
			continue
		}
		if !allowed.MatchString(line) {
			return "", false
		}
	}
	if script == "" || strings.ContainsAny(script, "\x00\r\n") {
		return "", false
	}
	return script, true
}
