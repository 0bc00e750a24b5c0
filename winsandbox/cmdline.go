package winsandbox

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

// Windows passes a process one command-line string, not an argument vector;
// each program splits it again, almost always with the rules of the
// Microsoft C runtime (the same as CommandLineToArgvW):
//
//   - arguments are separated by spaces or tabs;
//   - a double quote starts or ends a quoted section, inside which spaces are
//     literal;
//   - 2n backslashes followed by a quote become n backslashes and the quote
//     toggles quoting; 2n+1 backslashes followed by a quote become n
//     backslashes and a literal quote; backslashes not followed by a quote
//     are literal.
//
// The program name (the first argument) is split by simpler rules: it runs
// to the next space, or, when it starts with a quote, to the next quote, and
// backslashes are never escapes. So a program name can hold no quote at all.
//
// Reference: "Parsing C++ command-line arguments",
// https://learn.microsoft.com/cpp/cpp/main-function-command-line-args

// quoteArg quotes one argument (not the program name) so the C runtime
// rules above give it back unchanged.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\v\"") {
		return s
	}
	return forceQuote(s)
}

// forceQuote always puts s in quotes, escaping by the same rules.
func forceQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			slashes++
		case '"':
			// Double the backslashes before a quote and escape the quote.
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	// Backslashes before the closing quote must be doubled too.
	b.WriteString(strings.Repeat(`\`, slashes))
	b.WriteByte('"')
	return b.String()
}

// quoteProgram quotes the program name; it cannot contain a quote.
func quoteProgram(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty program name")
	}
	if strings.ContainsRune(s, '"') {
		return "", fmt.Errorf("program name %q contains a double quote, which Windows cannot pass", s)
	}
	if strings.ContainsAny(s, " \t") {
		return `"` + s + `"`, nil
	}
	return s, nil
}

// CommandLine joins argv into one Windows command line that the C runtime
// splits back into exactly argv. It fails when argv[0] holds a double quote
// or any argument holds a NUL, which no command line can carry.
func CommandLine(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("empty command")
	}
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return "", fmt.Errorf("argument %q contains a NUL byte", a)
		}
	}
	prog, err := quoteProgram(argv[0])
	if err != nil {
		return "", err
	}
	parts := []string{prog}
	for _, a := range argv[1:] {
		parts = append(parts, quoteArg(a))
	}
	return strings.Join(parts, " "), nil
}

// batchCommandLine runs a .cmd or .bat file. CreateProcess hands such a file
// to cmd.exe, which re-parses the whole line with its own rules (% expands
// variables, & | < > ^ are operators outside quotes); quoting that is safe
// for the C runtime is not safe for cmd.exe (the "BatBadBut" class of bugs,
// CVE-2024-24576). agentbox therefore builds the cmd.exe line itself:
//
//	cmd.exe /d /v:off /s /c ""C:\path\tool.cmd" "arg 1" "arg2""
//
// /d skips AutoRun commands from the registry, /v:off turns off delayed
// expansion (so ! is literal), /s strips exactly the outer pair of quotes.
// Every argument is quoted, so operators inside it are literal to cmd.exe;
// an argument holding a double quote, a % (variable expansion happens even
// inside quotes), a line break or a NUL is refused rather than escaped,
// because no escaping of those is reliable in cmd.exe.
func batchCommandLine(comspec, script string, args []string) (string, error) {
	for _, a := range append([]string{script}, args...) {
		if i := strings.IndexAny(a, "\"%\r\n\x00"); i >= 0 {
			return "", fmt.Errorf("argument %q contains %q, which cannot be passed safely to the batch file %s", a, a[i], script)
		}
	}
	parts := []string{`"` + script + `"`}
	for _, a := range args {
		// Always quote, and double trailing backslashes so the program the
		// batch file starts (often node.exe via %*) reads the same argument.
		parts = append(parts, forceQuote(a))
	}
	cs, err := quoteProgram(comspec)
	if err != nil {
		return "", err
	}
	return cs + ` /d /v:off /s /c "` + strings.Join(parts, " ") + `"`, nil
}

// isBatch reports whether a resolved program is a batch file.
func isBatch(program string) bool {
	k := winKey(program)
	return strings.HasSuffix(k, ".cmd") || strings.HasSuffix(k, ".bat")
}

// lookPath resolves name the way a Windows shell would, using the PATH and
// PATHEXT of env (not of the caller) and exists to test candidates. A name
// with a separator or drive is only completed with PATHEXT. It returns "" when
// nothing is found.
func lookPath(name string, env []string, exists func(string) bool) string {
	exts := []string{".com", ".exe", ".bat", ".cmd"}
	if pe := envGet(env, "PATHEXT"); pe != "" {
		exts = nil
		for _, e := range strings.Split(strings.ToLower(pe), ";") {
			if e != "" {
				exts = append(exts, e)
			}
		}
	}
	try := func(base string) string {
		if ext := strings.ToLower(path.Ext(strings.ReplaceAll(base, `\`, "/"))); ext != "" {
			for _, e := range exts {
				if ext == e && exists(base) {
					return base
				}
			}
		}
		for _, e := range exts {
			if exists(base + e) {
				return base + e
			}
		}
		return ""
	}
	if strings.ContainsAny(name, `\/:`) {
		return try(name)
	}
	for _, dir := range strings.Split(envGet(env, "PATH"), ";") {
		dir = strings.Trim(dir, `"`)
		if dir == "" {
			continue
		}
		if !strings.HasSuffix(dir, `\`) {
			dir += `\`
		}
		if f := try(dir + name); f != "" {
			return f
		}
	}
	return ""
}

// envGet looks a variable up case-insensitively, as Windows does.
func envGet(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// sortEnv sorts an environment block by name, case-insensitively, as
// CreateProcess documents for lpEnvironment, and keeps the last value of
// names that differ only in case.
func sortEnv(env []string) []string {
	byKey := map[string]string{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(kv, "=") { // per-drive cwd entries such as "=C:=C:\x"
			k, _, _ = strings.Cut(kv[1:], "=")
			k = "=" + k
		}
		byKey[strings.ToUpper(k)] = kv
	}
	out := make([]string, 0, len(byKey))
	for _, kv := range byKey {
		out = append(out, kv)
	}
	sort.Slice(out, func(i, j int) bool {
		return envName(out[i]) < envName(out[j])
	})
	return out
}

func envName(kv string) string {
	if strings.HasPrefix(kv, "=") {
		k, _, _ := strings.Cut(kv[1:], "=")
		return "=" + strings.ToUpper(k)
	}
	k, _, _ := strings.Cut(kv, "=")
	return strings.ToUpper(k)
}
