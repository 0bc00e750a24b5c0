package main

import (
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/box"
	"github.com/agentbox/agentbox/policy"
)

// parseRun parses the words after `agentbox run` without building the
// CLI: run is on every launch's path, and building urfave/cli's every
// command and flag (and the regular expressions it matches flag names
// with) costs more than resolving the run's policy. It takes exactly what
// the CLI takes for run: -name or --name, a value as the next word or
// after "=", a switch alone or with =true/=false, list flags repeated
// (never split at commas; spaces around a value trimmed, as the CLI
// does), and "--" or the first other word ending the flags. Anything else
// (help, an unknown flag, a missing value, a bad switch value) gives ok =
// false, and the CLI parses the line and says what is wrong.
// TestParseRunMatchesCLI holds it to the CLI's parse.
func parseRun(args []string) (req box.Request, ok bool) {
	var f policy.Flags
	var netLog string
	var verify bool
	text := map[string]*string{
		"network": &f.Network, "workspace": &f.Workspace, "workspace-root": &f.WorkspaceRoot,
		"task": &f.Task, "tmp": &f.Tmp, "env-mode": &f.EnvMode, "provider": &f.Provider,
		"backend": &f.Backend, "net-log": &netLog,
	}
	list := map[string]*[]string{
		"policy": &f.Policy, "writable": &f.Writable, "read-only": &f.ReadOnly, "deny": &f.Deny,
		"allow": &f.Allow, "publish": &f.Publish, "pass-env": &f.PassEnv, "deny-env": &f.DenyEnv,
	}
	switches := map[string]*bool{"best-effort": &f.BestEffort, "require": &f.Require,
		"allow-broad-writable": &f.AllowBroad, "quiet": &f.Quiet, "verify": &verify}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break // the command
		}
		name := a[1:]
		if name[0] == '-' {
			name = name[1:]
		}
		if name == "" || name[0] == '-' || name[0] == '=' {
			return box.Request{}, false
		}
		name, val, hasVal := strings.Cut(name, "=")
		if b, ok := switches[name]; ok {
			v := true
			if hasVal {
				var err error
				if v, err = strconv.ParseBool(val); err != nil {
					return box.Request{}, false
				}
			}
			*b = v
			continue
		}
		s, isText := text[name]
		l, isList := list[name]
		if !isText && !isList {
			return box.Request{}, false
		}
		if !hasVal {
			if i+1 >= len(args) {
				return box.Request{}, false
			}
			i++
			val = args[i]
		}
		if isText {
			*s = val
		} else {
			*l = append(*l, strings.TrimSpace(val))
		}
	}
	return box.Request{Flags: f, Command: append([]string{}, args[i:]...), NetLog: netLog, Verify: verify}, true
}
